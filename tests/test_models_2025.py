"""Issue 19, models: the 2025-2026 catalog rows (counts against the published figures), the model types
they need, and `--model ORG/NAME` read from the local Hugging Face cache without network."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import trainplan
from model_counts import check_exact, check_rounded, meta_model, spec
from trainplan import catalog
from trainplan.cli import main
from trainplan.enums import Attention
from trainplan.errors import TrainplanError, UnknownNameError
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup
from trainplan.memory.activations import layer_activations
from trainplan.memory.build import layer_contexts
from trainplan.memory.regime import resolve_regime
from trainplan.model.architecture import structure
from trainplan.model.hfconfig import load_config_path, spec_from_hf_config
from trainplan.model.params import active_params, count_params

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "configs"


# --- published parameter counts ---------------------------------------------------------------------

# Exact counts of the released (converted) checkpoints: keras-team/keras-hub presets @71453d08f59e
# (gemma_presets.py, phi3_presets.py, gpt_oss_presets.py, mistral_presets.py); the catalog rows carry
# them as measured_params (tests/test_params.py holds every such row to 0.1 %), here they must be exact.
EXACT = {
    "gemma-2b": 2_506_172_416,
    "gemma-7b": 8_537_680_896,        # Gemma report: 786,432,000 embedding + 7,751,248,896 non-embedding
    "phi-3-mini-128k": 3_821_079_552,
    "gpt-oss-20b": 20_914_757_184,
    "gpt-oss-120b": 116_829_156_672,
    "magistral-small-2506": 23_572_403_200,
    # same shapes as Qwen2.5-Math-7B / Qwen2.5-72B-Instruct, whose keras-hub presets count these
    "qwen2-7b": 7_615_616_512,
    "qwen2-72b": 72_706_203_648,
}


@pytest.mark.parametrize("name, total", sorted(EXACT.items()))
def test_exact_published_totals(name, total):
    check_exact(name, total, recorded=False)


# Rounded figures from model cards / READMEs: (total, tolerance). Llama 4's 109B includes its vision
# encoder (the catalog counts the text decoder); GLM-4.5's 355B its multi-token-prediction layer.
ROUNDED = {
    "qwen2-7b": (7.6e9, 0.01),             # Qwen2.5-7B card: 7.61B (same shapes)
    "ministral-8b": (8.02e9, 0.001),       # HF: 8.02B
    "seed-oss-36b": (36e9, 0.01),          # ByteDance-Seed/seed-oss README: 36B
    "internlm3-8b": (8.8e9, 0.01),         # internlm3-8b-instruct: 8.8B
    "olmo-2-0425-1b": (1.48e9, 0.01),      # HF: 1.48B
    "llama-4-scout": (109e9, 0.02),        # 109B with the vision encoder
    "llama-4-maverick": (400e9, 0.005),    # 400B
    "glm-4.5": (355e9, 0.01),              # 355B with the MTP layer
    "glm-4.5-air": (106e9, 0.01),          # 106B
    "kimi-k2": (1.0e12, 0.03),             # "1 trillion total parameters"
}


@pytest.mark.parametrize("name, published", sorted(ROUNDED.items()))
def test_rounded_published_totals(name, published):
    check_rounded(name, published)


def test_active_parameters_as_published():
    # gpt-oss model card: 3.61B and 5.13B active, a count that leaves out the embedding (the unembedding
    # is in it); active_params counts both
    for name, published in (("gpt-oss-20b", 3.61e9), ("gpt-oss-120b", 5.13e9)):
        s = spec(name)
        assert active_params(s) - count_params(s).embeddings == pytest.approx(published, rel=0.005)
    # Llama 4: 17B active (Scout and Maverick), top-1 routed + the shared expert
    assert active_params(spec("llama-4-scout")) == pytest.approx(17e9, rel=0.02)
    assert active_params(spec("llama-4-maverick")) == pytest.approx(17e9, rel=0.02)
    # GLM-4.5 32B / Air 12B active and Kimi-K2 32B: without embedding and head
    for name, published in (("glm-4.5", 32e9), ("glm-4.5-air", 12e9)):
        s = spec(name)
        c = count_params(s)
        assert active_params(s) - c.embeddings - c.lm_head == pytest.approx(published, rel=0.02)
    assert active_params(spec("kimi-k2")) == pytest.approx(32e9, rel=0.03)


def test_new_rows_have_sources_and_types():
    for name in list(EXACT) + list(ROUNDED):
        s = spec(name)
        assert s.source and s.hf_config_json
    assert spec("gpt-oss-20b").model_type == "gpt_oss" and spec("kimi-k2").model_type == "kimi_k2"
    assert spec("openai/gpt-oss-20b").name == "gpt-oss-20b"                 # HF ids resolve
    assert spec("Qwen/Qwen2-7B-Instruct").name == "qwen2-7b"                # aliases too


def test_structure_of_new_families():
    maverick = structure(spec("llama-4-maverick"))
    kinds = [(maverick.layer(i).is_moe, maverick.layer(i).attention) for i in range(8)]
    assert kinds == [(False, "local"), (True, "local"), (False, "local"), (True, "full")] * 2
    oss = spec("gpt-oss-20b")
    assert structure(oss).layer(0).attention == "local" and structure(oss).layer(1).attention == "full"
    assert count_params(oss).attention == 24 * (64 * 64 * 2880 + 4096 + 2 * (2880 * 512 + 512)
                                               + 4096 * 2880 + 2880 + 64)   # q, k, v, o + biases + sinks
    glm = spec("glm-4.5")
    assert glm.moe is not None and glm.moe.first_dense_layers == 3 and glm.qk_norm
    assert not spec("glm-4.5-air").qk_norm


def test_gpt_oss_sdpa_is_estimated_as_eager():
    """transformers runs gpt-oss's attention sinks eagerly only (GptOssPreTrainedModel._supports_sdpa = False):
    an SDPA request is resolved to eager and keeps eager's tensors."""
    s = load_config_path(FIXTURES / "gpt_oss.json")
    saved = {}
    for attention in ("sdpa", "eager"):
        setup = build_setup(JobOptions(model=s, method="full", precision="bf16-pure", batch_size=1, seq_len=64,
                                       attention=attention))
        ctx = layer_contexts(setup, resolve_regime(setup))[0]
        saved[attention] = layer_activations(s, structure(s).layer(0), ctx).saved_bytes
        assert setup.attention is Attention.EAGER and ctx.attention is Attention.EAGER
    assert saved["sdpa"] == saved["eager"]


def test_llama4_experts_run_on_every_token():
    """Llama4TextMoe computes every routed expert for every token: expert saves scale with E, not top_k."""
    base = json.loads((FIXTURES / "llama4_text.json").read_text())
    saved = []
    for experts in (4, 8):
        s = spec_from_hf_config({**base, "num_local_experts": experts}, name="t")
        setup = build_setup(JobOptions(model=s, method="full", precision="bf16-pure", batch_size=1, seq_len=64))
        ctx = layer_contexts(setup, resolve_regime(setup))[1]
        saved.append(layer_activations(s, structure(s).layer(1), ctx).detail["experts"])
    assert saved[1] == 2 * saved[0]


# --- the local Hugging Face cache ------------------------------------------------------------------------

TINY = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000}


def cache_repo(hub: Path, repo_id: str, config: dict, *, revision: str = "abc123", refs: bool = True) -> Path:
    """A hub-cache entry as huggingface_hub lays it out: blobs, snapshots/<rev>/config.json (a link), refs/main."""
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    blob = repo / "blobs" / f"{abs(hash((repo_id, revision)))}"
    blob.write_text(json.dumps(config))
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(blob, snapshot), snapshot / "config.json")
    if refs:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(revision)
    return snapshot / "config.json"


@pytest.fixture
def hf_home(tmp_path, monkeypatch):
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return tmp_path / "hf" / "hub"


def test_hf_cache_resolves_org_name(hf_home):
    cache_repo(hf_home, "acme/Tiny-Llama", TINY)
    s = catalog.resolve_model("acme/Tiny-Llama")
    assert (s.name, s.hf_id, s.model_type, s.hidden_size) == ("acme/Tiny-Llama", "acme/Tiny-Llama", "llama", 64)
    assert json.loads(s.hf_config_json) == TINY
    assert s.source.endswith(os.path.join("snapshots", "abc123", "config.json"))
    assert count_params(s).total == count_params(spec_from_hf_config(TINY, name="x")).total


def test_hf_cache_follows_refs_main(hf_home):
    cache_repo(hf_home, "acme/Tiny", {**TINY, "hidden_size": 32}, revision="old")
    cache_repo(hf_home, "acme/Tiny", {**TINY, "hidden_size": 128}, revision="new")
    assert catalog.resolve_model("acme/Tiny").hidden_size == 128
    (hf_home / "models--acme--Tiny" / "refs" / "main").write_text("old")
    assert catalog.resolve_model("acme/Tiny").hidden_size == 32


def test_hf_cache_without_refs_takes_the_newest_snapshot(hf_home):
    first = cache_repo(hf_home, "acme/NoRefs", {**TINY, "hidden_size": 32}, revision="r1", refs=False)
    second = cache_repo(hf_home, "acme/NoRefs", {**TINY, "hidden_size": 96}, revision="r2", refs=False)
    os.utime(first, (1, 1), follow_symlinks=False)
    os.utime(first.resolve(), (1, 1))
    assert second.exists()
    assert catalog.resolve_model("acme/NoRefs").hidden_size == 96


def test_hf_cache_matches_case_insensitively(hf_home):
    cache_repo(hf_home, "Acme/Tiny-Llama", TINY)
    assert catalog.resolve_model("acme/tiny-llama").hidden_size == 64


def test_hf_hub_cache_variable_wins(tmp_path, hf_home, monkeypatch):
    other = tmp_path / "elsewhere"
    cache_repo(other, "acme/Tiny", {**TINY, "hidden_size": 256})
    cache_repo(hf_home, "acme/Tiny", TINY)
    monkeypatch.setenv("HF_HUB_CACHE", str(other))
    assert catalog.hf_hub_cache_dir() == str(other)
    assert catalog.resolve_model("acme/Tiny").hidden_size == 256


def test_default_cache_dir(monkeypatch, tmp_path):
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert catalog.hf_hub_cache_dir() == os.path.join(str(tmp_path), ".cache", "huggingface", "hub")


def test_catalog_wins_over_the_cache(hf_home):
    cache_repo(hf_home, "meta-llama/Llama-2-7b-hf", TINY)
    assert catalog.resolve_model("meta-llama/Llama-2-7b-hf").name == "llama-2-7b"


def test_unknown_ids_still_fail_with_did_you_mean(hf_home):
    cache_repo(hf_home, "acme/Tiny", TINY)
    with pytest.raises(UnknownNameError, match=r"unknown model 'meta-llama/Llama-2-7b-hff'; did you mean"):
        catalog.resolve_model("meta-llama/Llama-2-7b-hff")
    with pytest.raises(UnknownNameError, match="unknown model 'acme/Other'"):
        catalog.resolve_model("acme/Other")


def test_cached_config_errors_are_one_line(hf_home):
    cache_repo(hf_home, "acme/Broken", {"model_type": "t5", "d_model": 8})
    with pytest.raises(TrainplanError, match="model_type 't5' is not supported") as info:
        catalog.resolve_model("acme/Broken")
    assert "\n" not in str(info.value)


def test_api_and_cli_use_the_cache(hf_home, capsys):
    cache_repo(hf_home, "acme/Tiny-Llama", TINY)
    estimate = trainplan.estimate("acme/Tiny-Llama", gpu="a100", method="full", seq_len=128, batch_size=1)
    assert estimate.job.setup.model.name == "acme/Tiny-Llama"
    code = main(["estimate", "--model", "acme/Tiny-Llama", "--gpu", "a100", "--method", "full", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    data = json.loads(out)
    assert data["setup"]["model"] == "acme/Tiny-Llama"
    assert data["params"]["total"] == count_params(catalog.resolve_model("acme/Tiny-Llama")).total


def test_no_huggingface_hub_import(hf_home):
    import subprocess
    import sys

    cache_repo(hf_home, "acme/Tiny-Llama", TINY)
    code = ("import sys, trainplan.catalog as c; c.resolve_model('acme/Tiny-Llama');"
            "print('huggingface_hub' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HOME": str(hf_home.parent)}).stdout
    assert out.strip() == "False"


# --- against transformers: full-size catalog configs on the meta device (extra 'trace') ---------------

NATIVE = ["gemma-7b", "qwen2-7b", "phi-3-mini-128k", "gpt-oss-20b", "glm-4.5-air", "llama-4-scout",
          "nemotron-3-8b", "olmo-2-0425-1b", "ministral-8b", "seed-oss-36b", "internlm3-8b"]


@pytest.mark.trace
@pytest.mark.parametrize("name", NATIVE)
def test_catalog_count_equals_transformers(name):
    model = meta_model(json.loads(spec(name).hf_config_json))
    real = sum(p.numel() for n, p in model.named_parameters() if "vision" not in n)
    real += sum(b.numel() for n, b in model.named_buffers() if n.endswith("e_score_correction_bias"))
    assert count_params(spec(name)).total == real


# --- Nemotron (transformers models/nemotron: plain relu2 MLP, LayerNorm1P with bias) -------------------

def test_nemotron_4_340b_count_by_hand():
    # Megatron-Bridge Nemotron4ModelProvider340B: 96 layers, hidden 18432, 96 heads, 8 query groups (head 192),
    # ffn 73728, no linear bias, untied embeddings of NemotronConfig's 256000 tokens
    h, layers, kv, ffn, vocab = 18432, 96, 8 * 192, 73728, 256000
    attention = 2 * h * h + 2 * h * kv              # q, o + k, v
    mlp = 2 * h * ffn                               # up_proj, down_proj (no gate)
    norms = 2 * 2 * h                               # two LayerNorms with weight and bias
    total = layers * (attention + mlp + norms) + 2 * h + 2 * vocab * h
    assert total == 341_029_195_776                 # "Nemotron-4 340B"
    assert count_params(spec("nvidia/Nemotron-4-340B-Base")).total == total
    assert count_params(spec("Nemotron-340B")).total == total   # the name NeMo's performance table uses
    assert count_params(spec("Nemotron-8B")).total == 8_540_135_424


def test_relu2_saves_its_relu_output_and_an_fp32_copy_under_autocast():
    from trainplan.memory.mlp_saves import _act_own_bytes

    # relu saves its output and square (pow) its input, the same bf16 tensor; autocast runs pow in fp32
    assert _act_own_bytes("relu2", 2, autocast=False) == 2
    assert _act_own_bytes("relu2", 2, autocast=True) == 2 + 4
