"""GPUs of rented and desktop boxes added by tools/build_hw_catalog.py (EXTRA_GPU_ROWS): their peaks, memory
and links against the public texts each row cites, the names users type, and how the runtime treats them.

Expected values are read off the cited sources, not off the catalog:
* RTX 4080: holynerdvana.com (Tom's-derived) 'FP16 TFLOPS with Sparsity (FP8) 390 (780)', 48.7 FP32, 717 GB/s,
  320 W; lamonoai/gpumap nvidia/GPU.md@8d5e174 BF16/FP16 with FP32 accumulate 97 dense. GeForce Ada runs FP32
  accumulate at half the FP16-accumulate rate (Ada whitepaper, RTX 4090 165.2 vs 330.3): 390 / 4 = 97.5.
* RTX 2080 Ti: developer.nvidia.com/blog/nvidia-turing-architecture-in-depth Table 1 (reference): FP32 13.4,
  'Peak FP16 Tensor TFLOPS with FP32 Accumulate' 53.8, 616 GB/s, 11264 MB GDDR6; no BF16 on Turing.
* TITAN RTX: arXiv:2212.14034 appendix B.1, 130.5 TFLOP/s FP16 tensor with FP32 accumulate (not halved).
* Tesla P100 PCIe: tech4gamers FP32 9.3 / FP16 18.7; 16 GB HBM2 at 732 GB/s (lijun99/GPU-Resources).
* Tesla P40: gpuark / sysrqmts FP32 11.76, FP16 1:64 (no fast FP16), 24 GB GDDR5, 346 GB/s (datasheet).
* RTX 3060: sysrqmts 3584 x 1777 MHz = 12.74 FP32, 12 GB, 360 GB/s; FP32-accumulate tensor = 2 x FP32.
* RTX A5000: hardwareluxx / datasheet Tensor 222.2 (sparse) -> 111.1 dense, 24 GB, 768 GB/s, 230 W.
* RTX 5080: notebookcheck 1801 AI TOPS (FP4 sparse) -> 112.6 BF16 with FP32 accumulate, 960 GB/s, 16 GB.
* RTX PRO 6000 Blackwell Workstation: hmc-tech BF16 503.8 dense; datasheet 96 GB GDDR7, 1792 GB/s, 600 W.
* MI355X: stas00/ml-engineering@744d01e bf16 2500, fp8 5000, 288 GB HBM3e, 8.00 TBps, 1400 W.
"""

from __future__ import annotations

import pytest

from trainplan import catalog
from trainplan.cli import main
from trainplan.enums import Attention, Framework
from trainplan.timing.attention import AttentionKernel, attention_kernel
from trainplan.units import GB

T = 1e12


def test_rtx4080_peaks_memory_and_link():
    gpu = catalog.resolve_gpu("rtx4080")
    assert gpu.peak_flops("bf16") == pytest.approx(97.5 * T)      # 390 sparse FP16-acc / 2 (dense) / 2 (FP32 acc)
    assert gpu.peak_flops("fp16") == pytest.approx(97.5 * T)
    assert gpu.peak_flops("fp8") == pytest.approx(195 * T)        # FP8 780 sparse FP16-acc / 2 / 2
    assert gpu.peak_flops("fp32") == pytest.approx(48.7 * T)
    assert gpu.memory_bytes == 16 * GB and gpu.memory_type == "GDDR6X"
    assert gpu.memory_bw_bytes_per_s == pytest.approx(717e9)
    assert gpu.tdp_w == 320 and gpu.generation == "ada"
    assert gpu.interconnect == "none (no NVLink)" and not gpu.gpu_gpu_bw_bytes_per_s


def test_turing_has_no_bf16_and_fp16_is_the_fp32_accumulate_tensor_rate():
    ti = catalog.resolve_gpu("2080ti")
    assert ti.peak_flops("bf16") is None and ti.peak_flops("tf32") is None and ti.peak_flops("fp8") is None
    assert ti.peak_flops("fp16") == pytest.approx(53.8 * T)        # FP16-accumulate 107.6 on GeForce
    assert ti.peak_flops("fp32") == pytest.approx(13.4 * T)
    assert ti.memory_bytes == 11 * GB and ti.memory_bw_bytes_per_s == pytest.approx(616e9)
    assert ti.generation == "turing" and ti.pcie == "Gen3 x16"
    titan = catalog.resolve_gpu("titan-rtx")
    assert titan.peak_flops("fp16") == pytest.approx(130.5 * T)    # TITAN: FP32 accumulate not halved
    assert titan.peak_flops("bf16") is None and titan.memory_bytes == 24 * GB


def test_pascal_parts():
    p100 = catalog.resolve_gpu("tesla-p100")
    assert p100.id == "p100-pcie-16gb" and p100.generation == "pascal"
    assert p100.peak_flops("fp16") == pytest.approx(18.7 * T) and p100.peak_flops("fp32") == pytest.approx(9.3 * T)
    assert p100.peak_flops("bf16") is None and p100.memory_bytes == 16 * GB and p100.memory_type == "HBM2"
    assert p100.memory_bw_bytes_per_s == pytest.approx(732e9)
    p40 = catalog.resolve_gpu("p40")
    assert p40.generation == "pascal" and p40.peak_flops("fp16") is None and p40.peak_flops("bf16") is None
    assert p40.peak_flops("fp32") == pytest.approx(11.76 * T)
    assert p40.memory_bytes == 24 * GB and p40.memory_bw_bytes_per_s == pytest.approx(346e9)


@pytest.mark.parametrize("gpu_id, bf16, memory_gb, bw_gbps", [
    ("rtx3060", 25.5, 12, 360),                  # 2 x 12.74
    ("rtx-a5000", 111.1, 24, 768),               # 222.2 sparse / 2, workstation: not halved
    ("rtx5080", 112.6, 16, 960),                 # 1801 / 16
    ("rtx-pro-6000-blackwell", 503.8, 96, 1792),
    ("mi355x", 2500, 288, 8000),
])
def test_peaks_and_memory_against_sources(gpu_id, bf16, memory_gb, bw_gbps):
    gpu = catalog.resolve_gpu(gpu_id)
    assert gpu.peak_flops("bf16") == pytest.approx(bf16 * T)
    assert gpu.memory_bytes == memory_gb * GB
    assert gpu.memory_bw_bytes_per_s == pytest.approx(bw_gbps * 1e9)


def test_mi355x_is_cdna4_with_xgmi():
    gpu = catalog.resolve_gpu("instinct-mi355x")
    assert gpu.generation == "cdna4" and gpu.peak_flops("fp8") == pytest.approx(5000 * T) and gpu.tdp_w == 1400
    assert gpu.gpu_gpu_bw_bytes_per_s == pytest.approx(2 * 535.5e9)     # all-to-all 535.5 GBps per direction


@pytest.mark.parametrize("text, gpu_id", [
    ("NVIDIA GeForce RTX 4080", "rtx4080"), ("RTX 4080 SUPER", "rtx4080-super"), ("RTX 4070 Ti", "rtx4070ti"),
    ("RTX 4060 Ti 16GB", "rtx4060ti-16gb"), ("RTX 3090 Ti", "rtx3090ti"), ("NVIDIA GeForce RTX 3080", "rtx3080"),
    ("RTX 3060 12GB", "rtx3060"), ("RTX 2080 Ti", "rtx2080ti"), ("2080Ti 22G", "rtx2080ti"),
    ("NVIDIA TITAN RTX", "titan-rtx"), ("NVIDIA GeForce RTX 5080", "rtx5080"), ("NVIDIA RTX A4000", "rtx-a4000"),
    ("NVIDIA RTX A5000", "rtx-a5000"), ("NVIDIA RTX 4000 Ada Generation", "rtx4000-ada"),
    ("Quadro RTX 8000", "quadro-rtx-8000"), ("Tesla P100-PCIE-16GB", "p100-pcie-16gb"), ("Tesla P40", "p40"),
    ("RTX PRO 6000 Blackwell", "rtx-pro-6000-blackwell"), ("AMD Instinct MI355X", "mi355x"),
    # the parts that were there keep their names
    ("RTX 3090", "rtx3090"), ("NVIDIA GeForce RTX 4090", "rtx4090"), ("RTX 4090D", "rtx4090d"),
    ("RTX 6000 Ada", "rtx6000-ada"), ("NVIDIA A6000", "rtx-a6000"),
])
def test_gpu_in_text(text, gpu_id):
    assert catalog.gpu_in_text(text).id == gpu_id


@pytest.mark.parametrize("text", ["RTX 4090 Ti", "NVIDIA GeForce RTX 4090 Ti", "RTX 5080 SUPER"])
def test_a_ti_or_super_card_the_catalog_lacks_is_not_the_shorter_name(text):
    # a Ti or SUPER name on a catalog card's number is another card, never the shorter name's (the 3060 Ti, 3070 Ti,
    # 3080 Ti and 4070 Ti SUPER this test named before are in the catalog now: tests/test_catalog_gpus_wave3.py,
    # test_catalog_gpus_wave4.py)
    assert catalog.gpu_in_text(text) is None


@pytest.mark.parametrize("alias, gpu_id", [
    ("4080", "rtx4080"), ("rtx-4080", "rtx4080"), ("geforce-rtx-4080", "rtx4080"), ("3060", "rtx3060"),
    ("rtx3060-12gb", "rtx3060"), ("2080ti", "rtx2080ti"), ("rtx-2080-ti", "rtx2080ti"), ("a5000", "rtx-a5000"),
    ("rtx-a5000", "rtx-a5000"), ("p100", "p100-pcie-16gb"), ("tesla-p100", "p100-pcie-16gb"), ("p40", "p40"),
    ("tesla-p40", "p40"), ("rtx-pro-6000", "rtx-pro-6000-blackwell"), ("a4000", "rtx-a4000"),
])
def test_aliases(alias, gpu_id):
    assert catalog.resolve_gpu(alias).id == gpu_id


def test_pascal_runs_no_flash_attention():
    # FlashAttention-2 needs sm80+: SDPA falls back to the memory-efficient kernel on sm60 as on sm70/sm75
    kernel = attention_kernel(Framework.HF, Attention.SDPA, "pascal", "bf16", 128)
    assert kernel is AttentionKernel.MEM_EFFICIENT


def _estimate(capsys, gpu, *extra):
    code = main(["estimate", "--model", "qwen2-7b", "--method", "lora", "--gpu", gpu, "--seq-len", "1024",
                 "--batch-size", "1", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_flash_attention_on_pascal_is_refused(capsys):
    code, _, err = _estimate(capsys, "p100", "--attention", "flash")
    assert code == 2 and "compute capability 8.0" in err and "pascal" in err


def test_rtx4080_estimate_runs(capsys):
    code, out, _ = _estimate(capsys, "rtx4080")
    assert code == 0 and "97.5 TFLOP/s bf16 peak" in out


P2P = ("GPU to GPU inside a node over PCIe peer-to-peer assumed; GeForce drivers may disable it, and NCCL then "
       "copies through host memory (slower)")


def _link_lines(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if "over PCIe" in line or "peer-to-peer" in line]


def test_two_geforce_cards_talk_over_pcie_without_nvlink_as_rtx4090_does(capsys):
    code, out_4080, _ = _estimate(capsys, "rtx4080", "--num-gpus", "2")
    assert code == 0
    code, out_4090, _ = _estimate(capsys, "rtx4090", "--num-gpus", "2")
    assert code == 0
    assert "- data parallel over PCIe Gen4 x16" in _link_lines(out_4080) and "- " + P2P in _link_lines(out_4080)
    assert _link_lines(out_4080) == _link_lines(out_4090)


def test_bridged_geforce_is_timed_over_pcie_as_rtx3090(capsys):
    # RTX 3090 Ti: NVLink bridge possible (lamonoai), bandwidth not in the catalog: PCIe, as rtx3090
    code, out_ti, _ = _estimate(capsys, "rtx3090ti", "--num-gpus", "2")
    assert code == 0
    code, out_3090, _ = _estimate(capsys, "rtx3090", "--num-gpus", "2")
    assert code == 0
    assert _link_lines(out_ti) == _link_lines(out_3090) and "- " + P2P in _link_lines(out_ti)


def test_the_rtx_pro_6000_blackwell_runs_the_desktop_die_kernels():
    """The RTX PRO 6000 Blackwell is the RTX 5090's die (GB202, sm120), not a B200 (sm100): as for the 5090,
    Megatron's Transformer Engine gets no cuDNN Blackwell preference and FlashAttention no FA4 path, while a
    B200 keeps both (catalog.gpu_text.desktop_die; the 'consumer' attention path)."""
    from trainplan.catalog.gpu_text import desktop_die
    from trainplan.timing.links import is_consumer

    pro, b200, g5090 = (catalog.resolve_gpu(g) for g in ("rtx-pro-6000-blackwell", "b200", "rtx5090"))
    assert desktop_die(pro) and desktop_die(g5090) and not desktop_die(b200)
    assert not is_consumer(pro)          # a workstation card: the GeForce-only network and P2P guesses stay off
    for gpu, kernel in ((pro, AttentionKernel.FA2), (g5090, AttentionKernel.FA2), (b200, AttentionKernel.CUDNN)):
        assert attention_kernel(Framework.MEGATRON, Attention.FLASH, gpu.generation, "bf16", 128,
                                consumer=desktop_die(gpu)) is kernel


def test_bf16_on_a_part_without_bf16_tensor_cores_names_its_fp16_rate():
    """Pascal and Turing have no bf16 tensor cores: bf16 is timed at the FP32 peak, and the note names the
    fp16 rate --precision fp16 would run at (P100: 18.7 TFLOP/s, no tensor cores; 2080 Ti: 53.8, its tensor
    cores with FP32 accumulate)."""
    from trainplan.timing.context import efficiency_notes
    from trainplan.timing.efficiency import KernelStack, matmul_efficiency

    for gpu_id, fp32, fp16 in (("p100-pcie-16gb", "9.3", "18.7"), ("rtx2080ti", "13.4", "53.8")):
        gpu = catalog.resolve_gpu(gpu_id)
        eff = matmul_efficiency(gpu, "bf16", hidden_size=4096, tokens_per_micro_batch=2048, stack=KernelStack.EAGER)
        [note] = [n for n in efficiency_notes(eff, gpu, "bf16") if "tensor cores" in n]
        assert f"fp32 peak ({fp32} TFLOP/s)" in note and f"fp16 peak ({fp16} TFLOP/s)" in note
