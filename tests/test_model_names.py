"""Checkpoint names that are a catalog model's under another name (catalog/model_names.py): another
organisation's copy, a storage suffix, a release suffix; accepted only when one entry has the name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplan import catalog
from trainplan.catalog.model_names import variant_match
from trainplan.cli import main
from trainplan.errors import UnknownNameError


@pytest.mark.parametrize("name, entry, read_past", [
    # ModelScope's mirror of meta-llama/Meta-Llama-3-8B-Instruct (an alias of llama-3-8b)
    ("LLM-Research/Meta-Llama-3-8B-Instruct", "llama-3-8b",
     "organisation 'LLM-Research' (another copy of that repository name)"),
    ("NousResearch/Llama-2-7b-hf", "llama-2-7b", "organisation 'NousResearch' (another copy of that repository name)"),
    # a pre-quantised upload: organisation and storage suffix read past, then the catalog name llama-3-8b
    ("unsloth/llama-3-8b-bnb-4bit", "llama-3-8b",
     "organisation 'unsloth' (another copy of that repository name); 'bnb-4bit' (how the weights are stored)"),
    # the vendor's own quantised upload: Qwen is an organisation of qwen2.5-7b's ids, so only the suffix
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "qwen2.5-7b", "'gptq-int4' (how the weights are stored)"),
    ("llama-3-8b-instruct", "llama-3-8b", "'instruct' (a release of the same architecture)"),
    ("Meta-Llama-3-8B-Instruct", "llama-3-8b", "no organisation (the repository name of an id of meta-llama)"),
    ("unsloth/gemma-2-9b-it-bnb-4bit", "gemma-2-9b",
     "organisation 'unsloth' (another copy of that repository name); 'bnb-4bit' (how the weights are stored)"),
    # a longer-context release: Yi-34B-200K is Yi-34B's shapes (01-ai's id; its own organisation, no note for it)
    ("01-ai/Yi-34B-200K", "yi-34b", "'200k' (a longer-context release: the same shapes)"),
    ("Qwen/Qwen2.5-7B-Instruct-1M", "qwen2.5-7b",
     "'1m' (a longer-context release: the same shapes)"),
])
def test_variant_names_resolve_with_a_note(name, entry, read_past):
    assert catalog.resolve_model(name).name == entry
    assert catalog.model_name_note(name) == f"model '{name}' read as catalog {entry}: {read_past}"


@pytest.mark.parametrize("name, entry, read_past", [
    # a separator between the family and its version
    ("Qwen-2.5-7B", "qwen2.5-7b", "no organisation (the repository name of an id of qwen); the spelling of "
                                  "'Qwen-2.5-7B' (the catalog writes the name another way)"),
    ("gemma2-9b", "gemma-2-9b", "no organisation (the repository name of an id of google); the spelling of "
                                "'gemma2-9b' (the catalog writes the name another way)"),
    # a version's dot written as an underscore, as directory names do
    ("qwen2_5-7b", "qwen2.5-7b", "the version as 'qwen2_5-7b' writes it (an underscore for its dot)"),
    ("Qwen1_5-7B-Chat", "qwen1.5-7b", "no organisation (the repository name of an id of qwen); the version as "
                                      "'Qwen1_5-7B-Chat' writes it (an underscore for its dot)"),
])
def test_a_version_spelled_another_way(name, entry, read_past):
    assert catalog.resolve_model(name).name == entry
    assert catalog.model_name_note(name) == f"model '{name}' read as catalog {entry}: {read_past}"


@pytest.mark.parametrize("name, entry, tagged", [
    # the catalog's name carries a release date or word the published name leaves out (Mistral's YYMM, Zhipu's MMDD)
    ("Mistral-Small-24B", "mistral-small-24b-2501", "mistral-small-24b-2501"),
    ("GLM-4-32B", "glm-4-32b-0414", "glm-4-32b-0414"),
    ("DeepSeek-Coder-V2-Lite", "deepseek-v2-lite", "deepseek-coder-v2-lite-base"),
    ("Qwen3-Coder-30B-A3B", "qwen3-30b-a3b", "qwen3-coder-30b-a3b-instruct"),
    # AI2 stamps OLMo 2's release (MMYY) inside the name: allenai/OLMo-2-1124-13B
    ("OLMo-2-13B", "olmo-2-1124-13b", "olmo-2-1124-13b"),
    ("OLMo-2-1B", "olmo-2-0425-1b", "olmo-2-0425-1b"),
])
def test_a_name_without_the_catalogs_release_tag(name, entry, tagged):
    assert catalog.resolve_model(name).name == entry
    assert catalog.model_name_note(name) == (f"model '{name}' read as catalog {entry}: the release tag of '{tagged}' "
                                             "(the catalog's name of that release; the same architecture)")


def test_release_tags_never_pick_one_of_several():
    # two entries whose names differ only by their release tag: the untagged name is neither
    index = {"acme/base-7b-2401": 0, "acme/base-7b-2409": 1}
    assert variant_match("base-7b", "base-7b", index) is None
    assert variant_match("base-7b", "base-7b", {"acme/base-7b-2401": 0}).entry == 0
    # a version is not a release tag: mistral-7b-v0.3 is not read as mistral-7b-v0.1's name
    assert variant_match("base-7b", "base-7b", {"acme/base-7b-v0.1": 0}) is None


def test_spelling_never_merges_two_sizes():
    # opt-1.3b and opt-13b differ by their dot only: each name is its own model, and a spelling matching
    # two entries is not guessed
    assert catalog.resolve_model("OPT-1.3B").name == "opt-1.3b" and catalog.resolve_model("opt13b").name == "opt-13b"
    index = {"acme/base2-7b": 0, "acme/base-2-7b": 1}
    assert variant_match("base-2-7b-x", "base-2-7b-x", index) is None
    assert variant_match("other/base2-7b", "other/base2-7b", index).entry == 0     # exact repository name first


@pytest.mark.parametrize("name", ["meta-llama/Llama-2-7b-hf", "llama-3-8b", "Qwen/Qwen2.5-7B-Instruct"])
def test_own_names_carry_no_note(name):
    assert catalog.model_name_note(name) is None


@pytest.mark.parametrize("name", [
    # Qwen3-Next (hybrid linear attention) is not in the catalog: '-instruct' read past leaves an unknown name
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "someone/llama-2-8b",
])
def test_names_that_match_no_single_entry_stay_unknown(name):
    with pytest.raises(UnknownNameError, match=f"unknown model '{name}'"):
        catalog.resolve_model(name)
    assert catalog.model_name_note(name) is None


def test_a_repository_name_two_entries_share_is_not_guessed():
    index = {"acme/base-7b": 0, "other/base-7b": 1, "acme/solo-7b": 2}
    assert variant_match("mirror/base-7b", "mirror/base-7b", index) is None
    match = variant_match("Mirror/Solo-7B-Instruct-AWQ", "mirror/solo-7b-instruct-awq", index)
    assert match is not None and match.entry == 2
    assert match.read_past == ("organisation 'Mirror' (another copy of that repository name)",
                               "'awq' (how the weights are stored)", "'instruct' (a release of the same architecture)")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./_ ", max_size=40))
def test_any_name_resolves_to_one_entry_or_says_unknown(name):
    try:
        spec = catalog.resolve_model(name)
    except UnknownNameError:
        assert catalog.model_name_note(name) is None
    except Exception as exc:        # a path-like name may be read as a config path; never another error
        assert type(exc).__name__ == "TrainplanError", exc
    else:
        assert spec.name in catalog.load_models()


def test_estimate_says_how_it_read_the_model(capsys):
    assert main(["estimate", "--model", "unsloth/llama-3-8b-bnb-4bit", "--method", "qlora", "--gpu", "a100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("llama-3-8b  qlora")
    assert ("model 'unsloth/llama-3-8b-bnb-4bit' read as catalog llama-3-8b: organisation 'unsloth' (another "
            "copy of that repository name); 'bnb-4bit' (how the weights are stored)") in out


@pytest.mark.parametrize("alias, entry", [
    ("Qwen/QwQ-32B", "qwen2.5-32b"),                                  # litgpt config.py: QwQ-32B = Qwen2.5-32B
    ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", "llama-3.1-70b"),   # litgpt: same shapes as Llama-3.1-70B
    ("microsoft/Phi-3.5-mini-instruct", "phi-3-mini-128k"),           # litgpt: shapes of Phi-3-mini-128k
])
def test_same_architecture_aliases(alias, entry):
    assert catalog.resolve_model(alias).name == entry and catalog.model_name_note(alias) is None


def test_a_long_context_release_the_catalog_has_is_matched_exactly():
    # phi-3-mini-128k is its own catalog entry (longrope scaling): the exact name wins, no suffix is read past
    assert catalog.resolve_model("microsoft/Phi-3-mini-128k-instruct").name == catalog.resolve_model(
        "phi-3-mini-128k").name
    assert catalog.model_name_note("microsoft/Phi-3-mini-128k-instruct") is None


@pytest.mark.parametrize("name, entry, total_b", [
    # the name adds the size the catalog's name leaves out (Mistral's announcements: "Mistral NeMo 12B")
    ("Mistral-Nemo-12B", "mistral-nemo-2407", "12.25"),
    ("Magistral-Small-24B", "magistral-small-2506", "23.57"),
    ("deepseek-v3-671b", "deepseek-v3", "671.03"),
])
def test_a_name_that_adds_the_size(name, entry, total_b):
    assert catalog.resolve_model(name).name == entry
    assert catalog.model_name_note(name).endswith(f"the size '{name.rpartition('-')[2].lower()}' the name adds "
                                                  f"(the entry has {total_b}B parameters)")


@pytest.mark.parametrize("name", ["Mistral-Nemo-7B", "phi-4-0b", "deepseek-v3-7b"])
def test_a_size_the_entry_does_not_have_stays_unknown(name):
    with pytest.raises(UnknownNameError, match="unknown model"):
        catalog.resolve_model(name)
