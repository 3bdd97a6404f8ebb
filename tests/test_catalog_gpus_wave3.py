"""GPUs that published training runs name and the catalog lacked or read as another card (tools/build_hw_catalog.py,
EXTRA_GPU_ROWS, wave 3): their peaks, memory and links against the public texts each row cites, the names CUDA
and READMEs give them, and that no name of theirs is taken from another card.

Expected values are read off the cited sources, not off the catalog:
* V100 PCIe / V100S PCIe: NVIDIA's V100 datasheet (r5) as Lightning's throughput.py@1526f84 transcribes it: fp32
  14 / 16.4, fp16 112 / 130 TFLOP/s; a GPU survey (code index 69437149373) and a history table (69739633203):
  16/32 GB HBM2, 900 / 1,134 GB/s, 250 W, PCIe 3.0 x16, no NVLink.
* A800 PCIe 80GB: the A100 PCIe 80GB's datasheet column (FP32 19.5, TF32 156, FP16/BF16 312, INT8 624 dense,
  1,935 GB/s, 300 W); NVLink bridge 400 GB/s against the A100's 600 (survey 69437149373, report 68975056964).
* H800 PCIe: the H100 PCIe's rates (756 BF16 / 1,513 FP8 dense; "H800 PCIe peak F8: 3026" sparse), 80 GB,
  350 W, NVLink 400 GB/s (report 68975056964 after Lenovo's withdrawn guide).
* H200 NVL: NVIDIA's H200 page as the report and survey give it: TF32 835, FP16/BF16 1,671, FP8 3,341 sparse
  (dense half), FP32 60, 141 GB HBM3e, 4.8 TB/s (the datasheet's 4.2 noted in the row), up to 600 W, 2- or 4-way
  NVLink bridge at 900 GB/s per GPU.
* GeForce RTX 40: NVIDIA's compare page (code index 55562349537): AI TOPS 466 (4070), 568 (4070 SUPER), 706 (4070
  Ti SUPER), 353 (4060 Ti); nvidia.cn's (56305463472): 200 / 220 / 285 / 160 W. AI TOPS is FP8 sparse with FP16
  accumulate: / 8 = BF16 with FP32 accumulate (RTX 4080: 780 / 8 = 97.5, tests/test_catalog_more_gpus.py).
  Bandwidth: 504 (4070: club386, lamonoai; 4070 SUPER: apuntes-de-pc), 672 (4070 Ti SUPER: VladislavDuma, survey),
  288 GB/s (4060 Ti: guru3d).
* GeForce RTX 30: FP32 34.1 (3080 Ti, Lightning), 20.3 (3070, Lightning, lamonoai), 16.2 (3060 Ti, NVIDIA's table
  via guru3d; scan 16,197 GFLOPS); 30.6 = 8,960 x 2 x 1.71 GHz (3080 12GB, compare page); BF16 with FP32 accumulate
  = 2 x FP32 on GA10x GeForce (lamonoai's 3070: 40.6); Lightning INT8 272.8 (3080 Ti), 162.6 (3070). 912 GB/s and
  350 W (3080 Ti, 3080 12GB: survey, nvidia.cn), 448 GB/s (3070, 3060 Ti: scan).
* Quadro RTX 6000: NVIDIA's Turing post, Table 1, RTX 6000 column: FP16 tensor 130.5 with either accumulate, INT8
  261.0; chip.pl: 16.3 TFLOPS FP32, 24 GB GDDR6, 295 W, PCIe 3.0 x16; sysrqmts 672.0 GB/s.
"""

from __future__ import annotations

import re

import pytest

from trainplan import catalog
from trainplan.cli import main
from trainplan.errors import UnknownNameError
from trainplan.units import GB

T = 1e12

NEW = ("v100-pcie-16gb", "v100-pcie-32gb", "v100s-pcie-32gb", "a800-pcie-80gb", "h800-pcie", "h200-nvl", "rtx4070",
       "rtx4070-super", "rtx4070ti-super", "rtx4060ti-8gb", "rtx3080ti", "rtx3080-12gb", "rtx3070", "rtx3060ti",
       "quadro-rtx-6000")


@pytest.mark.parametrize("gpu_id, fp32, fp16, memory_gb, bw_gbps, tdp_w", [
    ("v100-pcie-16gb", 14, 112, 16, 900, 250),
    ("v100-pcie-32gb", 14, 112, 32, 900, 250),
    ("v100s-pcie-32gb", 16.4, 130, 32, 1134, 250),
])
def test_volta_pcie_cards(gpu_id, fp32, fp16, memory_gb, bw_gbps, tdp_w):
    gpu = catalog.resolve_gpu(gpu_id)
    assert gpu.peak_flops("fp32") == pytest.approx(fp32 * T) and gpu.peak_flops("fp16") == pytest.approx(fp16 * T)
    assert gpu.peak_flops("bf16") is None and gpu.peak_flops("tf32") is None and gpu.peak_flops("fp8") is None
    assert gpu.memory_bytes == memory_gb * GB and gpu.memory_type == "HBM2"
    assert gpu.memory_bw_bytes_per_s == pytest.approx(bw_gbps * 1e9)
    assert gpu.tdp_w == tdp_w and gpu.generation == "volta" and gpu.pcie == "Gen3 x16"
    assert not gpu.gpu_gpu_bw_bytes_per_s              # no NVLink between PCIe V100s


def test_the_pcie_v100_is_slower_than_the_sxm2_part_it_was_read_as():
    sxm, pcie = catalog.resolve_gpu("v100-sxm2-32gb"), catalog.resolve_gpu("v100-pcie-32gb")
    assert sxm.peak_flops("fp16") == pytest.approx(125 * T)          # datasheet SXM2 column
    assert pcie.peak_flops("fp16") == pytest.approx(112 * T) and pcie.tdp_w < sxm.tdp_w


def test_a800_pcie_is_the_a100_pcie_80gb_with_a_capped_bridge():
    gpu = catalog.resolve_gpu("a800-pcie-80gb")
    for dtype, tflops in (("fp32", 19.5), ("tf32", 156), ("bf16", 312), ("fp16", 312), ("int8", 624)):
        assert gpu.peak_flops(dtype) == pytest.approx(tflops * T), dtype
    assert gpu.peak_flops("fp8") is None
    assert gpu.memory_bytes == 80 * GB and gpu.memory_type == "HBM2e"
    assert gpu.memory_bw_bytes_per_s == pytest.approx(1935e9)
    assert gpu.tdp_w == 300 and gpu.generation == "ampere" and gpu.pcie == "Gen4 x16"
    assert "400 GB/s" in gpu.interconnect and not gpu.gpu_gpu_bw_bytes_per_s    # as a100-pcie-80gb: PCIe timed


def test_h800_pcie_has_h100_pcie_rates_and_a_400_gbps_bridge():
    gpu = catalog.resolve_gpu("h800-pcie")
    assert gpu.peak_flops("bf16") == pytest.approx(756 * T) and gpu.peak_flops("fp8") == pytest.approx(1513 * T)
    assert gpu.peak_flops("fp8") == pytest.approx(3026 / 2 * T)     # "H800 PCIe peak F8: 3026" (sparse)
    assert gpu.peak_flops("fp32") == pytest.approx(51 * T) and gpu.peak_flops("tf32") == pytest.approx(378 * T)
    assert gpu.memory_bytes == 80 * GB and gpu.memory_bw_bytes_per_s == pytest.approx(2000e9)
    assert gpu.tdp_w == 350 and gpu.generation == "hopper" and gpu.pcie == "Gen5 x16"
    assert gpu.gpu_gpu_bw_bytes_per_s == pytest.approx(400e9)       # H100 PCIe bridge: 600


def test_h200_nvl_rates_memory_and_bridge():
    gpu = catalog.resolve_gpu("h200-nvl")
    for dtype, sparse in (("tf32", 835), ("bf16", 1671), ("fp16", 1671), ("fp8", 3341), ("int8", 3341)):
        assert gpu.peak_flops(dtype) == pytest.approx(sparse / 2 * T), dtype
    assert gpu.peak_flops("fp32") == pytest.approx(60 * T)
    assert gpu.memory_bytes == 141 * GB and gpu.memory_type == "HBM3e"
    assert gpu.memory_bw_bytes_per_s == pytest.approx(4800e9)
    assert gpu.tdp_w == 600 and gpu.generation == "hopper" and gpu.pcie == "Gen5 x16"
    assert gpu.gpu_gpu_bw_bytes_per_s == pytest.approx(900e9)
    assert gpu.reported_memory_bytes == 143771 * 2**20                # nvidia-smi '0MiB / 143771MiB', as the SXM
    # the SXM part keeps its own, higher rates
    assert catalog.resolve_gpu("h200").peak_flops("bf16") == pytest.approx(989 * T)


@pytest.mark.parametrize("gpu_id, ai_tops, fp32, memory_gb, bw_gbps, tdp_w", [
    ("rtx4070", 466, 29.1, 12, 504, 200),
    ("rtx4070-super", 568, 35.5, 12, 504, 220),
    ("rtx4070ti-super", 706, 44.1, 16, 672, 285),
    ("rtx4060ti-8gb", 353, 22.1, 8, 288, 160),
])
def test_geforce_ada_cards_against_nvidia_ai_tops(gpu_id, ai_tops, fp32, memory_gb, bw_gbps, tdp_w):
    gpu = catalog.resolve_gpu(gpu_id)
    assert gpu.peak_flops("bf16") == pytest.approx(ai_tops / 8 * T, rel=0.01)
    assert gpu.peak_flops("fp16") == gpu.peak_flops("bf16")
    assert gpu.peak_flops("fp8") == pytest.approx(ai_tops / 4 * T, rel=0.01)
    assert gpu.peak_flops("int8") == pytest.approx(ai_tops / 2 * T, rel=0.01)
    assert gpu.peak_flops("fp32") == pytest.approx(fp32 * T)
    assert gpu.memory_bytes == memory_gb * GB
    assert gpu.memory_bw_bytes_per_s == pytest.approx(bw_gbps * 1e9)
    assert gpu.tdp_w == tdp_w and gpu.generation == "ada" and gpu.interconnect == "none (no NVLink)"


def test_the_4060_ti_8gb_is_the_16gb_card_with_half_the_memory():
    small, large = catalog.resolve_gpu("rtx4060ti-8gb"), catalog.resolve_gpu("rtx4060ti-16gb")
    assert small.memory_bytes == 8 * GB and large.memory_bytes == 16 * GB
    for dtype in ("fp32", "bf16", "fp8", "int8"):
        assert small.peak_flops(dtype) == large.peak_flops(dtype), dtype
    assert small.pcie == "Gen4 x8" and small.memory_type == "GDDR6"


@pytest.mark.parametrize("gpu_id, fp32, bf16, int8, memory_gb, memory_type, bw_gbps, tdp_w", [
    ("rtx3080ti", 34.1, 68.2, 272.8, 12, "GDDR6X", 912, 350),       # Lightning int8
    ("rtx3080-12gb", 30.6, 61.3, 245.1, 12, "GDDR6X", 912, 350),    # 8,960 x 2 x 1.71 GHz; x2; x8
    ("rtx3070", 20.3, 40.6, 162.6, 8, "GDDR6", 448, 220),           # lamonoai 40.6, Lightning 162.6
    ("rtx3060ti", 16.2, 32.4, 129.6, 8, "GDDR6", 448, 200),         # 16.2 x 2, x 8
])
def test_geforce_ampere_cards(gpu_id, fp32, bf16, int8, memory_gb, memory_type, bw_gbps, tdp_w):
    gpu = catalog.resolve_gpu(gpu_id)
    assert gpu.peak_flops("fp32") == pytest.approx(fp32 * T)
    assert gpu.peak_flops("bf16") == pytest.approx(bf16 * T) and gpu.peak_flops("fp16") == pytest.approx(bf16 * T)
    assert gpu.peak_flops("int8") == pytest.approx(int8 * T) and gpu.peak_flops("fp8") is None
    assert gpu.memory_bytes == memory_gb * GB and gpu.memory_type == memory_type
    assert gpu.memory_bw_bytes_per_s == pytest.approx(bw_gbps * 1e9)
    assert gpu.tdp_w == tdp_w and gpu.generation == "ampere" and gpu.interconnect == "none (no NVLink)"


def test_the_3080_12gb_is_faster_than_the_10gb_card():
    ten, twelve = catalog.resolve_gpu("rtx3080"), catalog.resolve_gpu("rtx3080-12gb")
    assert ten.memory_bw_bytes_per_s == pytest.approx(760e9) and twelve.memory_bw_bytes_per_s == pytest.approx(912e9)
    assert twelve.peak_flops("bf16") > ten.peak_flops("bf16")        # 70 SMs against 68


def test_quadro_rtx_6000():
    gpu = catalog.resolve_gpu("quadro-rtx-6000")
    assert gpu.peak_flops("fp16") == pytest.approx(130.5 * T) and gpu.peak_flops("int8") == pytest.approx(261 * T)
    assert gpu.peak_flops("fp32") == pytest.approx(16.3 * T)
    assert gpu.peak_flops("bf16") is None and gpu.peak_flops("tf32") is None
    assert gpu.memory_bytes == 24 * GB and gpu.memory_bw_bytes_per_s == pytest.approx(672e9)
    assert gpu.tdp_w == 295 and gpu.generation == "turing" and gpu.pcie == "Gen3 x16"
    assert not gpu.gpu_gpu_bw_bytes_per_s                            # bridge not assumed, as quadro-rtx-8000


@pytest.mark.parametrize("text, gpu_id", [
    # CUDA / nvidia-smi names
    ("Tesla V100-PCIE-16GB", "v100-pcie-16gb"), ("Tesla V100-PCIE-32GB", "v100-pcie-32gb"),
    ("Tesla V100S-PCIE-32GB", "v100s-pcie-32gb"), ("NVIDIA A800 80GB PCIe", "a800-pcie-80gb"),
    ("NVIDIA H800 PCIe", "h800-pcie"), ("NVIDIA H200 NVL", "h200-nvl"), ("NVIDIA GeForce RTX 4070", "rtx4070"),
    ("NVIDIA GeForce RTX 4070 SUPER", "rtx4070-super"), ("NVIDIA GeForce RTX 4070 Ti SUPER", "rtx4070ti-super"),
    ("NVIDIA GeForce RTX 3080 Ti", "rtx3080ti"), ("NVIDIA GeForce RTX 3070", "rtx3070"),
    ("NVIDIA GeForce RTX 3060 Ti", "rtx3060ti"), ("Quadro RTX 6000", "quadro-rtx-6000"),
    # README spellings
    ("8x V100 32GB PCIe", "v100-pcie-32gb"), ("V100 16GB PCIe", "v100-pcie-16gb"), ("V100S", "v100s-pcie-32gb"),
    ("RTX 3080 Ti", "rtx3080ti"), ("A800 80GB PCIe", "a800-pcie-80gb"), ("H800 PCIe", "h800-pcie"),
    ("RTX 4070 Ti SUPER", "rtx4070ti-super"), ("RTX 4060 Ti 8GB", "rtx4060ti-8gb"), ("RTX 3080 12GB", "rtx3080-12gb"),
    ("4x H200 NVL 141GB", "h200-nvl"), ("RTX 3060 Ti", "rtx3060ti"),
    # the names that were there keep their cards
    ("V100", "v100-sxm2-32gb"), ("V100 16GB", "v100-sxm2-16gb"), ("Tesla V100-SXM2-32GB", "v100-sxm2-32gb"),
    ("A800 80GB", "a800-sxm4-80gb"), ("H800", "h800-sxm"), ("H200", "h200-sxm"), ("RTX 4070 Ti", "rtx4070ti"),
    ("NVIDIA GeForce RTX 4060 Ti", "rtx4060ti-16gb"), ("NVIDIA GeForce RTX 3080", "rtx3080"), ("RTX 3060", "rtx3060"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx6000-ada"), ("Quadro RTX 8000", "quadro-rtx-8000"),
])
def test_gpu_in_text(text, gpu_id):
    assert catalog.gpu_in_text(text).id == gpu_id


def test_rtx_6000_alone_names_no_card():
    # the Quadro RTX 6000 (Turing) and the RTX 6000 Ada share the words: neither takes the bare name
    assert catalog.gpu_in_text("RTX 6000") is None
    for name in ("rtx-6000", "rtx6000"):
        with pytest.raises(UnknownNameError):
            catalog.resolve_gpu(name)


@pytest.mark.parametrize("alias, gpu_id", [
    ("v100-pcie", "v100-pcie-32gb"), ("v100s", "v100s-pcie-32gb"), ("a800-pcie", "a800-pcie-80gb"),
    ("h800-pcie-80gb", "h800-pcie"), ("h200nvl", "h200-nvl"), ("4070", "rtx4070"), ("4070-super", "rtx4070-super"),
    ("4070ti-super", "rtx4070ti-super"), ("4060ti-8gb", "rtx4060ti-8gb"), ("3080ti", "rtx3080ti"),
    ("3080-12gb", "rtx3080-12gb"), ("3070", "rtx3070"), ("3060ti", "rtx3060ti"), ("quadro-rtx6000", "quadro-rtx-6000"),
    # names other cards answered to stay theirs
    ("4060ti", "rtx4060ti-16gb"), ("v100", "v100-sxm2-32gb"), ("a800", "a800-sxm4-80gb"), ("h800", "h800-sxm"),
    ("h200", "h200-sxm"), ("3080", "rtx3080"), ("3060", "rtx3060"), ("4070ti", "rtx4070ti"),
])
def test_aliases(alias, gpu_id):
    assert catalog.resolve_gpu(alias).id == gpu_id


def _compact(name: str) -> str:
    return re.sub(r"[\s\-_/(),;:+*×]+", "", name.lower())


def test_no_name_of_a_new_card_is_another_cards():
    """Every id and alias, compared as free text compares them (hyphens and spaces dropped), belongs to one card."""
    owner: dict[str, str] = {}
    for gpu in catalog.load_gpus().values():
        for name in (gpu.id, *gpu.aliases):
            key = _compact(name)
            assert owner.setdefault(key, gpu.id) == gpu.id, f"{name!r}: {owner[key]} and {gpu.id}"
    assert set(NEW) <= set(catalog.load_gpus())
    for gpu_id in NEW:
        for alias in catalog.resolve_gpu(gpu_id).aliases:
            assert catalog.resolve_gpu(alias).id == gpu_id


def _estimate(capsys, gpu, *extra):
    code = main(["estimate", "--model", "qwen2-0.5b", "--method", "full", "--gpu", gpu, "--seq-len", "1024",
                 "--batch-size", "1", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_h200_nvl_pairs_talk_over_the_bridge_and_four_cards_over_pcie(capsys):
    assert "- data parallel over NVLink bridge (2- or 4-way)" in _estimate(capsys, "h200-nvl", "--num-gpus", "2")
    assert "- data parallel over PCIe Gen5 x16" in _estimate(capsys, "h200-nvl", "--num-gpus", "4")


@pytest.mark.parametrize("gpu, link", [
    ("Tesla V100-PCIE-32GB", "PCIe Gen3 x16"), ("rtx4060ti-8gb", "PCIe Gen4 x8"), ("a800-pcie-80gb", "PCIe Gen4 x16"),
    ("h800-pcie", "NVLink bridge (pairs, capped)"),
])
def test_two_cards_link(capsys, gpu, link):
    assert f"- data parallel over {link}" in _estimate(capsys, gpu, "--num-gpus", "2")


def test_volta_pcie_bf16_runs_at_the_fp32_peak_and_names_the_fp16_rate(capsys):
    out = _estimate(capsys, "v100-pcie-16gb")
    assert "fp32 peak (14.0 TFLOP/s)" in out and "fp16 peak (112.0 TFLOP/s)" in out
