"""Wave 4 of the GPU catalog (tools/build_hw_catalog.py, EXTRA_GPU_ROWS): AMD's MI250 and MI210, NVIDIA's HGX B100,
the GeForce RTX 3070 Ti and the RTX 5000 Ada. Their figures against the public texts each row cites, the names
users, CUDA / ROCm and READMEs give them, and that the neighbours they share words with keep their own names.

Expected values are read off the cited sources, not off the catalog:
* MI250: AMD's ROCm MI250 page ("Peak-performance capabilities of the MI250 OAM": vector FP32 45.3, matrix
  FP16 / BF16 / INT8 362.1; 3.2 TB/s; links 100 GB/s bidirectional each) and AMD's table in AnandTech's MI210
  launch article (128 GB HBM2E, 6 Infinity Fabric links, 560 W, OAM, 11/2021). Whole-package figures, as mi250x.
* MI210: the same AnandTech table and AMD's product page as code index file 68879509467 quotes it (64 GB HBM2e,
  1.6 TB/s, 181 TFLOPS FP16 / BF16, INT8 181 TOPS, FP32 vector 22.6, 300 W, PCIe 4.0 card, 03/2022).
* B100: NVIDIA's Blackwell technical brief, per-GPU HGX B100 column (chenzomi12/AISystem's copy): TF32 1.8,
  FP16/BF16 3.5, FP8 7 PFLOPS, INT8 7 POPS, all with sparsity (dense = half); up to 192 GB HBM3e, 8 TB/s; 700 W;
  NVLink 1.8 TB/s. No FP32 figure is published.
* RTX 3070 Ti: NVIDIA's compare pages (6,144 cores, 1.77 GHz, 8 GB GDDR6X 256-bit, 290 W, PCIe Gen 4, no NVLink);
  608 GB/s (19 Gbps x 256-bit). Rates derived as the rtx3070 row's: FP32 = cores x 2 x clock, BF16 = 2 x FP32.
* RTX 5000 Ada: lamonoai's NVIDIA table (FP32 65, TF32 131, FP16/BF16 261, FP8 and INT8 522 dense; 32 GB GDDR6
  ECC, 576 GB/s, 250 W, PCIe 4.0 x16, no NVLink).
"""

from __future__ import annotations

import pytest

from trainplan import catalog
from trainplan.errors import UnknownNameError
from trainplan.catalog.gpu_text import desktop_die
from trainplan.timing.links import default_interconnect, intranode_link, is_consumer
from trainplan.units import GB

T = 1e12

NEW = ("mi250", "mi210", "b100", "rtx3070ti", "rtx5000-ada")


@pytest.mark.parametrize("gpu_id, memory_gb, memory_type, bw_gbps, bf16, tdp_w, generation", [
    ("mi250", 128, "HBM2e", 3200, 362.1, 560, "cdna2"),
    ("mi210", 64, "HBM2e", 1600, 181, 300, "cdna2"),
    ("b100", 192, "HBM3e", 8000, 1750, 700, "blackwell"),
    ("rtx3070ti", 8, "GDDR6X", 608, 43.5, 290, "ampere"),
    ("rtx5000-ada", 32, "GDDR6 ECC", 576, 261, 250, "ada"),
])
def test_cited_memory_bandwidth_bf16_and_power(gpu_id, memory_gb, memory_type, bw_gbps, bf16, tdp_w, generation):
    gpu = catalog.resolve_gpu(gpu_id)
    assert gpu.memory_bytes == memory_gb * GB and gpu.memory_type == memory_type
    assert gpu.memory_bw_bytes_per_s == pytest.approx(bw_gbps * 1e9)
    assert gpu.peak_flops("bf16") == pytest.approx(bf16 * T)
    assert gpu.tdp_w == tdp_w and gpu.generation == generation
    assert gpu.source.strip() and gpu.notes.strip() and gpu.confidence


def test_mi250_is_the_whole_oam_package_as_the_mi250x():
    gpu, x = catalog.resolve_gpu("mi250"), catalog.resolve_gpu("mi250x")
    for dtype, tflops in (("fp32", 45.3), ("fp16", 362.1), ("bf16", 362.1), ("int8", 362.1)):
        assert gpu.peak_flops(dtype) == pytest.approx(tflops * T), dtype
    assert gpu.peak_flops("tf32") is None and gpu.peak_flops("fp8") is None    # CDNA2: no TF32, no FP8
    # 208 against 220 CUs at the same 1.7 GHz: 362.1 / 383 = 208 / 220
    assert gpu.peak_flops("bf16") / x.peak_flops("bf16") == pytest.approx(208 / 220, rel=1e-3)
    assert gpu.memory_bytes == x.memory_bytes and gpu.memory_bw_bytes_per_s == x.memory_bw_bytes_per_s
    # 6 Infinity Fabric links x 100 GB/s bidirectional (mi250x: 7 x 100)
    assert "6 links" in gpu.interconnect and gpu.gpu_gpu_bw_bytes_per_s == pytest.approx(600e9)
    assert gpu.gpu_gpu_bw_bytes_per_s < x.gpu_gpu_bw_bytes_per_s
    assert gpu.pcie == "Gen4 x16" and gpu.launch_year == 2021 and gpu.form_factor == "OAM"
    assert "rocm.docs.amd.com" in gpu.source


def test_mi210_is_one_gcd_on_a_pcie_card():
    gpu, mi250 = catalog.resolve_gpu("mi210"), catalog.resolve_gpu("mi250")
    for dtype, tflops in (("fp32", 22.6), ("fp16", 181), ("bf16", 181), ("int8", 181)):
        assert gpu.peak_flops(dtype) == pytest.approx(tflops * T), dtype
    assert gpu.peak_flops("tf32") is None and gpu.peak_flops("fp8") is None
    # half an MI250 (104 of its 208 CUs, one of its two HBM2e halves)
    assert gpu.peak_flops("bf16") == pytest.approx(mi250.peak_flops("bf16") / 2, rel=2e-3)
    assert gpu.memory_bytes * 2 == mi250.memory_bytes
    assert gpu.memory_bw_bytes_per_s * 2 == pytest.approx(mi250.memory_bw_bytes_per_s)
    assert gpu.pcie == "Gen4 x16" and gpu.launch_year == 2022 and gpu.form_factor.startswith("PCIe")
    # the Infinity Fabric bridge is optional: PCIe is timed, as for the bridged NVIDIA PCIe cards
    assert not gpu.gpu_gpu_bw_bytes_per_s and "bridge" in gpu.interconnect
    assert intranode_link(gpu).name.startswith("PCIe Gen4")


def test_b100_is_half_the_sparse_hgx_b100_figures():
    gpu, b200 = catalog.resolve_gpu("b100"), catalog.resolve_gpu("b200")
    # NVIDIA's per-GPU HGX B100 figures are with sparsity: dense = half
    for dtype, sparse_pflops in (("tf32", 1.8), ("bf16", 3.5), ("fp16", 3.5), ("fp8", 7), ("int8", 7)):
        assert gpu.peak_flops(dtype) == pytest.approx(sparse_pflops * 1e15 / 2), dtype
    assert gpu.peak_flops("fp32") is None                            # not published: left blank
    assert gpu.peak_flops("bf16") < b200.peak_flops("bf16") and gpu.tdp_w < b200.tdp_w
    assert gpu.memory_bw_bytes_per_s == b200.memory_bw_bytes_per_s == pytest.approx(8e12)
    assert gpu.gpu_gpu_bw_bytes_per_s == b200.gpu_gpu_bw_bytes_per_s == pytest.approx(1800e9)
    assert "NVLink 5" in gpu.interconnect and gpu.launch_year == 2024 and gpu.nvlink_domain_gpus == 0
    assert intranode_link(gpu).bw_bytes_per_s == pytest.approx(900e9)     # one direction of NVLink 5
    assert default_interconnect(gpu) == "ib-ndr" and not desktop_die(gpu)
    assert gpu.supports("fp8")


def test_rtx_3070_ti_is_the_3070_with_two_more_sms_and_gddr6x():
    gpu, base = catalog.resolve_gpu("rtx3070ti"), catalog.resolve_gpu("rtx3070")
    assert gpu.peak_flops("fp32") == pytest.approx(6144 * 2 * 1.77e9, rel=1e-4)   # 21.75 TFLOPS
    assert gpu.peak_flops("tf32") == pytest.approx(gpu.peak_flops("fp32"))
    # GeForce GA10x: BF16/FP16 with FP32 accumulate = 2 x FP32, INT8 = 8 x FP32 (rtx3070: 20.3 -> 40.6 / 162.6)
    assert gpu.peak_flops("bf16") == gpu.peak_flops("fp16") == pytest.approx(2 * gpu.peak_flops("fp32"))
    assert gpu.peak_flops("int8") == pytest.approx(8 * gpu.peak_flops("fp32"))
    assert gpu.peak_flops("fp8") is None and not gpu.supports("fp8")
    assert gpu.memory_bw_bytes_per_s == pytest.approx(256 / 8 * 19e9)         # 608 GB/s
    assert gpu.memory_bytes == base.memory_bytes and gpu.memory_type != base.memory_type
    assert base.peak_flops("bf16") < gpu.peak_flops("bf16") and base.tdp_w < gpu.tdp_w
    assert gpu.pcie == "Gen4 x16" and not gpu.gpu_gpu_bw_bytes_per_s and gpu.launch_year == 2021
    assert is_consumer(gpu) and desktop_die(gpu)


def test_rtx_5000_ada_sits_between_the_4000_and_6000_ada():
    gpu = catalog.resolve_gpu("rtx5000-ada")
    small, large = catalog.resolve_gpu("rtx4000-ada"), catalog.resolve_gpu("rtx6000-ada")
    for dtype, tflops in (("fp32", 65.3), ("tf32", 131), ("fp16", 261), ("bf16", 261), ("fp8", 522), ("int8", 522)):
        assert gpu.peak_flops(dtype) == pytest.approx(tflops * T), dtype
    assert gpu.peak_flops("fp32") == pytest.approx(12800 * 2 * 2.55e9, rel=1e-3)
    # a workstation card: FP32 accumulate at the full rate (BF16 = 4 x FP32), not GeForce's half rate
    assert gpu.peak_flops("bf16") == pytest.approx(4 * gpu.peak_flops("fp32"), rel=1e-3)
    for dtype in ("bf16", "fp8"):
        assert small.peak_flops(dtype) < gpu.peak_flops(dtype) < large.peak_flops(dtype)
    assert small.memory_bytes < gpu.memory_bytes < large.memory_bytes
    assert gpu.pcie == "Gen4 x16" and not gpu.gpu_gpu_bw_bytes_per_s and gpu.launch_year is None
    assert desktop_die(gpu) and not is_consumer(gpu) and gpu.supports("fp8")


@pytest.mark.parametrize("name, gpu_id", [
    ("MI250", "mi250"), ("AMD Instinct MI250", "mi250"), ("Instinct MI250", "mi250"), ("instinct-mi250", "mi250"),
    ("MI210", "mi210"), ("AMD Instinct MI210", "mi210"), ("Instinct MI210", "mi210"),
    ("B100", "b100"), ("HGX B100", "b100"), ("NVIDIA B100", "b100"), ("hgx-b100", "b100"),
    ("RTX 3070 Ti", "rtx3070ti"), ("NVIDIA GeForce RTX 3070 Ti", "rtx3070ti"), ("3070ti", "rtx3070ti"),
    ("RTX 5000 Ada", "rtx5000-ada"), ("NVIDIA RTX 5000 Ada Generation", "rtx5000-ada"),
    ("rtx-5000-ada", "rtx5000-ada"),
    # the neighbours keep their names
    ("MI250X", "mi250x"), ("AMD Instinct MI250X", "mi250x"), ("RTX 3070", "rtx3070"),
    ("NVIDIA GeForce RTX 3070", "rtx3070"), ("RTX 6000 Ada", "rtx6000-ada"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx6000-ada"), ("RTX 4000 Ada", "rtx4000-ada"), ("B200", "b200"),
    ("HGX B200", "b200"), ("RTX A5000", "rtx-a5000"), ("V100", "v100-sxm2-32gb"),
])
def test_names_resolve_both_ways(name, gpu_id):
    assert catalog.resolve_gpu(name).id == gpu_id
    assert catalog.gpu_in_text(name).id == gpu_id


@pytest.mark.parametrize("text, gpu_id", [
    ("AMD Instinct MI210 (gfx90a:sramecc+:xnack-)", "mi210"),     # torch collect_env on ROCm
    ("8x AMD Instinct MI250 node", "mi250"), ("4x MI210 with Infinity Fabric bridge", "mi210"),
    ("8x HGX B100 (700W)", "b100"), ("single RTX 3070 Ti 8GB", "rtx3070ti"),
    ("2x NVIDIA RTX 5000 Ada Generation", "rtx5000-ada"),
    # ROCm names both OAM parts "AMD Instinct MI250X / MI250": the longer name wins, as the notes say
    ("AMD Instinct MI250X / MI250", "mi250x"),
])
def test_gpu_in_text_reads_run_descriptions(text, gpu_id):
    assert catalog.gpu_in_text(text).id == gpu_id


@pytest.mark.parametrize("text", ["RTX 5000", "Quadro RTX 5000", "RTX PRO 5000 Blackwell"])
def test_other_5000_cards_are_not_the_rtx_5000_ada(text):
    # the Turing Quadro RTX 5000 and the RTX PRO 5000 Blackwell share the number: neither reads as the Ada card
    assert catalog.gpu_in_text(text) is None
    with pytest.raises(UnknownNameError):
        catalog.resolve_gpu(text)


def test_new_names_are_their_cards_own():
    gpus = catalog.load_gpus()
    names = [n.lower() for g in gpus.values() for n in (g.id, *g.aliases)]
    assert len(names) == len(set(names))
    for gpu_id in NEW:
        gpu = gpus[gpu_id]
        assert catalog.resolve_gpu(gpu_id) is gpu
        for alias in gpu.aliases:
            assert catalog.resolve_gpu(alias).id == gpu_id


# --- H20 141GB (H20-3e): LLM-Prof hardware_spec.md@8434c8d1 NVIDIA_H20_SXM5_141GB ----------------------------------

@pytest.mark.parametrize("text, gpu_id", [
    ("H20 141GB", "h20-141gb"), ("NVIDIA H20-3e", "h20-141gb"), ("8卡H20 141G", "h20-141gb"), ("H20", "h20"),
    ("H20 96GB", "h20"),
])
def test_h20_141gb_is_its_own_card(text, gpu_id):
    assert catalog.gpu_in_text(text).id == gpu_id
    assert catalog.resolve_gpu(text.replace("8卡", "")).id == gpu_id


def test_h20_141gb_figures():
    # 141 GB HBM3e at 4.8 TB/s, 148 TFLOPS FP16/BF16 dense and 296 INT8 (LLM-Prof), NVLink 900 GB/s
    gpu = catalog.resolve_gpu("h20-141gb")
    assert gpu.memory_bw_bytes_per_s == 4.8e12 and gpu.peak_flops("bf16") == 148e12
    assert gpu.gpu_gpu_bw_bytes_per_s == 900e9 and gpu.generation == "hopper"
