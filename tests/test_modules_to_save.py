"""peft modules_to_save: fully trained copies of the input embedding and the LM head beside the LoRA
adapters (peft/utils/other.py ModulesToSaveWrapper). Counts derived by hand from the catalog shapes; the
memory of whole steps is held to the trace in tests/test_trace_agreement.py."""

from __future__ import annotations

import pytest

from trainplan.cli import main
from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup
from trainplan.memory.regime import resolve_regime
from trainplan.memory.state import model_state, param_groups
from trainplan.model.params import saved_copy_params, saved_modules
from trainplan.timing.flops import flops_per_token

LLAMA2_VOCAB_X_HIDDEN = 32000 * 4096          # 131,072,000: one embedding or head copy of Llama-2-7B
LLAMA2_ADAPTERS = 32 * 2 * 16 * (4096 + 4096)  # q_proj and v_proj, rank 16: 8,388,608


@pytest.mark.parametrize("written, roles", [
    ("embed_tokens,lm_head", ("embed_tokens", "lm_head")),
    (["lm_head", "wte"], ("embed_tokens", "lm_head")),               # GPT-2 / Qwen-1 spelling, any order
    ("model.embed_tokens", ("embed_tokens",)),                      # a module path: its last name
    ("output", ("lm_head",)),                                      # torchtune / litgpt spelling
    ("", ()), (None, ()),
])
def test_names_are_read_as_roles(written, roles):
    assert saved_modules(written) == roles


def test_other_modules_are_refused_in_one_line():
    with pytest.raises(TrainplanError, match="--modules-to-save 'score': trainplan models trained copies of the input "
                                             "embedding and the LM head only"):
        saved_modules("embed_tokens,score")


def test_copy_sizes_tied_and_untied():
    llama = build_setup(JobOptions(model="llama-2-7b")).model
    assert saved_copy_params(llama, ("embed_tokens", "lm_head")) == {"embed_tokens": LLAMA2_VOCAB_X_HIDDEN,
                                                                     "lm_head": LLAMA2_VOCAB_X_HIDDEN}
    gpt2 = build_setup(JobOptions(model="gpt2")).model     # tied: the head's copy is a module of its own
    assert saved_copy_params(gpt2, ("lm_head",)) == {"lm_head": 50257 * 768}


def test_trainable_parameters_add_the_copies():
    setup = build_setup(JobOptions(model="llama-2-7b", method="lora", modules_to_save="lm_head,embed_tokens"))
    groups = param_groups(setup)
    assert groups.copy_params == 2 * LLAMA2_VOCAB_X_HIDDEN
    assert groups.trainable_params == LLAMA2_ADAPTERS + 2 * LLAMA2_VOCAB_X_HIDDEN == 270_532_608


def test_state_of_a_copy_in_its_own_dtype():
    """HF Trainer, mixed bf16: the base loads in bf16, peft's adapters are fp32 (cast_adapter_dtype), the
    head's copy stays bf16 (deep-copied as loaded): weight 2 B, gradient 2 B, AdamW's two states 2 B each."""
    base = build_setup(JobOptions(model="llama-2-7b", method="lora"))
    with_head = build_setup(JobOptions(model="llama-2-7b", method="lora", modules_to_save="lm_head"))
    regime = resolve_regime(with_head)
    assert regime.copy_bytes == 2
    a, b = model_state(base, resolve_regime(base)), model_state(with_head, regime)
    n = LLAMA2_VOCAB_X_HIDDEN
    assert b.weights - a.weights == 2 * n
    assert b.gradients - a.gradients == 2 * n
    assert b.optimizer - a.optimizer == 2 * 2 * n
    assert b.trainable_params - a.trainable_params == n


@pytest.mark.parametrize("framework, precision, copy_bytes", [
    ("hf", "bf16", 2),               # peft copies the bf16 module; nothing casts it
    ("llamafactory", "bf16", 4),     # init_adapter: cast_trainable_params_to_fp32
    ("llamafactory", "bf16-pure", 2),
    ("hf", "fp32", 4),
])
def test_copy_dtype_follows_the_framework(framework, precision, copy_bytes):
    setup = build_setup(JobOptions(model="llama-2-7b", method="lora", framework=framework, precision=precision,
                                   modules_to_save="embed_tokens"))
    regime = resolve_regime(setup)
    assert regime.copy_bytes == copy_bytes
    # an fp32 embedding copy sends the residual stream on in fp32
    assert regime.residual_bytes == (4 if copy_bytes == 4 else 2)


def test_a_trained_head_copy_adds_its_weight_gradient():
    """The head's backward computes dW as well as dX once its copy trains: 2 x vocab x hidden FLOPs a token."""
    base = flops_per_token(build_setup(JobOptions(model="llama-2-7b", method="lora")))
    head = flops_per_token(build_setup(JobOptions(model="llama-2-7b", method="lora", modules_to_save="lm_head")))
    assert head.lm_head_bwd - base.lm_head_bwd == 2 * LLAMA2_VOCAB_X_HIDDEN
    assert head.lm_head_fwd == base.lm_head_fwd == 2 * LLAMA2_VOCAB_X_HIDDEN


def test_cli_flag_and_its_refusals(capsys):
    assert main(["estimate", "--model", "llama-2-7b", "--method", "lora", "--modules-to-save", "embed_tokens,lm_head",
                 "--gpu", "a100"]) == 0
    out = capsys.readouterr().out
    assert "trained copies embed_tokens,lm_head" in out and "trainable 270.53M (270,532,608)" in out
    assert main(["estimate", "--model", "llama-2-7b", "--method", "full", "--modules-to-save", "lm_head",
                 "--gpu", "a100"]) == 2
    assert "needs --method lora or qlora" in capsys.readouterr().err
