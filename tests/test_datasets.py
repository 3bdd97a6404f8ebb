"""The dataset catalog (catalog/data/datasets.toml, catalog/datasets.py) and what reads it: `--dataset`,
`trainplan datasets`, ms-swift's `--dataset` under `--from`, and a published case's text.

Expected values are copied by hand from ms-swift's dataset table (docs/source_en/Instruction/
Supported-models-and-datasets.md @3602360a5623, column "Statistic (token)", Qwen2.5 tokenizer) or derived
from them by hand below."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import estimate_json as est
from conftest import options_from as options
from trainplan.cases import data as case_data
from trainplan.catalog.datasets import DatasetStats, dataset_in_word, find_dataset, mixture, named
from trainplan.cli import main
from trainplan.errors import UnknownNameError
from trainplan.timing.steps import sequence_shape

# |[AI-ModelScope/alpaca-gpt4-data-en](...)|default|52002|167.6±123.9, min=29, max=607|chat, general, 🔥|
#  [vicgalle/alpaca-gpt4](...)|
ALPACA_GPT4_EN = ("AI-ModelScope/alpaca-gpt4-data-en", 52002, 167.6, 123.9, 29, 607)
# |[AI-ModelScope/alpaca-gpt4-data-zh](...)|default|48818|157.2±93.2, min=27, max=544|
ALPACA_GPT4_ZH = ("AI-ModelScope/alpaca-gpt4-data-zh", 48818, 157.2, 93.2, 27, 544)


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["AI-ModelScope/alpaca-gpt4-data-en", "vicgalle/alpaca-gpt4",
                                  "ai-modelscope/ALPACA-GPT4-DATA-EN", "alpaca-gpt4-data-en"])
def test_a_dataset_by_its_ids_and_repository_name(name):
    s = find_dataset(name)
    assert (s.id, s.samples, s.mean_tokens, s.std_tokens, s.min_tokens, s.max_tokens) == ALPACA_GPT4_EN
    assert "ms-swift" in s.source and "3602360a5623" in s.source and s.alias_note == ""


def test_swift_sampling_and_subset_suffixes_are_read_past():
    # ms-swift `dataset#N` takes N samples; `dataset:subset` names a subset (the lengths stay the table's)
    assert find_dataset("AI-ModelScope/alpaca-gpt4-data-en#500").samples == 500
    assert find_dataset("AI-ModelScope/alpaca-gpt4-data-en:default").samples == 52002


def test_aliases_say_how_they_were_read():
    s = find_dataset("tatsu-lab/alpaca")
    # |[AI-ModelScope/alpaca-cleaned](...)|default|51760|170.1±122.9, min=29, max=1028|
    assert (s.id, s.samples, s.mean_tokens) == ("AI-ModelScope/alpaca-cleaned", 51760, 170.1)
    assert "cleaned release" in s.alias_note
    assert "tatsu-lab/alpaca" not in find_dataset("yahma/alpaca-cleaned").alias_note


@pytest.mark.parametrize("word, expected", [
    ("instruct", None), ("cot", None), ("sharegpt", None),     # plain words: too common to name one dataset
    ("alpaca", "AI-ModelScope/alpaca-cleaned"), ("gsm8k", "modelscope/gsm8k"),
    ("longalpaca-12k", "AI-ModelScope/LongAlpaca-12k"), ("swift/sharegpt", "swift/sharegpt")])
def test_free_text_words_name_a_dataset_only_when_specific(word, expected):
    found = dataset_in_word(word)
    assert (found.id if found else None) == expected


def test_mixture_pools_samples_mean_and_spread():
    both, unknown = mixture(["AI-ModelScope/alpaca-gpt4-data-en", "AI-ModelScope/alpaca-gpt4-data-zh", "nope/x"])
    assert unknown == ["nope/x"]
    assert both.samples == 52002 + 48818
    # (52002 x 167.6 + 48818 x 157.2) / 100820 = (8,715,535.2 + 7,674,189.6) / 100,820 = 162.5642
    assert both.mean_tokens == pytest.approx(162.5642, abs=1e-4)
    # E[L^2] = (52002 (123.9^2 + 167.6^2) + 48818 (93.2^2 + 157.2^2)) / 100820
    #        = (52002 x 43441.97 + 48818 x 33397.08) / 100820 = 38,576.58; std = sqrt(38,576.58 - 162.5642^2)
    second = (52002 * 43441.97 + 48818 * 33397.08) / 100820
    assert both.std_tokens == pytest.approx(math.sqrt(second - 162.5642 ** 2), rel=1e-5)
    assert (both.min_tokens, both.max_tokens) == (27, 607)


def test_unknown_names_are_refused_with_the_closest():
    with pytest.raises(UnknownNameError, match="unknown dataset 'alpaka'.*did you mean alpaca"):
        named("alpaka")
    with pytest.raises(UnknownNameError):
        named(" , ")


@settings(max_examples=200, deadline=None)
@given(mean=st.floats(1.0, 1e5), cv=st.floats(0.0, 5.0), lo=st.integers(1, 50), span=st.integers(0, 10 ** 6))
def test_synthetic_lengths_stay_within_min_and_max(mean, cv, lo, span):
    s = DatasetStats(id="x", samples=10, mean_tokens=mean, std_tokens=cv * mean, min_tokens=lo,
                     max_tokens=lo + span, source="test")
    lengths = s.lengths()
    assert len(lengths) == 256
    assert all(lo <= x <= lo + span for x in lengths)
    assert list(lengths) == sorted(lengths)


def test_synthetic_lengths_keep_the_mean_and_span():
    lengths = find_dataset("vicgalle/alpaca-gpt4").lengths()
    mean = sum(lengths) / len(lengths)
    assert mean == pytest.approx(167.6, rel=0.03)
    span = sum(x * x for x in lengths) / sum(lengths)
    # sum(L^2) / sum(L) of lengths with this mean and spread: mean + std^2 / mean = 167.6 + 123.9^2 / 167.6
    # = 167.6 + 15351.21 / 167.6 = 259.194; the max (607) clips the log-normal's tail: the span falls a little short of mean + std^2 / mean
    assert 0.9 * 259.194 < span < 259.194
    shape = sequence_shape(seq_len=8192, micro_batch=1, tokens_per_sample=None, packing=True, padding_free=True,
                           lengths=lengths)
    assert shape.attention_span == pytest.approx(span)


def test_estimate_takes_the_size_and_lengths(capsys):
    data = est(capsys, "--model", "llama-2-7b", "--method", "full", "--gpu", "a100-80gb", "--num-gpus", "8",
               "--zero", "3", "--seq-len", "8192", "--packing", "--padding-free", "--dataset", "vicgalle/alpaca-gpt4")
    assert data["setup"]["samples"] == 52002
    note = next(n for n in data["notes"] if n.startswith("dataset AI-ModelScope/alpaca-gpt4-data-en"))
    assert "52,002 samples of 167.6 +- 123.9 tokens" in note and "its size for --samples" in note
    packed = next(n for n in data["notes"] if n.startswith("packed:"))
    assert "padding-free, so each sample attends only within itself" in packed
    # the same run timed with the whole pack as one sample is slower (attention over 8192 tokens)
    whole = est(capsys, "--model", "llama-2-7b", "--method", "full", "--gpu", "a100-80gb", "--num-gpus", "8",
                "--zero", "3", "--seq-len", "8192", "--packing", "--padding-free")
    assert whole["time"]["tokens_per_s_per_gpu"] < 0.9 * data["time"]["tokens_per_s_per_gpu"]


def test_unpacked_run_says_the_datasets_own_peak_length(capsys):
    base = ("--model", "llama-3.2-3b", "--method", "full", "--gpu", "a100-80gb", "--seq-len", "4096",
            "--batch-size", "2", "--dataset", "tatsu-lab/alpaca")
    data = est(capsys, *base)
    # alpaca-cleaned's longest sample is 1,028 tokens in ms-swift's table: shorter than --seq-len 4096
    assert ("unpacked: the memory peak assumes a sample of --seq-len 4096 tokens; the longest of "
            "AI-ModelScope/alpaca-cleaned is 1028 tokens (as the dataset table counts them): --seq-len 1028 "
            "gives the dataset's own peak") in data["notes"]
    shorter = est(capsys, *base[:-6], "--seq-len", "1028", "--batch-size", "2", "--dataset", "tatsu-lab/alpaca")
    assert shorter["memory"]["peak_allocated_bytes"] < data["memory"]["peak_allocated_bytes"]
    packed = est(capsys, *base, "--packing")
    assert not any(n.startswith("unpacked:") for n in packed["notes"])


def test_given_samples_and_lengths_win(capsys):
    data = est(capsys, "--model", "llama-2-7b", "--gpu", "a100-80gb", "--samples", "1000", "--tokens-per-sample",
               "512", "--dataset", "vicgalle/alpaca-gpt4")
    assert data["setup"]["samples"] == 1000 and data["setup"]["tokens_per_sample"] == 512
    assert any("nothing (--samples and the lengths were given) used" in n for n in data["notes"])


def test_unknown_dataset_is_one_line_and_exit_2(capsys):
    code, out, err = cli(capsys, "estimate", "--model", "llama-2-7b", "--gpu", "a100-80gb", "--dataset", "alpaka")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "unknown dataset 'alpaka'" in err and "Traceback" not in err


def test_datasets_command_lists_and_filters(capsys):
    code, out, _ = cli(capsys, "datasets", "alpaca-gpt4", "--json")
    rows = json.loads(out)
    assert code == 0
    assert {r["id"] for r in rows} == {"AI-ModelScope/alpaca-gpt4-data-en", "AI-ModelScope/alpaca-gpt4-data-zh"}
    en = next(r for r in rows if r["id"].endswith("-en"))
    assert (en["samples"], en["mean_tokens"], en["std_tokens"]) == (52002, 167.6, 123.9)
    assert en["llamafactory"] == ["alpaca_gpt4_en"]      # LLaMA-Factory's name (data/dataset_info.json)
    code, out, _ = cli(capsys, "datasets", "alpaca-gpt4")
    assert code == 0 and "vicgalle/alpaca-gpt4" in out and "52,002" in out


def test_swift_dataset_is_read_from_a_launch_line():
    o = options("NPROC_PER_NODE=8 swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type full "
                "--dataset 'AI-ModelScope/alpaca-gpt4-data-en#500' 'AI-ModelScope/alpaca-gpt4-data-zh#500' "
                "--packing true --max_length 8192")
    assert o.dataset == "AI-ModelScope/alpaca-gpt4-data-en#500,AI-ModelScope/alpaca-gpt4-data-zh#500"
    assert named(o.dataset).samples == 1000


def test_swift_dataset_outside_the_catalog_is_left_out():
    o = options("swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type lora --dataset my/own-data "
                "'AI-ModelScope/alpaca-gpt4-data-en'")
    assert o.dataset is None                      # the lengths of a mixture with an unknown part are unknown
    assert "dataset" not in {u.key for u in o.unread}


def _case(**over) -> dict:
    case = {"id": "c", "kind": "time", "attention": "flash-attn 2", "seq_len_note": "", "framework": "XTuner",
            "notes": "", "parallel": {}}
    case.update(over)
    return case


@pytest.mark.parametrize("field, text", [
    ("attention", "flash-attn varlen (use_varlen_attn=True)"), ("seq_len_note", "packed, padding-free"),
    ("framework", "LLaMA-Factory neat_packing"), ("notes", "DataCollatorWithFlattening"),
    ("attention", "flex attention with a document mask"), ("notes", "Megatron reset_attention_mask")])
def test_case_text_says_padding_free(field, text):
    assert case_data.padding_free(_case(**{field: text}))


def test_case_text_without_a_padding_free_word():
    assert not case_data.padding_free(_case(attention="FlashAttention-2", seq_len_note="packed to 4096 tokens"))


@pytest.mark.parametrize("text", [
    "flash-attn 2 (use_varlen_attn=False)", "padding_free: false", "neat_packing = off", "no varlen attention",
    "packed without padding-free attention", "padding_free=0"])
def test_case_text_that_switches_padding_free_off(text):
    # XTuner's speed-benchmark configs after e179091c set use_varlen_attn = False: one causal mask per pack
    assert not case_data.padding_free(_case(attention=text))
    assert case_data.padding_free(_case(attention=text, notes="varlen flash attention per sample"))


def test_case_text_names_its_dataset():
    found = case_data.dataset(_case(seq_len_note="Alpaca en + zh (tatsu-lab/alpaca, silk-road/...) packed"))
    assert found.id == "AI-ModelScope/alpaca-cleaned"
    assert case_data.dataset(_case(seq_len_note="our own instruct data, CoT style")) is None


def test_dataset_note_in_chinese(capsys):
    from trainplan.i18n import translate

    data = est(capsys, "--model", "llama-2-7b", "--gpu", "a100-80gb", "--dataset", "tatsu-lab/alpaca")
    note = next(n for n in data["notes"] if n.startswith("dataset "))
    zh = translate(note, lang="zh")
    assert zh.startswith("数据集 AI-ModelScope/alpaca-cleaned (Stanford Alpaca's 52,002 samples;")
    assert "：51,760 个样本，每个 170.1 ± 122.9 token（最短 29，最长 1,028；" in zh
    assert zh.endswith("用于填充、打包和注意力跨度")


def test_axolotl_and_trl_name_their_datasets():
    from pathlib import Path

    fix = Path(__file__).parent / "fixtures" / "configs"
    assert options(fix / "axolotl" / "fft-8b-zero3.yml").dataset == "tatsu-lab/alpaca"   # datasets: - path:
    assert options(fix / "axolotl" / "lora-8b.yml").dataset is None       # mhenrichsen/alpaca_2k_test: not listed
    assert options(fix / "hf" / "trl_sft_qlora.yaml").dataset == "HuggingFaceH4/ultrachat_200k"   # dataset_name
    assert options(fix / "hf" / "trl_dpo.yaml").dataset is None


def test_llamafactory_dataset_names():
    # data/dataset_info.json @ff6d4d12: "alpaca_gpt4_zh": {"hf_hub_url": "llamafactory/alpaca_gpt4_zh",
    # "ms_hub_url": "llamafactory/alpaca_gpt4_zh", "om_hub_url": "State_Cloud/alpaca-gpt4-data-zh"}
    s = find_dataset("alpaca_gpt4_zh")
    assert (s.id, s.samples) == ALPACA_GPT4_ZH[:2]
    assert "LLaMA-Factory's name for it" in s.alias_note
    # "belle_math": {"hf_hub_url": "BelleGroup/school_math_0.25M", ...}: a name with a separator reads in free
    # text too; a plain word ("firefly", "guanaco") only where a config names a dataset
    assert dataset_in_word("belle_math").id == "AI-ModelScope/school_math_0.25M"
    assert find_dataset("firefly").id == "AI-ModelScope/firefly-train-1.1M" and dataset_in_word("firefly") is None
    # local demo files have no hub id: not in the catalog
    assert find_dataset("alpaca_en_demo") is None and find_dataset("identity") is None


def test_llamafactory_config_names_its_datasets(tmp_path):
    f = tmp_path / "sft.yaml"
    f.write_text("model_name_or_path: Qwen/Qwen2.5-7B-Instruct\nstage: sft\nfinetuning_type: lora\n"
                 "dataset: alpaca_gpt4_en,alpaca_gpt4_zh\ncutoff_len: 2048\n")
    assert options(f).dataset == "alpaca_gpt4_en,alpaca_gpt4_zh"
    f.write_text("model_name_or_path: Qwen/Qwen2.5-7B-Instruct\nstage: sft\nfinetuning_type: lora\n"
                 "dataset: identity,alpaca_en_demo\ncutoff_len: 2048\n")
    o = options(f)
    assert o.dataset is None and "dataset" not in {u.key for u in o.unread}


@pytest.mark.parametrize("framework, method, expected", [
    ("SWIFT", "full", True),          # ms-swift: packing turns padding_free on (sft_args.py _check_padding_free)
    ("MEGATRON", "lora", True),       # NeMo / Megatron packed SFT and PEFT: per-sample cu_seqlens (THD)
    ("MEGATRON", "pretrain", False),  # pre-training packs documents under one causal mask
    ("LLAMAFACTORY", "full", False),  # LLaMA-Factory `packing` without neat_packing attends across samples
])
def test_packing_alone_is_padding_free_where_the_framework_packs_only_that_way(framework, method, expected):
    from trainplan.enums import Framework

    case = _case(attention="flash-attn 2", seq_len_note="--packing true --max_length 8192 (packed)", method=method)
    assert case_data.padding_free(case, Framework[framework]) is expected


def _dev1_case(case_id: str) -> dict:
    """One case of the vendored first development set, by id."""
    from pathlib import Path

    cases = json.loads((Path(__file__).parent / "data" / "published_dev.json").read_text())
    return next(c for c in cases if c["id"] == case_id)


def test_unpacked_time_case_naming_a_catalog_dataset_is_timed_with_its_lengths():
    # torchtune's README flags table, baseline row: unpacked alpaca (torchtune alpaca_dataset: source
    # tatsu-lab/alpaca, the catalog's alias of yahma/alpaca-cleaned), micro-batch 2, max_seq_len 4096
    from trainplan.cases import Skip
    from trainplan.cases.timecase import map_case, predict

    case = _dev1_case("torchtune-3b-flags-00-baseline-tps")
    mapped = map_case(case)
    assert not mapped.workload.packing
    lengths = mapped.options.sample_lengths
    assert len(lengths) == 256 and max(lengths) <= 1050 and abs(sum(lengths) / 256 - 170.1) < 5
    _, est = predict(mapped)
    # two samples a micro-batch, each its own length: far fewer than 2 x 4096 tokens a step
    assert 250 < est.tokens_per_step < 450
    unnamed = {**case, "seq_len_note": "unpacked samples (max_seq_len 4096, actual samples much shorter)"}
    with pytest.raises(Skip, match="unpacked"):
        map_case(unnamed)


@pytest.mark.parametrize("measured, per_gpu", [
    ({"tokens_per_s_total": 80000.0}, 10000.0),                 # 80,000 tokens/s over 8 GPUs
    ({"hours_per_1B_tokens": 1e9 / 80000.0 / 3600.0}, 10000.0),   # the same run as hours per billion tokens
])
def test_time_case_reporting_a_total_is_compared_per_gpu(measured, per_gpu):
    from trainplan.cases.timecase import map_case

    base = _dev1_case("mpt-bench-7b-seq2048-8xa100_80gb-amp_bf16")
    mapped = map_case({**base, "measured": {**measured, "what": "total"}})
    assert mapped.metric == "tokens_per_s_per_gpu" and mapped.measured == pytest.approx(per_gpu)


def test_time_case_without_micro_batch_or_gpu_count_is_filled_from_its_other_fields():
    from trainplan.cases import Skip
    from trainplan.cases.timecase import map_case

    base = _dev1_case("mpt-bench-7b-seq2048-8xa100_80gb-amp_bf16")
    # llm-foundry's row: micro-batch 8 on 8 GPUs, no accumulation -> global batch 64
    no_micro = {**base, "micro_batch": None, "global_batch": 64, "grad_accum": 1}
    assert map_case(no_micro).setup.batch_size == 8
    assert "global batch 64 / (8 data-parallel GPUs x 1 accumulation) = 8" in map_case(no_micro).note
    with pytest.raises(Skip, match="micro-batch"):       # 60 does not divide over 8 GPUs
        map_case({**no_micro, "global_batch": 60})
    no_count = {**base, "gpus": {"type": base["gpus"]["type"], "count": None}}
    assert map_case(no_count).layout.num_gpus == 8     # 37,130 tokens/s in all / 4,641 per GPU = 8
    no_count = {**no_count, "measured": {"tokens_per_s_per_gpu": 4641, "what": "tokens/s per GPU"}}
    mapped = map_case(no_count)   # the row states data-parallel 8 (FSDP over 8 GPUs): 8 x tp 1 x pp 1 x cp 1
    assert mapped.layout.num_gpus == 8
    assert "GPU count not stated: 8, parallel.dp 8 x 1 model-parallel (tp x pp x cp)" in mapped.note
    no_dp = {**no_count, "parallel": {**base["parallel"], "dp": None}}
    mapped = map_case(no_dp)      # global batch 96 / (micro-batch 6 x accumulation 2) = 8 data-parallel GPUs
    assert mapped.layout.num_gpus == 8
    assert ("GPU count not stated: 8, global batch 96 / (micro-batch 6 x accumulation 2) = 8 data-parallel x 1 "
            "model-parallel") in mapped.note
    no_dp = {**no_dp, "global_batch": None}
    mapped = map_case(no_dp)
    assert mapped.layout.num_gpus == 1 and "GPU count not stated: 1 assumed" in mapped.note
    step_timed = {**no_dp, "measured": {"step_time_s": 1.0, "what": "s/step"}}
    with pytest.raises(Skip, match="GPU count"):          # a step time depends on the count: not assumed
        map_case(step_timed)


def test_a_megatron_micro_batch_is_not_implied_by_its_global_batch():
    import json
    from pathlib import Path

    from trainplan.cases import Skip
    from trainplan.cases.timecase import map_case

    cases = json.loads((Path(__file__).parent / "data" / "published_dev2.json").read_text(encoding="utf-8"))
    base = next(c for c in cases if c["id"] == "mbridge-2602-dgx-h100-llama-3-70b-fp8-64gpu")
    assert (base["micro_batch"], base["global_batch"], base["parallel"]["dp"], base["grad_accum"]) == (1, 256, 2, None)
    assert map_case(base).setup.batch_size == 1
    # Megatron has no accumulation setting: 256 / 2 data-parallel ranks is 128 sequences per rank, run as
    # micro-batches of --micro-batch-size (required, arguments.py), so without it the split is unknown
    with pytest.raises(Skip, match="micro-batch"):
        map_case({**base, "micro_batch": None})
    # with the accumulation stated, the identity fixes it: 256 / (2 x 128) = 1
    assert map_case({**base, "micro_batch": None, "grad_accum": 128}).setup.batch_size == 1


@pytest.mark.parametrize("precision, framework, expected", [
    ({"weights": None, "compute": "fp16"}, "HF Trainer", "fp16"),
    ("fp16 mixed precision (AMP)", "LLaMA-Factory", "fp16"),
    ({"compute": "16-mixed"}, "HF Trainer", "fp16"),                 # Lightning's name for fp16 AMP
    ({"compute": "bf16"}, "HF Trainer", "bf16"),
    ({"compute": "bfloat16"}, "HF Trainer", "bf16"),                 # float16 inside bfloat16 is not fp16
])
def test_a_case_computing_in_fp16_is_timed_at_the_fp16_rate(precision, framework, expected):
    import json
    from pathlib import Path

    from trainplan.cases.timecase import map_case, predict

    cases = json.loads((Path(__file__).parent / "data" / "published_dev2.json").read_text(encoding="utf-8"))
    base = next(c for c in cases if c["id"] == "universal-trainer-llama31-lora-1xh100-time")
    case = {**base, "precision": precision, "framework": framework, "notes": "",
            "gpus": {"type": "Tesla V100-SXM2-32GB", "count": 1}}
    mapped = map_case(case)
    assert str(mapped.setup.precision) == expected
    # a V100 has fp16 tensor cores only (125 TFLOP/s dense against 15.7 fp32, the catalog's datasheet figures):
    # the fp16 case runs several times the bf16 one, which falls back to the fp32 peak
    bf16 = map_case({**case, "precision": {"compute": "bf16"}})
    speedup = predict(mapped)[0] / predict(bf16)[0]
    assert (speedup > 3) == (expected == "fp16")


def test_a_case_stating_its_network_is_timed_over_it():
    from trainplan.cases.timecase import map_case, predict

    base = _dev1_case("mpt-bench-3b-seq2048-16xh100_80gb-amp_bf16")     # FSDP full shard over 2 DGX H100 nodes
    assert map_case(base).options.interconnect is None      # the NDR default: 8 x 400 Gb/s a node
    slow = {**base, "notes": base["notes"] + " Cluster network: 2 x 100Gb RoCE per node."}
    mapped = map_case(slow)
    assert mapped.options.interconnect == "2 x 100Gb RoCE per node"
    assert "inter-node network as the case states it: RoCE, 200 Gb/s per node (2 x 100 Gb/s)" in mapped.note
    # a sixteenth of the default's bandwidth: FSDP's per-layer gathers no longer hide behind compute
    assert predict(mapped)[0] < 0.9 * predict(map_case(base))[0]
    # a memory size is no network
    assert map_case({**base, "notes": base["notes"] + " 80GB HBM3"}).options.interconnect is None
