"""DoRA and preference stages in published cases (cases.normalize `_stage`): a DPO, ORPO, KTO, SimPO, CPO or
reward-model run, named in the method or by its trainer in the framework text, is scored as that stage
(`--stage`: job.setup.STAGES), the method being what the rest of the text or the LoRA block names.
RL with rollouts (PPO, GRPO, RLHF) stays refused: its generation is not modelled."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from trainplan.cases import map_case
from trainplan.cases.accuracy import evaluate
from trainplan.cases.normalize import normalized

DATA = Path(__file__).parent / "data"
BY_ID = {c["id"]: c for name in ("published_dev.json", "published_dev2.json")
         for c in json.loads((DATA / name).read_text(encoding="utf-8"))}
LORA_TIME = "universal-trainer-llama31-lora-1xh100-time"     # HF Trainer + peft, Llama 3.1 8B, one H100
FULL_MEM = "universal-trainer-phi3-full-1xh100-mem"


@pytest.mark.parametrize(("text", "stage", "method"), [
    ("DPO", "dpo", "lora"),                 # no method word: the LoRA block decides (cases.method_words.with_method)
    ("LoRA DPO", "dpo", "lora"), ("DPO (full)", "dpo", "full"), ("dpo w/ QLoRA", "dpo", "qlora"),
    ("full-parameter ORPO", "orpo", "full"), ("SimPO", "simpo", "lora"), ("KTO + LoRA", "kto", "lora"),
    ("reward modeling", "rm", "lora"), ("CPO", "cpo", "lora"),
])
def test_a_preference_stage_in_the_method(text, stage, method):
    case, notes = normalized({"method": text, "lora": {"rank": 16}})
    assert case["stage"] == stage
    assert notes[0].startswith(f"method {text!r} read as the {stage} stage")
    mapped = map_case({**copy.deepcopy(BY_ID[LORA_TIME]), "method": text})
    assert str(mapped.job.setup.method) == method


@pytest.mark.parametrize(("framework", "stage"), [
    ("TRL DPOTrainer", "dpo"), ("trl RewardTrainer", "rm"), ("LLaMA-Factory (stage: orpo)", "orpo"),
    ("ms-swift rlhf --rlhf_type simpo", "simpo"), ("TRL KTOTrainer + DeepSpeed ZeRO-3", "kto"),
])
def test_a_preference_stage_named_by_its_trainer(framework, stage):
    case, notes = normalized({"method": "lora", "framework": framework})
    assert case["stage"] == stage and notes[0] == f"framework {framework!r} runs the {stage} stage"


@pytest.mark.parametrize("framework", ["HF Trainer", "LLaMA-Factory (stage: sft)", "DeepSpeed ZeRO-3 (Adam)",
                                       "Megatron-LM, --rm-old-checkpoints"])
def test_no_stage_where_none_is_named(framework):
    case, _ = normalized({"method": "full", "framework": framework})
    assert "stage" not in case


def test_dpo_with_lora_runs_pairs_and_a_reference_forward_with_the_adapters_off():
    base = copy.deepcopy(BY_ID[LORA_TIME])
    sft = map_case(base).job.setup
    dpo = map_case({**base, "method": "LoRA DPO"}).job.setup
    assert (sft.sequences_per_sample, sft.reference_forward) == (1, False)
    # TRL DPOTrainer.concatenated_forward: chosen + rejected in one batch; ref_model None under PEFT ->
    # the same model with its adapters disabled (no copy held)
    assert (dpo.sequences_per_sample, dpo.reference_forward, dpo.reference_model) == (2, True, False)
    from trainplan.cases import timecase
    _, e_sft = timecase.predict(timecase.map_case(normalized(base)[0]))
    _, e_dpo = timecase.predict(timecase.map_case(normalized({**base, "method": "LoRA DPO"})[0]))
    assert e_dpo.tokens_per_step == 2 * e_sft.tokens_per_step
    # the reference forward is the policy's forward without the adapters: Llama 3.1 8B, rank 8 on all seven
    # linears, r x (in + out) a layer = 8 x (8192 + 5120 + 5120 + 8192 + 3 x 18432) = 655,360, x 32 layers
    # = 20,971,520 adapter parameters, 2 FLOPs each a token
    ft = e_dpo.step.per_token
    assert (e_sft.step.per_token.reference, ft.forward - ft.reference) == (0.0, pytest.approx(2 * 20_971_520))
    [s] = evaluate([base])
    [d] = evaluate([{**base, "method": "LoRA DPO"}])
    # tokens/s per GPU counts both sequences; each token now also runs a reference forward, so fewer a second
    # (per token: LoRA forward + input-gradient backward with recompute, plus one more forward)
    assert d.metric == s.metric == "tokens_per_s_per_gpu"
    assert d.predicted[d.metric] < s.predicted[s.metric]


def test_full_dpo_memory_holds_the_reference_copy():
    # a full fine-tune's reference is a frozen 16-bit copy of the model: 2 bytes a parameter more
    base = copy.deepcopy(BY_ID[FULL_MEM])
    sft, dpo = map_case(base), map_case({**base, "method": "full DPO"})
    assert dpo.job.setup.reference_model and not sft.job.setup.reference_model
    from trainplan.estimation.estimate import estimate
    e_sft, e_dpo = estimate(sft.job), estimate(dpo.job)
    assert e_dpo.memory.components_bytes["reference_model"] == 2 * e_sft.params.total


@pytest.mark.parametrize(("text", "method"), [
    ("DoRA", "lora"), ("QDoRA", "qlora"), ("LoRA + DoRA", "lora"), ("DoRA (LoRA)", "lora"), ("dora_qlora", "qlora"),
])
def test_dora_is_lora_with_use_dora(text, method):
    case, notes = normalized({"method": text, "lora": {"rank": 16}})
    assert (case["method"], case["dora"]) == (method, True)
    assert notes[0] == f"method {text!r} read as {method} with DoRA (peft use_dora)"


def test_a_dora_case_is_timed_and_sized_as_dora():
    # the same Llama 3.1 8B run with DoRA: peft's weight norm and kept outputs (memory.dora) make it larger
    # and slower than LoRA; the mapped setup carries use_dora into both readers
    for cid in (LORA_TIME, "universal-trainer-llama31-lora-1xh100-mem"):
        base = copy.deepcopy(BY_ID[cid])
        [lora] = evaluate([base])
        [dora] = evaluate([{**base, "method": "DoRA"}])
        assert map_case({**base, "method": "DoRA"}).job.setup.lora.dora
        if base["kind"] == "time":
            assert dora.predicted[dora.metric] < lora.predicted[lora.metric]
        else:
            assert dora.predicted[dora.metric] > lora.predicted[lora.metric]


@pytest.mark.parametrize(("case", "said"), [
    ({"method": "lora", "lora": {"rank": 16, "use_dora": True}}, "lora.use_dora True"),
    ({"method": "qlora", "lora": {"rank": 16, "peft_use_dora": "true"}}, "lora.peft_use_dora 'true'"),
    ({"method": "lora", "lora": {"rank": 16}, "framework": "LLaMA-Factory (use_dora: true)"},
     "framework text 'use_dora: true'"),
    ({"method": "lora", "lora": {"rank": 16}, "framework": "swift sft --use_dora True"},
     "framework text 'use_dora True'"),
])
def test_use_dora_in_the_lora_block_or_the_framework_text_is_dora(case, said):
    out, notes = normalized(case)
    assert out["dora"] is True and out["method"] == case["method"]
    assert notes == [f"{said} read as DoRA (peft use_dora)"]


@pytest.mark.parametrize(("method", "read"), [
    ("LoRA fine-tuning", "lora"), ("lora (PEFT)", "lora"), ("rsLoRA", "lora"), ("QLoRA (4-bit)", "qlora"), (None, None),
])
def test_use_dora_holds_whatever_words_name_the_lora(method, read):
    # the method is read first (method_words.read_method), use_dora after: "LoRA fine-tuning" with use_dora is
    # DoRA as "lora" with it is (benchmarks/paraphrase.py found the method's words losing it)
    out, notes = normalized({"method": method, "lora": {"rank": 16, "use_dora": True}})
    assert out["dora"] is True and out["method"] == read
    assert notes[-1] == "lora.use_dora True read as DoRA (peft use_dora)"


@pytest.mark.parametrize("case", [
    {"method": "lora", "lora": {"rank": 16, "use_dora": False}},
    {"method": "full", "lora": {"use_dora": True}},           # no adapters to decompose: left to the method
    {"method": "lora", "lora": {"rank": 16}, "framework": "use_dora: false"},
])
def test_no_dora_unless_it_is_set_on_an_adapter(case):
    out, _ = normalized(case)
    assert not out.get("dora")


def test_a_lora_block_with_use_dora_is_timed_as_dora():
    base = copy.deepcopy(BY_ID[LORA_TIME])
    [lora] = evaluate([base])
    [dora] = evaluate([{**base, "lora": {**base["lora"], "use_dora": True}}])
    [named] = evaluate([{**base, "method": "DoRA"}])
    assert dora.predicted[dora.metric] == named.predicted[named.metric] < lora.predicted[lora.metric]
