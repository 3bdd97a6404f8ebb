"""Build src/trainplan/catalog/data/gpus.toml and prices.toml from the shared reference CSVs (run once).

    python tools/build_hw_catalog.py [--shared ../shared] [--out src/trainplan/catalog/data]

Inputs (read-only, never read at runtime):
  reference/gpus.csv          one row per accelerator (dense peaks, memory, links, sources)
  reference/cloud_prices.csv  one row per (provider, instance, pricing model, date)
  reference/hardware.md       section 2.3 (CNY prices of Chinese platforms)
  seeds/003_983e069e5a6f046f.txt  the article quoting Alibaba Cloud A100 at 27.08 CNY/hour

Prints what it wrote and which price rows it skipped (GPU not in the catalog) and why.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Architecture generation per catalog id (vendor architecture names).
GENERATION = {
    "v100-sxm2-16gb": "volta", "v100-sxm2-32gb": "volta", "t4": "turing",
    "a10": "ampere", "a10g": "ampere", "a30": "ampere", "a40": "ampere",
    "a100-sxm4-40gb": "ampere", "a100-sxm4-80gb": "ampere", "a100-pcie-40gb": "ampere",
    "a100-pcie-80gb": "ampere", "a800-sxm4-80gb": "ampere", "rtx3090": "ampere", "rtx-a6000": "ampere",
    "h100-sxm": "hopper", "h100-pcie": "hopper", "h100-nvl": "hopper", "h800-sxm": "hopper",
    "h100-sxm-96gb": "hopper", "gh200": "hopper",
    "h20": "hopper", "h200-sxm": "hopper",
    "b200": "blackwell", "gb200": "blackwell", "rtx5090": "blackwell", "b300": "blackwell", "gb300": "blackwell",
    "l4": "ada", "l20": "ada", "l40": "ada", "l40s": "ada", "rtx4090": "ada", "rtx4090d": "ada",
    "rtx6000-ada": "ada",
    "mi250x": "cdna2", "mi300x": "cdna3", "mi325x": "cdna3",
    "ascend-910b": "davinci", "gaudi2": "gaudi2", "gaudi3": "gaudi3",
}

# What users type (PRODUCT.md "GPU ids" plus obvious variants). Ids themselves always match.
ALIASES = {
    "v100-sxm2-16gb": ["v100-16gb", "v100-sxm2-16g"],
    "v100-sxm2-32gb": ["v100", "v100-32gb", "v100-sxm2", "v100-sxm3-32gb"],
    "t4": ["tesla-t4", "t4-16gb"],
    "a10": ["a10-24gb"],
    "a10g": ["a10g-24gb"],
    "a30": ["a30-24gb"],
    "a40": ["a40-48gb"],
    "a100-sxm4-40gb": ["a100-40gb", "a100-40g", "a100-sxm-40gb", "a100-sxm4-40g"],
    "a100-sxm4-80gb": ["a100", "a100-80gb", "a100-80g", "a100-sxm", "a100-sxm4", "a100-sxm-80gb"],
    "a100-pcie-40gb": ["a100-pcie-40g"],
    "a100-pcie-80gb": ["a100-pcie", "a100-pcie-80g"],
    "a800-sxm4-80gb": ["a800", "a800-80gb", "a800-sxm", "a800-sxm4"],
    "h100-sxm": ["h100", "h100-80gb", "h100-sxm5", "h100-sxm-80gb", "h100-sxm5-80gb"],
    "h100-pcie": ["h100-pcie-80gb"],
    "h100-nvl": ["h100-nvl-94gb", "h100nvl"],
    "h100-sxm-96gb": ["h100-96gb", "h100-hbm2e", "h100-sxm5-96gb"],
    "h800-sxm": ["h800", "h800-80gb", "h800-sxm5"],
    "h20": ["h20-96gb"],
    "h200-sxm": ["h200", "h200-141gb", "h200-sxm-141gb"],
    "gh200": ["gh200-96gb", "gh200-480gb", "grace-hopper", "gh200-superchip"],
    "b200": ["b200-180gb", "b200-sxm"],
    "gb200": ["gb200-nvl72"],
    "gb300": ["gb300-nvl72"], "b300": ["b300-sxm", "hgx-b300"],
    "l4": ["l4-24gb"],
    "l20": ["l20-48gb"],
    "l40": ["l40-48gb"],
    "l40s": ["l40s-48gb"],
    "rtx3090": ["3090", "rtx-3090", "geforce-rtx-3090"],
    "rtx4090": ["4090", "rtx-4090", "geforce-rtx-4090"],
    "rtx4090d": ["4090d", "rtx-4090d", "4090-d", "rtx-4090-d"],
    "rtx5090": ["5090", "rtx-5090", "geforce-rtx-5090"],
    "rtx-a6000": ["a6000", "rtxa6000"],
    "rtx6000-ada": ["6000-ada", "rtx-6000-ada", "rtx6000ada"],
    "mi250x": ["instinct-mi250x"],
    "mi300x": ["instinct-mi300x"],
    "mi325x": ["instinct-mi325x"],
    "ascend-910b": ["910b", "ascend910b"],
    "gaudi2": ["gaudi-2"],
    "gaudi3": ["gaudi-3"],
}

# cloud_prices.csv `gpu` label -> (catalog id, note when the mapping is a judgement call).
PRICE_GPU = {
    "H100 SXM 80GB": ("h100-sxm", ""), "H100 PCIe 80GB": ("h100-pcie", ""),
    "H100 80GB": ("h100-sxm", "source says 'H100 80GB'; GCP a3-highgpu and 8-GPU Paperspace nodes are SXM"),
    "H100 NVL 94GB": ("h100-nvl", ""),
    "H100 NVLink 80GB": ("h100-pcie", "Hyperstack 'H100 NVLink 80GB' = H100 PCIe with NVLink bridge (80 GB, not the 94 GB NVL)"),
    "H100 PCIe/NVL": ("h100-pcie", "source lumps H100 PCIe and NVL; mapped to the PCIe part"),
    "H200 141GB": ("h200-sxm", ""), "H200 SXM 141GB": ("h200-sxm", ""),
    "B200 180GB": ("b200", ""), "B200": ("b200", ""),
    "B200 192GB": ("b200", "source labels B200 192GB; catalog B200 uses the 180 GB HGX figure"),
    "GB200 186GB": ("gb200", ""), "GH200 96GB": ("gh200", ""),
    "B300 288GB": ("b300", "source labels B300 288GB (the package); catalog B300 uses the 270 GB per-GPU figure"),
    "A100 SXM 80GB": ("a100-sxm4-80gb", ""), "A100 SXM 40GB": ("a100-sxm4-40gb", ""),
    "A100 40GB": ("a100-sxm4-40gb", "source says 'A100 40GB'; GCP a2-highgpu uses A100 SXM4 40GB"),
    "A100 80GB": ("a100-sxm4-80gb", "source does not say SXM or PCIe; mapped to SXM4"),
    "A100 PCIe 80GB": ("a100-pcie-80gb", ""),
    "A800 80GB": ("a800-sxm4-80gb", "source does not say SXM or PCIe; mapped to SXM4"),
    "H20 96GB": ("h20", ""), "L40S 48GB": ("l40s", ""), "A10": ("a10", ""), "A10G": ("a10g", ""),
    "T4 16GB": ("t4", ""), "V100 16GB": ("v100-sxm2-16gb", "Lambda 8x V100 nodes are SXM2 16GB"),
    "RTX 3090": ("rtx3090", ""), "RTX 4090": ("rtx4090", ""), "RTX 4090 24GB": ("rtx4090", ""),
    "RTX 4090D 24GB": ("rtx4090d", ""), "RTX 5090": ("rtx5090", ""),
    "RTX A6000": ("rtx-a6000", ""), "RTX A6000 48GB": ("rtx-a6000", ""),
}

# cloud_prices.csv pricing_model -> normalised pricing (the original text goes to notes).
PRICING = {
    "on-demand": "on-demand", "on-demand (secure cloud)": "on-demand",
    "on-demand (community hosts)": "on-demand", "on-demand (historical)": "on-demand",
    "on-demand (earlier)": "on-demand", "on-demand = spot field": "on-demand",
    "on-demand-equivalent list": "on-demand",
    "spot": "spot", "spot (historical)": "spot",
    "capacity block": "capacity-block", "capacity block (short-term reservation)": "capacity-block",
    "on-demand marketplace median": "marketplace",
    "cheapest listing (not typical)": "cheapest-listing",
    "on-demand (cheapest seller that day)": "cheapest-listing",
}

# normalised pricing -> the kind of price rankings compare (trainplan.enums.PriceKind): a capacity
# block is a short reservation paid up front; a marketplace median and a crawler's lowest listing are
# both marketplace prices (the lowest listing is also atypical: catalog.ATYPICAL_PRICING).
KIND = {"on-demand": "on-demand", "spot": "spot", "capacity-block": "reserved", "marketplace": "marketplace",
        "cheapest-listing": "marketplace"}

# Names users type for providers (the canonical name and the parts of "中文 (English)" also match).
PROVIDER_ALIASES = {
    "AWS": ["amazon", "ec2", "amazon-web-services"], "Azure": ["microsoft", "microsoft-azure"],
    "GCP": ["google", "google-cloud", "gce"], "Lambda": ["lambda-labs", "lambdalabs"],
    "RunPod": ["runpod.io"], "Vast.ai": ["vast", "vastai"], "CoreWeave": [], "Nebius": [],
    "Hyperstack": ["nexgen-cloud"], "Paperspace": ["digitalocean-paperspace"],
    "Alibaba Cloud": ["alibaba", "aliyun", "阿里云"],
}

# Driver totals not in gpus.csv, read the way hardware.md 1.2 read its own: nvidia-smi output quoted
# in public repositories (code index, find_string on the MiB figure, 10+ hits each, 2026). These
# GDDR6 data-centre parts reserve 1/16 of the memory for ECC (enabled by default), so they report
# ~0.94 of the label: the 0.99 rule would overstate their capacity by ~5%.
EXTRA_REPORTED_MIB = {
    "t4": (15360, "nvidia-smi 'Tesla T4 ... 15360MiB' (code index find_string '15360MiB')"),
    "a10": (23028, "nvidia-smi 'NVIDIA A10 ... 23028MiB' (code index find_string '23028MiB')"),
    "a10g": (23028, "nvidia-smi 'NVIDIA A10G ... 23028MiB' (code index find_string '23028MiB')"),
    "l4": (23034, "nvidia-smi 'NVIDIA L4 ... 23034MiB' (code index find_string 'NVIDIA L4')"),
    "a40": (46068, "nvidia-smi 'NVIDIA A40 ... 46068MiB' (code index find_string '46068MiB')"),
    "l20": (46068, "nvidia-smi 'NVIDIA L20 ... 46068MiB' (code index find_string '46068MiB')"),
    "l40s": (46068, "nvidia-smi 'NVIDIA L40S ... 46068MiB' (code index find_string '46068MiB')"),
}

# Parts gpus.csv does not list, in its columns, each with the public text that states it: so that runs
# published on them are timed on their own memory system and peaks, not on the part they share a name with
# (only B300 has a price row, Hyperstack's).
_TITAN_BENCH = ("github:pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md and "
                "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md@b5bcd76 (Hardware: 'Each H100 GPU is "
                "equipped with 96GB HBM2e with 2.4 TB/sec peak memory bandwidth', 'default 500W power limit', "
                "NVLink inside the host) | github:pytorch/ao torchao/testing/training/roofline_utils.py@36027d8 "
                "('2.4 TB per second, custom to Meta's H100 variant'; bf16 989 / fp8 1979 TFLOP/s dense)")
# An extra part on a die gpus.csv already lists names it in `peaks_of` and takes that row's dense peaks.
EXTRA_GPU_ROWS = (
    {"gpu_id": "h100-sxm-96gb", "vendor": "NVIDIA", "name": "H100 SXM5 96GB HBM2e (Meta Grand Teton)",
     "form_factor": "SXM5", "memory_gb": "96", "memory_gib_total_reported": "", "memory_type": "HBM2e",
     "mem_bw_gbps": "2400", "peaks_of": "h100-sxm",
     "flops_basis": "dense; the H100 SXM5 figures, as torchao's roofline and torchtitan's MFU use them",
     "gpu_interconnect": "NVLink 4 + NVSwitch", "gpu_gpu_bw_gbps_bidir": "900", "pcie": "Gen5 x16 (128 GB/s)",
     "tdp_w": "500", "launch_year": "", "confidence": "medium", "source": _TITAN_BENCH,
     "notes": "Meta's H100 variant (Grand Teton), not sold by clouds. torchtitan: 'the actual peak TFLOPs number "
              "is between SXM and NVL, and we don't know its exact value' at the 500 W limit; the SXM peak is "
              "kept. NVLink figure assumed equal to the SXM5 part ('fully connected with NVLink')."},
)

_GH200 = ("github:stas00/ml-engineering compute/accelerator/README.md@744d01e (Maximum Achievable Matmul FLOPS: "
          "'NVIDIA GH200 (900 W)', bf16 peak 989, fp8 peak 1979 TFLOP/s; network/README.md: NVLink 4 for H100, H200, "
          "GH200; shared reference hardware.md 1.3-1.4) | nishikiout.net/entry/2023/08/09/143040 (GH200: Hopper "
          "with 96GB HBM3 at 4 TB/s; Grace, 72 Arm Neoverse V2 cores, 480GB LPDDR5X; NVLink-C2C between them) | "
          "code index: dcgm-exporter modelName 'NVIDIA GH200 96GB HBM3' (file 1624910371), 'a GH200 96GB HBM3 part "
          "with a 4.0 TB/s nominal peak and a measured 3.6 TB/s achieved copy rate' (file 57479413698) | "
          "spheron.network/blog/nvidia-gh200-guide (96 GB HBM3 + 480 GB LPDDR5X; NVLink-C2C 900 GB/s bidirectional)")
EXTRA_GPU_ROWS += (
    {"gpu_id": "gh200", "vendor": "NVIDIA", "name": "GH200 Grace Hopper Superchip (H100 GPU, 96GB HBM3)",
     "form_factor": "Superchip module", "memory_gb": "96", "memory_gib_total_reported": "", "memory_type": "HBM3",
     "mem_bw_gbps": "4000", "peaks_of": "h100-sxm",
     "flops_basis": "dense; the H100 SXM5 peaks, as stas00's MAMF table gives them for the GH200",
     "gpu_interconnect": "NVLink 4", "gpu_gpu_bw_gbps_bidir": "900", "pcie": "NVLink-C2C to the Grace CPU (900 GB/s)",
     "tdp_w": "900", "launch_year": "", "confidence": "medium", "source": _GH200,
     "notes": "nvidia-smi names it 'NVIDIA GH200 480GB' (the 480 GB is the Grace side's LPDDR5X); the GPU has 96 GB. "
              "Rented as one superchip per machine (Lambda '1x GH200'); NVLink 4 between superchips applies to "
              "multi-superchip nodes only. The 144 GB HBM3e variant is not this entry. TDP: the module's 900 W "
              "setting of the MAMF row."},
)

_BLACKWELL_ULTRA = ("https://verda.com/blog/gb300-nvl72-architecture (per-GPU table without sparsity: GB300 FP8 5, "
                    "FP16/BF16 2.5, TF32 1.25, FP32 0.080 PFLOPS, INT8 0.165 POPS, 279 GB HBM3E, 8 TB/s, 1.4 kW; "
                    "B300 FP8 4.5, FP16/BF16 2.25, TF32 1.1, FP32 0.075 PFLOPS, INT8 0.15 POPS, 270 GB, 7.7 TB/s, "
                    "1.1 kW; NVLink 5 1.8 TB/s) | https://glennklockwood.com/garden/processors/B300 (HGX B300: "
                    "dense FP16/BF16 2250, FP8 4500, TF32 1125, FP32 75 TFLOP/s; 288 GB HBM3e, 8 TB/s; GB300 NVL72 "
                    "360 PF FP8, 72 ConnectX-8 NICs) | github:pytorch/ao torchao/testing/training/roofline_utils.py"
                    "@36027d8 ('NVIDIA B300 SXM6 AC': bf16 2.25e15, fp8 4.5e15, 8e12 B/s)")
EXTRA_GPU_ROWS += (
    {"gpu_id": "gb300", "vendor": "NVIDIA", "name": "GB300 (per Blackwell Ultra GPU, NVL72)",
     "form_factor": "Superchip (Blackwell Ultra GPUs + Grace)", "memory_gb": "279", "memory_gib_total_reported": "",
     "memory_type": "HBM3e", "mem_bw_gbps": "8000", "peaks_of": "gb200",
     "fp32_tflops": "80", "tf32_tflops_dense": "1250", "bf16_tflops_dense": "2500", "fp16_tflops_dense": "2500",
     "fp8_tflops_dense": "5000", "int8_tops_dense": "165",
     "flops_basis": "dense per GPU (verda's table without sparsity)",
     "gpu_interconnect": "NVLink 5 (72-GPU NVLink domain)", "gpu_gpu_bw_gbps_bidir": "1800", "pcie": "",
     "tdp_w": "1400", "launch_year": "2025", "confidence": "medium", "source": _BLACKWELL_ULTRA,
     "notes": "288 GB HBM3e on the package (12-high stacks); the per-GPU table gives 279 GB, taken as the label. "
              "INT8 is cut to 0.165 POPS on Blackwell Ultra. Megatron-Bridge's performance tables call it DGX-GB300."},
    {"gpu_id": "b300", "vendor": "NVIDIA", "name": "B300 SXM (HGX/DGX B300, Blackwell Ultra)",
     "form_factor": "SXM6", "memory_gb": "270", "memory_gib_total_reported": "",
     "memory_type": "HBM3e", "mem_bw_gbps": "7700", "peaks_of": "b200",
     "fp32_tflops": "75", "tf32_tflops_dense": "1125", "bf16_tflops_dense": "2250", "fp16_tflops_dense": "2250",
     "fp8_tflops_dense": "4500", "int8_tops_dense": "150",
     "flops_basis": "dense (glennklockwood's HGX B300 table; verda and torchao's roofline give the same peaks)",
     "gpu_interconnect": "NVLink 5 + NVSwitch", "gpu_gpu_bw_gbps_bidir": "1800", "pcie": "Gen6 x16",
     "tdp_w": "1100", "launch_year": "2025", "confidence": "medium", "source": _BLACKWELL_ULTRA,
     "notes": "Memory: 288 GB HBM3e on the package, 270 GB in verda's per-GPU table (taken as the label); bandwidth "
              "8 TB/s (glennklockwood, torchao) vs 7.7 (verda): the lower kept. TDP 1.1 kW (verda) vs 1.4 kW "
              "maximum (glennklockwood). TF32 1125 (glennklockwood) vs 1100 (verda)."},
)

SEED_ID = "003_983e069e5a6f046f"
PEAK_COLUMNS = {"fp32": "fp32_tflops", "tf32": "tf32_tflops_dense", "bf16": "bf16_tflops_dense",
                "fp16": "fp16_tflops_dense", "fp8": "fp8_tflops_dense", "int8": "int8_tops_dense"}


def num(text: str) -> int | float | None:
    text = text.strip()
    if not text:
        return None
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def exact_reported_bytes(notes: str) -> int | None:
    """Exact driver total where the notes quote one: 'NNN bytes' or 'NNN MiB' (nvidia-smi)."""
    if m := re.search(r"\((\d{9,}) bytes\)", notes):
        return int(m.group(1))
    if m := re.search(r"(\d{5,}) MiB", notes):
        return int(m.group(1)) * 2**20
    return None


# Rack-scale parts whose NVLink domain spans more GPUs than a host: NVL72, 72 GPUs on one NVLink switch
# fabric (gpus.csv's interconnect text for gb200, "NVLink 5 (72-GPU NVLink domain)"; glennklockwood GB300
# NVL72: 18 NVLink switches at 130 TB/s; verda: "each GPU ... 1.8 TB/s" across the rack). Groups inside it
# run at the NVLink bandwidth however many compute trays they span.
NVLINK_DOMAIN_GPUS = {"gb200": 72, "gb300": 72}

def gpu_entry(row: dict[str, str]) -> dict:
    gid = row["gpu_id"]
    entry: dict = {"id": gid, "name": row["name"], "vendor": row["vendor"],
                   "form_factor": row["form_factor"], "memory_gb": num(row["memory_gb"])}
    reported = num(row["memory_gib_total_reported"])
    if reported is not None:
        entry["memory_gib_reported"] = reported
        exact = exact_reported_bytes(row["notes"])
        if exact is not None:
            if abs(exact / 2**30 - reported) > 0.01:
                raise SystemExit(f"{gid}: notes give {exact} B, CSV {reported} GiB")
            entry["memory_bytes_reported"] = exact
        entry["memory_reported_source"] = "gpus.csv memory_gib_total_reported (hardware.md section 1.2)"
    elif gid in EXTRA_REPORTED_MIB:
        mib, source = EXTRA_REPORTED_MIB[gid]
        entry["memory_gib_reported"] = round(mib / 1024, 2)
        entry["memory_bytes_reported"] = mib * 2**20
        entry["memory_reported_source"] = source
    entry["memory_type"] = row["memory_type"]
    if (bw := num(row["mem_bw_gbps"])) is not None:
        entry["mem_bw_gbps"] = bw
    entry["peak_tflops"] = {k: v for k, col in PEAK_COLUMNS.items() if (v := num(row[col])) is not None}
    entry["flops_basis"] = row["flops_basis"]
    entry["interconnect"] = row["gpu_interconnect"]
    if (link := num(row["gpu_gpu_bw_gbps_bidir"])) is not None:
        entry["gpu_gpu_bw_gbps_bidir"] = link
    if gid in NVLINK_DOMAIN_GPUS:
        entry["nvlink_domain_gpus"] = NVLINK_DOMAIN_GPUS[gid]
    entry["pcie"] = row["pcie"]
    for key, col in (("tdp_w", "tdp_w"), ("launch_year", "launch_year")):
        if (value := num(row[col])) is not None:
            entry[key] = value
    entry["generation"] = GENERATION[gid]
    entry["aliases"] = ALIASES.get(gid, [])
    entry["confidence"] = row["confidence"]
    entry["source"] = row["source"]
    entry["notes"] = row["notes"]
    return entry


def capacity_basis(gpus: list[dict]) -> dict:
    """The label -> reported-capacity ratio, from the GPUs whose driver total is known."""
    derived = [f"{g['id']}: {g['memory_gib_reported']} GiB / {g['memory_gb']} = "
               f"{g['memory_gib_reported'] / g['memory_gb']:.4f}" for g in gpus
               if "memory_gib_reported" in g and g["id"] not in EXTRA_REPORTED_MIB]
    return {
        "ratio_of_label": 0.99,
        "explanation": (
            "When the driver-reported total is not known, device capacity = memory_gb (the vendor "
            "label, read as GiB) x 0.99 GiB. The reported totals (nvidia-smi MiB / 1024, deviceQuery "
            "or torch) sit at 0.987-0.996 of the label number read as GiB: H100 79.65/80, "
            "A100-40GB 39.49/40, H200 140.40/141, B200 179.06/180 (A100-80GB torch total 79.2/80). "
            "GDDR6 data-centre parts with ECC (T4, A10, A10G, L4, A40, L20, L40S) report ~0.94 of the "
            "label instead; those carry their nvidia-smi totals (memory_reported_source), and the rule "
            "may overstate the others of that kind (L40, RTX A6000/6000 Ada with ECC on)."),
        "derived_from": derived,
        "source": ("shared reference hardware.md section 1.2 (nvidia-smi logs '81559MiB', "
                   "'143771MiB', '183359MiB' in public repos; upb-pc2 wiki deviceQuery 42405855232 B; "
                   "stas00/ml-engineering training/performance/README.md torch totals)"),
    }


def provider_aliases(name: str) -> list[str]:
    out = list(PROVIDER_ALIASES.get(name, []))
    if m := re.fullmatch(r"(.+?) \((.+)\)", name):
        out += [m.group(1).strip(), m.group(2).strip()]
    return out


def price_entry(row: dict[str, str], gpu_id: str, map_note: str) -> dict:
    raw_pricing = row["pricing_model"].strip()
    pricing = PRICING[raw_pricing.lower()]
    notes = [n for n in (row["notes"].strip(), map_note) if n]
    if raw_pricing.lower() != pricing:
        notes.append(f"pricing as given: '{raw_pricing}'")
    notes = [n if n.endswith(".") else n + "." for n in notes]
    entry = {"provider": row["provider"], "region": row["region"], "instance": row["instance_type"],
             "gpu_id": gpu_id, "gpu_label": row["gpu"], "gpus_per_instance": int(row["gpus_per_instance"]),
             "pricing": pricing, "kind": KIND[pricing], "currency": row["currency"],
             "price_per_gpu_hour": float(row["price_per_gpu_hour"])}
    if (inst := num(row["price_per_instance_hour"])) is not None:
        entry["price_per_instance_hour"] = float(inst)
    entry.update(as_of=row["price_date"].strip(), source=row["source"], notes=" ".join(notes))
    return entry


def hardware_md_cny_rows(text: str) -> list[dict[str, str]]:
    """hardware.md section 2.3 'China (CNY)': | Platform | GPU | CNY / GPU-hour | Source |."""
    section = text.split("### 2.3", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[\d.]+", cells[2]):
            rows.append({"provider": cells[0], "gpu": cells[1], "price": cells[2], "source": cells[3]})
    return rows


def seed_offer(seed_text: str) -> dict:
    quote = next((line.strip() for line in seed_text.splitlines() if "27.08" in line), None)
    if quote is None or "A100 80G" not in seed_text:
        raise SystemExit("seed article no longer quotes A100 (80G) at 27.08")
    return {"provider": "Alibaba Cloud", "region": "(not stated)", "instance": "(not stated)",
            "gpu_id": "a100-sxm4-80gb", "gpu_label": "A100 (article discusses A100 80GB)",
            "gpus_per_instance": 1, "pricing": "on-demand", "kind": "on-demand", "currency": "CNY",
            "price_per_gpu_hour": 27.08, "as_of": "unknown (article undated)",
            "source": f"shared seed article {SEED_ID} (Chinese blog on 7B fine-tuning cost)",
            "notes": ("The article picks 'A100 80GB' as the card that fits a 7B full fine-tune and prices "
                      f"renting it on Alibaba Cloud (阿里云): '{quote}'. It gives no date, instance family, "
                      "region or SXM/PCIe form; no Alibaba price page confirms it (hardware.md 2.3: not found).")}


# --- TOML output (flat tables, arrays of tables, string/number/bool/list values) ------------------

def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(type(value))


def toml_table(header: str, entry: dict) -> list[str]:
    lines = [header]
    nested = {k: v for k, v in entry.items() if isinstance(v, dict)}
    lines += [f"{k} = {toml_value(v)}" for k, v in entry.items() if k not in nested]
    for key, sub in nested.items():
        name = header.strip("[]")
        lines += [f"[{name}.{key}]"] + [f"{k} = {toml_value(v)}" for k, v in sub.items()]
    return lines + [""]


def write_toml(path: Path, comment: str, tables: list[tuple[str, dict]]) -> None:
    lines = [f"# {line}".rstrip() for line in comment.splitlines()] + [""]
    for header, entry in tables:
        lines += toml_table(header, entry)
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--out", type=Path, default=ROOT / "src" / "trainplan" / "catalog" / "data")
    args = ap.parse_args(argv)
    ref = args.shared / "reference"

    gpus = [gpu_entry(r) for r in csv.DictReader(open(ref / "gpus.csv", encoding="utf-8"))]
    rows = {r["gpu_id"]: r for r in csv.DictReader(open(ref / "gpus.csv", encoding="utf-8"))}
    gpus += [gpu_entry({**{c: rows[r["peaks_of"]][c] for c in PEAK_COLUMNS.values()}, **r}) for r in EXTRA_GPU_ROWS]
    ids = {g["id"] for g in gpus}
    names = [n for g in gpus for n in [g["id"], *g["aliases"]]]
    if len(names) != len(set(names)):
        raise SystemExit("duplicate GPU id/alias")

    prices, skipped = [], []
    for r in csv.DictReader(open(ref / "cloud_prices.csv", encoding="utf-8")):
        gid, note = PRICE_GPU.get(r["gpu"], (None, ""))
        if gid is None or gid not in ids:
            skipped.append(f"{r['provider']} {r['instance_type']} ({r['gpu']}): no catalog GPU")
            continue
        prices.append(price_entry(r, gid, note))

    added_md = 0
    for r in hardware_md_cny_rows((ref / "hardware.md").read_text(encoding="utf-8")):
        gid = PRICE_GPU.get(r["gpu"], (None, ""))[0]
        if gid is None:
            skipped.append(f"hardware.md 2.3 {r['provider']} ({r['gpu']}): no catalog GPU")
        elif not any(p["gpu_id"] == gid and p["currency"] == "CNY"
                     and p["price_per_gpu_hour"] == float(r["price"]) for p in prices):
            prices.append({"provider": r["provider"], "region": "China", "instance": "cheapest listing",
                           "gpu_id": gid, "gpu_label": r["gpu"], "gpus_per_instance": 1,
                           "pricing": "cheapest-listing", "kind": KIND["cheapest-listing"], "currency": "CNY",
                           "price_per_gpu_hour": float(r["price"]), "as_of": "unknown",
                           "source": r["source"], "notes": "from hardware.md section 2.3"})
            added_md += 1
    prices.append(seed_offer((args.shared / "seeds" / f"{SEED_ID}.txt").read_text(encoding="utf-8")))

    providers = sorted({p["provider"] for p in prices})
    provider_tables = [("[[provider]]", {"name": n, "aliases": provider_aliases(n)}) for n in providers]

    args.out.mkdir(parents=True, exist_ok=True)
    write_toml(args.out / "gpus.toml",
               "Accelerator catalog. Generated by tools/build_hw_catalog.py from shared reference/gpus.csv\n"
               "(see hardware.md there). Units: memory_gb = vendor label (decimal GB); memory_gib_reported =\n"
               "driver total in GiB; bandwidths GB/s (1e9 B/s); peak_tflops dense, per dtype (int8 in TOPS).",
               [("[capacity_basis]", capacity_basis(gpus))] + [("[[gpu]]", g) for g in gpus])
    write_toml(args.out / "prices.toml",
               "GPU rental prices. Generated by tools/build_hw_catalog.py from shared reference/cloud_prices.csv,\n"
               "hardware.md section 2.3 and seed article 003. price_per_gpu_hour in `currency`; as_of is the\n"
               "date the source recorded (ISO where known, otherwise as the source gives it).",
               provider_tables + [("[[price]]", p) for p in prices])

    print(f"gpus.toml: {len(gpus)} GPUs")
    print(f"prices.toml: {len(prices)} offers ({added_md} added from hardware.md 2.3, rest already in CSV; "
          f"1 from seed {SEED_ID}), {len(providers)} providers")
    for line in skipped:
        print(f"skipped: {line}")
    from trainplan import catalog
    from trainplan.catalog.store import write_snapshot

    catalog.clear_caches()
    print(f"wrote {write_snapshot(catalog.derived_snapshot_values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
