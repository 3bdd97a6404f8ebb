"""One validation layer (job/validate.py) for every command and the API (issue 18, item 1): bad input
is one line on stderr and exit 2 (the API: TrainplanError), whether the command uses the flag or not;
layout, hardware and model checks are errors or notes, never silence; --json never holds NaN."""

from __future__ import annotations

import datetime
import json
import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trainplan
from trainplan import catalog
from trainplan.cli import main
from trainplan.cli.common import print_json
from trainplan.errors import TrainplanError

TODAY = datetime.date(2026, 1, 15)


def _one_line_exit_2(argv: list[str], capsys) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, (argv, captured.err)
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trainplan: error: "), captured.err
    assert "internal error" not in captured.err and "Traceback" not in captured.err
    return lines[0]


# --- NaN, inf, huge numbers -------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308", "0", "-1"])
def test_epochs_not_finite_or_out_of_range(value, capsys):
    line = _one_line_exit_2(["estimate", "--model", "llama-2-7b", "--samples", "1000", f"--epochs={value}",
                             "--json"], capsys)
    assert "--epochs must be a finite number in (0, 1e+06]" in line and repr(float(value)) in line


@pytest.mark.parametrize("flag,value", [("--headroom", "nan"), ("--retry-factor", "inf"),
                                        ("--price-per-gpu-hour", "nan"), ("--disk-gb-per-s", "inf"),
                                        ("--lora-alpha", "nan"), ("--eval-fraction", "1e308")])
def test_non_finite_numbers_refused(flag, value, capsys):
    line = _one_line_exit_2(["estimate", "--model", "llama-2-7b", flag, value, "--json"], capsys)
    assert line.startswith(f"trainplan: error: {flag} must be")


# --- the same checks whether the command uses a flag or not -------------------------------------------

COMMANDS = (["plan", "--model", "llama-2-7b"], ["fit", "--model", "llama-2-7b"], ["table", "--model", "llama-2-7b"],
            ["trace", "--model", "llama-2-7b"],
            ["record", "--model", "llama-2-7b", "--peak-allocated-gib", "20", "--source", "test"])
BAD = ((["--zero", "bogus"], "--zero 'bogus' is not one of: 0, 1, 2, 3"),
       (["--samples", "-1"], "--samples must be a positive integer"),
       (["--efficiency", "5"], "--efficiency must be a finite number in (0, 1]"),
       (["--tp", "0"], "--tp must be a positive integer"))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("bad,message", BAD, ids=lambda b: b if isinstance(b, str) else b[0])
def test_every_command_validates_every_flag(command, bad, message, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_DB", f"sqlite:///{tmp_path / 'ledger.db'}")
    line = _one_line_exit_2([*command, *bad], capsys)
    assert message in line


def test_table_bad_global_flag_is_exit_2_not_a_note_per_row(capsys):
    line = _one_line_exit_2(["table", "--model", "llama-2-7b", "--zero", "bogus"], capsys)
    assert "--zero 'bogus'" in line


# --- layout and hardware ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,message", [
    (["--vpp", "2"], "--vpp 2 interleaves pipeline stages: it needs --pp > 1"),
    (["--framework", "megatron", "--zero", "3", "--num-gpus", "8"], "--framework megatron has no ZeRO-3"),
    (["--dora"], "--dora applies to --method lora or qlora, not 'full'"),
    (["--num-gpus", "64"], "puts 64 GPUs in one node"),
    (["--gpu", "a100", "--precision", "fp8"], "--precision fp8 needs fp8 tensor cores"),
    (["--gpu", "v100", "--precision", "fp16", "--attention", "flash"], "use --attention sdpa"),
    (["--gpu", "t4", "--precision", "fp16", "--attention", "flash"], "compute capability 8.0"),
    # Llama 2 7B's 32 layers over 3 stages: uneven, with or without virtual stages
    (["--num-gpus", "3", "--pp", "3", "--grad-accum", "3"], "would, or allow an uneven split (--uneven-pipeline)"),
    (["--num-gpus", "3", "--pp", "3", "--vpp", "2", "--grad-accum", "3"],
     "would, or allow an uneven split (--uneven-pipeline)"),
    # 32 layers over 4 stages x 16 virtual: 8 layers a stage for 16 chunks
    (["--num-gpus", "4", "--pp", "4", "--vpp", "16", "--grad-accum", "4", "--uneven-pipeline"],
     "leaves a stage fewer layers (8) than virtual stages: lower --vpp"),
], ids=["vpp-without-pp", "megatron-zero3", "dora-full", "64-per-node", "fp8-a100", "flash-v100", "flash-t4",
        "pp-uneven", "vpp-uneven", "vpp-too-deep"])
def test_layout_and_hardware_refusals(argv, message, capsys):
    line = _one_line_exit_2(["estimate", "--model", "llama-2-7b", *argv], capsys)
    assert message in line


def test_tensor_parallel_across_nodes_is_a_note():
    job = trainplan.resolve("llama-2-7b", gpu="h100", num_gpus=8, nodes=2, tp=8, today=TODAY)
    assert any("tensor parallel 8 spans nodes of 4 GPUs" in n for n in job.notes)
    inside = trainplan.resolve("llama-2-7b", gpu="h100", num_gpus=8, tp=8, framework="megatron", today=TODAY)
    assert inside.notes == ()
    # the default framework (HF Trainer) runs no tensor parallelism: estimated as given, with a note;
    # named, it is refused
    default = trainplan.resolve("llama-2-7b", gpu="h100", num_gpus=8, tp=8, today=TODAY).notes
    assert len(default) == 1 and "--framework hf cannot run tensor parallelism (--tp 8)" in default[0]
    with pytest.raises(TrainplanError, match="--framework llamafactory cannot run tensor parallelism"):
        trainplan.resolve("llama-2-7b", gpu="h100", num_gpus=8, tp=8, framework="llamafactory", today=TODAY)


def test_seq_len_beyond_learned_positions_is_refused(capsys):
    line = _one_line_exit_2(["estimate", "--model", "gpt2", "--seq-len", "8192"], capsys)
    assert "beyond the 1024 learned position embeddings of 'gpt2'" in line
    assert main(["estimate", "--model", "gpt2", "--seq-len", "1024"]) == 0


def test_seq_len_beyond_rope_positions_is_a_note():
    spec = catalog.resolve_model("llama-2-7b")
    assert spec.max_position_embeddings == 4096
    job = trainplan.resolve("llama-2-7b", seq_len=8192, today=TODAY)
    assert any("beyond the max_position_embeddings 4096" in n and "RoPE scaling" in n for n in job.notes)
    assert trainplan.resolve("llama-2-7b", seq_len=4096, today=TODAY).notes == ()


# --- MFU: the FLOPs the method runs, never above the peak --------------------------------------------

@pytest.mark.parametrize("method", ["full", "lora", "qlora", "freeze"])
def test_mfu_counts_the_backward_the_method_runs(method):
    est = trainplan.estimate("llama-2-7b", method=method, gpu="h100", efficiency=1.0, calibration=False,
                             today=TODAY)
    peak_tflops = est.job.gpu.peak_flops("bf16") / 1e12
    assert 0 < est.time.mfu < 1, method
    assert est.time.tflops_per_gpu < peak_tflops      # 989 on the H100: freeze claimed 2,019 before
    full = trainplan.estimate("llama-2-7b", gpu="h100", efficiency=1.0, calibration=False, today=TODAY)
    if method == "full":
        assert est.time.flops_per_step == full.time.flops_per_step == full.time.step.model_flops_per_step
    else:      # less backward than a full fine-tune: fewer model FLOPs, still at least the forward
        assert est.time.flops_per_step < full.time.flops_per_step
        assert est.time.flops_per_step > full.time.flops_per_step / 3


# --- configs transformers would refuse, and models beyond any real one ---------------------------------

def _config(tmp_path, name: str, **changes) -> str:
    config = json.loads(catalog.resolve_model("llama-2-7b").hf_config_json)
    config.update(changes)
    for key, value in list(changes.items()):
        if value is None:
            config.pop(key)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize("changes,message", [
    ({"hidden_size": 768, "num_attention_heads": 7, "num_key_value_heads": 7, "head_dim": None},
     "hidden_size 768 not divisible by num_attention_heads 7"),
    ({"hidden_act": "bogus"}, "hidden_act 'bogus'"),
    ({"model_type": "mistral", "sliding_window": -5}, "sliding_window = -5"),
    ({"num_hidden_layers": 10 ** 9}, "num_layers = 1000000000 is beyond any real model; model size bound"),
    ({"hidden_size": 10 ** 400}, "hidden_size = 100000000000... (401 characters) is beyond any real model"),
    ({"vocab_size": 10 ** 12}, "vocab_size = 1000000000000 is beyond any real model"),
], ids=["heads", "act", "window", "layers", "hidden-400-digits", "vocab"])
def test_config_refusals(tmp_path, changes, message, capsys):
    path = _config(tmp_path, "cfg", **changes)
    started = time.perf_counter()
    line = _one_line_exit_2(["estimate", "--model", path], capsys)
    assert message in line
    assert time.perf_counter() - started < 5       # a 10^9-layer config took 16 s and 7.8 GB before


def test_head_dim_given_allows_a_hidden_size_not_divisible_by_heads(tmp_path):
    path = _config(tmp_path, "cfg", hidden_size=768, num_attention_heads=6, num_key_value_heads=6, head_dim=100)
    assert trainplan.estimate(path, calibration=False, today=TODAY).params.total > 0


# --- the Python API: TrainplanError, never TypeError; wrong types refused ------------------------------

BAD_KWARGS = [
    {"batch_size": True}, {"batch_size": "4"}, {"batch_size": 2.5}, {"lora_rank": 2.5, "method": "lora"},
    {"zero": 3.7}, {"zero": True}, {"zero": "4"}, {"packing": "no"}, {"dora": 1}, {"epochs": float("nan")},
    {"epochs": "1"}, {"seq_len": None}, {"gpu": 5}, {"gpu": None}, {"method": None}, {"method": 3},
    {"precision": "bf17"}, {"num_gpus": 10 ** 30}, {"headroom": float("inf")}, {"efficiency": 0},
    {"lora_targets": 5}, {"lora_targets": [1, 2]}, {"price": "h100=2"}, {"samples": 0.5},
    {"max_steps": float("inf")}, {"freeze_layers": 0}, {"freeze_layers": True}, {"fsdp_version": 3},
    {"compile": "yes"}, {"reduce_bucket_size": "big"}, {"stage": 1}, {"device_map": "everywhere"},
    {"configs": 5}, {"configs": [5]}, {"foo": 1}, {"given": ("x",)}, {"currency": "US\nD"},
]


@pytest.mark.parametrize("kwargs", BAD_KWARGS, ids=lambda k: ",".join(f"{a}={b!r}"[:30] for a, b in k.items()))
def test_api_bad_values_raise_trainplan_error(kwargs):
    with pytest.raises(TrainplanError) as info:
        trainplan.estimate("llama-2-7b", calibration=False, today=TODAY, **kwargs)
    assert type(info.value).__module__.startswith("trainplan")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("call", [
    lambda: trainplan.estimate(5), lambda: trainplan.estimate("foo\nbar"),
    lambda: trainplan.plan("llama-2-7b", max_gpus=True), lambda: trainplan.plan("llama-2-7b", budget="5"),
    lambda: trainplan.plan("llama-2-7b", budget=float("nan")), lambda: trainplan.plan("llama-2-7b", methods=5),
    lambda: trainplan.plan("llama-2-7b", sort=None), lambda: trainplan.plan("llama-2-7b", offers=[1]),
    lambda: trainplan.table(("llama-2-7b",), gpus=5), lambda: trainplan.table(("llama-2-7b",), max_gpus=0),
    lambda: trainplan.fit("llama-2-7b", tp=1.5),
], ids=["model-int", "model-newline", "plan-max-gpus-bool", "plan-budget-str", "plan-budget-nan",
        "plan-methods-int", "plan-sort-none", "plan-offers", "table-gpus-int", "table-max-gpus-0", "fit-tp-float"])
def test_api_calls_raise_trainplan_error(call):
    with pytest.raises(TrainplanError):
        call()


def test_a_newline_in_a_name_is_quoted(capsys):
    line = _one_line_exit_2(["estimate", "--model", "foo\nbar"], capsys)
    assert "'foo\\nbar'" in line


def test_good_values_in_other_types_still_accepted():
    a = trainplan.estimate("llama-2-7b", zero="3", num_gpus=8.0, calibration=False, today=TODAY)
    b = trainplan.estimate("llama-2-7b", zero=3, num_gpus=8, calibration=False, today=TODAY)
    assert a.memory.device_bytes == b.memory.device_bytes


# --- JSON out ------------------------------------------------------------------------------------------

def test_print_json_refuses_nan(capsys):
    with pytest.raises(ValueError):
        print_json({"x": float("nan")})
    print_json({"x": 1.5})
    assert json.loads(capsys.readouterr().out) == {"x": 1.5}


def _finite(obj, path="") -> list[str]:
    if isinstance(obj, float):
        return [] if math.isfinite(obj) else [path]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _finite(v, f"{path}.{k}")]
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in _finite(v, f"{path}[{i}]")]
    return []


NUMBERS = st.one_of(st.integers(-3, 10 ** 6), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, 1, 2, 8, 1e308, -0.0, 10 ** 20]), st.booleans(), st.none(),
                    st.sampled_from(["4", "no", "auto", "", "3"]))
KWARGS = st.fixed_dictionaries({}, optional={
    "method": st.sampled_from(["full", "lora", "qlora", "freeze", "bogus", 3]),
    "precision": st.sampled_from(["bf16", "fp16", "fp8", "fp32", "bf16-pure", None, "x"]),
    "gpu": st.sampled_from(["h100", "a100", "v100", "t4", "rtx4090", "mi300x", 7]),
    "batch_size": NUMBERS, "seq_len": NUMBERS, "grad_accum": NUMBERS, "num_gpus": NUMBERS, "nodes": NUMBERS,
    "tp": NUMBERS, "pp": NUMBERS, "zero": NUMBERS, "samples": NUMBERS, "epochs": NUMBERS,
    "efficiency": NUMBERS, "headroom": NUMBERS, "retry_factor": NUMBERS, "lora_rank": NUMBERS,
    "price_per_gpu_hour": NUMBERS, "packing": NUMBERS, "tokens_per_sample": NUMBERS, "max_steps": NUMBERS,
    "checkpoint_saves": NUMBERS, "eval_fraction": NUMBERS, "vpp": NUMBERS, "freeze_layers": NUMBERS,
    "attention": st.sampled_from(["flash", "sdpa", "eager", None]),
    "framework": st.sampled_from(["hf", "deepspeed", "megatron", "fsdp", "llamafactory"]),
})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kwargs=KWARGS, model=st.sampled_from(["llama-2-7b", "gpt2", "qwen2.5-0.5b", "mixtral-8x7b"]))
def test_estimate_is_finite_or_a_trainplan_error(kwargs, model):
    try:
        est = trainplan.estimate(model, calibration=False, today=TODAY, **kwargs)
    except TrainplanError as exc:
        assert "\n" not in str(exc)
        return
    data = est.to_dict()
    assert _finite(data) == [], (kwargs, _finite(data))
    json.dumps(data, allow_nan=False, default=str)
