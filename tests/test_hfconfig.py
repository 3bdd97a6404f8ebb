"""trainplan.model.hfconfig: Hugging Face config.json -> ModelSpec.

Fixtures in tests/fixtures/configs/ are tiny but valid configs (transformers 5 builds every
built-in type; chatglm, internlm, internlm2, baichuan, Yi, qwen and the legacy Falcon names are remote
code and are only parsed). Expected structure per fixture follows the transformers modeling code.
"""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model_counts import meta_model
from trainplan.enums import MlpKind, NormKind, Position
from trainplan.errors import TrainplanError
from trainplan.model.hfconfig import (
    SUPPORTED_MODEL_TYPES,
    load_config_path,
    spec_from_hf_config,
)
from trainplan.model.params import count_params

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "configs"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))
MODELS_TOML = ROOT / "src" / "trainplan" / "catalog" / "data" / "models.toml"

# Structure each fixture must parse to (ModelSpec attribute -> value).
EXPECTED: dict[str, dict[str, object]] = {
    "llama": dict(naming="llama", num_kv_heads=2, head_dim=16, tied_embeddings=False, norms_per_layer=2),
    "mistral": dict(sliding_window=32, num_kv_heads=2),
    "qwen2": dict(qkv_bias=True, out_bias=False, tied_embeddings=True, sliding_window=None),
    "qwen3": dict(head_dim=32, qk_norm=True, qkv_bias=False, tied_embeddings=True),
    "qwen2_moe": dict(qkv_bias=True, out_bias=False),
    "qwen3_moe": dict(qk_norm=True, head_dim=32),
    "mixtral": dict(naming="mixtral", sliding_window=None),
    "gemma": dict(tied_embeddings=True, head_dim=16, num_kv_heads=1, hidden_act="gelu_pytorch_tanh"),
    "gemma2": dict(norms_per_layer=4, sliding_window=32, tied_embeddings=True, qk_norm=False),
    "gemma3_text": dict(norms_per_layer=4, qk_norm=True, sliding_window=32, num_layers=4),
    "gemma3": dict(norms_per_layer=4, qk_norm=True, hidden_size=64, tied_embeddings=True),
    "phi3": dict(naming="phi3", num_kv_heads=4, sliding_window=64),
    "glm4": dict(naming="glm4", norms_per_layer=4, qkv_bias=True, out_bias=False, head_dim=16),
    "glm": dict(naming="glm4", norms_per_layer=2, qkv_bias=True, out_bias=False),
    "deepseek_v2": dict(naming="deepseek", head_dim=24, num_kv_heads=4),
    "deepseek_v3": dict(naming="deepseek", head_dim=24),
    "gpt2": dict(naming="gpt2", mlp_kind=MlpKind.PLAIN, norm_kind=NormKind.LAYER,
                 position=Position.LEARNED, intermediate_size=256, tied_embeddings=True,
                 qkv_bias=True, out_bias=True, mlp_bias=True, max_position_embeddings=128),
    "nemotron": dict(naming="llama", mlp_kind=MlpKind.PLAIN, norm_kind=NormKind.LAYER, hidden_act="relu2",
                     num_kv_heads=2, head_dim=16, tied_embeddings=False, qkv_bias=False, mlp_bias=False),
    "gpt_neox": dict(naming="neox", parallel_attn_mlp=True, tied_embeddings=False, qkv_bias=True,
                     mlp_bias=True, mlp_kind=MlpKind.PLAIN),
    "opt": dict(naming="opt", position=Position.LEARNED, learned_position_offset=2,
                intermediate_size=256, tied_embeddings=True, hidden_act="relu"),
    "bloom": dict(naming="neox", position=Position.ALIBI, embedding_norm=True, intermediate_size=256,
                  max_position_embeddings=None, tied_embeddings=True, qkv_bias=True),
    "falcon": dict(naming="neox", num_kv_heads=1, norms_per_layer=1, parallel_attn_mlp=True,
                   tied_embeddings=True, qkv_bias=False, intermediate_size=256),
    "falcon_new_decoder": dict(num_kv_heads=2, norms_per_layer=2, parallel_attn_mlp=True),
    "falcon_refinedweb": dict(num_kv_heads=2, norms_per_layer=2, parallel_attn_mlp=True),
    "falcon_refinedwebmodel": dict(num_kv_heads=1, norms_per_layer=1, num_heads=4, num_layers=2),
    "chatglm": dict(naming="chatglm", num_kv_heads=2, head_dim=16, qkv_bias=True, out_bias=False,
                    mlp_bias=False, max_position_embeddings=128, vocab_size=1000, num_layers=2),
    "internlm2": dict(naming="internlm2", qkv_bias=False, out_bias=False),
    "internlm": dict(naming="llama", qkv_bias=True, out_bias=True),
    "baichuan": dict(naming="baichuan", position=Position.ROPE, max_position_embeddings=128),
    "baichuan_alibi": dict(naming="baichuan", position=Position.ALIBI, max_position_embeddings=128),
    "yi": dict(naming="llama", num_kv_heads=2),
    # 2025-2026 families (model/hfconfig/recent.py)
    "seed_oss": dict(naming="llama", qkv_bias=True, out_bias=False, hidden_dropout=0.1, attention_dropout=0.1),
    "internlm3": dict(naming="llama", qkv_bias=False, mlp_bias=False, head_dim=16),
    "olmo": dict(naming="llama", qkv_bias=False, norms_per_layer=2, tied_embeddings=False),
    "olmo2": dict(naming="llama", qk_norm=True, norms_per_layer=2, qkv_bias=False, sliding_window=None),
    "olmo3": dict(qk_norm=True, sliding_window=32, num_layers=4),
    "glm4_moe": dict(naming="llama", qkv_bias=True, out_bias=False, qk_norm=True, head_dim=16),
    "gpt_oss": dict(naming="gpt_oss", qkv_bias=True, out_bias=True, mlp_bias=True, sliding_window=32,
                    head_dim=16),
    "llama4_text": dict(naming="llama4", intermediate_size=128, qk_norm=True, num_layers=4),
    "llama4": dict(naming="llama4", intermediate_size=128, hidden_size=64, tied_embeddings=False),
    "kimi_k2": dict(naming="deepseek", head_dim=24),
    # 2021-2024 families with their own model_type (model/hfconfig/early.py)
    "qwen": dict(naming="qwen", intermediate_size=128, head_dim=16, qkv_bias=True, out_bias=False, mlp_bias=False,
                 norm_kind=NormKind.RMS, tied_embeddings=False, max_position_embeddings=128),
    "phi": dict(naming="phi", norms_per_layer=1, parallel_attn_mlp=True, qkv_bias=True, out_bias=True,
                mlp_bias=True, mlp_kind=MlpKind.PLAIN, tied_embeddings=False, hidden_dropout=0.1),
    "gptj": dict(naming="gptj", norms_per_layer=1, parallel_attn_mlp=True, qkv_bias=False, out_bias=False,
                 mlp_bias=True, intermediate_size=256, tied_embeddings=False),
    "gpt_bigcode": dict(naming="gpt_bigcode", num_kv_heads=1, position=Position.LEARNED, tied_embeddings=True,
                        qkv_bias=True, max_position_embeddings=128),
    "starcoder2": dict(naming="starcoder2", num_kv_heads=2, sliding_window=32, norm_kind=NormKind.LAYER,
                       mlp_kind=MlpKind.PLAIN, mlp_bias=True, tied_embeddings=True, hidden_dropout=0.1),
    "mpt": dict(naming="mpt", position=Position.ALIBI, intermediate_size=256, qkv_bias=False, mlp_bias=False,
                tied_embeddings=True, max_position_embeddings=128),
    # second batch of model types (model/hfconfig/variants.py)
    "deepseek": dict(naming="llama", head_dim=16, num_kv_heads=4, mla=None, tied_embeddings=False, qkv_bias=False),
    "olmoe": dict(naming="llama", qk_norm=True, num_kv_heads=2, tied_embeddings=False, qkv_bias=False),
    "granite": dict(naming="llama", num_kv_heads=2, tied_embeddings=True, qkv_bias=False, mlp_bias=False),
    "granitemoe": dict(naming="llama", num_kv_heads=2, tied_embeddings=True, intermediate_size=32),
    "minicpm": dict(naming="llama", head_dim=16, num_kv_heads=4, tied_embeddings=True, qkv_bias=False),
    "stablelm": dict(norm_kind=NormKind.LAYER, norms_per_layer=1, parallel_attn_mlp=True, qk_norm=True,
                     qkv_bias=True, out_bias=False, mlp_bias=False, num_kv_heads=2, tied_embeddings=False),
    "cohere": dict(norm_kind=NormKind.LAYER, norms_per_layer=1, parallel_attn_mlp=True, qk_norm=True,
                   qkv_bias=False, tied_embeddings=True, num_kv_heads=2),
}


def fixture_ids(files: list[Path]) -> list[str]:
    return [f.stem for f in files]


def test_every_fixture_has_expectations():
    assert sorted(EXPECTED) == fixture_ids(FIXTURE_FILES)


def test_every_supported_model_type_has_a_fixture():
    types = {json.loads(f.read_text())["model_type"] for f in FIXTURE_FILES}
    assert types == set(SUPPORTED_MODEL_TYPES)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=fixture_ids(FIXTURE_FILES))
def test_fixture_parses(path):
    spec = load_config_path(path)
    assert spec.name == path.stem
    assert spec.model_type == json.loads(path.read_text())["model_type"]
    assert json.loads(spec.hf_config_json) == json.loads(path.read_text())
    for attr, value in EXPECTED[path.stem].items():
        assert getattr(spec, attr) == value, attr
    assert count_params(spec).total > 0


def test_moe_fixtures():
    qwen2 = load_config_path(FIXTURES / "qwen2_moe.json").moe
    assert qwen2 is not None and qwen2.shared_intermediate_size == 64 and qwen2.shared_expert_gate
    assert [qwen2.is_moe_layer(i) for i in range(3)] == [True, False, True]   # mlp_only_layers [1]
    qwen3 = load_config_path(FIXTURES / "qwen3_moe.json").moe
    assert qwen3 is not None and qwen3.num_shared_experts == 0
    assert [qwen3.is_moe_layer(i) for i in range(4)] == [False, True, False, True]   # step 2
    mixtral = load_config_path(FIXTURES / "mixtral.json").moe
    assert mixtral is not None and (mixtral.num_experts, mixtral.top_k) == (4, 2)
    assert mixtral.expert_intermediate_size == 128


def test_deepseek_fixtures():
    v2 = load_config_path(FIXTURES / "deepseek_v2.json")
    assert v2.mla is not None and v2.mla.q_lora_rank is None          # null: plain q_proj
    assert v2.moe is not None and v2.moe.shared_intermediate_size == 2 * 32
    assert not v2.moe.router_bias and v2.moe.first_dense_layers == 1
    v3 = load_config_path(FIXTURES / "deepseek_v3.json")
    assert v3.mla is not None and v3.mla.q_lora_rank == 32
    assert v3.moe is not None and v3.moe.router_bias and v3.moe.num_shared_experts == 1
    assert any("MTP" in note for note in v3.notes)


# --- defaults the transformers config classes apply --------------------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000}


def spec(config, name="t"):
    return spec_from_hf_config(config, name=name)


def test_llama_defaults():
    s = spec(LLAMA)
    assert (s.num_kv_heads, s.head_dim, s.tied_embeddings) == (4, 16, False)
    assert (s.max_position_embeddings, s.hidden_act, s.qkv_bias) == (2048, "silu", False)


def test_class_specific_defaults():
    qwen = {**LLAMA, "num_key_value_heads": 2}
    assert spec({**qwen, "model_type": "qwen3"}).head_dim == 128        # Qwen3Config default
    assert spec({**qwen, "model_type": "qwen2"}).tied_embeddings is False
    assert spec({**LLAMA, "model_type": "gemma2", "num_key_value_heads": 2}).tied_embeddings
    mistral = {**LLAMA, "model_type": "mistral", "num_attention_heads": 8}
    assert spec(mistral).num_kv_heads == 8                              # MistralConfig default
    assert spec(mistral).sliding_window == 4096
    assert spec({**mistral, "sliding_window": None}).sliding_window is None
    assert spec({**LLAMA, "model_type": "glm4", "num_key_value_heads": 2}).qkv_bias   # default on
    assert spec({**LLAMA, "model_type": "internlm2"}).out_bias                       # bias: true


def test_gpt2_n_inner_null_means_4h():
    config = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 1000,
              "n_inner": None}
    assert spec(config).intermediate_size == 256


def test_deepseek_q_lora_rank_absent_takes_class_default():
    config = json.loads((FIXTURES / "deepseek_v3.json").read_text())
    del config["q_lora_rank"]
    assert spec(config).mla.q_lora_rank == 1536


def test_falcon_tie_default_is_noted():
    s = load_config_path(FIXTURES / "falcon.json")
    assert s.tied_embeddings and any("tie_word_embeddings" in note for note in s.notes)


def test_moe_2025_fixtures():
    glm = load_config_path(FIXTURES / "glm4_moe.json").moe
    assert glm is not None and glm.router_bias and glm.first_dense_layers == 1
    assert glm.shared_intermediate_size == 32 and glm.num_experts == 8
    oss = load_config_path(FIXTURES / "gpt_oss.json").moe
    assert oss is not None and (oss.num_experts, oss.top_k, oss.expert_intermediate_size) == (4, 2, 64)
    scout = load_config_path(FIXTURES / "llama4.json").moe
    maverick = load_config_path(FIXTURES / "llama4_text.json").moe
    assert scout is not None and all(scout.is_moe_layer(i) for i in range(4))
    assert maverick is not None and [maverick.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert maverick.shared_intermediate_size == maverick.expert_intermediate_size == 64


def test_per_layer_attention_kinds():
    """Models alternating local and full attention get one layer kind per attention type."""
    from trainplan.model.architecture import structure

    olmo3 = structure(load_config_path(FIXTURES / "olmo3.json"))
    assert [olmo3.layer(i).attention for i in range(4)] == ["local", "local", "local", "full"]
    oss = structure(load_config_path(FIXTURES / "gpt_oss.json"))
    assert [oss.layer(i).attention for i in range(2)] == ["local", "full"]
    maverick = structure(load_config_path(FIXTURES / "llama4_text.json"))   # RoPE (chunked) on 3 of 4
    assert [(maverick.layer(i).is_moe, maverick.layer(i).attention) for i in range(4)] == [
        (False, "local"), (True, "local"), (False, "local"), (True, "full")]
    assert structure(load_config_path(FIXTURES / "llama.json")).layer(0).attention == ""


def test_2025_parameter_details():
    """Attention sinks, router biases, full-width and weightless q/k norms, as transformers builds them."""
    oss = load_config_path(FIXTURES / "gpt_oss.json")
    counts = count_params(oss)
    assert counts.router == 2 * (64 * 4 + 4)              # router weight + bias per layer
    olmo = count_params(load_config_path(FIXTURES / "olmo2.json"))
    # per layer: 2 post-norms (64) + q_norm over 4 x 16 + k_norm over 2 x 16
    assert olmo.norms == 2 * (2 * 64 + 64 + 32) + 64
    llama4 = count_params(load_config_path(FIXTURES / "llama4_text.json"))
    assert llama4.norms == 4 * 2 * 64 + 64               # the L2 q/k norm has no weight


def test_2025_bad_values_are_user_errors():
    olmo3 = json.loads((FIXTURES / "olmo3.json").read_text())
    with pytest.raises(TrainplanError, match="layer_types"):
        spec({**olmo3, "layer_types": ["sliding_attention"]})
    llama4 = json.loads((FIXTURES / "llama4_text.json").read_text())
    with pytest.raises(TrainplanError, match="moe_layers"):
        spec({**llama4, "moe_layers": [0]})
    with pytest.raises(TrainplanError, match="no_rope_layers"):
        spec({**llama4, "no_rope_layers": [1, 1]})


def test_gemma3_counts_text_decoder_only():
    multimodal = load_config_path(FIXTURES / "gemma3.json")
    text = load_config_path(FIXTURES / "gemma3_text.json")
    assert count_params(multimodal).total == count_params(text).total
    assert any("vision" in note for note in multimodal.notes)


def test_identity_fields_pass_through():
    s = spec_from_hf_config(LLAMA, name="x", hf_id="org/x", aliases=("x-chat",), source="s",
                            measured_params=123)
    assert (s.hf_id, s.aliases, s.source, s.measured_params) == ("org/x", ("x-chat",), "s", 123)
    assert s.hf_config_json == json.dumps(LLAMA, sort_keys=True)


# --- errors ------------------------------------------------------------------------------------

def test_unsupported_model_type():
    with pytest.raises(TrainplanError, match=r"model_type 't5' is not supported") as info:
        spec({"model_type": "t5", "d_model": 512})
    assert "\n" not in str(info.value)


def test_missing_model_type():
    with pytest.raises(TrainplanError, match="lacks model_type"):
        spec({"hidden_size": 64})


def test_missing_keys_are_all_named():
    config = {k: v for k, v in LLAMA.items() if k not in ("hidden_size", "num_hidden_layers")}
    with pytest.raises(TrainplanError) as info:
        spec(config)
    assert str(info.value) == ("config.json for model_type 'llama' lacks hidden_size, "
                               "num_hidden_layers")


def test_missing_remote_code_keys():
    config = json.loads((FIXTURES / "chatglm.json").read_text())
    del config["ffn_hidden_size"], config["padded_vocab_size"]
    with pytest.raises(TrainplanError, match="'chatglm' lacks ffn_hidden_size, padded_vocab_size"):
        spec(config)


def test_kv_head_default_that_does_not_fit_is_named():
    message = "lacks num_key_value_heads (the class default 32 does not divide num_attention_heads 4)"
    with pytest.raises(TrainplanError, match=re.escape(message)):
        spec({**LLAMA, "model_type": "qwen2"})


def test_missing_moe_keys():
    config = json.loads((FIXTURES / "qwen3_moe.json").read_text())
    del config["num_experts"]
    with pytest.raises(TrainplanError, match="'qwen3_moe' lacks num_experts"):
        spec(config)


@pytest.mark.parametrize("key, value", [("hidden_size", "4096"), ("hidden_size", 0),
                                        ("num_attention_heads", True), ("tie_word_embeddings", 1)])
def test_bad_values(key, value):
    with pytest.raises(TrainplanError, match=re.escape(f"has {key} = {value!r}")):
        spec({**LLAMA, key: value})


def test_unsupported_variants_are_refused():
    opt350m = json.loads((FIXTURES / "opt.json").read_text()) | {"word_embed_proj_dim": 32}
    with pytest.raises(TrainplanError, match="word_embed_proj_dim"):
        spec(opt350m)


def test_malformed_json_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{\n  "model_type": "llama",\n  "hidden_size": 64,,\n}\n')
    with pytest.raises(TrainplanError, match=r"^broken\.json: malformed JSON at line 3 column 21"):
        load_config_path(bad)


def test_config_folder_and_names(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    assert load_config_path(folder).name == "my-model"
    assert load_config_path(folder / "config.json").name == "my-model"
    (tmp_path / "other.json").write_text(json.dumps(LLAMA))
    assert load_config_path(tmp_path / "other.json").name == "other"


def test_missing_paths(tmp_path):
    with pytest.raises(TrainplanError, match="no config.json in"):
        load_config_path(tmp_path)
    with pytest.raises(TrainplanError, match="no such file"):
        load_config_path(tmp_path / "nope.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(TrainplanError, match="must hold a JSON object"):
        load_config_path(tmp_path / "list.json")


# --- the generated catalog -----------------------------------------------------------------------

def catalog_rows():
    return tomllib.loads(MODELS_TOML.read_text(encoding="utf-8"))["model"]


def test_catalog_rows_are_well_formed():
    rows = catalog_rows()
    keys: dict[str, str] = {}
    for row in rows:
        assert row["name"] == row["name"].lower() and " " not in row["name"]
        assert row["source"] and row["verification"] and row["config"]["model_type"]
        for alias in (row["name"], row["display_name"], row["hf_id"], *row.get("aliases", ())):
            key = re.sub(r"[\s_]+", "-", alias.lower())
            assert keys.setdefault(key, row["name"]) == row["name"], f"{alias} names two models"
    assert {"llama-2-7b", "llama-3.1-8b", "qwen2.5-7b", "qwen3-30b-a3b", "mixtral-8x7b",
            "mixtral-8x22b", "qwen3-235b-a22b", "deepseek-v3", "gpt2", "gpt2-medium",
            "pythia-1b"} <= {row["name"] for row in rows}


@pytest.mark.parametrize("row", catalog_rows(), ids=lambda r: r["name"])
def test_catalog_row_parses(row):
    config = {**row["config"], **dict.fromkeys(row.get("config_null_keys", ()))}
    s = spec_from_hf_config(config, name=row["name"], hf_id=row["hf_id"])
    assert s.model_type == row["config"]["model_type"]


def _load_builder():
    path = ROOT / "tools" / "build_model_catalog.py"
    module_spec = importlib.util.spec_from_file_location("build_model_catalog", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_catalog_is_up_to_date(capsys):
    """models.toml is what tools/build_model_catalog.py makes of the reference (tests/data/reference)."""
    builder = _load_builder()
    reference = json.loads((ROOT / "tests" / "data" / "reference" / "model_configs.json").read_text(encoding="utf-8"))
    assert builder.to_toml(builder.rows(reference)) == MODELS_TOML.read_text(encoding="utf-8")


# --- against transformers (optional: extra 'trace') -------------------------------------------

# model_types transformers does not ship (remote code on the Hub): parsed above, not built here.
REMOTE_CODE = {"chatglm", "internlm", "internlm2", "baichuan", "Yi", "RefinedWeb", "RefinedWebModel", "kimi_k2", "qwen",
               "deepseek", "minicpm"}
BUILT_IN = [f for f in FIXTURE_FILES if json.loads(f.read_text())["model_type"] not in REMOTE_CODE]


@pytest.mark.trace
@pytest.mark.parametrize("path", BUILT_IN, ids=fixture_ids(BUILT_IN))
def test_fixture_count_equals_transformers(path):
    """count_params equals the parameters transformers 5 builds from the same config.json.

    DeepSeek-V3's e_score_correction_bias is a buffer in transformers but a checkpoint tensor,
    counted by trainplan; Gemma 3's vision tower is left out of both.
    """
    model = meta_model(json.loads(path.read_text()))
    real = sum(p.numel() for n, p in model.named_parameters()
               if "vision_tower" not in n and "multi_modal_projector" not in n)
    real += sum(b.numel() for n, b in model.named_buffers() if n.endswith("e_score_correction_bias"))
    assert count_params(load_config_path(path)).total == real


# --- robustness: any value under any key gives a spec or a TrainplanError ---------------------

_JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 5000), st.floats(-2, 5000),
                         st.text(max_size=5), st.lists(st.integers(-1, 3), max_size=3),
                         st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=200, deadline=None)
@given(path=st.sampled_from(FIXTURE_FILES), data=st.data())
def test_any_value_gives_spec_or_user_error(path, data):
    config = json.loads(path.read_text())
    target = config.get("text_config", config)
    key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(_JSON_VALUES)
    try:
        spec_from_hf_config(config, name=path.stem)
    except TrainplanError as exc:
        assert "\n" not in str(exc)
