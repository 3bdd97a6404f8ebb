"""FP8 recipes (trainplan.timing.fp8) and the FP8 matmul efficiency (trainplan.timing.efficiency)."""

from __future__ import annotations

import pytest

from trainplan.enums import Framework, GradCkpt, MasterWeights, MlpKind, Precision
from trainplan.frozen import replace
from trainplan.job.training import Implementation, Layout, TrainingSetup, Workload
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.efficiency import KernelStack, matmul_efficiency
from trainplan.timing.estimate import step_time
from trainplan.timing.flops import AttnConvention, FlopsPerToken
from trainplan.timing.fp8 import (
    TRAITS,
    Fp8Recipe,
    bytes_per_element,
    fp8_cost,
    fp8_in_text,
    quant_elements,
    recipe_from_text,
)

H100 = GpuSpec(id="h100-sxm", name="H100 SXM", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=3350e9,
               peak_flops_per_s={"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12},
               interconnect="NVLink 4", gpu_gpu_bw_bytes_per_s=900e9, pcie="Gen5 x16", generation="hopper")
B200 = GpuSpec(id="b200", name="B200", vendor="NVIDIA", memory_bytes=180 * 10**9, reported_memory_bytes=None,
               memory_bw_bytes_per_s=8000e9, peak_flops_per_s={"bf16": 2250e12, "fp8": 4500e12},
               interconnect="NVLink 5", gpu_gpu_bw_bytes_per_s=1800e9, pcie="Gen5 x16", generation="blackwell")
LLAMA2_7B = ModelSpec(name="llama-2-7b", model_type="llama", naming="llama", hidden_size=4096, num_layers=32,
                      num_heads=32, num_kv_heads=32, head_dim=128, intermediate_size=11008, vocab_size=32000,
                      tied_embeddings=False)
# TransformerEngine docs/features/low_precision_training/speedups.rst: "5B model (hidden=4096,
# intermediate=16384, 24 layers)"; 4 GEMM shapes per layer (QKV, proj, fc1, fc2): a plain MLP
TE_5B = replace(LLAMA2_7B, name="te-5b", intermediate_size=16384, num_layers=24, mlp_kind=MlpKind.PLAIN)


def _ft(*, linear: float = 0.0, head: float = 0.0) -> FlopsPerToken:
    """Per-token FLOPs with linears whose forward is `linear` (backward 2x) and an LM head `head`."""
    return FlopsPerToken(seq_len=1, attention_convention=AttnConvention.CAUSAL, mfu_convention=AttnConvention.FULL,
                         linear_fwd=linear, attention_fwd=0.0, lm_head_fwd=head, adapter_fwd=0.0,
                         linear_bwd_input=linear, linear_bwd_weight=linear, attention_bwd=0.0,
                         lm_head_bwd=2 * head, adapter_bwd=0.0, recompute=0.0, recompute_attention=0.0,
                         attention_fwd_mfu=0.0)


def test_bytes_per_element_by_recipe_and_generation():
    # reads x 2 bytes (bf16) + copies x (1 + scale bytes per element)
    assert bytes_per_element(TRAITS[Fp8Recipe.TE_CURRENT], H100) == 6.0       # 2 x 2 + 2 x 1 (transposed copy)
    assert bytes_per_element(TRAITS[Fp8Recipe.TE_DELAYED], H100) == 4.0       # 1 x 2 + 2 x 1
    assert bytes_per_element(TRAITS[Fp8Recipe.TE_DELAYED], B200) == 3.0       # 1 x 2 + 1 x 1 (shared layout)
    assert bytes_per_element(TRAITS[Fp8Recipe.TE_MXFP8], B200) == pytest.approx(4.0625)   # 2 + 2 x (1 + 1/32)
    assert bytes_per_element(TRAITS[Fp8Recipe.TE_BLOCKWISE], H100) == pytest.approx(4.0625)   # 2 + 2 x (1 + 4/128)
    assert bytes_per_element(TRAITS[Fp8Recipe.TORCHAO_ROWWISE], H100) == 10.0  # 2 uses x (amax + cast) x 2 + 2


def test_quant_elements_llama2_7b():
    q = quant_elements(LLAMA2_7B)
    # inputs per layer: q/k/v share one (4096) + o (4096) + gate/up share one (4096) + down (11008) = 23296
    assert q.inputs_per_token == 32 * 23296
    # output gradients: q, k, v, o 4 x 4096 + gate, up 2 x 11008 + down 4096 = 42496
    assert q.grads_per_token == 32 * 42496
    # weights: 4 x 4096^2 + 3 x 4096 x 11008 = 202,375,168 per layer
    assert q.weights == 32 * 202_375_168


@pytest.mark.parametrize(("text", "framework", "recipe"), [
    ("fp8-cs gemms (transformer engine)", Framework.MEGATRON, Fp8Recipe.TE_CURRENT),
    ("FP8-CS (FP8-MX) GEMMs", Framework.MEGATRON, Fp8Recipe.TE_CURRENT),     # the first one named
    ("MXFP8 GEMMs (Transformer Engine)", Framework.MEGATRON, Fp8Recipe.TE_MXFP8),
    ("fp8 current scaling", Framework.FSDP, Fp8Recipe.TE_CURRENT),
    ("fp8 with delayed scaling", Framework.HF, Fp8Recipe.TE_DELAYED),
    ("fp8 blockwise (1x128)", Framework.MEGATRON, Fp8Recipe.TE_BLOCKWISE),
    ("float8 tensorwise", Framework.TORCHTITAN, Fp8Recipe.TORCHAO_TENSORWISE),
    ("float8 rowwise", Framework.TORCHTITAN, Fp8Recipe.TORCHAO_ROWWISE),
    ("float8 rowwise_with_gw_hp", Framework.TORCHTITAN, Fp8Recipe.TORCHAO_ROWWISE_GW_HP),
    ("fp8 (TransformerEngine)", Framework.FSDP, None),
    ("Float8 (torchao)", Framework.TORCHTITAN, None),       # no recipe named: the framework's default
])
def test_recipe_from_text(text, framework, recipe):
    assert recipe_from_text(text, framework) is recipe


@pytest.mark.parametrize(("text", "fp8"), [
    ("FP8-CS GEMMs (Transformer Engine)", True), ("Float8 (torchao), torch.compile", True), ("MXFP8", True),
    ("fp8 (TransformerEngine)", True), ("bf16 autocast", False), ("bf16, no FP8", False),
    ("without float8", False), ("", False)])
def test_fp8_in_text(text, fp8):
    assert fp8_in_text(text) is fp8


def test_quantisation_against_te_gemm_benchmark():
    # TE speedups.rst, 5B on H200: pre-quantised FP8 1.92x bf16; current scaling 1.57x; delayed 1.69x:
    # quantisation adds 1.92/1.57 - 1 = 22% (current) and 1.92/1.69 - 1 = 14% (delayed) to the FP8 GEMMs.
    # M = 31 x 512 = 15872 tokens (docs/examples/gemm_profiling/gemm_profiling.rst); H200 NVL 1670.5 TFLOP/s
    # FP8, 4.8 TB/s x 0.80; FP8 MAMF 0.734.
    h200 = replace(H100, id="h200-nvl", memory_bw_bytes_per_s=4.8e12,
                   peak_flops_per_s={"bf16": 835e12, "fp8": 1670.5e12})
    weights = 24 * (4 * 4096**2 + 2 * 4096 * 16384)          # 4,831,838,208
    tokens, bw, fp8_rate = 15872, 4.8e12 * 0.8, 0.734 * 1670.5e12
    gemm_s = 6 * weights * tokens / fp8_rate                  # 0.37529 s
    ft = _ft(linear=2.0 * weights)
    current = fp8_cost(Fp8Recipe.TE_CURRENT, h200, TE_5B, ft, tokens=tokens, fp8_flops_per_s=fp8_rate,
                       bf16_flops_per_s=fp8_rate / 2, bw_bytes_per_s=bw, grad_ckpt=GradCkpt.NONE,
                       model_parallel=1, weight_casts_per_micro_batch=1.0)
    # per layer: inputs qkv, proj, fc1 3 x 4096 + fc2 16384 = 28672; output grads qkv 3 x 4096 + proj 4096
    # + fc1 16384 + fc2 4096 = 36864; 6 bytes each
    assert current.quant_s == pytest.approx(24 * (28672 + 36864) * 6 * tokens / bw)          # 0.039007 s
    assert current.weight_quant_s == pytest.approx(weights * 6 / bw)                          # 0.0075497 s
    assert current.bf16_gemm_s == 0.0
    ratio = (current.quant_s + current.weight_quant_s) / gemm_s
    assert ratio == pytest.approx(0.124, abs=0.001)          # (0.039007 + 0.0075497) / 0.37529
    assert ratio < 1.92 / 1.57 - 1                            # a lower bound of the measured 22%
    delayed = fp8_cost(Fp8Recipe.TE_DELAYED, h200, TE_5B, ft, tokens=tokens, fp8_flops_per_s=fp8_rate,
                       bf16_flops_per_s=fp8_rate / 2, bw_bytes_per_s=bw, grad_ckpt=GradCkpt.NONE,
                       model_parallel=1, weight_casts_per_micro_batch=1.0)
    assert (delayed.quant_s + delayed.weight_quant_s) / gemm_s == pytest.approx(0.0827, abs=0.001)   # 4/6 of it
    assert (delayed.quant_s + delayed.weight_quant_s) / gemm_s < 1.92 / 1.69 - 1


def test_bf16_gemms_under_fp8():
    # LM head 1e9 forward + 2e9 backward per token stays bf16: 3e9 x 1000 tokens x (1/500e12 - 1/1000e12) = 3 ms
    cost = fp8_cost(Fp8Recipe.TE_DELAYED, H100, LLAMA2_7B, _ft(head=1e9), tokens=1000, fp8_flops_per_s=1000e12,
                    bf16_flops_per_s=500e12, bw_bytes_per_s=1e30, grad_ckpt=GradCkpt.NONE, model_parallel=1,
                    weight_casts_per_micro_batch=0.0)
    assert cost.bf16_gemm_s == pytest.approx(3e-3)
    # torchao rowwise_with_gw_hp: the weight gradient (1e9 per token) too: 1e12 x 1e-15 = 1 ms
    gw = fp8_cost(Fp8Recipe.TORCHAO_ROWWISE_GW_HP, H100, LLAMA2_7B, _ft(linear=1e9), tokens=1000,
                  fp8_flops_per_s=1000e12, bf16_flops_per_s=500e12, bw_bytes_per_s=1e30, grad_ckpt=GradCkpt.NONE,
                  model_parallel=1, weight_casts_per_micro_batch=0.0)
    assert gw.bf16_gemm_s == pytest.approx(1e-3)


def test_fp8_sustained_fraction_at_the_bf16_ridge():
    eff = matmul_efficiency(H100, "fp8", hidden_size=4096, tokens_per_micro_batch=8192, stack=KernelStack.FUSED)
    # bf16 ridge 989/3.35 = 295.2 -> sustained 0.76 - 0.18/142 x 0.22 = 0.7597 (not the FP8 ridge's floor 0.55)
    assert eff.sustained == pytest.approx(0.7597, abs=1e-4)
    # E = 0.709 x 0.7597 = 0.5386; width at the FP8 ridge 590.7: 1 / (1 + 4.9 x 0.5386 x 590.7 / 4096) = 0.7243;
    # tokens 8192 / 8582 = 0.9546 -> 0.3724
    assert eff.value == pytest.approx(0.3724, abs=5e-4)
    bf16 = matmul_efficiency(H100, "bf16", hidden_size=4096, tokens_per_micro_batch=8192, stack=KernelStack.FUSED)
    assert eff.sustained == pytest.approx(bf16.sustained)


def test_step_time_fp8_recipe_and_weight_cache():
    base = TrainingSetup(model=LLAMA2_7B, precision=Precision.FP8, batch_size=1, seq_len=4096, grad_accum=8,
                         framework=Framework.MEGATRON, impl=Implementation(master_weights=MasterWeights.OPTIMIZER))
    layout = Layout(gpu_id="h100-sxm", num_gpus=8, nodes=1)
    delayed = step_time(base, layout, H100, workload=Workload())
    current = step_time(replace(base, impl=replace(base.impl, fp8_recipe=Fp8Recipe.TE_CURRENT)), layout, H100,
                        workload=Workload())
    bf16 = step_time(replace(base, precision=Precision.BF16), layout, H100, workload=Workload())
    assert any("te-delayed, the framework default" in n for n in delayed.notes)
    assert any("te-current" in n and "6 bytes per element" in n for n in current.notes)
    # current scaling moves 6 bytes per element instead of 4: slower than delayed, faster than bf16
    assert delayed.breakdown.compute_s < current.breakdown.compute_s < bf16.breakdown.compute_s


def test_torchtitan_float8_defaults_to_tensorwise():
    # torchtitan v0.2.2 components/quantization/float8.py: recipe_name None -> torchao Float8LinearConfig(),
    # "Float8 tensorwise scaled training active": two reads (amax, cast) and, on Hopper, two fp8 copies
    # (rowwise and the transposed columnwise one): 2 x 2 + 2 x 1 = 6 bytes per element quantised.
    setup = TrainingSetup(model=LLAMA2_7B, precision=Precision.FP8, batch_size=1, seq_len=4096,
                          framework=Framework.TORCHTITAN)
    notes = step_time(setup, Layout(gpu_id="h100-sxm"), H100, workload=Workload()).notes
    assert any("torchao-tensorwise, the framework default" in n and "6 bytes per element" in n for n in notes)


def test_mxfp8_is_refused_before_blackwell():
    # Transformer Engine runs MXFP8BlockScaling on sm100+ only: an H100 job is an error, a B200 one runs
    import pytest as _pytest

    from trainplan.errors import TrainplanError
    from trainplan.job.options import JobOptions
    from trainplan.job.resolve import resolve_job

    base = dict(model="llama-3.1-8b", method="full", num_gpus=8, precision="fp8", fp8_recipe="te-mxfp8",
                framework="megatron", zero=1)
    with _pytest.raises(TrainplanError, match="te-mxfp8 needs Blackwell"):
        resolve_job(JobOptions(gpu="h100", **base))
    assert resolve_job(JobOptions(gpu="b200", **base)).setup.impl.fp8_recipe.value == "te-mxfp8"


def test_the_planner_plans_mxfp8_on_blackwell_only():
    from trainplan.job.options import JobOptions
    from trainplan.planner.plan import plan
    from trainplan.planner.request import resolve_plan

    pr = resolve_plan(JobOptions(model="llama-3.1-8b", method="full", precision="fp8", fp8_recipe="te-mxfp8",
                                 framework="megatron"), gpus=("h100", "b200"), max_gpus=8)
    result = plan(pr, details=False)
    assert {p.found.rentable.gpu.id for p in result.plans} == {"b200"}
    assert any(r.gpu == "h100-sxm" and "te-mxfp8 needs Blackwell" in r.reason for r in pr.rejected)


def test_quant_elements_by_tensor_parallel_side_llama2_7b():
    q = quant_elements(LLAMA2_7B)
    # column-parallel inputs gathered by TP: the q/k/v input and the gate/up input, 2 x 4096 a layer
    assert q.column_inputs_per_token == 32 * 8192
    # row-parallel output gradients (o, down), gathered in the backward: 2 x 4096 a layer
    assert q.row_grads_per_token == 32 * 8192
    # input-gradient outputs: column linears q, k, v, gate, up 5 x 4096; row linears o 4096 + down 11008
    assert q.column_dgrad_per_token == 32 * 20480
    assert q.row_dgrad_per_token == 32 * 15104


def test_torchao_rowwise_under_tensor_parallel():
    # torchtitan: "For rowwise recipes, we use regular TP and all-gather happens in high precision", so each of
    # the 8 TP ranks quantises the gathered column inputs and row output gradients whole: 7 more copies of
    # 32 x 8192 each, over the 32 x (23296 + 42496) the GPU's share already quantises. 10 bytes an element,
    # 1000 tokens (the GPU's share), 1 TB/s: 32 x (65792 + 2 x 7 x 8192) x 1000 x 10 / 1e12 = 0.0577536 s
    kw = dict(tokens=1000, fp8_flops_per_s=1000e12, bf16_flops_per_s=500e12, bw_bytes_per_s=1e12,
              grad_ckpt=GradCkpt.NONE, model_parallel=8, weight_casts_per_micro_batch=0.0, tp=8)
    rw = fp8_cost(Fp8Recipe.TORCHAO_ROWWISE, H100, LLAMA2_7B, _ft(), **kw)
    assert rw.quant_s == pytest.approx(32 * (65792 + 2 * 7 * 8192) * 1000 * 10 / 1e12)
    # backward outputs rescaled (cuBLAS with unit scales, then `output *= post_inverse_scale`), 4 bytes an
    # element: input gradients (20480 x 8 + 15104) x 32 x 1000 = 5,726,208,000, weight gradients
    # 32 x 202,375,168 / 8 = 809,500,672: 6,535,708,672 x 4 / 1e12 = 0.026142834688 s
    assert rw.rescale_s == pytest.approx(0.026142834688)
    assert rw.delta_s == pytest.approx(rw.quant_s + rw.rescale_s)
    # tensorwise gathers FP8 (cast before the all-gather) and keeps cuBLAS scales: the share only, 6 bytes
    tw = fp8_cost(Fp8Recipe.TORCHAO_TENSORWISE, H100, LLAMA2_7B, _ft(), **kw)
    assert tw.quant_s == pytest.approx(32 * 65792 * 1000 * 6 / 1e12) and tw.rescale_s == 0.0
    # without TP the row-wise recipe quantises the share only, and rescales every input gradient once
    solo = fp8_cost(Fp8Recipe.TORCHAO_ROWWISE, H100, LLAMA2_7B, _ft(), **{**kw, "tp": 1, "model_parallel": 1})
    assert solo.quant_s == pytest.approx(32 * 65792 * 1000 * 10 / 1e12)
    assert solo.rescale_s == pytest.approx(((20480 + 15104) * 32 * 1000 + 32 * 202_375_168) * 4 / 1e12)


def test_frozen_weights_quantise_inputs_and_gradients_once_under_transformer_engine():
    # TE: input_quantizer.set_usage(rowwise=True, columnwise=backward_needs_input), backward_needs_input =
    # is_grad_enabled and weight.requires_grad: a frozen linear's input and output gradient get one copy
    assert bytes_per_element(TRAITS[Fp8Recipe.TE_DELAYED], H100, one_use=True) == 3.0     # 1 x 2 + 1 x 1
    assert bytes_per_element(TRAITS[Fp8Recipe.TE_CURRENT], H100, one_use=True) == 5.0     # 2 x 2 + 1 x 1
    assert bytes_per_element(TRAITS[Fp8Recipe.TE_MXFP8], B200, one_use=True) == pytest.approx(3.03125)  # 2 + 1.03125
    kw = dict(tokens=1000, fp8_flops_per_s=1e15, bf16_flops_per_s=5e14, bw_bytes_per_s=1e12,
              grad_ckpt=GradCkpt.NONE, model_parallel=1, weight_casts_per_micro_batch=1.0)
    full = fp8_cost(Fp8Recipe.TE_DELAYED, H100, LLAMA2_7B, _ft(), **kw)
    lora = fp8_cost(Fp8Recipe.TE_DELAYED, H100, LLAMA2_7B, _ft(), frozen_weights=True, **kw)
    # (inputs 32 x 23296 + gradients 32 x 42496) x 1000 tokens x 4 (3) bytes / 1e12 B/s
    assert full.quant_s == pytest.approx(2_105_344 * 1000 * 4 / 1e12)
    assert lora.quant_s == pytest.approx(2_105_344 * 1000 * 3 / 1e12)
    # the weights keep both copies (fprop and dgrad): 32 x 202,375,168 x 4 bytes / 1e12
    assert lora.weight_quant_s == full.weight_quant_s == pytest.approx(32 * 202_375_168 * 4 / 1e12)
    # torchao's recipes are not Transformer Engine's: unchanged
    tw = fp8_cost(Fp8Recipe.TORCHAO_TENSORWISE, H100, LLAMA2_7B, _ft(), **kw)
    assert fp8_cost(Fp8Recipe.TORCHAO_TENSORWISE, H100, LLAMA2_7B, _ft(), frozen_weights=True, **kw) == tw
