"""--tokens: a run given as total training tokens (model-card style), values derived by hand."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplan.cli.flags import token_count
from trainplan.errors import TrainplanError
from trainplan.estimation import estimate
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_workload, resolve_job


@pytest.mark.parametrize("text, value", [("15T", 15e12), ("300B", 300e9), ("2.5e9", 2.5e9), ("1_000_000", 1e6),
                                         ("64k", 64e3), ("7M", 7e6), ("1,000", 1e3), ("2G", 2e9)])
def test_token_counts_as_people_write_them(text, value):
    assert token_count(text) == pytest.approx(value)


@settings(deadline=None)
@given(st.text(max_size=12).filter(lambda t: not t.strip().replace("_", "").replace(",", "")
                                   .rstrip("kKmMbBgGtT").replace(".", "", 1).replace("e", "", 1)
                                   .replace("+", "").replace("-", "").isdigit()))
def test_a_bad_count_is_an_argparse_error_never_a_crash(text):
    try:
        token_count(text)
    except argparse.ArgumentTypeError:
        pass


def test_samples_and_steps_from_tokens():
    # 1e9 tokens of 2048-token samples: ceil(1e9 / 2048) = 488,282 samples; the default global batch of
    # one A100 (micro-batch 1 x accumulation 1) gives 488,282 steps
    w = build_workload(JobOptions(model="llama-2-7b", tokens=1e9, seq_len=2048))
    assert (w.samples, w.tokens) == (488_282, 1e9)
    # --tokens-per-sample sets the sample size: 1e9 / 1000 = 1,000,000 samples
    assert build_workload(JobOptions(model="llama-2-7b", tokens=1e9, tokens_per_sample=1000)).samples == 1_000_000
    est = estimate(resolve_job(JobOptions(model="llama-3.2-1b", method="full", gpu="h100", tokens=1e9, seq_len=2048)))
    assert est.time.steps == 488_282
    assert any("--tokens 1.00B: 488,282 samples of 2,048 tokens" in n for n in est.time.assumptions)


def test_tokens_with_samples_is_refused():
    with pytest.raises(TrainplanError, match="--tokens gives the run length"):
        build_workload(JobOptions(model="llama-2-7b", tokens=1e9, samples=5))


def test_the_table_takes_a_token_budget():
    # --tokens stands for the run: the table's 10,000-sample default is not added to it (which
    # --tokens would refuse); 1e9 / 2048 = 488,282 samples
    import trainplan

    result = trainplan.table(("llama-2-7b",), gpus=("h100",), methods=("lora",), tokens=1e9)
    assert result.request.samples_given and result.request.workload.samples == 488_282
