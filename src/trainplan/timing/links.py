"""Links and collectives: the intra- and inter-node links a GPU's groups run over, and the time of a
ring collective on them.

Collective times use the ring algorithm's bus-bandwidth convention of NVIDIA nccl-tests
(doc/PERFORMANCE.md): all-reduce moves 2 (n-1)/n x bytes through each GPU's link, all-gather and
reduce-scatter (n-1)/n x bytes (bytes = the full, unsharded buffer), all-to-all (n-1)/n x bytes.
The bus bandwidth achieved is `collective_fraction` (0.8, measured 78-82% on NVLink, hardware.md
section 1.3) of the link's unidirectional bandwidth.

A group that fits inside one node uses the intra-node link (NVLink or PCIe); a group that spans
nodes is limited by each GPU's share of the inter-node network (rail-optimised clusters give every
GPU its own NIC: DGX A100 8 x 200 Gb/s HDR, DGX H100 8 x 400 Gb/s NDR). On a rack-scale NVLink fabric
(GB200/GB300 NVL72: the catalog's nvlink_domain_gpus) "the node" is the NVLink domain, not the compute
tray: a group inside it runs at the NVLink bandwidth.
"""

from __future__ import annotations

import re

from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.job.training import Layout
from trainplan.specs import GpuSpec
from trainplan.timing.dispatch import DispatchCopies

@frozen
class Link:
    """A network or bus: unidirectional bandwidth, per GPU or shared by the whole node."""

    name: str
    bw_bytes_per_s: float
    per_node: bool = False      # True: the node's GPUs share it (one Ethernet NIC per node)
    source: str = ""

    def per_gpu_bytes_per_s(self, gpus_per_node: int) -> float:
        return self.bw_bytes_per_s / gpus_per_node if self.per_node else self.bw_bytes_per_s


_GBIT = 1e9 / 8   # bytes/s per Gb/s

# Inter-node presets for `--interconnect` (line rates; `collective_fraction` is applied on top).
INTERCONNECTS: dict[str, Link] = {
    "ib-xdr": Link(name="InfiniBand XDR, 800 Gb/s per GPU", bw_bytes_per_s=800 * _GBIT,
                   source="NVIDIA ConnectX-8 (XDR 800 Gb/s)"),
    "ib-ndr": Link(name="InfiniBand NDR, 400 Gb/s per GPU", bw_bytes_per_s=400 * _GBIT,
                   source="NVIDIA ConnectX-7 NDR 400 Gb/s; DGX H100 8 x 400 Gb/s (3.2 Tb/s per node)"),
    "ib-hdr": Link(name="InfiniBand HDR, 200 Gb/s per GPU", bw_bytes_per_s=200 * _GBIT,
                   source="NVIDIA ConnectX-6 HDR 200 Gb/s; DGX A100 8 x 200 Gb/s"),
    "roce-400": Link(name="RoCE, 400 Gb/s per GPU", bw_bytes_per_s=400 * _GBIT,
                     source="400 GbE RoCE NICs, one per GPU"),
    "roce-200": Link(name="RoCE, 200 Gb/s per GPU", bw_bytes_per_s=200 * _GBIT,
                     source="MosaicML A100 clusters '1600 Gbps node-node interconnect (RoCE)' "
                            "(llm-foundry benchmarking README); Llama 2 paper: '200 Gbps end-points'"),
    "efa-3200": Link(name="AWS EFA, 3200 Gb/s per node (p5)", bw_bytes_per_s=3200 * _GBIT,
                     per_node=True, source="AWS p5.48xlarge: 3200 Gbps EFA"),
    "efa-400": Link(name="AWS EFA, 400 Gb/s per node (p4d)", bw_bytes_per_s=400 * _GBIT,
                    per_node=True, source="AWS p4d.24xlarge: 400 Gbps EFA"),
    "ethernet-100": Link(name="Ethernet, 100 Gb/s per node", bw_bytes_per_s=100 * _GBIT, per_node=True,
                         source="one 100 GbE NIC per node"),
    "ethernet-25": Link(name="Ethernet, 25 Gb/s per node", bw_bytes_per_s=25 * _GBIT, per_node=True,
                        source="one 25 GbE NIC per node"),
    "ethernet-10": Link(name="Ethernet, 10 Gb/s per node", bw_bytes_per_s=10 * _GBIT, per_node=True,
                        source="one 10 GbE NIC per node"),
}

# PCIe x16 unidirectional bandwidth (hardware.md 1.3, stas00 network/README.md).
PCIE_BYTES_PER_S: dict[int, float] = {3: 15.75e9, 4: 31e9, 5: 63e9, 6: 121e9}


def pcie_link(gpu: GpuSpec) -> Link:
    """The GPU's PCIe link: the generation and lane count the catalog's `pcie` names (Gen4 x16 when it
    does not say). A link of fewer lanes carries that share of the x16 bandwidth (PCIe bandwidth is per
    lane: an x8 card, e.g. the RTX 4060 Ti, moves half of an x16 one's)."""
    match = re.search(r"Gen\s*(\d)", gpu.pcie or "")
    gen = int(match.group(1)) if match else 4
    width = re.search(r"x\s*(1|2|4|8|16)\b", gpu.pcie or "")
    lanes = int(width.group(1)) if width else 16
    return Link(name=f"PCIe Gen{gen} x{lanes}", bw_bytes_per_s=PCIE_BYTES_PER_S.get(gen, 31e9) * lanes / 16,
                source="hardware.md section 1.3 (PCIe 4 x16: 31 GB/s, PCIe 5 x16: 63 GB/s per direction), "
                       "per lane")


def intranode_link(gpu: GpuSpec, choice: str | None = None) -> Link:
    """NVLink/xGMI/on-chip RoCE when the catalog gives a GPU-GPU bandwidth, else PCIe.

    The catalog's GPU-GPU figure is bidirectional per GPU; a ring uses one direction: half of it.
    Bridged parts (A40, H100 PCIe pairs) only reach their partner: PCIe is assumed for groups > 2.
    """
    if choice == "pcie" or not gpu.gpu_gpu_bw_bytes_per_s:
        return pcie_link(gpu)
    if choice not in (None, "nvlink"):
        raise TrainplanError(f"unknown intra-node link {choice!r}; use nvlink or pcie")
    return Link(name=gpu.interconnect or "NVLink", bw_bytes_per_s=gpu.gpu_gpu_bw_bytes_per_s / 2,
                source="catalog gpu_gpu_bw (bidirectional per GPU) / 2")


def is_consumer(gpu: GpuSpec) -> bool:
    """A GeForce card (NVIDIA's consumer line): sold for desktops, rented in PCIe boxes."""
    return gpu.name.lower().startswith("geforce")


def default_interconnect(gpu: GpuSpec) -> str:
    """Inter-node default: NDR for Hopper/Blackwell-class, HDR otherwise (DGX reference designs). A
    GeForce box is no DGX: rented ones come with an Ethernet NIC, not InfiniBand, so one 25 GbE link
    per node is assumed (a guess, said in the notes; --interconnect to change)."""
    if is_consumer(gpu):
        return "ethernet-25"
    return "ib-ndr" if gpu.generation in ("hopper", "blackwell") else "ib-hdr"


# A network described by its NICs: "4x100g-roce" (4 NICs of 100 Gb/s per node), "8x200g-ib", "100gbe",
# "400g-ib-per-gpu". A count of NICs, or no "per gpu", is the node's total, shared by its GPUs.
_DESCRIBED = re.compile(r"^(?:(\d{1,2})\s*[x×*]\s*)?(\d+(?:\.\d+)?)\s*(g(?:b|bit)?(?:ps|/s)?(?:e\b)?)"
                        r"(?:[\s_-]*(rocev2|roce|infiniband|ib|ethernet|eth|efa))?(?:[\s_-]*per[\s_-]*(gpu|node))?$")
_NETWORK_UNITS = ("gbps", "gb/s", "gbe", "gbit", "gbitps", "gbit/s")
_KINDS = {"rocev2": "RoCE", "roce": "RoCE", "infiniband": "InfiniBand", "ib": "InfiniBand", "ethernet": "Ethernet",
          "eth": "Ethernet", "efa": "EFA"}


def described_link(text: str) -> Link | None:
    """The Link a NIC description names (see _DESCRIBED), or None when `text` is none."""
    m = _DESCRIBED.match(text.strip().lower())
    if m is None:
        return None
    count, rate, unit, kind_word = int(m.group(1) or 1), float(m.group(2)), m.group(3), m.group(4)
    if count < 1 or rate <= 0 or not (kind_word or unit in _NETWORK_UNITS):
        return None     # "80GB" is a memory size, not a network: a rate needs its kind or a network unit
    kind = _KINDS.get(kind_word or "", "Ethernet" if unit == "gbe" else "network")
    per_gpu = m.group(5) == "gpu" and count == 1
    total = count * rate
    nics = f" ({count} x {rate:g} Gb/s)" if count > 1 else ""
    return Link(name=f"{kind}, {total:g} Gb/s per {'GPU' if per_gpu else 'node'}{nics}",
                bw_bytes_per_s=total * _GBIT, per_node=not per_gpu, source=f"as described: {text.strip()}")


def internode_link(name: str) -> Link:
    """A preset of INTERCONNECTS, or a network described by its NICs (described_link)."""
    found = INTERCONNECTS.get(name.lower()) or described_link(name)
    if found is None:
        raise TrainplanError(f"unknown --interconnect {name!r}; known: {', '.join(INTERCONNECTS)}, or the node's NICs "
                             "as COUNTxRATEg-KIND (4x100g-roce; RATEg-KIND-per-gpu for one NIC per GPU)")
    return found


def is_bridged(gpu: GpuSpec) -> bool:
    text = (gpu.interconnect or "").lower()
    return "bridge" in text or "pairs" in text


# --- collectives ---------------------------------------------------------------------------------

def ring_allreduce_s(n_bytes: float, n: int, bus_bw_bytes_per_s: float) -> float:
    """Ring all-reduce: 2 (n-1)/n x bytes / bus bandwidth (nccl-tests PERFORMANCE.md)."""
    if n <= 1 or n_bytes <= 0:
        return 0.0
    return 2.0 * (n - 1) / n * n_bytes / bus_bw_bytes_per_s


def allgather_s(n_bytes: float, n: int, bus_bw_bytes_per_s: float) -> float:
    """All-gather (or reduce-scatter) of a buffer of `n_bytes` in total: (n-1)/n x bytes / bw."""
    if n <= 1 or n_bytes <= 0:
        return 0.0
    return (n - 1) / n * n_bytes / bus_bw_bytes_per_s


reduce_scatter_s = allgather_s


@frozen
class Fabric:
    """The links one layout's groups run over, with the achieved bus bandwidth of each."""

    intra: Link
    inter: Link
    gpus_per_node: int
    collective_fraction: float

    def bus_bw(self, group_span: int, members_per_node: int = 1) -> float:
        """Bus bandwidth of a group whose members span `group_span` consecutive ranks, with
        `members_per_node` of them in each node.

        Inside a node: the intra-node link. Across nodes a ring crosses each node boundary once per
        direction, and the node's NICs carry the crossing for all of its members at once (NCCL runs
        one ring per NIC), so the bus bandwidth is the members' NICs together:
        min(intra, per-GPU NIC x members per node) (a node-shared NIC: its share per member).
        """
        if group_span <= self.gpus_per_node:
            bw = self.intra.bw_bytes_per_s
        else:
            members = max(1, min(members_per_node, self.gpus_per_node))
            bw = min(self.intra.bw_bytes_per_s, self.inter.per_gpu_bytes_per_s(self.gpus_per_node) * members)
        return bw * self.collective_fraction

    def alltoall_s(self, n_bytes: float, n: int, stride: int = 1) -> float:
        """All-to-all of `n_bytes` per GPU among `n` ranks `stride` apart (an expert-parallel group under
        expert tensor parallel `stride`), m = min(n, GPUs a node / stride) of them in each node.

        Each GPU sends 1/n of its buffer to every other rank: (m - 1)/n of it to its own node's members
        over the intra-node link and (n - m)/n to other nodes, which only its own NIC can carry (a node's
        off-node traffic is its members' together, over its members' NICs, one each); both at once.
        A ring-shaped collective is different (bus_bw: the crossing is shared by all NICs), and so
        inter-node all-to-all runs at about one NIC's bandwidth a GPU: DeepEP (docs/legacy.md, V1 normal
        kernels) measures 43-58 GB/s RDMA bottleneck bandwidth a GPU for EP 16-64 dispatch on H800 with
        400 Gb/s ConnectX-7 (about 50 GB/s), against 153 GB/s for EP 8 over NVLink.
        """
        if n <= 1 or n_bytes <= 0:
            return 0.0
        m = self.members_per_node(n, stride)
        on_node = (m - 1) / n * n_bytes / (self.intra.bw_bytes_per_s * self.collective_fraction)
        if m >= n:
            return on_node
        nic = self.inter.per_gpu_bytes_per_s(self.gpus_per_node) * self.collective_fraction
        return max(on_node, (n - m) / n * n_bytes / nic)

    def dispatch_s(self, token_bytes: float, n: int, stride: int, copies: DispatchCopies) -> float:
        """An MoE dispatch (or combine) of `token_bytes` of tokens per GPU over an expert-parallel group of
        `n` ranks `stride` apart, each token sent as `copies` says (timing.dispatch): its copies to other
        ranks of the node over the intra-node link, to other nodes over the GPU's own NIC, both at once
        (alltoall_s is the case of top_k copies, not forwarded)."""
        if n <= 1 or token_bytes <= 0:
            return 0.0
        m = self.members_per_node(n, stride)
        nvlink = copies.rank_copies * ((n - 1) if copies.forwarded else (m - 1)) / n
        on_node = nvlink * token_bytes / (self.intra.bw_bytes_per_s * self.collective_fraction)
        if m >= n:
            return on_node
        nic = self.inter.per_gpu_bytes_per_s(self.gpus_per_node) * self.collective_fraction
        return max(on_node, copies.node_copies * (n - m) / n * token_bytes / nic)

    def members_per_node(self, n: int, stride: int = 1) -> int:
        """Members of a group of `n` ranks `stride` apart that share a node."""
        return max(1, min(n, self.gpus_per_node // max(1, stride)))

    def link_name(self, group_span: int) -> str:
        return self.intra.name if group_span <= self.gpus_per_node else self.inter.name


def fabric(gpu: GpuSpec, layout: Layout, *, interconnect: str | None = None,
           intranode: str | None = None, collective_fraction: float = 0.8) -> Fabric:
    intra = intranode_link(gpu, intranode)
    if not intra.name.startswith("PCIe") and is_bridged(gpu) and layout.gpus_per_node > 2 and intranode is None:
        intra = pcie_link(gpu)
    inter = internode_link(interconnect or default_interconnect(gpu))
    # a rack-scale NVLink domain (NVL72): groups inside it stay on NVLink whatever trays they span
    span = max(layout.gpus_per_node, min(gpu.nvlink_domain_gpus, layout.num_gpus)) if intranode is None \
        else layout.gpus_per_node
    return Fabric(intra=intra, inter=inter, gpus_per_node=span, collective_fraction=collective_fraction)
