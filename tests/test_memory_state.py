"""Model-state bytes derived by hand (ZeRO paper section 3.1; torch AdamW; QLoRA paper 2.2)."""


import pytest

from conftest import llama2_7b, tiny_llama
from trainplan.enums import Framework, Method, Optimizer, Precision, Quant
from trainplan.job.frameworks import implementation
from trainplan.job.training import LoraConfig, QuantConfig, TrainingSetup
from trainplan.memory.regime import resolve_regime
from trainplan.memory.state import model_state, quantized_bytes
from trainplan.model.params import count_params

P7 = 6_738_415_616   # Llama-2-7B parameters


def _state(**kw):
    setup = TrainingSetup(model=llama2_7b(), **kw)
    return model_state(setup, resolve_regime(setup))


def test_full_bf16_mixed_adamw_holds_16_bytes_per_param():
    # HF Trainer bf16: fp32 weights (4) + fp32 grads (4) + AdamW m and v in fp32 (8)
    s = _state(precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED)
    assert s.weights + s.gradients + s.master_weights + s.optimizer == 16 * P7


def test_full_bf16_deepspeed_style_holds_16_bytes_per_param():
    # DeepSpeed: bf16 weights (2) + bf16 grads (2) + fp32 master (4) + Adam (8)
    setup = TrainingSetup(model=llama2_7b(), precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                          framework=Framework.DEEPSPEED, impl=implementation(Framework.DEEPSPEED))
    s = model_state(setup, resolve_regime(setup))
    assert (s.weights, s.gradients, s.master_weights, s.optimizer) == (2 * P7, 2 * P7, 4 * P7, 8 * P7)


def test_pure_bf16_holds_8_bytes_per_param():
    s = _state(precision=Precision.BF16_PURE, optimizer=Optimizer.ADAMW_FUSED)
    assert s.weights + s.gradients + s.optimizer == 8 * P7
    assert s.master_weights == 0


def test_foreach_adamw_allocates_one_full_temporary():
    # torch/optim/adam.py _multi_tensor_adam: exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)
    assert _state(precision=Precision.FP32, optimizer=Optimizer.ADAMW).optimizer_temp == 4 * P7
    assert _state(precision=Precision.FP32, optimizer=Optimizer.ADAMW_FUSED).optimizer_temp == 0


def test_sgd_and_lion_keep_one_state():
    assert _state(precision=Precision.FP32, optimizer=Optimizer.SGD).optimizer == 4 * P7
    assert _state(precision=Precision.FP32, optimizer=Optimizer.LION).optimizer == 4 * P7


def test_8bit_adam_two_bytes_plus_absmax_and_fp32_for_small_tensors():
    s = _state(precision=Precision.BF16_PURE, optimizer=Optimizer.ADAMW_8BIT)
    # norms (4096 elements each) are not < 4096, so all tensors are 8-bit: 2 B + 2 x 4/256 B
    assert 2 * P7 < s.optimizer < 2.04 * P7


def test_lora_r16_qv_llama2_7b_trains_8388608():
    s = _state(method=Method.LORA, lora=LoraConfig(rank=16, targets=("q_proj", "v_proj")))
    assert s.trainable_params == 8_388_608    # 32 layers x 2 modules x 16 x (4096 + 4096)


def test_qlora_nf4_is_about_half_a_byte_per_quantized_param():
    packed, consts = quantized_bytes(QuantConfig(kind=Quant.NF4), 64 * 1000, 0)
    assert packed == 32_000 and consts == 4 * 1000       # 0.5 B + fp32 absmax per 64
    packed, consts = quantized_bytes(QuantConfig(kind=Quant.NF4, double_quant=True), 64 * 256 * 10, 0)
    assert consts == 2560 + 4 * 10 + 4                     # 8-bit absmax + fp32 per 256 blocks
    s = _state(method=Method.QLORA, lora=LoraConfig(rank=16), quant=QuantConfig(kind=Quant.NF4),
               precision=Precision.BF16)
    linear = count_params(llama2_7b()).total - 2 * 32000 * 4096 - (65 * 4096)   # minus embeddings, head, norms
    rest = count_params(llama2_7b()).total - linear
    # quantized linears at 0.5625 B/param, embeddings/head/norms in bf16, adapters fp32
    expected = linear // 2 + rest * 2 + 8_388_608 * 4
    assert s.weights == expected
    assert s.quant_constants == pytest.approx(linear * 4 / 64, rel=1e-6)


def test_freeze_trains_last_layers_only():
    spec = tiny_llama()
    s = model_state(TrainingSetup(model=spec, method=Method.FREEZE, freeze_trainable_layers=1),
                    resolve_regime(TrainingSetup(model=spec, method=Method.FREEZE, freeze_trainable_layers=1)))
    layer = 4 * 256 * 256 // 2 * 0 + 256 * 256 + 2 * 256 * 128 + 256 * 256 + 3 * 256 * 688 + 2 * 256
    assert s.trainable_params == layer
