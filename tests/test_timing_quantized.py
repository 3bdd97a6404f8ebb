"""QLoRA's quantised-base terms (trainplan.timing.quantized): dequantisation bytes per use, and the
fp32 path of non-quantized weights kept in fp32 (peft prepare_model_for_kbit_training)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainplan.cases.memorycase import map_memory_case
from trainplan.cases.text import kbit_prep_fp32
from trainplan.cases.timecase import map_case
from trainplan.enums import Attention, Framework, GradCkpt, Method, Precision, Quant
from trainplan.frozen import replace
from trainplan.job.training import Implementation, Layout, LoraConfig, QuantConfig, TrainingSetup
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.efficiency import DEFAULT_MODEL, Efficiency, KernelStack
from trainplan.timing.estimate import TimingOptions, step_time
from trainplan.timing.flops import AttnConvention, FlopsPerToken
from trainplan.timing.quantized import (
    MEM_EFFICIENT_FP32_BWD,
    MEM_EFFICIENT_FP32_FWD,
    base_gemm_flops,
    cast_bytes_per_token,
    dequant_bytes,
    dequant_operand_bytes,
    dequant_uses,
    fp32_adapter_gemm_s,
    fp32_path,
    fp32_path_s,
    mem_efficient_fp32_ratios,
)

A100 = GpuSpec(id="a100-sxm4-80gb", name="A100 SXM4 80GB", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=2039e9,
               peak_flops_per_s={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
               interconnect="NVLink 3", gpu_gpu_bw_bytes_per_s=600e9, pcie="Gen4 x16", generation="ampere")
V100 = GpuSpec(id="v100-sxm2-32gb", name="V100", vendor="NVIDIA", memory_bytes=32 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=900e9,
               peak_flops_per_s={"fp32": 15.7e12, "fp16": 125e12}, generation="volta")
# a two-layer llama: q, k, v, o 64 -> 64; gate, up 64 -> 128; down 128 -> 64
TINY = ModelSpec(name="tiny", model_type="llama", naming="llama", hidden_size=64, num_layers=2, num_heads=4,
                 num_kv_heads=4, head_dim=16, intermediate_size=128, vocab_size=100, tied_embeddings=False)
ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
DEV2 = Path(__file__).parent / "data" / "published_dev2.json"


def _qlora(**kw) -> TrainingSetup:
    kw.setdefault("precision", Precision.BF16_PURE)
    kw.setdefault("impl", Implementation(load_fp32=True))
    return TrainingSetup(model=TINY, method=Method.QLORA, batch_size=2, seq_len=512, grad_ckpt=GradCkpt.FULL,
                         attention=kw.pop("attention", Attention.SDPA),
                         lora=LoraConfig(rank=8, alpha=16, dropout=0.0, targets=ALL),
                         quant=kw.pop("quant", QuantConfig()), framework=Framework.PYTORCH, **kw)


# --- dequantisation ------------------------------------------------------------------------------

def test_dequant_bytes_per_use_from_bitsandbytes():
    # dequantize_4bit: read 0.5 B packed + 4/64 B fp32 absmax, write 2 B bf16 = 2.5625
    assert dequant_bytes("nf4", False) == pytest.approx(2.5625)
    # double quant adds the absmax rebuild: read uint8 1/64 + state2 4/(64*256), write fp32 4/64,
    # `absmax += offset` read + write 8/64: 2.5625 + 0.015625 + 0.000244140625 + 0.0625 + 0.125
    assert dequant_bytes("nf4", True) == pytest.approx(2.765869140625)
    assert dequant_bytes("fp4", True) == pytest.approx(2.765869140625)
    # 8-bit (read 1, write 2) and the GPTQ effective cost have no nested absmax
    assert dequant_bytes("int8", True) == pytest.approx(3.0)
    assert dequant_bytes("gptq", True) == pytest.approx(18.0)


def test_dequant_uses_forward_backward_and_recompute():
    # MatMul4Bit: forward + input gradient (no weight gradient), + the rerun forward under full checkpointing
    assert dequant_uses(_qlora()) == 3
    assert dequant_uses(replace(_qlora(), grad_ckpt=GradCkpt.NONE)) == 2


def test_double_quant_step_dequant_seconds():
    # quantised weights of TINY: per layer 4 x 64 x 64 + 3 x 64 x 128 = 16,384 + 24,576 = 40,960; x 2 layers
    # = 81,920. Per micro-batch 3 uses x 2.765869140625 B; grad_accum 4; A100 at 0.8 x 2039 GB/s.
    # HF Trainer bf16=True (autocast): the matmuls are 16-bit, the dequantised copy too
    setup = replace(_qlora(quant=QuantConfig(double_quant=True), precision=Precision.BF16), grad_accum=4)
    st = step_time(setup, Layout(gpu_id=A100.id), A100)
    assert st.breakdown.dequant_s == pytest.approx(81_920 * 2.765869140625 * 3 * 4 / (2039e9 * 0.8))
    # no autocast over fp32 non-quantized weights: bitsandbytes computes in fp32 and each use writes
    # the dequantised weight as fp32, 2 B more: 4.765869140625 B per use
    fp32 = step_time(replace(setup, precision=Precision.BF16_PURE), Layout(gpu_id=A100.id), A100)
    assert fp32.breakdown.dequant_s == pytest.approx(81_920 * 4.765869140625 * 3 * 4 / (2039e9 * 0.8))


# --- the fp32 path -------------------------------------------------------------------------------

def test_fp32_path_applies_only_to_fp32_non_quantized_weights():
    assert fp32_path(_qlora(impl=Implementation(load_fp32=False))) is None
    assert fp32_path(replace(_qlora(), method=Method.LORA, quant=None)) is None
    plain = fp32_path(_qlora())                                   # bf16-pure: no autocast
    assert not plain.autocast and plain.attention == "mem-efficient fp32"
    assert fp32_path(_qlora(attention=Attention.FLASH)).attention == "16-bit"   # transformers casts q/k/v
    assert fp32_path(_qlora(attention=Attention.EAGER)).attention == "eager fp32"
    hf = fp32_path(_qlora(precision=Precision.BF16))             # HF Trainer bf16=True: autocast
    assert hf.autocast and hf.attention == "16-bit"


def test_bitsandbytes_computes_in_the_input_dtype():
    # Linear4bit.set_compute_type: an fp32 input sets compute_dtype = fp32 (bitsandbytes 0.45.0
    # nn/modules.py); with no autocast the 4-bit linears' GEMMs then run in fp32
    assert fp32_path(_qlora()).base_fp32 and dequant_operand_bytes(_qlora()) == 2.0
    # autocast casts F.linear to bf16 inside MatMul4Bit: 16-bit GEMMs, 16-bit dequantised copy
    assert not fp32_path(_qlora(precision=Precision.BF16)).base_fp32
    assert dequant_operand_bytes(_qlora(precision=Precision.BF16)) == 0.0
    # 8-bit (Linear8bitLt) has no such rule; 16-bit non-quantized weights: no fp32 path at all
    assert not fp32_path(_qlora(quant=QuantConfig(kind=Quant.INT8))).base_fp32
    assert dequant_operand_bytes(_qlora(impl=Implementation())) == 0.0


def test_cast_bytes_around_quantised_linears():
    # in + out per layer: 4 x (64 + 64) + 2 x (64 + 128) + (128 + 64) = 512 + 384 + 192 = 1,088; x 2 layers
    # = 2,176 elements x 6 B (fp32 <-> bf16) x 3 passes (forward, backward, recompute) = 39,168 B per token
    assert cast_bytes_per_token(_qlora()) == pytest.approx(39_168)


def test_mem_efficient_fp32_ratios_from_published_times():
    # forward, xformers #712 (A100): f32 1-8192-4-128 5825.0 us for 1 x 4 heads, b16 2-8192-8-128
    # 5086.0 us for 2 x 8: per (batch x head) 1456.25 / 317.875 us = 4.58120
    assert MEM_EFFICIENT_FP32_FWD == pytest.approx(4.58120, rel=1e-5)
    # backward, xformers PR #467 (A100): 2335.2 / 613.4 = 3.80698 (K=88), 2241.3 / 583.6 = 3.84047 (K=80)
    assert MEM_EFFICIENT_FP32_BWD == pytest.approx((3.80698 + 3.84047) / 2, rel=1e-5)
    assert mem_efficient_fp32_ratios(128) == (MEM_EFFICIENT_FP32_FWD, MEM_EFFICIENT_FP32_BWD)
    # above 128 the generic kernel, xformers PR #587 at K=256 (A100): forward 27170.5 / 7031.8 = 3.86393,
    # backward 45039.1 / 31674.1 = 1.42196 (its f16 backward is the slow one)
    assert mem_efficient_fp32_ratios(256) == pytest.approx((3.86393, 1.42196), rel=1e-5)


_FT = FlopsPerToken(seq_len=512, attention_convention=AttnConvention.CAUSAL, mfu_convention=AttnConvention.FULL,
                    linear_fwd=1e9, attention_fwd=2e8, lm_head_fwd=1e8, adapter_fwd=1e7, linear_bwd_input=1e9,
                    linear_bwd_weight=0.0, attention_bwd=4e8, lm_head_bwd=1e8, adapter_bwd=2e7,
                    recompute=1e9 + 1e7 + 2e8, recompute_attention=2e8, attention_fwd_mfu=4e8)
_EFF = Efficiency(value=0.5, attention=0.4, mamf_fraction=0.869, mamf_known=True, sustained=0.94, width=0.8,
                  tokens=0.7, ridge=153.0, stack=KernelStack.EAGER, peak_flops_per_s=312e12, peak_dtype="bf16",
                  attention_peak_flops_per_s=312e12, overridden=True)


def test_fp32_path_seconds_by_hand():
    # hardware 4.04e9 FLOP/token of which attention 8e8: linears 3.24e9; 1,000 tokens at 312e12 x 0.5:
    # linear 0.0207692 s; elementwise at 4 B adds linear x (1 - width 0.8) = 0.00415385 s
    # casts 39,168 B + adapters (per layer sum(in + 4 out) = 4 x 320 + 2 x 576 + 384 = 2,816; x 2 layers
    # x 4 passes x 2 B = 45,056 B) per token: 84,224 B x 1,000 / 1e12 B/s = 8.4224e-5 s
    autocast_s = 3.24e9 * 1000 / (312e12 * 0.5) * 0.2 + 84_224 * 1000 / 1e12
    hf = _qlora(precision=Precision.BF16)
    assert fp32_path_s(hf, A100, _FT, _EFF, 1000, DEFAULT_MODEL, 1e12) == pytest.approx(autocast_s)
    # no autocast: bitsandbytes computes in fp32 (the casts are no-ops: only the adapters' 45,056 B);
    # head 2e8 + adapters (1e7 + 2e7 + 1e7 recompute) 4e7 + the 4-bit linears (forward 1e9, input
    # gradient 1e9, recompute 1e9) = 3.24e9 FLOP/token move from 312e12 x 0.5 to 19.5e12 x 0.5
    # (override kept): 3.24e12 x (1/9.75e12 - 1/156e12) = 0.311538 s.
    # Attention: fp32 runs the memory-efficient kernel, timed at its published A100 16-bit row (clamped
    # at seq 4096: forward 97.0 TFLOP/s, backward 85.5 x 2/2.5) scaled to TINY's head dim 16 (the
    # kMaxK=64 kernel: FLOPs x 16/128 over its time 108.1/174.3 forward, 303.4/484.2 backward), times
    # the fp32 ratios 4.58120 / 3.82373, less the 16-bit time already counted ((2e8 + 2e8 + 4e8) / 0.4)
    me_fwd = 97.0 / 312 * (16 / 128) / (108.1 / 174.3)              # 0.0626612
    me_bwd = 85.5 * 0.8 / 312 * (16 / 128) / (303.4 / 484.2)        # 0.0437342
    attention_s = (4e8 / me_fwd * 4.58120 + 4e8 / me_bwd * 3.82373 - 2e9) * 1000 / 312e12
    assert attention_s == pytest.approx(0.199412, rel=1e-5)
    assert base_gemm_flops(_qlora(), _FT) == pytest.approx(3e9)
    plain_s = (3.24e9 * 1000 / (312e12 * 0.5) * 0.2 + 45_056 * 1000 / 1e12
               + 3.24e12 * (1 / 9.75e12 - 1 / 156e12) + attention_s)
    assert fp32_path_s(_qlora(), A100, _FT, _EFF, 1000, DEFAULT_MODEL, 1e12) == pytest.approx(plain_s, rel=1e-5)
    assert plain_s == pytest.approx(0.515150, rel=1e-5)
    assert fp32_path_s(_qlora(impl=Implementation()), A100, _FT, _EFF, 1000, DEFAULT_MODEL, 1e12) == 0.0


def test_fp32_path_step_small_model():
    # the same step with and without fp32 non-quantized weights: compute differs by the fp32-path terms,
    # derived from the step's own FLOPs and efficiency factors (efficiency fixed at 0.5 of peak)
    options = TimingOptions(efficiency=0.5)
    base = step_time(_qlora(impl=Implementation()), Layout(gpu_id=A100.id), A100, options=options)
    fp32 = step_time(_qlora(), Layout(gpu_id=A100.id), A100, options=options)
    ft, eff, tokens, bw = fp32.per_token, fp32.efficiency, 2 * 512, 2039e9 * 0.8
    linear = (ft.hardware - ft.attention_hardware) * tokens / (312e12 * 0.5)
    # the base (16-bit non-quantized weights) keeps peft's fp32 adapters over a 16-bit input: the fp32
    # adapter chain without dropout (timing/traffic.py): forward 10 B per input and 28 per output element,
    # twice with the recompute, backward 20 and 28; over TINY's adapted linears (inputs 6 x 64 + 128 = 512,
    # outputs 4 x 64 + 2 x 128 + 64 = 576), 2 layers: (40 x 512 + 84 x 576) x 2 = 137,728 B per token,
    # against the 16-bit 45,056 the fp32 path's adapters are counted from
    # The base's fp32 adapters already run their GEMMs at the fp32 peak (fp32_adapter_gemm_s): only the
    # head's GEMMs move in the difference
    # head's and the 4-bit linears' GEMMs move: bitsandbytes computes in fp32 on the fp32 input, where
    # its casts are no-ops (no cast bytes); the attention runs the memory-efficient kernel in fp32: its
    # published 16-bit A100 time x the f32 / 16-bit ratios (4.58120 forward and recompute, 3.82373
    # backward), less the 16-bit time of the kernel 16-bit inputs get
    base_gemms = ft.hardware - ft.attention_hardware - ft.lm_head_fwd - ft.lm_head_bwd - 2 * ft.adapter_fwd - ft.adapter_bwd
    fwd_flops = ft.attention_fwd + ft.recompute_attention
    sixteen = fwd_flops / (eff.attention_fwd or eff.attention) + ft.attention_bwd / (eff.attention_bwd or eff.attention)
    me_fwd = 97.0 / 312 * (16 / 128) / (108.1 / 174.3)     # the memory-efficient A100 row at TINY's shape
    me_bwd = 85.5 * 0.8 / 312 * (16 / 128) / (303.4 / 484.2)
    expected = (linear * (1 - eff.width) + (45_056 - (137_728 - 45_056)) * tokens / bw
                + (ft.lm_head_fwd + ft.lm_head_bwd + base_gemms) * tokens * (1 / (19.5e12 * 0.5) - 1 / (312e12 * 0.5))
                + (fwd_flops / me_fwd * 4.58120 + ft.attention_bwd / me_bwd * 3.82373 - sixteen) * tokens / 312e12)
    assert fp32.breakdown.compute_s - base.breakdown.compute_s == pytest.approx(expected, rel=1e-5)
    assert any("set_compute_type" in n and "fp32 GEMMs" in n for n in fp32.notes)


def _lora(precision: Precision, framework: Framework = Framework.PYTORCH) -> TrainingSetup:
    return TrainingSetup(model=TINY, method=Method.LORA, batch_size=2, seq_len=512, grad_ckpt=GradCkpt.FULL,
                         attention=Attention.SDPA, precision=precision, framework=framework,
                         lora=LoraConfig(rank=8, alpha=16, dropout=0.0, targets=ALL))


def test_fp32_adapter_gemms_of_plain_lora_by_hand():
    # peft's fp32 adapters over a pure-bf16 model, no autocast: adapters 1e7 forward + 2e7 backward
    # + 1e7 recomputed = 4e7 FLOP/token; 1,000 tokens move from 312e12 x 0.5 to 19.5e12 x 0.5
    # (override kept): 4e10 x (1/9.75e12 - 1/156e12) = 0.00384615 s
    assert fp32_adapter_gemm_s(_lora(Precision.BF16_PURE), A100, _FT, _EFF, 1000, DEFAULT_MODEL) == pytest.approx(
        0.00384615, rel=1e-5)
    # under autocast (bf16 mixed precision) F.linear runs in bf16: nothing added
    assert fp32_adapter_gemm_s(_lora(Precision.BF16), A100, _FT, _EFF, 1000, DEFAULT_MODEL) == 0.0
    # QLoRA's fp32 path counts its adapters itself: not twice
    assert fp32_adapter_gemm_s(_qlora(), A100, _FT, _EFF, 1000, DEFAULT_MODEL) == 0.0


# --- the case readers share the rule -------------------------------------------------------------

def test_kbit_prep_rule():
    bnb = {"method": "qlora", "quantization": {"type": "bnb-nf4"}}
    assert kbit_prep_fp32(bnb, Framework.HF) and kbit_prep_fp32(bnb, Framework.PYTORCH)
    assert not kbit_prep_fp32(bnb, Framework.TORCHTUNE)
    assert not kbit_prep_fp32({"method": "qlora", "quantization": {"type": "GPTQ int4"}}, Framework.HF)
    assert not kbit_prep_fp32({"method": "qlora", "quantization": {"type": "torchao NF4"}}, Framework.HF)
    assert not kbit_prep_fp32({"method": "lora"}, Framework.HF)


def test_time_and_memory_readers_agree_on_fp32_weights():
    cases = json.loads(DEV2.read_text())
    cases = cases["cases"] if isinstance(cases, dict) else cases
    by_kind = {c["kind"]: c for c in cases if c["id"].startswith("universal-trainer-llama31-qlora-1xh100")}
    timed = map_case(by_kind["time"])
    assert timed.setup.impl.load_fp32 and timed.setup.quant.double_quant
    assert timed.setup.precision is Precision.BF16_PURE          # a plain PyTorch loop: no autocast
    assert map_memory_case(by_kind["memory"]).options.load_fp32 is True


def test_fp32_adapter_note_names_the_assumption():
    layout = Layout(gpu_id=A100.id)
    plain = step_time(_lora(Precision.BF16_PURE), layout, A100, options=TimingOptions(efficiency=0.5))
    assert any("LoRA adapters in fp32" in n and "fp32 peak" in n for n in plain.notes)
    mixed = step_time(_lora(Precision.BF16), layout, A100, options=TimingOptions(efficiency=0.5))
    assert not any("LoRA adapters in fp32" in n for n in mixed.notes)
