"""The analytic memory model held to the trace on tiny configs (the fast subset of
benchmarks/trace_agreement.py, which runs 50+ setups up to 8B and MoE 47B, and all of its family grid). On models this small
the per-token vectors, small saved tensors and first-layer effects that vanish at scale decide
the result, so a wrong entry in the inventory shows here first."""

import importlib.util
import pathlib

import peft  # noqa: F401  (the dev extra installs it: missing, the tests fail)
import pytest
import torch  # noqa: F401  (the dev extra installs it: missing, the tests fail)
import transformers  # noqa: F401  (the dev extra installs it: missing, the tests fail)

from conftest import a100_80  # noqa: E402
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup  # noqa: E402
from trainplan.job.training import Layout  # noqa: E402
from trainplan.memory import estimate_memory  # noqa: E402
from trainplan.model.hfconfig import load_config_path  # noqa: E402
from trainplan.trace import run_trace  # noqa: E402

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "trace"
GPU = a100_80()


def _benchmark():
    path = pathlib.Path(__file__).parents[1] / "benchmarks" / "trace_agreement.py"
    spec = importlib.util.spec_from_file_location("trace_agreement_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _benchmark()

CASES = [
    ("tiny_llama", dict(method="full", precision="bf16", batch_size=4, seq_len=256)),
    ("tiny_llama", dict(method="full", precision="bf16-pure", batch_size=2, seq_len=256, grad_ckpt="full")),
    ("tiny_llama", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, lora_targets="all-linear")),
    ("tiny_llama", dict(method="freeze", precision="bf16", batch_size=4, seq_len=256, freeze_layers=1)),
    # the first layer trained (LLaMA-Factory freeze_trainable_layers -1; BAdam's worst block): every
    # layer above it keeps what its input gradient needs
    ("tiny_llama", dict(method="freeze", precision="bf16", batch_size=4, seq_len=256, freeze_layers=-1)),
    ("tiny_qwen3", dict(method="freeze", precision="bf16-pure", batch_size=4, seq_len=256, freeze_layers=-1)),
    ("tiny_qwen2", dict(method="full", precision="fp32", batch_size=4, seq_len=256, optimizer="adamw")),
    ("tiny_qwen2", dict(method="lora", precision="bf16-pure", batch_size=4, seq_len=256, lora_dropout=0.1)),
    ("tiny_gpt2", dict(method="full", precision="bf16", batch_size=4, seq_len=256)),
    ("tiny_gpt2", dict(method="full", precision="bf16-pure", batch_size=2, seq_len=256, attention="eager")),
    ("tiny_mistral", dict(method="full", precision="bf16", batch_size=4, seq_len=256, grad_accum=2)),
    ("tiny_phi3", dict(method="full", precision="bf16-pure", batch_size=4, seq_len=256, optimizer="sgd")),
    ("tiny_qwen2_moe", dict(method="full", precision="bf16-pure", batch_size=4, seq_len=256)),
    # the frozen embedding's output needs no gradient: the first layer's input norm and q/k/v
    # adapters save less; Hugging Face checkpointing (enable_input_require_grads) undoes that
    ("tiny_qwen2_moe", dict(method="lora", precision="bf16", batch_size=4, seq_len=256,
                            lora_targets="q_proj,k_proj,v_proj,o_proj")),
    ("tiny_llama", dict(method="lora", precision="fp32", batch_size=4, seq_len=256, lora_dropout=0.1)),
    ("tiny_qwen3", dict(method="lora", precision="bf16", batch_size=4, seq_len=256)),   # k_norm: k needs no grad
    ("tiny_llama", dict(method="freeze", precision="bf16", batch_size=4, seq_len=256, freeze_layers=1,
                        grad_ckpt="full")),
    # LayerNorm under autocast: fp32 outputs, fp32 copies of the frozen 16-bit weight and bias
    ("tiny_gpt2", dict(method="freeze", precision="bf16", batch_size=4, seq_len=256, freeze_layers=1)),
    ("tiny_gpt2", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, lora_targets="all-linear")),
    # fused qkv_proj: the value view keeps the whole projection output alive, with and without LoRA
    ("tiny_phi3", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, lora_targets="all-linear")),
    ("tiny_phi3", dict(method="full", precision="bf16", batch_size=4, seq_len=256, grad_ckpt="full")),
    ("tiny_qwen2", dict(method="full", precision="bf16-pure", batch_size=4, seq_len=256, grad_ckpt="full")),
    # GPT-NeoX: fused query_key_value, rotary with torch.cat, parallel residual (both norms read
    # the layer input); the rotary tables are counted at full head width (rotary_pct 0.25 here)
    ("tiny_gpt_neox", dict(method="full", precision="bf16", batch_size=4, seq_len=256)),
    # 2025-2026 families (issue 19). Gemma: `(x * (1 + w)).type_as(x)` norms, scaled embedding
    ("tiny_gemma", dict(method="full", precision="bf16", batch_size=4, seq_len=256)),
    ("tiny_gemma", dict(method="lora", precision="bf16-pure", batch_size=4, seq_len=256, lora_dropout=0.1)),
    # Seed-OSS: residual dropout after o_proj and down_proj, attention dropout (0.1 each)
    ("tiny_seed_oss", dict(method="full", precision="bf16", batch_size=4, seq_len=256)),
    ("tiny_seed_oss", dict(method="full", precision="bf16-pure", batch_size=2, seq_len=256, attention="eager")),
    ("tiny_internlm3", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, lora_targets="all-linear")),
    # OLMo 2: post-norm layers (q/k/v read the layer input), q/k RMSNorm over the whole projection
    ("tiny_olmo2", dict(method="full", precision="bf16", batch_size=4, seq_len=256)),
    ("tiny_olmo2", dict(method="freeze", precision="bf16", batch_size=4, seq_len=256, freeze_layers=1)),
    ("tiny_olmo2", dict(method="full", precision="fp32", batch_size=2, seq_len=256)),
    # OLMo 3: sliding-window layers under SDPA keep a mask bias and repeated k/v, the full layer does not
    ("tiny_olmo3", dict(method="full", precision="bf16-pure", batch_size=4, seq_len=256)),
    ("tiny_olmo3", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, lora_targets="all-linear",
                        lora_dropout=0.0)),
    # GLM-4.5: per-head q/k norm, half rotary with torch.cat, DeepSeek-V3 routing after a dense layer
    ("tiny_glm4_moe", dict(method="full", precision="bf16", batch_size=4, seq_len=256)),
    ("tiny_glm4_moe", dict(method="lora", precision="bf16-pure", batch_size=4, seq_len=256, lora_dropout=0.1)),
    # gpt-oss: eager attention with sinks, clamped SwiGLU experts with biases (transformers has no SDPA path)
    ("tiny_gpt_oss", dict(method="full", precision="bf16", batch_size=4, seq_len=256, attention="eager")),
    ("tiny_gpt_oss", dict(method="lora", precision="bf16-pure", batch_size=4, seq_len=256, attention="eager",
                          lora_dropout=0.0)),
    ("tiny_gpt_oss", dict(method="freeze", precision="bf16", batch_size=4, seq_len=256, attention="eager",
                          freeze_layers=1)),
    # Llama 4: every expert on every token, L2 q/k norm and chunked attention on RoPE layers, dense/MoE mix
    ("tiny_llama4", dict(method="full", precision="bf16", batch_size=4, seq_len=256)),
    ("tiny_llama4", dict(method="full", precision="bf16-pure", batch_size=2, seq_len=256, attention="eager")),
    ("tiny_llama4", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, lora_dropout=0.0)),
    # padding in the batch: SDPA gets transformers' 4-D boolean mask, kept by the checkpointed layers
    ("tiny_llama", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, lora_targets="all-linear",
                        grad_ckpt="full", attention="sdpa", padding_mask=True)),
    ("tiny_llama", dict(method="full", precision="bf16", batch_size=4, seq_len=256, attention="sdpa",
                        padding_mask=True)),
    ("tiny_mistral", dict(method="lora", precision="bf16-pure", batch_size=4, seq_len=256, attention="sdpa",
                          padding_mask=True)),
    # peft modules_to_save: trained copies of the embedding and the head beside the adapters, in the dtype
    # they were copied in (bf16 here), or fp32 where the framework casts every trainable parameter
    # (LLaMA-Factory: the residual stream then leaves the embedding in fp32 and autocast casts the head's
    # copy); the tied GPT-2 head gets a copy of its own
    ("tiny_llama", dict(method="lora", precision="bf16", batch_size=4, seq_len=256,
                        modules_to_save="embed_tokens,lm_head")),
    ("tiny_llama", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, framework="llamafactory",
                        grad_ckpt="none", modules_to_save="embed_tokens,lm_head")),
    ("tiny_llama", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, framework="llamafactory",
                        grad_ckpt="full", modules_to_save="embed_tokens,lm_head")),
    ("tiny_llama", dict(method="lora", precision="bf16-pure", batch_size=4, seq_len=256, grad_accum=2,
                        modules_to_save="lm_head")),
    ("tiny_gpt2", dict(method="lora", precision="bf16", batch_size=4, seq_len=256, modules_to_save="lm_head")),
    ("tiny_qwen2", dict(method="lora", precision="fp32", batch_size=4, seq_len=256, optimizer="adamw",
                        modules_to_save="embed_tokens,lm_head")),
]


# The family grid of the benchmark (issue 19), all of it: every architecture family of the catalog on
# its tiny config x full fine-tune (mixed bf16), checkpointed, LoRA all-linear, pure bf16 (about 30 s)
# Held to the bound for that grid (max 5%); all but Bloom checkpointed (-2.4%: the forward of
# a checkpointed layer's eager ALiBi attention) are within 2%, and the benchmark prints the median.
FAMILY_TOLERANCE = 0.05
CASES = [(name, options, 0.02) for name, options in CASES]
CASES += [(pathlib.Path(case.model).stem, case.options, FAMILY_TOLERANCE) for case in BENCH.family_grid()]
# estimated under the fixture's own model_type, traced under the one transformers builds
TRACE_AS = {f"tiny_{family}": model_type for family, model_type in BENCH.TRACE_AS.items()}


@pytest.mark.parametrize("name, options, tolerance", CASES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)])
def test_estimate_within_tolerance_of_trace(name, options, tolerance):
    spec = load_config_path(FIXTURES / f"{name}.json")
    setup = build_setup(JobOptions(model=spec, **options))
    traced_setup = setup
    if name in TRACE_AS:
        traced_setup = build_setup(JobOptions(model=spec, **options), BENCH._spec(str(FIXTURES / f"{name}.json"),
                                                                                 TRACE_AS[name]))
    traced = run_trace(traced_setup).peak_allocated_bytes
    estimated = estimate_memory(setup, Layout(gpu_id=GPU.id), GPU).peak_allocated_bytes
    assert estimated == pytest.approx(traced, rel=tolerance), (estimated, traced)


def test_family_grid_covers_the_catalog():
    """Every model_type of the catalog is in the family grid or listed as not traceable."""
    from trainplan.catalog import load_models

    covered = {family for family, _ in BENCH.FAMILY_FIXTURES} | {family for family, _ in BENCH.NOT_TRACEABLE}
    assert {spec.model_type for spec in load_models().values()} <= covered


@pytest.mark.parametrize("family, model", BENCH.NOT_TRACEABLE)
def test_remote_code_families_are_reported_not_traceable(family, model):
    from trainplan.trace import TraceUnsupported

    setup = build_setup(JobOptions(model=model, method="full", precision="bf16", batch_size=1, seq_len=256))
    with pytest.raises(TraceUnsupported, match=family):
        run_trace(setup)
