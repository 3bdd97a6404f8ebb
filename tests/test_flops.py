"""FLOPs counted from the architecture (trainplan.timing.flops), checked against hand derivations."""

from __future__ import annotations

import pytest

from trainplan.enums import Attention, GradCkpt, Method
from trainplan.job.training import LoraConfig, QuantConfig, TrainingSetup
from trainplan.model.params import count_params
from trainplan.specs import ModelSpec, MoeSpec
from trainplan.timing.flops import (
    AttnConvention,
    attention_context,
    attention_core_flops,
    flops_per_token,
    step_flops,
)

# Llama-2-7B, from its Hugging Face config.json (meta-llama/Llama-2-7b-hf).
LLAMA2_7B = ModelSpec(name="llama-2-7b", model_type="llama", naming="llama", hidden_size=4096, num_layers=32,
                      num_heads=32, num_kv_heads=32, head_dim=128, intermediate_size=11008, vocab_size=32000,
                      tied_embeddings=False)
# Llama-2-70B: GQA with 8 KV heads.
LLAMA2_70B = ModelSpec(name="llama-2-70b", model_type="llama", naming="llama", hidden_size=8192, num_layers=80,
                       num_heads=64, num_kv_heads=8, head_dim=128, intermediate_size=28672, vocab_size=32000,
                       tied_embeddings=False)
TINY_MOE = ModelSpec(name="tiny-moe", model_type="mixtral", naming="mixtral", hidden_size=256, num_layers=4,
                     num_heads=4, num_kv_heads=4, head_dim=64, intermediate_size=512, vocab_size=1000,
                     tied_embeddings=False,
                     moe=MoeSpec(num_experts=8, top_k=2, expert_intermediate_size=512))


def _setup(spec=LLAMA2_7B, **kw) -> TrainingSetup:
    kw.setdefault("seq_len", 4096)
    kw.setdefault("attention", Attention.FLASH)
    return TrainingSetup(model=spec, **kw)


def test_llama2_7b_parameter_count_is_the_published_one():
    # 6,738,415,616 parameters (Llama-2-7b-hf safetensors index / model card "7B")
    assert count_params(LLAMA2_7B).total == 6_738_415_616


def test_linear_forward_flops_exact():
    # per layer: q,k,v,o 4 x 4096^2 + gate,up,down 3 x 4096 x 11008 = 202,375,168 weights;
    # 2 FLOPs per weight per token, 32 layers -> 12,952,010,752; head 2 x 4096 x 32000 = 262,144,000
    ft = flops_per_token(_setup())
    assert ft.linear_fwd == 12_952_010_752
    assert ft.lm_head_fwd == 262_144_000


def test_dense_flops_per_token_within_2pct_of_6n_plus_attention():
    # 6N + 12 L h s (Kaplan 2020 / PaLM appendix B, full s^2 attention) at s = 4096:
    # 6 x 6,738,415,616 + 12 x 32 x 4096 x 4096 = 40,430,493,696 + 6,442,450,944
    ft = flops_per_token(_setup(), mfu_convention=AttnConvention.FULL)
    reference = 6 * 6_738_415_616 + 12 * 32 * 4096 * 4096
    assert ft.model == pytest.approx(reference, rel=0.02)
    # the exact count differs only by the embedding lookup (6 x 131M, not a matmul): -1.7%
    assert ft.model < reference


def test_attention_conventions():
    s = 4096
    assert attention_context(s, AttnConvention.FULL) == s
    assert attention_context(s, AttnConvention.CAUSAL) == (s + 1) / 2
    # sliding window 1024 over 4096: (1024 x 1025 / 2 + 3072 x 1024) / 4096
    assert attention_context(s, AttnConvention.CAUSAL, 1024) == pytest.approx((1024 * 1025 / 2 + 3072 * 1024) / 4096)
    # per layer and token: 2 s (H d) for QK^T + 2 s (H d) for AV = 4 x 4096 x 4096
    assert attention_core_flops(LLAMA2_7B, s, AttnConvention.FULL) == 4 * 4096 * 4096


def test_flash_counts_causal_eager_counts_full():
    flash = flops_per_token(_setup(attention=Attention.FLASH))
    eager = flops_per_token(_setup(attention=Attention.EAGER))
    assert flash.attention_convention is AttnConvention.CAUSAL
    assert eager.attention_fwd == pytest.approx(flash.attention_fwd * 2 * 4096 / 4097)
    assert flash.attention_fwd_mfu == eager.attention_fwd     # MFU convention: full by default


def test_full_finetune_backward_is_twice_forward():
    ft = flops_per_token(_setup())
    assert ft.backward == pytest.approx(2 * ft.forward)
    assert ft.hardware == pytest.approx(3 * ft.forward)
    assert ft.recompute == 0


def test_lora_backward_cheaper_than_full():
    full = flops_per_token(_setup())
    lora = flops_per_token(_setup(method=Method.LORA, lora=LoraConfig(rank=16, targets=("q_proj", "v_proj"))))
    assert lora.backward < full.backward
    assert lora.linear_bwd_weight == 0                  # frozen base: no weight gradients
    assert lora.linear_bwd_input == full.linear_fwd     # input gradients still flow through every layer
    assert lora.lm_head_bwd == lora.lm_head_fwd         # frozen head: input gradient only
    # adapters: 2 r (in + out) per adapted linear: q and v are 4096 -> 4096, 32 layers
    assert lora.adapter_fwd == 2 * 16 * (4096 + 4096) * 2 * 32
    assert lora.adapter_bwd == 2 * lora.adapter_fwd
    assert lora.model == full.model                     # MFU counts the dense-equivalent 6N


def test_qlora_counts_the_same_flops_as_lora():
    lora_cfg = LoraConfig(rank=8, targets=("all-linear",))
    lora = flops_per_token(_setup(method=Method.LORA, lora=lora_cfg))
    qlora = flops_per_token(_setup(method=Method.QLORA, lora=lora_cfg, quant=QuantConfig()))
    assert qlora.hardware == lora.hardware


def test_freeze_layers_below_need_no_backward():
    # train the last 2 of 32 layers: only they get input and weight gradients
    frz = flops_per_token(_setup(method=Method.FREEZE, freeze_trainable_layers=2))
    per_layer = frz.linear_fwd / 32
    assert frz.linear_bwd_input == pytest.approx(2 * per_layer)
    assert frz.linear_bwd_weight == pytest.approx(2 * per_layer)
    assert frz.attention_bwd == pytest.approx(2 * 2 * frz.attention_fwd / 32)


def test_recomputation():
    base = flops_per_token(_setup())
    full = flops_per_token(_setup(grad_ckpt=GradCkpt.FULL))
    sel = flops_per_token(_setup(grad_ckpt=GradCkpt.SELECTIVE))
    # full: one more forward of every layer (not the head); selective: the attention core only
    assert full.recompute == pytest.approx(base.linear_fwd + base.attention_fwd)
    assert sel.recompute == pytest.approx(base.attention_fwd)
    assert full.model == base.model                     # MFU ignores recomputation, HFU counts it


def test_routed_experts_count_top_k():
    ft = flops_per_token(_setup(TINY_MOE, seq_len=128))
    h, e = 256, 512
    attn = 4 * h * h
    router = h * 8
    experts = 2 * 3 * h * e                             # top_k = 2 of 8 experts, gated MLP
    assert ft.linear_fwd == 2 * 4 * (attn + router + experts)


def test_gqa_has_fewer_projection_flops_than_mha():
    gqa = flops_per_token(_setup(LLAMA2_70B))
    kv = 2 * 8192 * 1024 * 2 * 80                       # k and v project to 8 heads x 128
    mha_equiv_kv = 2 * 8192 * 8192 * 2 * 80
    assert gqa.linear_fwd == pytest.approx(2 * 80 * (8192 * 8192 * 2 + 3 * 8192 * 28672) + kv)
    assert kv < mha_equiv_kv


def test_step_flops_scale_with_tokens():
    st = step_flops(_setup(seq_len=2048), global_batch=16)
    assert st.tokens == 16 * 2048
    assert st.model_flops == st.tokens * st.per_token.model
    assert st.hardware_flops == st.tokens * st.per_token.hardware


def test_hardware_flops_with_the_attention_counted_as_mfu_counts_it():
    """Hand-derived: linears 10 forward, 20 backward, 10 recomputed; attention 1 forward (causal: half the
    full mask's 2), 2 backward, 1 recomputed. Hardware = 10 + 1 + 20 + 2 + (10 + 1) = 44; with the attention
    at the full mask (x 2): 44 + (1 + 2 + 1) x (2 - 1) = 48."""
    from trainplan.timing.flops import AttnConvention, FlopsPerToken

    ft = FlopsPerToken(seq_len=4096, attention_convention=AttnConvention.CAUSAL, mfu_convention=AttnConvention.FULL,
                       linear_fwd=10.0, attention_fwd=1.0, lm_head_fwd=0.0, adapter_fwd=0.0, linear_bwd_input=10.0,
                       linear_bwd_weight=10.0, attention_bwd=2.0, lm_head_bwd=0.0, adapter_bwd=0.0, recompute=11.0,
                       recompute_attention=1.0, attention_fwd_mfu=2.0)
    assert ft.hardware == 44.0
    assert ft.hardware_mfu_attention == 48.0
