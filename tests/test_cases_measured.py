"""Measured quantities written as rates or as a run's wall time (cases.measured): tqdm's it/s and HF Trainer's
train_steps_per_second are the inverse of the step time; HF Trainer's train_runtime (seconds) over the run's
tokens is its total tokens/s, over its steps the step time. Values derived by hand."""

from __future__ import annotations

import pytest

from trainplan.cases.normalize import normalized


def _case(measured: dict) -> dict:
    return {"id": "x", "kind": "time", "measured": measured}


@pytest.mark.parametrize("measured, key, value", [
    ({"it_per_s": 0.5}, "step_time_s", 2.0),
    ({"train_steps_per_second": "0.25"}, "step_time_s", 4.0),
    ({"train_runtime": 3600, "total_tokens": 1.8e8}, "tokens_per_s_total", 50_000.0),
    ({"train_time_h": 2, "tokens_total": "720,000,000"}, "tokens_per_s_total", 100_000.0),
    ({"train_runtime": "1,000 s", "max_steps": 250}, "step_time_s", 4.0),
    ({"train_time_min": 10, "steps": 300}, "step_time_s", 2.0),
])
def test_rates_and_run_times_by_hand(measured, key, value):
    out, notes = normalized(_case(measured))
    assert out["measured"][key] == pytest.approx(value)
    assert any(key in n for n in notes)


def test_a_schema_metric_wins_over_a_rate():
    # the block's own step time stands; the rate beside it is not read
    out, _ = normalized(_case({"step_time_s": 3.0, "it_per_s": 0.5}))
    assert out["measured"]["step_time_s"] == 3.0
    out, _ = normalized(_case({"tokens_per_s_per_gpu": 1000.0, "train_runtime": 10, "steps": 5}))
    assert "step_time_s" not in out["measured"]


@pytest.mark.parametrize("measured", [{"it_per_s": 0}, {"it_per_s": "fast"}, {"train_runtime": 3600},
                                      {"train_runtime": -5, "steps": 10}, {"steps": 10}])
def test_no_reading_without_a_positive_rate_or_a_run_size(measured):
    out, _ = normalized(_case(dict(measured)))
    assert "step_time_s" not in out["measured"] and "tokens_per_s_total" not in out["measured"]


@pytest.mark.parametrize("measured, key, value", [
    ({"gpu_hours": "1.3M"}, "gpu_hours", 1.3e6),                    # Llama 3 8B's card writes "1.3M"
    ({"gpu_hours": "1.72 million GPU hours"}, "gpu_hours", 1.72e6),
    ({"tokens_per_s_per_gpu": "2.7k tokens/s"}, "tokens_per_s_per_gpu", 2700.0),
    ({"tokens_total": "15 trillion"}, "tokens_total", 15e12),
    ({"step_time_s": "850 ms"}, "step_time_s", 0.85),
    ({"step_time_s": "1.5 min"}, "step_time_s", 90.0),
    ({"step_time_s": "3.2 s/it"}, "step_time_s", 3.2),
    ({"tgs": "3.1K"}, "tokens_per_s_per_gpu", 3100.0),              # a synonym with a magnitude
])
def test_magnitudes_and_time_units_by_hand(measured, key, value):
    out, _ = normalized(_case(measured))
    assert out["measured"][key] == pytest.approx(value)


def test_a_lower_case_m_is_not_a_million():
    # "5 m" under a count is no magnitude (minutes or metres, not millions): the number as written
    out, _ = normalized(_case({"gpu_hours": "5 m"}))
    assert out["measured"]["gpu_hours"] == 5.0


@pytest.mark.parametrize("text, gib", [
    ("22.5 GiB", 22.5), ("22.5 GB", 22.5e9 / 2**30), ("23040 MiB", 22.5), ("80 GB (nvidia-smi)", 80e9 / 2**30),
    ("22.5G", 22.5),                                                # a bare G is the key's own unit, not 1e9 GiB
])
def test_memory_in_another_unit_under_the_gib_key(text, gib):
    out, _ = normalized(_case({"peak_mem_gib": text}))
    assert out["measured"]["peak_mem_gib"] == pytest.approx(gib)


@pytest.mark.parametrize("measured, key, value", [
    ({"tokens_per_s": "3,200 tokens/s/GPU"}, "tokens_per_s_per_gpu", 3200.0),
    ({"tokens_per_s": "3,200 tok/s per device"}, "tokens_per_s_per_gpu", 3200.0),
    ({"tokens_per_s": "25,600 tokens/s (total, 8 GPUs)"}, "tokens_per_s_total", 25600.0),
    ({"tokens_per_s": "3200"}, "tokens_per_s_reported", 3200.0),        # says neither: the time reader decides
])
def test_a_bare_tokens_per_second_whose_text_says_whose(measured, key, value):
    out, _ = normalized(_case(measured))
    assert out["measured"][key] == value


# --- a run timed whole, evaluations included (cases.measured RUN_EVALS -> run_s; cases.timecase) ----------------

def _litgpt_like(measured: dict) -> dict:
    """A single-GPU LoRA run timed whole: 950 optimizer steps of 4 x 2 samples (litgpt's Llama-2-7B LoRA config:
    global batch 8, micro-batch 2, 4 epochs of 1,900 samples) with 9 validations of 100 samples and a 2-batch sanity
    check (9 x 100 + 2 x 2 = 904 samples)."""
    return {"id": "run", "kind": "time", "method": "lora",
            "model": {"name": "Llama-2-7B", "hf_id": "meta-llama/Llama-2-7b-hf"},
            "lora": {"rank": 32, "alpha": 16, "targets": ["q_proj", "v_proj"]},
            "micro_batch": 2, "grad_accum": 4, "global_batch": 8, "seq_len": 512,
            "gpus": {"type": "A100 80GB", "count": 1}, "framework": "litgpt", "measured": measured}


def test_a_run_with_its_evaluations_reads_as_the_run_time():
    out, notes = normalized(_case({"train_time_min": 32.82, "steps": 950, "eval_samples": 904}))
    assert out["measured"]["run_s"] == pytest.approx(1969.2)            # 32.82 min x 60
    assert "step_time_s" not in out["measured"]                        # evaluations are not training steps
    assert any("run_s 1969.2" in n for n in notes)


def test_the_run_is_predicted_with_its_steps_and_evaluated_share():
    from trainplan.cases import map_case, predict

    mapping = map_case(_litgpt_like({"train_time_min": 32.82, "steps": 950, "eval_samples": 904}))
    assert mapping.metric == "run_s" and mapping.measured == pytest.approx(1969.2)
    assert mapping.job.workload.steps == 950
    assert mapping.job.workload.eval_fraction == pytest.approx(904 / 7600)     # of 950 x 8 samples trained
    with_evals = predict(mapping)
    # without evaluations the run is its steps, each the step the same setup takes
    bare = predict(map_case(_litgpt_like({"train_time_min": 32.82, "steps": 950, "eval_samples": 0})))
    assert bare["run_s"] == pytest.approx(950 * bare["step_s"])
    assert with_evals["step_s"] == pytest.approx(bare["step_s"])
    assert with_evals["run_s"] > bare["run_s"]


def test_a_run_time_without_steps_predicts_nothing():
    from trainplan.cases import Skip, map_case

    with pytest.raises(Skip):
        map_case(_litgpt_like({"train_time_min": 32.82, "eval_samples": 904}))
