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
    "h20": "hopper", "h20-141gb": "hopper", "h200-sxm": "hopper",
    "b200": "blackwell", "gb200": "blackwell", "rtx5090": "blackwell", "b300": "blackwell", "gb300": "blackwell",
    "l4": "ada", "l20": "ada", "l40": "ada", "l40s": "ada", "rtx4090": "ada", "rtx4090d": "ada",
    "rtx6000-ada": "ada",
    "rtx4080": "ada", "rtx4080-super": "ada", "rtx4070ti": "ada", "rtx4060ti-16gb": "ada", "rtx4000-ada": "ada",
    "rtx3090ti": "ampere", "rtx3080": "ampere", "rtx3060": "ampere", "rtx-a4000": "ampere", "rtx-a5000": "ampere",
    "rtx2080ti": "turing", "titan-rtx": "turing", "quadro-rtx-8000": "turing",
    "p100-pcie-16gb": "pascal", "p40": "pascal",
    "rtx5080": "blackwell", "rtx-pro-6000-blackwell": "blackwell",
    "v100-pcie-16gb": "volta", "v100-pcie-32gb": "volta", "v100s-pcie-32gb": "volta", "a800-pcie-80gb": "ampere",
    "h800-pcie": "hopper", "h200-nvl": "hopper", "rtx4070": "ada", "rtx4070-super": "ada", "rtx4070ti-super": "ada",
    "rtx4060ti-8gb": "ada", "rtx3080ti": "ampere", "rtx3080-12gb": "ampere", "rtx3070": "ampere", "rtx3060ti": "ampere",
    "quadro-rtx-6000": "turing",
    "mi250x": "cdna2", "mi300x": "cdna3", "mi325x": "cdna3", "mi355x": "cdna4",
    "ascend-910b": "davinci", "gaudi2": "gaudi2", "gaudi3": "gaudi3",
    "mi250": "cdna2", "mi210": "cdna2", "b100": "blackwell", "rtx3070ti": "ampere", "rtx5000-ada": "ada",
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
    # the 141 GB HBM3e part is sold as "H20-3e" ("2 x H20-3e (141GB)", code-index file 70460578541)
    "h20-141gb": ["h20-3e", "h20-141g"],
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
    # "RTX A6000 Ada" / "A6000 Ada": how rentals list the RTX 6000 Ada (RunPod's "RTX A6000 Ada" beside its "RTX A6000",
    # code-index file 44446219753; "RTX A6000 Ada (SM89)", code-index file 55622889780)
    "rtx6000-ada": ["6000-ada", "rtx-6000-ada", "rtx6000ada", "a6000-ada", "rtx-a6000-ada"],
    "rtx4080": ["4080", "rtx-4080", "geforce-rtx-4080", "rtx4080-16gb"],
    # "4080S" / "4070S": the SUPER cards as listings and benchmarks shorten them
    "rtx4080-super": ["4080-super", "4080super", "rtx-4080-super", "rtx4080super", "geforce-rtx-4080-super", "4080s",
                      "rtx4080s", "rtx-4080s"],
    "rtx4070ti": ["4070ti", "4070-ti", "rtx-4070-ti", "rtx4070-ti", "geforce-rtx-4070-ti"],
    "rtx4060ti-16gb": ["4060ti", "4060-ti", "rtx4060ti", "rtx-4060-ti", "rtx-4060-ti-16gb", "geforce-rtx-4060-ti"],
    "rtx3090ti": ["3090ti", "3090-ti", "rtx-3090-ti", "rtx3090-ti", "geforce-rtx-3090-ti"],
    "rtx3080": ["3080", "rtx-3080", "rtx3080-10gb", "geforce-rtx-3080"],
    "rtx3060": ["3060", "rtx-3060", "rtx3060-12gb", "rtx-3060-12gb", "geforce-rtx-3060"],
    "rtx2080ti": ["2080ti", "2080-ti", "rtx-2080-ti", "rtx2080-ti", "geforce-rtx-2080-ti"],
    "titan-rtx": ["titanrtx", "nvidia-titan-rtx"],
    "rtx5080": ["5080", "rtx-5080", "geforce-rtx-5080"],
    "rtx-a4000": ["a4000", "rtxa4000"],
    "rtx-a5000": ["a5000", "rtxa5000"],
    "rtx4000-ada": ["4000-ada", "rtx-4000-ada", "rtx4000ada"],
    "quadro-rtx-8000": ["rtx8000", "rtx-8000", "quadro-rtx8000"],
    "p100-pcie-16gb": ["p100", "tesla-p100", "p100-16gb", "p100-pcie", "tesla-p100-pcie-16gb"],
    "p40": ["tesla-p40", "p40-24gb"],
    "rtx-pro-6000-blackwell": ["rtx-pro-6000", "rtxpro6000", "pro-6000-blackwell",
                               "rtx-pro-6000-blackwell-workstation"],
    "v100-pcie-16gb": ["v100-pcie-16g", "tesla-v100-pcie-16gb"],
    "v100-pcie-32gb": ["v100-pcie", "v100-pcie-32g", "tesla-v100-pcie-32gb"],
    "v100s-pcie-32gb": ["v100s", "v100s-pcie", "v100s-32gb", "tesla-v100s", "tesla-v100s-pcie-32gb"],
    "a800-pcie-80gb": ["a800-pcie", "a800-pcie-80g", "a800-80gb-pcie"],
    "h800-pcie": ["h800-pcie-80gb"],
    "h200-nvl": ["h200-nvl-141gb", "h200nvl"],
    "rtx4070": ["4070", "rtx-4070", "geforce-rtx-4070"],
    "rtx4070-super": ["4070-super", "4070super", "rtx-4070-super", "rtx4070super", "geforce-rtx-4070-super", "4070s",
                      "rtx4070s", "rtx-4070s"],
    "rtx4070ti-super": ["4070ti-super", "4070-ti-super", "4070tisuper", "rtx-4070-ti-super", "rtx4070-ti-super",
                        "rtx4070tisuper", "geforce-rtx-4070-ti-super"],
    "rtx4060ti-8gb": ["4060ti-8gb", "4060-ti-8gb", "rtx-4060-ti-8gb"],
    "rtx3080ti": ["3080ti", "3080-ti", "rtx-3080-ti", "rtx3080-ti", "geforce-rtx-3080-ti"],
    "rtx3080-12gb": ["3080-12gb", "rtx-3080-12gb", "rtx3080-12g"],
    "rtx3070": ["3070", "rtx-3070", "geforce-rtx-3070"],
    "rtx3060ti": ["3060ti", "3060-ti", "rtx-3060-ti", "rtx3060-ti", "geforce-rtx-3060-ti"],
    "quadro-rtx-6000": ["quadro-rtx6000", "quadrortx6000"],
    "mi250x": ["instinct-mi250x"],
    "mi300x": ["instinct-mi300x"],
    "mi325x": ["instinct-mi325x"],
    "mi355x": ["instinct-mi355x"],
    "ascend-910b": ["910b", "ascend910b"],
    "gaudi2": ["gaudi-2"],
    "gaudi3": ["gaudi-3"],
    "mi250": ["instinct-mi250"],
    "mi210": ["instinct-mi210"],
    "b100": ["b100-sxm", "hgx-b100", "b100-192gb"],
    "rtx3070ti": ["3070ti", "3070-ti", "rtx-3070-ti", "rtx3070-ti", "geforce-rtx-3070-ti"],
    "rtx5000-ada": ["5000-ada", "rtx-5000-ada", "rtx5000ada"],
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
    # an HBM part not in gpus.csv: its driver total is the H200 SXM's (143771 MiB, hardware.md 1.2), not 0.99 x 141
    "h200-nvl": (143771, "nvidia-smi 'NVIDIA H200 NVL ... 600W | 0MiB / 143771MiB' (code index files 52951295611, "
                         "58509401182; find_string 'NVIDIA H200 NVL, 143771')"),
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

# Parts gpus.csv does not list that users of rented and desktop boxes train on (GeForce, workstation, older
# data-centre cards, AMD's MI355X). They give their own dense peaks (`peaks_of` empty). Training peaks: the
# 16-bit tensor rate with FP32 accumulate; GeForce Turing/Ampere/Ada/Blackwell run it at half the FP16-accumulate
# rate (Turing: RTX 2080 Ti 53.8 vs 107.6; GA102: RTX 3090 71 vs 142; Ada: RTX 4090 165.2 vs 330.3, and FP8 the
# same), workstation and data-centre parts do not. Turing and Pascal have no bf16 (the runtime falls back).
_LAMO = ("github:lamonoai/gpumap nvidia/GPU.md@8d5e174 (NVIDIA spec table: FP16/BF16 tensor with FP32 accumulate "
         "rows, dense and *sparse)")
_VDUMA = ("github:VladislavDuma/gpu_specs README.md@103f341 (FP32; FP16/BF16/FP8/INT8 tensor dense / *sparse, the "
          "FP16-accumulate rates: RTX 4090 330 / 660*; bandwidth; nvidia-smi MiB)")
_TURING = ("https://developer.nvidia.com/blog/nvidia-turing-architecture-in-depth/ (Table 1, Reference / Founders "
           "Edition: 'Peak FP16 Tensor TFLOPS with FP16 Accumulate' RTX 2080 Ti 107.6 / 113.8, Quadro RTX 6000 130.5; "
           "'with FP32 Accumulate' 53.8 / 56.9 and 130.5; INT8 tensor 215.2 / 227.7 and 261.0; 'TU102 includes two "
           "NVLink x8 links ... 100 Gigabytes/second')")
_CRAMMING = ("arXiv:2212.14034 (Geiping & Goldstein, Cramming) appendix B.1 ('The Titan RTX comes out at 130.5 "
             "TFLOP/s, in Peak FP16 Tensor TFLOPS with FP32 Accumulate' per the GA102 whitepaper; RTX 2080 Ti 53.8 "
             "per the Turing whitepaper, reference edition)")
_AMPERE_PRO = ("https://www.hardwareluxx.de/index.php/news/hardware/grafikkarten/55893-neue-rtx-gpus-fuer-notebooks-u"
               "nd-workstations.html (2021-04: RTX A5000 / A4000: FP32 27.8 / 19.2, Tensor 222.2 / 153.4 TFLOPS, 24 / "
               "16 GB GDDR6, 768 / 448 GB/s, 230 / 140 W)")
EXTRA_GPU_ROWS += (
    {"gpu_id": "rtx4080", "vendor": "NVIDIA", "name": "GeForce RTX 4080", "form_factor": "PCIe consumer",
     "memory_gb": "16", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "717", "peaks_of": "",
     "fp32_tflops": "48.7", "tf32_tflops_dense": "48.7", "bf16_tflops_dense": "97.5", "fp16_tflops_dense": "97.5",
     "fp8_tflops_dense": "195", "int8_tops_dense": "390",
     "flops_basis": "FP32-accumulate rates (training-relevant): FP16-acc 195 (390 sparse) / 2; FP8 FP16-acc 390 / 2",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "320",
     "launch_year": "2022", "confidence": "high",
     "source": _LAMO + " | https://www.holynerdvana.com/2022/10/nvidia-geforce-rtx-4080-specifications.html "
               "(Tom's-derived: FP32 48.7, 'FP16 TFLOPS with Sparsity (FP8) 390 (780)', 717 GB/s, 320 W, 2505 MHz)",
     "notes": "AD103, 9728 CUDA cores. lamonoai: FP16 tensor FP16-acc 195 / FP32-acc 97 dense, BF16 97, FP8 390 (the "
              "FP16-accumulate figure, as for the RTX 4090), INT8 390; 97.5 kept (390 sparse FP16 / 4, = 2 x 48.7). "
              "FP8 with FP32 accumulate is half the FP16-accumulate 390, as the Ada whitepaper gives it for the 4090."},
    {"gpu_id": "rtx4080-super", "vendor": "NVIDIA", "name": "GeForce RTX 4080 SUPER", "form_factor": "PCIe consumer",
     "memory_gb": "16", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "736", "peaks_of": "",
     "fp32_tflops": "52.2", "tf32_tflops_dense": "52.2", "bf16_tflops_dense": "104.5", "fp16_tflops_dense": "104.5",
     "fp8_tflops_dense": "209", "int8_tops_dense": "418",
     "flops_basis": "FP32-accumulate rates: half the FP16-accumulate 209 (836 AI TOPS = FP8 sparse / 4); FP8 418 / 2",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "", "tdp_w": "320",
     "launch_year": "2024", "confidence": "medium",
     "source": _VDUMA + " | github:OpenDocCN/hackernews-2024-zh "
               "docs/2401/GeForce-RTX-40-SUPER-Series-Graphics-Cards-Launching-This-January...-GeForce-News---NVIDIA."
               "md@5b11b61 (copy of nvidia.com/en-us/geforce/news/geforce-rtx-4080-4070-ti-4070-super-gpu: 836 AI "
               "TOPS, GDDR6X at 23 Gbps) | github:everyday-cc/ai "
               "_news/2024-01-25-leaked-benchmarks-reveal-the-nvidia-rtx-4080-super-gpu-...md@949cbcc (TechRadar: "
               "256-bit, 16 GB at 23 Gbps, 320 W TGP, 52 shader TFLOPS, 836 AI TOPS)",
     "notes": "AD103, 10240 CUDA cores. VladislavDuma: FP32 52.22, FP16/BF16 tensor 209 / 418* (FP16 accumulate), "
              "FP8 418 / 836*, 736 GB/s, 16376 MiB. 104.5 = 209 / 2 (GeForce Ada FP32 accumulate), = 2 x 52.2. PCIe "
              "generation not in these sources (the runtime assumes Gen4)."},
    {"gpu_id": "rtx4070ti", "vendor": "NVIDIA", "name": "GeForce RTX 4070 Ti", "form_factor": "PCIe consumer",
     "memory_gb": "12", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "504", "peaks_of": "",
     "fp32_tflops": "40.1", "tf32_tflops_dense": "40.1", "bf16_tflops_dense": "80", "fp16_tflops_dense": "80",
     "fp8_tflops_dense": "160.5", "int8_tops_dense": "321",
     "flops_basis": "FP32-accumulate rates (lamonoai FP32-acc row); FP16-acc 160, FP8 FP16-acc 321 / 2",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "285",
     "launch_year": "2023", "confidence": "high",
     "source": _LAMO + " | " + _VDUMA + " | https://incpak.com/?p=136649 (announced as 'RTX 4080 12GB': AD104, 7680 "
               "CUDA cores, 2.61 GHz boost, 285 W)",
     "notes": "AD104, 7680 CUDA cores; announced in 2022 as the RTX 4080 12GB, sold from January 2023 as the 4070 "
              "Ti. lamonoai: FP32 40, BF16/FP16 FP32-acc 80, FP16-acc 160, FP8/INT8 321; VladislavDuma: FP32 40.09, "
              "FP16 tensor 160, FP8 320, 504 GB/s, 12282 MiB. The 4070 Ti SUPER (16 GB, AD103) is another part."},
    {"gpu_id": "rtx4060ti-16gb", "vendor": "NVIDIA", "name": "GeForce RTX 4060 Ti 16GB", "form_factor": "PCIe consumer",
     "memory_gb": "16", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "288", "peaks_of": "",
     "fp32_tflops": "22.1", "tf32_tflops_dense": "22.1", "bf16_tflops_dense": "44", "fp16_tflops_dense": "44",
     "fp8_tflops_dense": "88.5", "int8_tops_dense": "177",
     "flops_basis": "FP32-accumulate rates: half VladislavDuma's FP16-accumulate 88 (FP8 177)",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x8", "tdp_w": "165",
     "launch_year": "2023", "confidence": "medium",
     "source": _VDUMA + " | https://cputronic.com/gpu/nvidia-geforce-rtx-4060-ti-16-gb (22.06 TFLOPS, 165 W, PCIe 4.0 "
               "x8, 16 GB GDDR6, May 2023) | "
               "https://cpu-gpu.alldbin.com/graphics-card-comparison/GeForce-RTX-4060-Ti-16-GB-and-GeForce-310-OEM-co"
               "mparison.html (288.0 GB/s, 128-bit, 165 W, PCIe 4.0 x8)",
     "notes": "AD106, 4352 CUDA cores; 16380 MiB (VladislavDuma). A PCIe 4.0 x8 card: half the lanes of an x16 one. "
              "The 8 GB card (160 W) is the same GPU, rtx4060ti-8gb."},
    {"gpu_id": "rtx3090ti", "vendor": "NVIDIA", "name": "GeForce RTX 3090 Ti", "form_factor": "PCIe consumer",
     "memory_gb": "24", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "1008", "peaks_of": "",
     "fp32_tflops": "40", "tf32_tflops_dense": "40", "bf16_tflops_dense": "80", "fp16_tflops_dense": "80",
     "fp8_tflops_dense": "", "int8_tops_dense": "320",
     "flops_basis": "BF16/FP16 with FP32 accumulate (GeForce half rate); FP16 with FP16 accumulate = 160 dense",
     "gpu_interconnect": "PCIe (NVLink bridge, 2 GPUs; bandwidth not verified)", "gpu_gpu_bw_gbps_bidir": "",
     "pcie": "Gen4 x16", "tdp_w": "450", "launch_year": "2022", "confidence": "medium",
     "source": _LAMO + " | "
               "https://www.tweaktown.com/news/84164/nvidia-geforce-rtx-3090-ti-full-specs-price-performance-details/"
               "index.html (10752 CUDA cores, 1860 MHz boost, 24 GB GDDR6X at 21 Gbps, 1008 GB/s, 450 W, 40 TFLOPS "
               "FP32) | "
               "https://elotrolado.net/hilo_nvidia-lanza-la-geforce-rtx-3090-ti-toda-la-potencia-de-ampere-por-2-249-"
               "euros_2451835 (launch: 40 TFLOPS, 450 W)",
     "notes": "Full GA102. lamonoai: FP16 tensor FP16-acc 160 / FP32-acc 80, BF16 80, INT8 320, NVLink supported. "
              "tweaktown expected the Founders Edition to be PCIe 5.0; lamonoai lists PCIe 4.0 x16, kept. NVLink "
              "bridge treated as on rtx3090: PCIe is timed (rented boxes rarely have the bridge)."},
    {"gpu_id": "rtx3080", "vendor": "NVIDIA", "name": "GeForce RTX 3080 (10GB)", "form_factor": "PCIe consumer",
     "memory_gb": "10", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "760", "peaks_of": "",
     "fp32_tflops": "29.8", "tf32_tflops_dense": "29.8", "bf16_tflops_dense": "59.5", "fp16_tflops_dense": "59.5",
     "fp8_tflops_dense": "", "int8_tops_dense": "238",
     "flops_basis": "BF16/FP16 with FP32 accumulate (GeForce half rate); FP16 with FP16 accumulate = 119 dense",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "320",
     "launch_year": "2020", "confidence": "high",
     "source": _LAMO + " | "
               "https://fudzilla.net/news/graphics/51457-nvidia-rtx-30-series-specifications-are-now-official (8704 "
               "CUDA cores, 29.8 TFLOPS, 1.71 GHz, 10 GB GDDR6X 19 Gbps 320-bit, 320 W) | "
               "https://www.itcreations.com/nvidia-gpu/nvidia-geforce-rtx-3080-gpu (760 GB/s, 320 W, 272 tensor cores)",
     "notes": "GA102-200, 68 SMs. lamonoai: FP16 tensor FP16-acc 119 / FP32-acc 59.5, BF16 59.5, INT8 238, no "
              "NVLink. The later 12 GB card (8960 cores, 384-bit, 912 GB/s, 350 W) is rtx3080-12gb."},
    {"gpu_id": "rtx3060", "vendor": "NVIDIA", "name": "GeForce RTX 3060 (12GB)", "form_factor": "PCIe consumer",
     "memory_gb": "12", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "360", "peaks_of": "",
     "fp32_tflops": "12.7", "tf32_tflops_dense": "12.7", "bf16_tflops_dense": "25.5", "fp16_tflops_dense": "25.5",
     "fp8_tflops_dense": "", "int8_tops_dense": "101.9",
     "flops_basis": "BF16/FP16 with FP32 accumulate = 2 x FP32 (GeForce GA10x, as RTX 3090 71 = 2 x 35.6); FP16-acc "
                    "~51 (NVIDIA's 101 tensor TFLOPS are sparse FP16-acc)", "gpu_interconnect": "none (no NVLink)",
     "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "170", "launch_year": "2021", "confidence": "medium",
     "source": "https://sysrqmts.com/ru/gpus/compare/nvidia-geforce-rtx-3060-vs-nvidia-rtx-a6000 (GA106, 3584 "
               "shaders, 1777 MHz boost, FP32 12.74 TFLOPS, 12 GB GDDR6, 192-bit, 360.0 GB/s, PCIe 4.0 x16, 112 "
               "tensor cores) | https://techtaks.com/geforce-rtx-3060-nvidia-finally-details-the-specifications/ "
               "(NVIDIA: 13 shader-TFLOPs, 101 tensor-TFLOPs, 170 W TGP) | "
               "https://www.guru3d.com/story/geforce-rtx-4060-ti-gpu-pictured/ (NVIDIA table: RTX 3060 12.7 TFLOPS, "
               "360 GB/s, 170 W, PCIe Gen4 x16) | "
               "https://hmc-tech.com/gpu/nvidia-geforce-rtx-4080-vs-nvidia-geforce-rtx-3060-ga104 (INT4 tensor "
               "sparse 407.6 TOPS -> INT8 dense 101.9) | " + _LAMO,
     "notes": "lamonoai lists FP32 11.9 / FP32-acc 23.9 / FP16-acc 47.7: the 3060 Ti's 1665 MHz boost applied to the "
              "3060 (its 3060 Ti column uses the 3060's 1777 MHz); 1777 MHz (NVIDIA, sysrqmts) kept: 12.74 x 2 = "
              "25.5, and 101 sparse FP16-acc / 4 = 25.3. techtaks' pre-launch 16 Gbps / 384 GB/s memory vs 15 Gbps / "
              "360 GB/s shipped (sysrqmts, guru3d): 360 kept. The 8 GB card is another part."},
    {"gpu_id": "rtx2080ti", "vendor": "NVIDIA", "name": "GeForce RTX 2080 Ti", "form_factor": "PCIe consumer",
     "memory_gb": "11", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "616", "peaks_of": "",
     "fp32_tflops": "13.4", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "53.8",
     "fp8_tflops_dense": "", "int8_tops_dense": "215.2",
     "flops_basis": "FP16 = tensor with FP32 accumulate (GeForce half rate; FP16-acc 107.6), reference clocks; Turing "
                    "has no BF16/TF32/FP8",
     "gpu_interconnect": "PCIe (NVLink bridge, 2 GPUs, TU102 100 GB/s bidirectional; not assumed)",
     "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen3 x16", "tdp_w": "250", "launch_year": "2018", "confidence": "high",
     "source": _TURING + " | " + _CRAMMING + " | https://gpu.spicedreamphone.com/ru/gpu/nvidia/geforce-rtx-2080-ti "
               "(TU102, PCIe 3.0 x16, 11 GB GDDR6 352-bit, 616.0 GB/s, FP32 13.45, released 2018-09-20)",
     "notes": "TU102, 4352 CUDA cores, 544 tensor cores, 11264 MB. Reference figures kept (1545 MHz boost, 250 W); "
              "Founders Edition 1635 MHz: FP32 14.2, FP16 tensor FP32-acc 56.9, INT8 227.7, 260 W. China-modded 22 GB "
              "boards ('2080Ti 22G') are this GPU with doubled memory; they map here (11 GB)."},
    {"gpu_id": "titan-rtx", "vendor": "NVIDIA", "name": "TITAN RTX", "form_factor": "PCIe desktop (TITAN, prosumer)",
     "memory_gb": "24", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "672", "peaks_of": "",
     "fp32_tflops": "16.3", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "130.5",
     "fp8_tflops_dense": "", "int8_tops_dense": "261",
     "flops_basis": "FP16 = tensor with FP32 accumulate, full rate (not halved on TITAN); Turing has no BF16/TF32/FP8",
     "gpu_interconnect": "NVLink bridge (2 GPUs, TU102 100 GB/s bidirectional; not assumed)",
     "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen3 x16", "tdp_w": "280", "launch_year": "2018", "confidence": "medium",
     "source": _CRAMMING + " | https://www.tomshardware.com/news/nvidia-titan-rtx-specs-pricing,38184.html "
               "(2018-12-03: 4608 CUDA cores, 576 tensor cores, 1770 MHz boost, 16.3 TFLOPS FP32, 130 TFLOPS deep "
               "learning, 24 GB GDDR6, 672 GB/s, 280 W) | "
               "https://hothardware.com/news/nvidia-titan-rtx-turing-gpu-24gb-gddr6-11-gigarays-ray-tracing (full "
               "TU102, NVLink pairs, 280 W) | " + _TURING,
     "notes": "Full TU102 at 1770 MHz, the Quadro RTX 6000's configuration: INT8 tensor 261.0 taken from that row of "
              "the Turing table. PCIe 3.0 x16 as the other TU102 boards (RTX 2080 Ti, Quadro RTX 8000). Sold as "
              "'NVIDIA TITAN RTX', not GeForce: the runtime gives it no GeForce peer-to-peer note."},
    {"gpu_id": "rtx5080", "vendor": "NVIDIA", "name": "GeForce RTX 5080", "form_factor": "PCIe consumer",
     "memory_gb": "16", "memory_gib_total_reported": "", "memory_type": "GDDR7", "mem_bw_gbps": "960", "peaks_of": "",
     "fp32_tflops": "56.3", "tf32_tflops_dense": "56.3", "bf16_tflops_dense": "112.6", "fp16_tflops_dense": "112.6",
     "fp8_tflops_dense": "225", "int8_tops_dense": "450",
     "flops_basis": "FP32-accumulate rates: 1801 AI TOPS (FP4 sparse) / 16 for BF16/FP16, / 8 for FP8 (GeForce "
                    "Blackwell halves FP32 accumulate, as the rtx5090 row); FP16-acc 225",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen5 x16", "tdp_w": "360",
     "launch_year": "2025", "confidence": "medium",
     "source": _LAMO + " | https://www.notebookcheck.net/Nvidia-GeForce-RTX-5080-Benchmarks-and-Specs.935679.0.html "
               "(GB203, 10752 CUDA cores, 2.62 GHz boost, 16 GB GDDR7 256-bit 960 GB/s, 1801 AI TOPS, 360 W TGP)",
     "notes": "lamonoai: FP32 56, BF16/FP16 FP32-acc 113, FP16-acc 225, FP8 225, INT8 450, 960 GB/s, 360 W, PCIe 5.0 "
              "x16, no NVLink. 56.3 = 10752 x 2 x 2.62 GHz; 112.6 = 1801 / 16."},
    {"gpu_id": "rtx-a4000", "vendor": "NVIDIA", "name": "RTX A4000", "form_factor": "PCIe workstation (single slot)",
     "memory_gb": "16", "memory_gib_total_reported": "", "memory_type": "GDDR6 ECC", "mem_bw_gbps": "448",
     "peaks_of": "", "fp32_tflops": "19.2", "tf32_tflops_dense": "38.4", "bf16_tflops_dense": "76.7",
     "fp16_tflops_dense": "76.7", "fp8_tflops_dense": "", "int8_tops_dense": "153.4",
     "flops_basis": "dense = datasheet tensor 153.4 (sparse) / 2; TF32 / 4; INT8 dense = 153.4 (lamonoai 153)",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "140",
     "launch_year": "2021", "confidence": "high",
     "source": "https://www.ecer.com/corp/details-uuuedqa-p1bsb03-pci-express-3-0-x16-nvidia-rtx-a4000-16g-graphics-"
               "card-for-professional-video-editing.html (copy of the A4000 datasheet: 16 GB GDDR6 ECC, 448 GB/s, "
               "6144 CUDA cores, 19.2 TFLOPS, Tensor 153.4 TFLOPS, PCIe 4.0 x16, 140 W, single slot) | " +
               _AMPERE_PRO + " | " + _LAMO,
     "notes": "GA104, 192 tensor cores. lamonoai: TF32 38, FP16/BF16 77 dense (FP16 and FP32 accumulate alike), INT8 "
              "153, no NVLink. ECC GDDR6: the driver may report ~0.94 of the label with ECC on (like A10/A40)."},
    {"gpu_id": "rtx-a5000", "vendor": "NVIDIA", "name": "RTX A5000", "form_factor": "PCIe workstation",
     "memory_gb": "24", "memory_gib_total_reported": "", "memory_type": "GDDR6 ECC", "mem_bw_gbps": "768",
     "peaks_of": "", "fp32_tflops": "27.8", "tf32_tflops_dense": "55.6", "bf16_tflops_dense": "111.1",
     "fp16_tflops_dense": "111.1", "fp8_tflops_dense": "", "int8_tops_dense": "222.2",
     "flops_basis": "dense = datasheet tensor 222.2 (sparse) / 2; TF32 / 4; INT8 dense = 222.2 (lamonoai 222)",
     "gpu_interconnect": "NVLink bridge (2 GPUs, 112.5 GB/s bidirectional per datasheet; not assumed)",
     "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "230", "launch_year": "2021", "confidence": "high",
     "source": _AMPERE_PRO + " | " + _LAMO + " | code index: an RTX A5000 datasheet transcription (file 23081053719: "
               "24 GB GDDR6 ECC, 768 GB/s, 8192 CUDA cores, 27.8 TFLOPS, Tensor 222.2 TFLOPS, 'Low-profile bridges "
               "connect two RTX A5000 GPUs', NVLink 112.5 GB/s bidirectional, PCIe 4.0 x16, 230 W)",
     "notes": "GA102, 256 tensor cores. lamonoai: TF32 56, FP16/BF16 111 dense, INT8 222, NVLink supported. The "
              "NVLink bandwidth is left blank as on rtx-a6000: rented boxes rarely have the bridge, so PCIe is timed. "
              "ECC GDDR6: the driver may report ~0.94 of the label with ECC on."},
    {"gpu_id": "rtx4000-ada", "vendor": "NVIDIA", "name": "RTX 4000 Ada Generation",
     "form_factor": "PCIe workstation (single slot)", "memory_gb": "20", "memory_gib_total_reported": "",
     "memory_type": "GDDR6 ECC", "mem_bw_gbps": "360", "peaks_of": "", "fp32_tflops": "26.7", "tf32_tflops_dense": "53",
     "bf16_tflops_dense": "107", "fp16_tflops_dense": "107", "fp8_tflops_dense": "214", "int8_tops_dense": "214",
     "flops_basis": "dense (lamonoai); FP32 accumulate at the full rate, as on RTX 6000 Ada",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "130",
     "launch_year": "2023", "confidence": "medium",
     "source": _LAMO + " | https://siliconcat.net/gpu/nvidia-rtx-4000-ada-generation (AD104, 6144 CUDA cores, 48 SMs, "
               "192 tensor cores, 2175 MHz boost, August 2023)",
     "notes": "lamonoai: FP32 27, TF32 53 / 107*, FP16 (both accumulates) and BF16 107 / 214*, FP8 and INT8 214 / "
              "428*, 20 GB GDDR6 ECC, 160-bit, 360 GB/s, 130 W, PCIe 4.0 x16, no NVLink. FP32 26.7 = 6144 x 2 x 2.175 "
              "GHz."},
    {"gpu_id": "quadro-rtx-8000", "vendor": "NVIDIA", "name": "Quadro RTX 8000", "form_factor": "PCIe workstation",
     "memory_gb": "48", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "672", "peaks_of": "",
     "fp32_tflops": "16.3", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "130.5",
     "fp8_tflops_dense": "", "int8_tops_dense": "261",
     "flops_basis": "FP16 = tensor, FP16 or FP32 accumulate alike (datasheet footnote); Turing has no BF16/TF32/FP8",
     "gpu_interconnect": "NVLink bridge (2 GPUs, 100 GB/s per datasheet; not assumed)", "gpu_gpu_bw_gbps_bidir": "",
     "pcie": "Gen3 x16", "tdp_w": "295", "launch_year": "2018", "confidence": "high",
     "source": "https://maychudoanhnghiep.vn/leadtek-nvidia-quadro-rtx8000-turing-gpu4608-cuda-cores48gb-gddr64xdp.h"
               "tml (Leadtek copy of the datasheet: 4608 CUDA cores, 576 tensor cores, 48 GB GDDR6, 384-bit, 672 "
               "GB/s, FP32 16.3, FP16 32.6, '130.5 Tensor TFLOPS' with footnote 'FP16 matrix multiply with FP16 or "
               "FP32 accumulate', max 295 W, PCI Express 3.0 x16, NVLink 100 GB/s) | " + _TURING,
     "notes": "The Quadro RTX 6000's GPU (full TU102, 1770 MHz) with 48 GB: the Turing table's RTX 6000 column gives "
              "FP16 tensor 130.5 with either accumulate and INT8 tensor 261.0 (the datasheet's INT8 65.2 TOPS is the "
              "non-tensor rate). NVLink bandwidth left blank as on rtx-a6000 (PCIe timed). Launch year: the Turing "
              "post (2018-09) already names it."},
    {"gpu_id": "p100-pcie-16gb", "vendor": "NVIDIA", "name": "Tesla P100 PCIe 16GB", "form_factor": "PCIe",
     "memory_gb": "16", "memory_gib_total_reported": "", "memory_type": "HBM2", "mem_bw_gbps": "732", "peaks_of": "",
     "fp32_tflops": "9.3", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "18.7",
     "fp8_tflops_dense": "", "int8_tops_dense": "",
     "flops_basis": "FP16 = packed FP16 on the CUDA cores (2 x FP32); Pascal has no tensor cores, no BF16/TF32/FP8",
     "gpu_interconnect": "none (PCIe only; NVLink is the SXM2 P100's)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen3 x16",
     "tdp_w": "250", "launch_year": "2016", "confidence": "medium",
     "source": "https://tech4gamers.com/nvidia-tesla-p100-will-be-available-in-two-variants-of-16gb-12gb-hbm2/ (PCIe "
               "P100: FP32 9.3, FP16 18.7, FP64 4.7 TFLOPS, 1300 MHz boost, 16 GB HBM2, 250 W; NVLink variant 10.6 / "
               "21.2) | https://cputronic.com/gpu/nvidia-tesla-p100-pcie-16-gb (PCIe 3.0 x16, 16 GB HBM2, 250 W, June "
               "2016) | github:lijun99/GPU-Resources NVIDIA_GPU_SM.md@0339365 (P100: HBM2, 732 GB/s, 16 GB)",
     "notes": "GP100, 3584 CUDA cores. Bandwidth: 732 GB/s (lijun99; NVIDIA's '16GB CoWoS HBM2 at 732 GB/s' as "
              "HPC-centre pages quote it) vs 720 GB/s (tech4gamers, the SXM2 figure): 732 kept. The 12 GB PCIe card "
              "(549 GB/s) is another part."},
    {"gpu_id": "p40", "vendor": "NVIDIA", "name": "Tesla P40", "form_factor": "PCIe", "memory_gb": "24",
     "memory_gib_total_reported": "", "memory_type": "GDDR5", "mem_bw_gbps": "346", "peaks_of": "",
     "fp32_tflops": "11.76", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "",
     "fp8_tflops_dense": "", "int8_tops_dense": "",
     "flops_basis": "FP32 only: no tensor cores, FP16 at 1/64 rate (0.18 TFLOPS), no BF16; INT8 47 TOPS is DP4A",
     "gpu_interconnect": "none (PCIe only)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen3 x16", "tdp_w": "250",
     "launch_year": "2016", "confidence": "medium",
     "source": "https://omegaco.ae/shop/gpu-cards-edge-ai/nvidia-p40 (datasheet features: 47 INT8 TOPS, 3840 CUDA "
               "cores, 24 GB GDDR5, 346 GB/s, PCIe 3.0 x16, 250 W) | https://gpuark.com/en/gpu/nvidia-tesla-p40 (FP32 "
               "11.76 TFLOPS, FP16 0.1837 TFLOPS, no BF16, 347.1 GB/s, 250 W, 2016-09-13) | "
               "https://sysrqmts.com/gpus/nvidia/tesla/p40 (GP102, 1531 MHz boost, FP16 183.7 GFLOPS (1:64), FP32 "
               "11.76 TFLOPS)",
     "notes": "GP102. NVIDIA's datasheet rounds FP32 to 12 TFLOPS; 11.76 = 3840 x 2 x 1.531 GHz kept. sysrqmts lists "
              "GDDR5X and 694 GB/s, against GDDR5 346-347 GB/s elsewhere: 346 kept. The 47 TOPS INT8 (DP4A on the "
              "CUDA cores) is left out of int8 (tensor rates). 16-bit training runs at the FP32 rate here."},
    {"gpu_id": "rtx-pro-6000-blackwell", "vendor": "NVIDIA", "name": "RTX PRO 6000 Blackwell Workstation Edition",
     "form_factor": "PCIe workstation", "memory_gb": "96", "memory_gib_total_reported": "", "memory_type": "GDDR7 ECC",
     "mem_bw_gbps": "1792", "peaks_of": "", "fp32_tflops": "126", "tf32_tflops_dense": "251.9",
     "bf16_tflops_dense": "503.8", "fp16_tflops_dense": "503.8", "fp8_tflops_dense": "1007.6",
     "int8_tops_dense": "1007.6",
     "flops_basis": "dense, FP32 accumulate at the full rate (workstation part; hmc-tech FP16-acc = FP32-acc 503.8)",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen5 x16", "tdp_w": "600",
     "launch_year": "2025", "confidence": "medium",
     "source": "github:atineoSE/coding-model-seeks-gpu pipeline/pipeline/sources/rtxpro6000_specs.md@ff05294 (copy of "
               "the Workstation Edition datasheet: 24064 CUDA cores, 4000 AI TOPS (FP4 sparse), 125 TFLOPS FP32, 96 "
               "GB GDDR7 ECC, 512-bit, 1792 GB/s, PCIe 5.0 x16, 600 W) | "
               "https://hmc-tech.com/gpu/nvidia-rtx-pro-6000-blackwell-vs-amd-radeon-pro-duo-polaris (2617 MHz: FP32 "
               "125.95; FP16 tensor 503.8 with FP16 and with FP32 accumulate; BF16 503.8; TF32 251.9; FP8 1.01 PFLOPS "
               "with FP32 accumulate; INT8 1.01 POPS; dense and sparse x2) | "
               "https://gpu.name/posts/nvidia-unveils-rtx-pro-6000-blackwell-gpu-with-24-064-cores-and-96gb-memory "
               "(availability April 2025)",
     "notes": "GB202 with 188 SMs (sm120, the RTX 5090's architecture, not B200's sm100). The Workstation Edition "
              "(600 W) is this entry; the Max-Q (300 W) and the passive Server Edition share the GPU but not its "
              "clocks and memory speed, and texts naming them map here. FP8 1007.6 = 2 x 503.8 (hmc-tech rounds to "
              "1.01 P)."},
    {"gpu_id": "mi355x", "vendor": "AMD", "name": "Instinct MI355X", "form_factor": "OAM", "memory_gb": "288",
     "memory_gib_total_reported": "", "memory_type": "HBM3e", "mem_bw_gbps": "8000", "peaks_of": "",
     "fp32_tflops": "157.3", "tf32_tflops_dense": "", "bf16_tflops_dense": "2500", "fp16_tflops_dense": "2500",
     "fp8_tflops_dense": "5000", "int8_tops_dense": "5000",
     "flops_basis": "dense (AMD spec page via stas00 note 22; AMD's 'with Structured Sparsity' figures are exactly 2x)",
     "gpu_interconnect": "Infinity Fabric (xGMI), 7 x 76.5 GB/s uni", "gpu_gpu_bw_gbps_bidir": "1071",
     "pcie": "Gen5 x16", "tdp_w": "1400", "launch_year": "2025", "confidence": "medium",
     "source": "github:stas00/ml-engineering compute/accelerator/README.md@744d01e (TFLOPS table: fp32 157.3, "
               "fp16/bf16 2500, fp8 5000, int8 5000, tf32 '?'; AMD @ BF16: 2400 MHz x 512 x 2 x 1024 = 2516.6; "
               "memory: 288 GB HBM3e, 8.00 TBps; power: 1400 W typical board power; caches 2025-06) | "
               "github:stas00/ml-engineering network/README.md@744d01e (XGMI MI355X 535.5 GBps all-to-all, 76.5 GBps "
               "peer-to-peer unidirectional; 'AMD MI350X/MI355X list PCIe 5.0 x16')",
     "notes": "1071 = all-to-all duplex aggregate (2 x 535.5), as the mi300x row's 896. stas00's MAMF table measures "
              "1565 TFLOPS against a 2300 'theory' (MI350X-class) figure; AMD's 2500 (formula 2516.6) kept. No TF32 "
              "published. Form factor as the MI300X/MI325X rows."},
)

# Wave 3: cards that published training runs name but the catalog lacked (or read as another card): the PCIe
# V100s, the China-market A800 / H800 PCIe boards, the H200 NVL, the GeForce 4070 / 4060 Ti 8GB / 30-series
# cards between the rows above, and the Quadro RTX 6000. Conventions as above: GeForce Ada and Ampere give
# the FP32-accumulate tensor rate (half the FP16-accumulate one); on GeForce Ada, NVIDIA's "AI TOPS" (FP8
# sparse, FP16 accumulate) = 16 x FP32: 'AI TOPS' / 8 = BF16/FP16, / 4 = FP8 (FP32 accumulate), / 2 = INT8
# dense (RTX 4080: 780 -> 97.5 / 195 / 390); on GeForce GA10x BF16/FP16 = 2 x FP32 and INT8 = 8 x FP32 (RTX
# 3080: 29.8 -> 59.5 / 238).
_LIGHTNING = ("github:Lightning-AI/pytorch-lightning src/lightning/fabric/utilities/throughput.py@1526f84 "
              "(_CUDA_FLOPS, dense: 'v100 pcie' fp32 14e12, fp16 112e12 and 'v100s pcie' fp32 16.4e12, fp16 130e12 "
              "from NVIDIA's volta-v100-datasheet-update-us-1165301-r5.pdf; 'rtx 3080 ti' fp32 34.1e12, int8 "
              "272.8e12; 'rtx 3070' fp32 20.3e12, int8 162.6e12)")
_SURVEY = ("code index file 69437149373 (NVIDIA GPU survey, 2026-08-20, from NVIDIA datasheets and the GeForce "
           "compare page; dense / *sparse: V100 PCIe 16/32GB FP32 14, FP16 tensor 112, 16/32 GB HBM2, 900 GB/s, PCIe "
           "3.0 x16, 250 W; A800 80GB PCIe FP32 19.5, TF32 156 / 312*, FP16/BF16 312 / 624*, 80 GB HBM2e, 1,935 GB/s, "
           "two-card NVLink bridge 400 GB/s, PCIe 4.0, 300 W; H200 NVL TF32 417.5 / 835*, FP16/BF16 835.5 / 1,671*, "
           "FP8 1,670.5 / 3,341*, 141 GB HBM3e, 4.8 TB/s, 2/4-way NVLink bridge 900 GB/s per GPU, PCIe 5.0, up to "
           "600 W; RTX 4070 Ti SUPER 8,448 cores, 44 TFLOPS, 706 AI TOPS, 16 GB GDDR6X 256-bit, 672 GB/s, PCIe 4.0, "
           "no NVLink, 285 W; RTX 3080 Ti 10,240 cores, 34.1 TFLOPS, 12 GB GDDR6X 384-bit, 912 GB/s, PCIe 4.0, no "
           "NVLink, 350 W; RTX 3080 8,704/8,960 cores, 10/12 GB, 760/912 GB/s, 320/350 W)")
_DC_SURVEY = ("code index file 68975056964 (NVIDIA data-centre GPU spec report, 2026-09-18, dense | sparse from "
              "NVIDIA's pages: H200 NVL TF32 417.5 | 835, FP16/BF16 835.5 | 1,671, FP8 and INT8 1,670.5 | 3,341, FP32 "
              "60, FP64 30, 141 GB HBM3e, 2- or 4-way NVLink bridge 900 GB/s per GPU, PCIe Gen5 128 GB/s, up to 600 W "
              "configurable, memory bandwidth 4.8 TB/s on the product page but 4.2 TB/s in datasheet 3512650; H800 "
              "PCIe (Lenovo ThinkSystem lp1814, withdrawn; AFOX reprint of NVIDIA's table): BF16 ~756 | ~1,513, FP8 "
              "~1,513 | ~3,026, FP64 0.8, NVLink 400 GB/s, 350 W, ~2.0 TB/s, 80 GB; A800 80GB PCIe: no NVIDIA page, "
              "OEMs give the A100's compute and memory with NVLink cut from 600 to 400 GB/s, as NVIDIA's A800 40GB "
              "Active page gives it; NVIDIA's vGPU docs list H800 PCIe 80GB)")
_GF_COMPARE = ("code index file 55562349537 (verbatim copy of nvidia.com/en-gb/geforce/graphics-cards/compare, "
               "2026-05-19: CUDA cores / shader TFLOPS / AI TOPS / boost GHz / memory: RTX 4070 5,888 / 29 / 466 / "
               "2.48 / 12 GB GDDR6X 192-bit; 4070 Super 7,168 / 36 / 568 / 2.48 / 12 GB GDDR6X 192-bit; 4070 Ti Super "
               "8,448 / 44 / 706 / 2.61 / 16 GB GDDR6X 256-bit; 4060 Ti 4,352 / 22 / 353 / 2.54 / 16 or 8 GB GDDR6 "
               "128-bit; RTX 3080 Ti 10,240 / 1.67 GHz / 12 GB GDDR6X 384-bit; 3080 8,960 or 8,704 / 1.71 GHz / 12 or "
               "10 GB GDDR6X 384 or 320-bit; 3070 5,888 / 1.73 GHz / 8 GB GDDR6 256-bit; 3060 Ti 4,864 / 1.67 GHz / "
               "8 GB GDDR6 or GDDR6X 256-bit)")
_GF_CN = ("code index file 56305463472 (transcription of nvidia.cn/geforce/graphics-cards/compare: graphics power "
          "RTX 4070 200 W, 4070 SUPER 220 W, 4070 Ti SUPER 285 W, 4060 Ti '165 W or 160 W', 3080 Ti 350 W, 3080 "
          "'350 / 320 W', 3070 220 W, 3060 Ti 200 W; PCI Express Gen 4 on the 40 and 30 series; NVLink on the 3090 "
          "and 3090 Ti only)")
_SCAN = ("https://www.scan.co.uk/tekspek/gpu-graphics/nvidia-geforce-rtx-3060ti (table: RTX 3070 / 3060 Ti boost "
         "1,725 / 1,665 MHz, 5,888 / 4,864 shaders, 20,314 / 16,197 GFLOPS, 8 GB, 256-bit, 14 Gbps, 448 GB/s, "
         "PCIe 4.0, launched Oct / Dec 2020)")
_GURU3D = ("https://www.guru3d.com/story/geforce-rtx-4060-ti-gpu-pictured/ (table: RTX 4060 Ti 4,352 cores, 2,535 MHz, "
           "22 TFLOPS, 8 GB GDDR6 128-bit, 288 GB/s, 160 W, PCIe Gen4 x8; RTX 3060 Ti 4,864 cores, 1,665 MHz, 16.2 "
           "TFLOPS, 8 GB GDDR6 256-bit, 448 GB/s, 200 W, PCIe Gen4 x16)")
_APUNTES = ("github:jorgesislema/apuntes-de-pc 5-TARJETAS_GRAFICAS/NVIDIA/Serie-XX70.md@e03dead (RTX 4070 SUPER "
            "7,168 cores, 12 GB GDDR6X 192-bit, 504.2 GB/s, 220 W TGP; RTX 4070 Ti SUPER 8,448 cores, 16 GB GDDR6X "
            "256-bit, 672.1 GB/s, 285 W)")
_SUPER_TPU = ("https://www.techpowerup.com/review/nvidia-geforce-rtx-4070-super-founders-edition/single-page.html "
              "(RTX 40 SUPER series announced at CES 2024; the 4070 SUPER on sale January 17, 2024)")
EXTRA_GPU_ROWS += (
    {"gpu_id": "v100-pcie-16gb", "vendor": "NVIDIA", "name": "Tesla V100 PCIe 16GB", "form_factor": "PCIe",
     "memory_gb": "16", "memory_gib_total_reported": "", "memory_type": "HBM2", "mem_bw_gbps": "900", "peaks_of": "",
     "fp32_tflops": "14", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "112",
     "fp8_tflops_dense": "", "int8_tops_dense": "",
     "flops_basis": "FP16 = tensor-core mixed precision (V100 datasheet, PCIe column); Volta has no TF32/BF16/FP8",
     "gpu_interconnect": "none (PCIe only; NVLink is the SXM2 V100's)", "gpu_gpu_bw_gbps_bidir": "",
     "pcie": "Gen3 x16", "tdp_w": "250", "launch_year": "", "confidence": "high",
     "source": _LIGHTNING + " | " + _SURVEY + " | code index file 69739633203 (GPU history table: 'V100 PCIe 16/32GB "
               "| 7.0 TF | 14.0 TF | 112 TF | 16/32GB HBM2 | 900 GB/s | 250W | PCIe 3.0') | "
               "https://www.techrival.com/nvidia-volta-tesla-v100-cards-detailed-150w-single-slot-300w-dual-slot-"
               "gv100-powered-pcie-accelerators/ "
               "(GTC 2017: a 150 W single-slot FHHL and a dual-slot PCIe V100)",
     "notes": "GV100 on a 250 W PCIe card (the SXM2 part: 300 W): 112 FP16 tensor TFLOPS against 125. nvidia-smi "
              "names it 'Tesla V100-PCIE-16GB'. The 150 W single-slot V100 (FHHL; techrival, GTC 2017) is another "
              "board, not this entry."},
    {"gpu_id": "v100-pcie-32gb", "vendor": "NVIDIA", "name": "Tesla V100 PCIe 32GB", "form_factor": "PCIe",
     "memory_gb": "32", "memory_gib_total_reported": "", "memory_type": "HBM2", "mem_bw_gbps": "900", "peaks_of": "",
     "fp32_tflops": "14", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "112",
     "fp8_tflops_dense": "", "int8_tops_dense": "",
     "flops_basis": "FP16 = tensor-core mixed precision (V100 datasheet, PCIe column); Volta has no TF32/BF16/FP8",
     "gpu_interconnect": "none (PCIe only; NVLink is the SXM2 V100's)", "gpu_gpu_bw_gbps_bidir": "",
     "pcie": "Gen3 x16", "tdp_w": "250", "launch_year": "", "confidence": "high",
     "source": _LIGHTNING + " | " + _SURVEY + " | code index file 69739633203 (GPU history table: 'V100 PCIe 16/32GB "
               "| 7.0 TF | 14.0 TF | 112 TF | 16/32GB HBM2 | 900 GB/s | 250W | PCIe 3.0')",
     "notes": "The 16 GB card's GPU and clocks with 32 GB of HBM2. nvidia-smi names it 'Tesla V100-PCIE-32GB'; 'V100 "
              "PCIe' with no size reads as this card, as a bare 'V100' reads as the 32 GB SXM2 part."},
    {"gpu_id": "v100s-pcie-32gb", "vendor": "NVIDIA", "name": "Tesla V100S PCIe 32GB", "form_factor": "PCIe",
     "memory_gb": "32", "memory_gib_total_reported": "", "memory_type": "HBM2", "mem_bw_gbps": "1134", "peaks_of": "",
     "fp32_tflops": "16.4", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "130",
     "fp8_tflops_dense": "", "int8_tops_dense": "",
     "flops_basis": "FP16 = tensor-core mixed precision (V100 datasheet, V100S PCIe column); no TF32/BF16/FP8",
     "gpu_interconnect": "none (PCIe only)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen3 x16", "tdp_w": "250",
     "launch_year": "", "confidence": "high",
     "source": _LIGHTNING + " | code index file 69739633203 (GPU history table: 'V100S PCIe 32GB | 8.2 TF | 16.4 TF | "
               "130 TF | 32GB HBM2 | 1,134 GB/s | 250W | PCIe 3.0') | code index file 63794322169 (GEMM benchmark "
               "constants: 'N_SM = 80 # V100S PCIe SMs', 'FP16_TOPS = 130e12', 'MEM_BW_GBS = 1134e9') | code index "
               "file 21257086533 ('1134.0; // V100S PCIe', '900.0; // V100 PCIe')",
     "notes": "GV100, 80 SMs, at higher clocks and faster HBM2 than the V100 PCIe. nvidia-smi names it "
              "'Tesla V100S-PCIE-32GB'."},
    {"gpu_id": "a800-pcie-80gb", "vendor": "NVIDIA", "name": "A800 PCIe 80GB (China)", "form_factor": "PCIe",
     "memory_gb": "80", "memory_gib_total_reported": "", "memory_type": "HBM2e", "mem_bw_gbps": "1935",
     "peaks_of": "a100-pcie-80gb", "flops_basis": "dense; the A100 PCIe 80GB peaks (same GA100 configuration)",
     "gpu_interconnect": "PCIe; optional NVLink bridge (pairs, 400 GB/s, capped from the A100's 600; not assumed)",
     "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "300", "launch_year": "", "confidence": "medium",
     "source": _SURVEY + " | " + _DC_SURVEY + " | shared reference gpus.csv a800-sxm4-80gb row (tweakers, aiwiki: "
               "'Only difference vs A100: NVLink 600 -> 400 GB/s. PCIe A800 300 W.') | code index file 60595365702 "
               "(nvidia-smi fixture: 'NVIDIA A800 80GB PCIe')",
     "notes": "The China-market A100 PCIe 80GB: A100 compute and memory, the NVLink bridge cut to 400 GB/s as on "
              "a800-sxm4-80gb. The bridge bandwidth is left blank as on a100-pcie-80gb (PCIe is timed: rented boxes "
              "rarely have the bridge), so it times as that card does. nvidia-smi: 'NVIDIA A800 80GB PCIe'."},
    {"gpu_id": "h800-pcie", "vendor": "NVIDIA", "name": "H800 PCIe 80GB (China)", "form_factor": "PCIe",
     "memory_gb": "80", "memory_gib_total_reported": "", "memory_type": "HBM2e", "mem_bw_gbps": "2000",
     "peaks_of": "h100-pcie", "flops_basis": "dense; the H100 PCIe peaks (114 SMs, the same sparse FP8 3026)",
     "gpu_interconnect": "NVLink bridge (pairs, capped)", "gpu_gpu_bw_gbps_bidir": "400", "pcie": "Gen5 x16",
     "tdp_w": "350", "launch_year": "", "confidence": "medium",
     "source": _DC_SURVEY + " | code index file 69472046894 (sparse GEMM benchmarks 'Measured on NVIDIA H800 PCIe "
               "(SM90a, 114 SMs)', 'H800 PCIe peak F8: 3026 TFLOPS') | code index file 70102657385 (PCI id table: "
               "'10de:2322': h800-pcie, 80 GB) | shared reference gpus.csv h800-sxm row (NVLink 400 GB/s; TechPowerUp "
               "early report 300 GB/s for the PCIe variant)",
     "notes": "The China-market H100 PCIe: its compute and 80 GB, FP64 cut (0.8 TFLOPS), the NVLink bridge capped at "
              "400 GB/s against the H100 PCIe's 600 (bridged pairs, as h100-pcie). No NVIDIA datasheet: Lenovo's "
              "withdrawn guide and reprints. Bandwidth 2.0 TB/s (h100-pcie's figure); one benchmark file quotes 2039 "
              "GB/s. Memory type HBM2e as h100-pcie (the report calls it disputed). nvidia-smi: 'NVIDIA H800 PCIe'."},
    {"gpu_id": "h200-nvl", "vendor": "NVIDIA", "name": "H200 NVL 141GB (per GPU)",
     "form_factor": "PCIe dual-slot, NVLink-bridged (2 or 4 GPUs)", "memory_gb": "141",
     "memory_gib_total_reported": "", "memory_type": "HBM3e", "mem_bw_gbps": "4800", "peaks_of": "",
     "fp32_tflops": "60", "tf32_tflops_dense": "417.5", "bf16_tflops_dense": "835.5", "fp16_tflops_dense": "835.5",
     "fp8_tflops_dense": "1670.5", "int8_tops_dense": "1670.5",
     "flops_basis": "dense = NVIDIA sparse / 2 (835 / 1,671 / 3,341 sparse), NVIDIA's H100 NVL rates",
     "gpu_interconnect": "NVLink bridge (2- or 4-way)", "gpu_gpu_bw_gbps_bidir": "900", "pcie": "Gen5 x16",
     "tdp_w": "600", "launch_year": "2024", "confidence": "medium",
     "source": _DC_SURVEY + " | " + _SURVEY + " | " + _LAMO + " (H200 NVL: 141 GB HBM3e, 4,800 GB/s, PCIe 5.0 x16, "
               "600 W, NVLink) | code index file 70631592748 (Lenovo option list: 'NVIDIA H200 NVL 141GB PCIe', '600 W "
               "DW'; '2-way' and '4-way NVLink Bridge for H200 NVL', '900 GB/s') | code index file 57373422155 (4 x "
               "H200 NVL server: nvidia-smi ~143771 MiB, 600 W power cap) | "
               "https://gixtools.net/2024/11/nvidia-hpc-ai-chip-is-actually-six-chips (SC24: H200 NVL available "
               "through partners the next month; bridges four cards, 900 GB/s per GPU)",
     "notes": "GH100 at the H100 NVL's rates (lamonoai lists the SXM rates, as it does for the H100 NVL). Bandwidth: "
              "4.8 TB/s (NVIDIA product page, lamonoai, the survey) kept; datasheet 3512650 gives 4.2 TB/s per the "
              "2026-09 report. The bridge joins 2 or 4 cards; the runtime times bridged parts over NVLink for 2 GPUs "
              "a node and over PCIe beyond (timing.links.is_bridged). nvidia-smi: 'NVIDIA H200 NVL'."},
    {"gpu_id": "rtx4070", "vendor": "NVIDIA", "name": "GeForce RTX 4070", "form_factor": "PCIe consumer",
     "memory_gb": "12", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "504", "peaks_of": "",
     "fp32_tflops": "29.1", "tf32_tflops_dense": "29.1", "bf16_tflops_dense": "58.25", "fp16_tflops_dense": "58.25",
     "fp8_tflops_dense": "116.5", "int8_tops_dense": "233",
     "flops_basis": "FP32-accumulate rates: 466 AI TOPS / 8 for BF16/FP16, / 4 for FP8; INT8 466 / 2 (FP16-acc 116.5)",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "200",
     "launch_year": "2023", "confidence": "high",
     "source": _GF_COMPARE + " | " + _GF_CN + " | " + _LAMO + " (RTX4070: FP32 29.1, TF32 29.1 / 58.3*, FP16 "
               "FP16-acc 117 / 233*, FP32-acc 58 / 117*, FP8 and INT8 233 / 466*, 504 GB/s, PCIe 4.0 x16, 200 W, no "
               "NVLink) | https://www.club386.com/complete-geforce-rtx-4070-specifications-reveal-a-frugal-599-gpu/ "
               "(46 SMs, 5,888 cores, 2,475 MHz, 29.1 TFLOPS FP32, 12 GB 21 Gbps 192-bit, 504 GB/s, 200 W, April 2023)",
     "notes": "AD104, 46 SMs. 58.25 = 466 / 8 (lamonoai 58 / 58.3), = 2 x 29.1. nvidia.cn's compare page also lists "
              "a 12 GB GDDR6 version (slower memory); this entry is the GDDR6X card."},
    {"gpu_id": "rtx4070-super", "vendor": "NVIDIA", "name": "GeForce RTX 4070 SUPER", "form_factor": "PCIe consumer",
     "memory_gb": "12", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "504", "peaks_of": "",
     "fp32_tflops": "35.5", "tf32_tflops_dense": "35.5", "bf16_tflops_dense": "71", "fp16_tflops_dense": "71",
     "fp8_tflops_dense": "142", "int8_tops_dense": "284",
     "flops_basis": "FP32-accumulate rates: 568 AI TOPS / 8 for BF16/FP16, / 4 for FP8; INT8 568 / 2 (FP16-acc 142)",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4", "tdp_w": "220",
     "launch_year": "2024", "confidence": "medium",
     "source": _GF_COMPARE + " | " + _GF_CN + " | " + _APUNTES + " | " + _SUPER_TPU,
     "notes": "AD104, 7,168 CUDA cores. FP32 35.5 = 568 / 16 (7,168 x 2 x 2.48 GHz = 35.6, NVIDIA's '36'). 504 GB/s: "
              "21 Gbps on 192 bits, as the 4070 and 4070 Ti. PCIe lane count not in these sources (the runtime "
              "assumes x16)."},
    {"gpu_id": "rtx4070ti-super", "vendor": "NVIDIA", "name": "GeForce RTX 4070 Ti SUPER",
     "form_factor": "PCIe consumer", "memory_gb": "16", "memory_gib_total_reported": "", "memory_type": "GDDR6X",
     "mem_bw_gbps": "672", "peaks_of": "", "fp32_tflops": "44.1", "tf32_tflops_dense": "44.1",
     "bf16_tflops_dense": "88.25", "fp16_tflops_dense": "88.25", "fp8_tflops_dense": "176.5", "int8_tops_dense": "353",
     "flops_basis": "FP32-accumulate rates: 706 AI TOPS / 8 for BF16/FP16, / 4 for FP8; INT8 706 / 2 (FP16-acc 176.5)",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4", "tdp_w": "285",
     "launch_year": "2024", "confidence": "high",
     "source": _VDUMA + " (RTX 4070 Ti SUPER: FP32 44.10, FP16/BF16 tensor 176 / 352*, FP8 352 / 704*, 672 GB/s, "
               "16376 MiB) | " + _GF_COMPARE + " | " + _GF_CN + " | " + _SURVEY + " | " + _APUNTES + " | " + _SUPER_TPU,
     "notes": "AD103 (not the 4070 Ti's AD104), 8,448 CUDA cores. 88.25 = 706 / 8 (VladislavDuma's FP16-accumulate "
              "176 / 2 = 88). 16376 MiB per nvidia-smi (VladislavDuma). PCIe lane count not in these sources (the "
              "runtime assumes x16)."},
    {"gpu_id": "rtx4060ti-8gb", "vendor": "NVIDIA", "name": "GeForce RTX 4060 Ti 8GB", "form_factor": "PCIe consumer",
     "memory_gb": "8", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "288", "peaks_of": "",
     "fp32_tflops": "22.1", "tf32_tflops_dense": "22.1", "bf16_tflops_dense": "44", "fp16_tflops_dense": "44",
     "fp8_tflops_dense": "88.5", "int8_tops_dense": "177",
     "flops_basis": "the rtx4060ti-16gb row's rates (same AD106 and clocks): half VladislavDuma's FP16-accumulate 88",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x8", "tdp_w": "160",
     "launch_year": "2023", "confidence": "medium",
     "source": _GF_COMPARE + " | " + _GF_CN + " | " + _GURU3D + " | https://cputronic.com/gpu/nvidia-geforce-rtx-4060"
               "-ti-8-gb (22.06 TFLOPS, 2,535 MHz boost, 8 GB GDDR6, PCIe 4.0 x8, 160 W, May 2023) | " + _VDUMA,
     "notes": "AD106, 4,352 CUDA cores: the 16 GB card's GPU and clocks (NVIDIA lists one 4060 Ti column, 353 AI TOPS, "
              "'16 / 8 GB'), 8 GB on the same 128-bit bus, 160 W against 165 W. Both name themselves 'NVIDIA GeForce "
              "RTX 4060 Ti': a text without the size reads as the 16 GB card (alias 4060ti)."},
    {"gpu_id": "rtx3080ti", "vendor": "NVIDIA", "name": "GeForce RTX 3080 Ti", "form_factor": "PCIe consumer",
     "memory_gb": "12", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "912", "peaks_of": "",
     "fp32_tflops": "34.1", "tf32_tflops_dense": "34.1", "bf16_tflops_dense": "68.2", "fp16_tflops_dense": "68.2",
     "fp8_tflops_dense": "", "int8_tops_dense": "272.8",
     "flops_basis": "BF16/FP16 with FP32 accumulate = 2 x FP32 (GeForce GA10x; = Lightning's INT8 272.8 / 4); "
                    "FP16 with FP16 accumulate = 136.4",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4", "tdp_w": "350",
     "launch_year": "", "confidence": "medium",
     "source": _LIGHTNING + " | " + _SURVEY + " | " + _GF_COMPARE + " | " + _GF_CN,
     "notes": "GA102, 80 SMs (10,240 / 128). FP32 34.1 (Lightning, the survey); NVIDIA's 10,240 cores at 1.67 GHz "
              "give 34.2. Derived, not published: 68.2 = 2 x 34.1, the GA10x GeForce rule of the rtx3080 and rtx3060 "
              "rows. "
              "PCIe lane count not in these sources (the runtime assumes x16)."},
    {"gpu_id": "rtx3080-12gb", "vendor": "NVIDIA", "name": "GeForce RTX 3080 12GB", "form_factor": "PCIe consumer",
     "memory_gb": "12", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "912", "peaks_of": "",
     "fp32_tflops": "30.6", "tf32_tflops_dense": "30.6", "bf16_tflops_dense": "61.3", "fp16_tflops_dense": "61.3",
     "fp8_tflops_dense": "", "int8_tops_dense": "245.1",
     "flops_basis": "derived: FP32 = 8,960 cores x 2 x 1.71 GHz; BF16/FP16 (FP32 accumulate) = 2 x FP32 and INT8 = "
                    "8 x FP32 (GeForce GA10x, as rtx3080: 29.8 -> 59.5 / 238)",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4", "tdp_w": "350",
     "launch_year": "2022", "confidence": "medium",
     "source": _GF_COMPARE + " | " + _GF_CN + " | " + _SURVEY + " | https://wccftech.com/nvidia-geforce-rtx-3080-12-gb-"
               "graphics-card-specs-leak-out-8960-cores-384-bit-bus-20-faster-than-3080-in-mining/ (2021-12: 70 SMs, "
               "8,960 cores, 12 GB GDDR6X 19 Gbps 384-bit, 912 GB/s, 350 W) | https://droix.net/geforce-rtx-3080-12-"
               "gb-launch-on-january-11/ (GA102-220, 70 SMs, 912 GB/s, 350 W, January 2022)",
     "notes": "No published TFLOPS: all rates derived from NVIDIA's 8,960 cores and 1.71 GHz (30.64), as the 10 GB "
              "card's 29.8 = 8,704 x 2 x 1.71. Both cards name themselves 'NVIDIA GeForce RTX 3080': a text without "
              "the size reads as the 10 GB rtx3080."},
    {"gpu_id": "rtx3070", "vendor": "NVIDIA", "name": "GeForce RTX 3070", "form_factor": "PCIe consumer",
     "memory_gb": "8", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "448", "peaks_of": "",
     "fp32_tflops": "20.3", "tf32_tflops_dense": "20.3", "bf16_tflops_dense": "40.6", "fp16_tflops_dense": "40.6",
     "fp8_tflops_dense": "", "int8_tops_dense": "162.6",
     "flops_basis": "BF16/FP16 with FP32 accumulate (GeForce half rate); FP16 with FP16 accumulate = 81.3 dense",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "220",
     "launch_year": "2020", "confidence": "high",
     "source": _LAMO + " (RTX3070: FP32 20.3, TF32 20.3 / 40.6*, FP16 FP16-acc 81.3 / 163*, FP32-acc and BF16 40.6 / "
               "81.3*, INT8 163 / 325*, 8 GB GDDR6 256-bit, 448 GB/s, PCIe 4.0 x16, 220 W, no NVLink) | " + _LIGHTNING +
               " | " + _SCAN + " | " + _GF_COMPARE + " | " + _GF_CN,
     "notes": "GA104, 46 SMs, 5,888 CUDA cores, 1.725 GHz boost. fudzilla's launch report gives 16 Gbps memory; 14 "
              "Gbps / 448 GB/s shipped (scan, lamonoai): 448 kept."},
    {"gpu_id": "rtx3060ti", "vendor": "NVIDIA", "name": "GeForce RTX 3060 Ti", "form_factor": "PCIe consumer",
     "memory_gb": "8", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "448", "peaks_of": "",
     "fp32_tflops": "16.2", "tf32_tflops_dense": "16.2", "bf16_tflops_dense": "32.4", "fp16_tflops_dense": "32.4",
     "fp8_tflops_dense": "", "int8_tops_dense": "129.6",
     "flops_basis": "derived: BF16/FP16 (FP32 accumulate) = 2 x FP32, INT8 = 8 x FP32 (GeForce GA10x, as rtx3080 "
                    "and rtx3060); FP16-acc 64.8",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "200",
     "launch_year": "2020", "confidence": "medium",
     "source": _GURU3D + " | " + _SCAN + " | " + _GF_COMPARE + " | " + _GF_CN + " | " + _LAMO,
     "notes": "GA104, 38 SMs, 4,864 CUDA cores, 1.665 GHz boost: 16.2 TFLOPS (NVIDIA's table via guru3d; scan 16,197 "
              "GFLOPS). lamonoai's 3060 Ti column (17.3 / 34.6 / 69.1 / INT8 138) uses the 3060's 1,777 MHz (see the "
              "rtx3060 row): not used. The 2022 GDDR6X board (608 GB/s) is this GPU with faster memory; it maps here "
              "(448 GB/s)."},
    {"gpu_id": "quadro-rtx-6000", "vendor": "NVIDIA", "name": "Quadro RTX 6000", "form_factor": "PCIe workstation",
     "memory_gb": "24", "memory_gib_total_reported": "", "memory_type": "GDDR6", "mem_bw_gbps": "672", "peaks_of": "",
     "fp32_tflops": "16.3", "tf32_tflops_dense": "", "bf16_tflops_dense": "", "fp16_tflops_dense": "130.5",
     "fp8_tflops_dense": "", "int8_tops_dense": "261",
     "flops_basis": "FP16 = tensor, FP16 or FP32 accumulate alike (Turing table, RTX 6000 column); Turing has no "
                    "BF16/TF32/FP8",
     "gpu_interconnect": "NVLink bridge (2 GPUs, TU102 100 GB/s; not assumed)", "gpu_gpu_bw_gbps_bidir": "",
     "pcie": "Gen3 x16", "tdp_w": "295", "launch_year": "2018", "confidence": "high",
     "source": _TURING + " | https://chip.pl/2018/10/bestia-dla-profesjonalistow-quadro-rtx-6000 (TU102, 4,608 CUDA "
               "and 576 tensor cores, 24 GB GDDR6 384-bit, 16.3 TFLOPS FP32, 32.6 FP16, max TDP 295 W, PCIe 3.0 x16, "
               "NVLink HB bridge) | https://sysrqmts.com/fr/gpus/compare/nvidia-a40-pcie-vs-nvidia-quadro-rtx-6000 "
               "(TU102-875-A1, 1,770 MHz boost, 14 Gbps, 672.0 GB/s, PCIe 3.0 x16, 260 W, 2018-08-13)",
     "notes": "Full TU102 at 1,770 MHz with 24 GB (the quadro-rtx-8000 row's GPU, half its memory; the titan-rtx "
              "row's configuration). TDP 295 W (datasheet maximum, as quadro-rtx-8000) vs 260 W (sysrqmts). Not the "
              "RTX 6000 Ada (rtx6000-ada): 'RTX 6000' alone names neither."},
)

# Wave 4: AMD's other two CDNA2 parts beside the MI250X (the MI250 OAM and the MI210 PCIe card), the 700 W HGX
# B100, the GeForce RTX 3070 Ti and the RTX 5000 Ada workstation card. Conventions as above: dense peaks (sparse
# figures halved), whole-package figures for the two-GCD MI250 as for the MI250X, the FP32-accumulate tensor
# rate on GeForce Ampere (2 x FP32 for BF16/FP16, 8 x FP32 for INT8), and the full-rate FP32 accumulate of the
# Ada workstation cards (rtx6000-ada, rtx4000-ada).
_ROCM_MI250 = ("https://rocm.docs.amd.com/en/latest/reference/gpu-arch/mi250.html (AMD's MI250 microarchitecture "
               "page: 104 CUs per GCD at 1.7 GHz; 'Peak-performance capabilities of the MI250 OAM': vector FP32 45.3, "
               "matrix FP32 90.5, matrix FP16 / BF16 / INT8 362.1 TFLOPS; 3.2 TB/s (1.6 TB/s per GCD); the two GCDs "
               "joined by four Infinity Fabric links, 400 GB/s bidirectional, 'each of which constitutes one GPU "
               "device'; GPU-GPU Infinity Fabric links 50 GB/s per direction, 100 GB/s bidirectional; each GCD its "
               "own PCIe Gen 4 x16 link to the host)")
_ANANDTECH_MI210 = ("https://www.anandtech.com/show/17326/amd-releases-instinct-mi210-accelerator-cdna-2-on-a-"
                    "pcie-card (2022-03, AMD's table: MI250 2 x 104 CUs, FP32 vector 45.3 / matrix 90.5, FP16 "
                    "matrix 362, INT8 362.1 TOPS, 128 GB HBM2E 8192-bit 3.2 TB/s, 6 Infinity Fabric links, 560 W, "
                    "OAM, 11/2021; MI210 104 CUs, 22.6 / 45.3 / 181 TFLOPS, INT8 181 TOPS, 64 GB HBM2E 4096-bit 1.6 "
                    "TB/s, 3 links, 300 W, PCIe (4.0), 03/2022)")
_AMD_PLANNER = ("code index file 68879509467 (AMD GPU specification notes read from AMD's product pages, MI200 "
                "datasheet and CDNA2 white paper: CDNA2 product table 'Compute Units | 104 CU | 208CU | 220CU ... Peak "
                "FP16/BF16 | 181.0 TF | 362.1 TF | 383.0 TF' for MI210 / MI250 / MI250X; MI210 product page 64 GB "
                "HBM2e, 1.6 TB/s, 181 TFLOPs FP16 and bfloat16, PCIe add-in card, footnote MI200-42 4,096 bits x 3.2 "
                "Gbps = 1.6384 TB/s; MI210 Infinity Fabric only through an optional bridge joining two or four GPUs, "
                "up to 300 GB/s peer to peer; 'The MI200 Series does not support TF32, FP8, or sparsity')")
_BLACKWELL_BRIEF = ("github:chenzomi12/AISystem 02Hardware/03GPUBase/04History.md@0086a4c (copy of the per-GPU "
                    "table of NVIDIA's Blackwell architecture technical brief, HGX B200 | HGX B100: FP4 18 | 14, "
                    "FP8/FP6 9 | 7 PFLOPS, INT8 9 | 7 POPS, FP16/BF16 4.5 | 3.5, TF32 2.2 | 1.8 PFLOPS, FP64 40 | "
                    "30 TFLOPS; 'All petaFLOPS and petaOPS are with Sparsity except FP64'; up to 192 GB HBM3e, up to 8 "
                    "TB/s; max TDP 1,000 | 700 W; NVLink 1.8 TB/s, PCIe Gen6 256 GB/s; 'Preliminary specifications "
                    "subject to change')")
EXTRA_GPU_ROWS += (
    {"gpu_id": "mi250", "vendor": "AMD", "name": "Instinct MI250 (OAM, 2 GCDs)", "form_factor": "OAM",
     "memory_gb": "128", "memory_gib_total_reported": "", "memory_type": "HBM2e", "mem_bw_gbps": "3200",
     "peaks_of": "", "fp32_tflops": "45.3", "tf32_tflops_dense": "", "bf16_tflops_dense": "362.1",
     "fp16_tflops_dense": "362.1", "fp8_tflops_dense": "", "int8_tops_dense": "362.1",
     "flops_basis": "whole package (2 GCDs), as mi250x; FP32 = vector 45.3 (matrix 90.5); no TF32/FP8/sparsity",
     "gpu_interconnect": "Infinity Fabric (xGMI), 6 links", "gpu_gpu_bw_gbps_bidir": "600", "pcie": "Gen4 x16",
     "tdp_w": "560", "launch_year": "2021", "confidence": "high",
     "source": _ROCM_MI250 + " | " + _ANANDTECH_MI210 + " | " + _AMD_PLANNER + " | "
               "https://zexron.com/amd-mi250-x-aldebaran-as-mcm-with-up-to-479-teraflop-s-and-560-watt-tdp (AMD's "
               "MI250 row: 13,312 stream processors, 45.3 / 90.5 / 362.1 TF, INT8 362.1 TOPS, 128 GB, 3.2 TB/s, OAM; "
               "'six instead of eight infinity links') | https://huggingface.co/docs/optimum/amd/amdgpu/perf_hardware "
               "(rocm-smi on an MI250 machine: 8 devices, PwrCap 560.0W) | "
               "https://yobitel.com/knowledge-base/amd-mi250 (MI250 BF16/FP16 362 TFLOPS, 128 GB HBM2e, 3.2 TB/s, "
               "500 W) | https://www.worldstockmarket.net/video-card-with-128-gb-of-memory-8192-bit-bus-tbp-500-w-and-"
               "the-worlds-first-dual-chip-gpu-amd-instinct-mi250-accelerators-presented (208 CUs, 1.7 GHz, 8192-bit "
               "3.2 TB/s; 'TBP of 500 W with a peak value of 560 W')",
     "notes": "Aldebaran with 2 x 104 CUs (the MI250X has 2 x 110). Appears to software as 2 GPUs of 64 GB each "
              "(about 181 TFLOPS BF16 per GCD). Bandwidth: AMD's 3.2 TB/s kept as on mi250x (8192-bit x 3.2 Gbps = "
              "3276.8 GB/s). GPU-GPU 600 is derived: 6 Infinity Fabric links (AMD's table) x 100 GB/s bidirectional "
              "per link (ROCm), as mi250x's 700 = 7 x 100. TDP 560 W peak (AMD's table, rocm-smi power cap) vs 500 W "
              "typical board power (yobitel; launch reports 'TBP 500 W with a peak value of 560 W'): 560 kept as on "
              "mi250x. The shared device name 'AMD Instinct MI250X / MI250' names both parts and reads as mi250x."},
    {"gpu_id": "mi210", "vendor": "AMD", "name": "Instinct MI210", "form_factor": "PCIe (dual slot)",
     "memory_gb": "64", "memory_gib_total_reported": "", "memory_type": "HBM2e", "mem_bw_gbps": "1600",
     "peaks_of": "", "fp32_tflops": "22.6", "tf32_tflops_dense": "", "bf16_tflops_dense": "181",
     "fp16_tflops_dense": "181", "fp8_tflops_dense": "", "int8_tops_dense": "181",
     "flops_basis": "one GCD (the MI250's die); FP32 = vector 22.6 (matrix 45.3); no TF32/FP8/sparsity",
     "gpu_interconnect": "PCIe (Infinity Fabric Link bridge, 2 or 4 cards, 3 links, up to 300 GB/s; not assumed)",
     "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "300", "launch_year": "2022", "confidence": "high",
     "source": _AMD_PLANNER + " | " + _ANANDTECH_MI210 + " | https://vengineer.hatenablog.com/entry/2022/11/18/090000 "
               "(MI210 teardown: one die; Infinity Fabric x 3, PCIe Gen4 x16)",
     "notes": "Aldebaran, one GCD with 104 CUs at 1.7 GHz: 104 x 1.7 GHz x 1024 = 181.0 (AMD's CDNA2 table). "
              "Bandwidth: AMD's 1.6 TB/s kept, as on mi250x and mi250 (footnote MI200-42: 1638.4 GB/s). The "
              "Infinity Fabric bridge is optional and joins at most four cards: PCIe is timed, as for the bridged "
              "NVIDIA PCIe cards (rtx-a6000, a100-pcie-80gb)."},
    {"gpu_id": "b100", "vendor": "NVIDIA", "name": "B100 (HGX B100, 700 W Blackwell)", "form_factor": "SXM/HGX",
     "memory_gb": "192", "memory_gib_total_reported": "", "memory_type": "HBM3e", "mem_bw_gbps": "8000",
     "peaks_of": "", "fp32_tflops": "", "tf32_tflops_dense": "900", "bf16_tflops_dense": "1750",
     "fp16_tflops_dense": "1750", "fp8_tflops_dense": "3500", "int8_tops_dense": "3500",
     "flops_basis": "dense = NVIDIA's per-GPU HGX B100 figures (with sparsity) / 2: TF32 1.8, FP16/BF16 3.5, FP8 7 "
                    "PFLOPS, INT8 7 POPS; FP4 14 (7 dense); FP32 not published",
     "gpu_interconnect": "NVLink 5 + NVSwitch", "gpu_gpu_bw_gbps_bidir": "1800", "pcie": "", "tdp_w": "700",
     "launch_year": "2024", "confidence": "medium",
     "source": _BLACKWELL_BRIEF + " | code index file 4100275500 (AMD MI325X white paper, footnote: 'NVidia Blackwell "
               "HGX B100 (192GB) 700W GPU accelerator resulted in 192GB HBM3E memory capacity and 8 TB/s GPU memory "
               "bandwidth') | https://glennklockwood.com/garden/processors/B200 ('B100 GPUs are a lower-power variant "
               "of B200 (700W) that is meant to be a \"drop-in replacement\" for HGX H100 platforms')",
     "notes": "Announced in 2024 beside the B200 (the brief's year); NVIDIA's figures are preliminary. 192 GB "
              "(NVIDIA's 'up to', AMD's footnote) kept: the b200 row's 180 GB is the HGX B200 as shipped (nvidia-smi), "
              "and no driver total for a B100 was found. FP32 left blank: no source gives it (the 1000 W HGX B200 "
              "gives 80). TF32 900 = 1.8 / 2 (the B200's 2.2 sparse halves to 1.1). PCIe left blank as on b200: the "
              "brief says Gen6 256 GB/s; the b200 row's sources disagree (Gen6 vs Gen5 x16 for shipping parts)."},
    {"gpu_id": "rtx3070ti", "vendor": "NVIDIA", "name": "GeForce RTX 3070 Ti", "form_factor": "PCIe consumer",
     "memory_gb": "8", "memory_gib_total_reported": "", "memory_type": "GDDR6X", "mem_bw_gbps": "608", "peaks_of": "",
     "fp32_tflops": "21.75", "tf32_tflops_dense": "21.75", "bf16_tflops_dense": "43.5", "fp16_tflops_dense": "43.5",
     "fp8_tflops_dense": "", "int8_tops_dense": "174",
     "flops_basis": "derived: FP32 = 6,144 cores x 2 x 1.77 GHz; BF16/FP16 (FP32 accumulate) = 2 x FP32 and INT8 = "
                    "8 x FP32 (GeForce GA10x, as rtx3070: 20.3 -> 40.6 / 162.6); FP16-acc 87",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "290",
     "launch_year": "2021", "confidence": "medium",
     "source": _GF_COMPARE + " (RTX 3070 Ti: 6 144 cores, 1.77 GHz boost, 8 GB GDDR6X, 256-bit) | " + _GF_CN +
               " (rtx-3070-ti: 6144 cores, 1.77 GHz, 8 GB GDDR6X, 256-bit, 290 W, PCIe Gen 4, no NVLink) | code "
               "index file 70177599123 (vendor memory bandwidths: 'rtx 3070 ti': 608, 'rtx 3070': 448) | code index "
               "file 19255043311 (nvidia-smi: 'NVIDIA GeForce RTX 3070 Ti ... 290W ... 8192MiB') | "
               "https://www.technewstoday.com/nvidia-rtx-3080-ti-rumors/ (2021-03: 6144 CUDA cores, 192 tensor "
               "cores, 8 GB GDDR6X 256-bit at 19 Gbps, 608 GB/s) | https://www.se7enesport.com/nvidia-rtx-3080-ti-and-"
               "rtx-3070-ti-will-go-on-sale-in-early-june/ (on sale June 2021)",
     "notes": "Full GA104, 48 SMs (the rtx3070 row's die with 2 more SMs and GDDR6X). No published TFLOPS in these "
              "sources: all rates derived from NVIDIA's 6,144 cores and 1.77 GHz (21.75; 3070: 5,888 x 2 x 1.725 = "
              "20.3). 608 = 256-bit x 19 Gbps / 8. The laptop part (RTX 3070 Ti Laptop GPU) is another card."},
    {"gpu_id": "rtx5000-ada", "vendor": "NVIDIA", "name": "RTX 5000 Ada Generation", "form_factor": "PCIe workstation",
     "memory_gb": "32", "memory_gib_total_reported": "", "memory_type": "GDDR6 ECC", "mem_bw_gbps": "576",
     "peaks_of": "", "fp32_tflops": "65.3", "tf32_tflops_dense": "131", "bf16_tflops_dense": "261",
     "fp16_tflops_dense": "261", "fp8_tflops_dense": "522", "int8_tops_dense": "522",
     "flops_basis": "dense (lamonoai); sparse 2x (FP8 1,044*); FP32 accumulate at the full rate, as on RTX 6000 Ada",
     "gpu_interconnect": "none (no NVLink)", "gpu_gpu_bw_gbps_bidir": "", "pcie": "Gen4 x16", "tdp_w": "250",
     "launch_year": "", "confidence": "medium",
     "source": _LAMO + " (RTX 5000 Ada: AD102, 12,800 CUDA cores, 400 tensor cores, 2,550 MHz boost, 32 GB GDDR6 "
               "256-bit, 576 GB/s, ECC, PCIe 4.0 x16, 250 W, no NVLink; FP32 65, TF32 131 / 261*, FP16 (both "
               "accumulates) and BF16 261 / 522*, FP8 and INT8 522 / 1,044*) | code index file 54622054597 (RTX 5000 "
               "Ada: 32 GB GDDR6 ECC, 576 GB/s, 12,800 CUDA cores, 400 tensor cores, 250 W) | code index file "
               "55796229126 (RTX 5000 Ada: 32 GB GDDR6 ECC, 12,800 CUDA cores, 250 W) | code index file 58740816341 "
               "(nvidia-smi: 'NVIDIA RTX 5000 Ada Generation (AD102GL)', VRAM 32760 MiB)",
     "notes": "AD102 cut to 100 SMs (the rtx6000-ada row's die). FP32 65.3 = 12,800 x 2 x 2.55 GHz (lamonoai rounds to "
              "65). Driver total 32,760 MiB (nvidia-smi quoted in a public repository; ECC off, by the size) = "
              "31.99 GiB, above the 0.99 rule's 31.68; ECC on would report less (GDDR6 ECC, as rtx6000-ada). "
              "Launch year not sourced. Not the Turing Quadro RTX 5000 nor the RTX PRO 5000 Blackwell: 'RTX 5000' "
              "alone names no card here."},
    {"gpu_id": "h20-141gb", "vendor": "NVIDIA", "name": "H20 141GB (H20-3e, China)", "form_factor": "SXM (HGX)",
     "memory_gb": "141", "memory_gib_total_reported": "", "memory_type": "HBM3e", "mem_bw_gbps": "4800",
     "peaks_of": "", "fp32_tflops": "44", "tf32_tflops_dense": "74", "bf16_tflops_dense": "148",
     "fp16_tflops_dense": "148", "fp8_tflops_dense": "296", "int8_tops_dense": "296",
     "flops_basis": "dense; FP16 148 and INT8 296 as LLM-Prof lists the 141 GB part (the 96 GB H20's); FP32, TF32 and "
                    "FP8: the h20 row's (the same die)",
     "gpu_interconnect": "NVLink 4", "gpu_gpu_bw_gbps_bidir": "900", "pcie": "", "tdp_w": "", "launch_year": "",
     "confidence": "medium",
     "source": "github:citsjtu2020/LLM-Prof hardware_spec.md@8434c8d19c39 (NVIDIA_H20_SXM5_141GB: mem_bandwidth 4800, "
               "FP16 148e12, INT8 296e12, memsize 141, interconnect 900) | ../shared/reference/hardware.md ('a 141 GB "
               "/ 4.8 TB/s H20 variant also exists (LLM-Prof)') | code-index file 70460578541 ('2xH20-3e (141GB)')",
     "notes": "The H20 die with the H200's 141 GB HBM3e at 4.8 TB/s. TDP, PCIe generation and launch year not found: "
              "left blank. 'H20' alone stays the 96 GB part (h20); 'H20 141GB' / 'H20-3e' name this one."},
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
    gpus += [gpu_entry({**({c: rows[r["peaks_of"]][c] for c in PEAK_COLUMNS.values()} if r["peaks_of"] else {}), **r})
             for r in EXTRA_GPU_ROWS]
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
