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
