"""How many copies of a token an MoE layer's dispatch sends, by token dispatcher and routing.

Megatron-Core's alltoall dispatcher (moe/token_dispatcher.py MoEAlltoAllTokenDispatcher, the default)
permutes a token into one row per routed expert and all-to-alls the rows: top_k copies a token, two of
them to one rank when it holds two of the token's experts. DeepEP's normal kernels send a token once to
each rank that holds any of its experts, and across nodes once to each node (RDMA to one GPU there,
which forwards it over NVLink to the node's ranks): deepseek-ai/DeepEP deep_ep/buffer.py
`get_dispatch_layout` returns `is_token_in_rank` [tokens x ranks] and `num_tokens_per_rdma_rank` (a
token counted once per rank, once per node), which `dispatch` sends. Megatron's flex dispatcher
(--moe-token-dispatcher-type flex, --moe-enable-deepep) and NeMo AutoModel (BackendConfig dispatcher
'deepep' / 'hybridep') run it. The combine sends the same copies back.

Which ranks hold a token's experts depends on the routing; routed experts are laid out contiguously,
E / n a rank (Megatron's local_expert_indices, AutoModel's Shard(0) of the expert dimension):

* balanced in expectation (learned routing; Megatron's --moe-router-force-load-balancing draws random
  logits, router.py): k distinct experts uniformly among E, so a given rank is hit with probability
  1 - C(E - E/n, k) / C(E, k) and a given node of m ranks with 1 - C(E - m E/n, k) / C(E, k);
* NeMo AutoModel's FakeBalancedGate with no noise (components/moe/layers.py): token t gets experts
  (t k + j) mod E, j < k, consecutive experts, so few ranks: the distinct rank and node blocks they
  cover, averaged over t.

A GPU's copies to other ranks of its own node cross NVLink, to other nodes its NIC (timing.links
Fabric.dispatch_s): with top_k copies a token (alltoall) (m - 1)/n and (n - m)/n of them; with DeepEP
the distinct ranks D_rank x (n - 1)/n over NVLink (remote ones forwarded there) and the distinct nodes
D_node x (n - m)/n over RDMA.
"""

from __future__ import annotations

from math import comb, gcd

from trainplan.enums import MoeDispatcher, MoeRouting
from trainplan.frozen import frozen


@frozen
class DispatchCopies:
    """Copies of one token a dispatch sends: to distinct ranks (NVLink side) and to distinct nodes (RDMA)."""

    rank_copies: float
    node_copies: float
    forwarded: bool        # remote copies land on one GPU a node and cross NVLink again (DeepEP)


def _hit_probability(experts: int, top_k: int, block: float) -> float:
    """P(a block of `block` consecutive experts holds at least one of k experts drawn uniformly)."""
    held = int(round(block))
    if held >= experts:
        return 1.0
    return 1.0 - comb(experts - held, top_k) / comb(experts, top_k)


def _consecutive_blocks(experts: int, top_k: int, block: int) -> float:
    """Distinct blocks of `block` experts covered by experts (t k .. t k + k - 1) mod E, averaged over t."""
    if block <= 0:
        return float(top_k)
    period = experts // gcd(experts, top_k)
    total = 0
    for t in range(period):
        start = t * top_k % experts
        total += len({(start + j) % experts // block for j in range(top_k)})
    return total / period


def dispatch_copies(dispatcher: MoeDispatcher, routing: MoeRouting, *, experts: int, top_k: int, ep: int,
                    ranks_per_node: int) -> DispatchCopies:
    """The copies one token's dispatch sends over an EP group of `ep` ranks, `ranks_per_node` in a node."""
    if dispatcher is MoeDispatcher.ALLTOALL or ep <= 1 or experts <= 0:
        return DispatchCopies(rank_copies=float(top_k), node_copies=float(top_k), forwarded=False)
    per_rank = experts / ep
    m = max(1, min(ep, ranks_per_node))
    if routing is MoeRouting.CONSECUTIVE and per_rank == int(per_rank):
        ranks = _consecutive_blocks(experts, top_k, int(per_rank))
        nodes = _consecutive_blocks(experts, top_k, int(per_rank) * m)
    else:
        ranks = ep * _hit_probability(experts, top_k, per_rank)
        nodes = (ep / m) * _hit_probability(experts, top_k, per_rank * m)
    return DispatchCopies(rank_copies=ranks, node_copies=nodes, forwarded=True)
