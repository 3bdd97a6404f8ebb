"""The rental bill (trainplan.cost): the price chosen (cost/prices.py), the bill made (cost/bill.py)."""

from __future__ import annotations

import datetime

import pytest

from trainplan.cost.bill import billable_gpus, cost_of, estimate_cost
from trainplan.cost.prices import PriceChoice, given_pricing, resolve_pricing
from trainplan.enums import Method, Precision
from trainplan.errors import TrainplanError
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import estimate_time

LLAMA2_7B = ModelSpec(name="llama-2-7b", model_type="llama", naming="llama", hidden_size=4096, num_layers=32,
                      num_heads=32, num_kv_heads=32, head_dim=128, intermediate_size=11008, vocab_size=32000,
                      tied_embeddings=False)
A100 = GpuSpec(id="a100-sxm4-80gb", name="A100 SXM4 80GB", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=2039e9,
               peak_flops_per_s={"bf16": 312e12, "fp16": 312e12}, interconnect="NVLink 3",
               gpu_gpu_bw_bytes_per_s=600e9, pcie="Gen4 x16", generation="ampere")
TODAY = datetime.date(2026, 11, 29)


def priced(gpu_id: str = "a100-sxm4-80gb", *, today: datetime.date = TODAY, **choice):
    return resolve_pricing(gpu_id, PriceChoice(**choice), today=today)


def _seed(retry: float = 1.0):
    # the seed article: 7B full fine-tune in fp16, batch 32, 10,000 samples x 1024 tokens, 3 epochs, 1 A100
    setup = TrainingSetup(model=LLAMA2_7B, method=Method.FULL, precision=Precision.FP16_PURE, batch_size=32,
                          seq_len=1024)
    return estimate_time(setup, Layout(), A100, Workload(samples=10_000, tokens_per_sample=1024, epochs=3,
                                                         retry_factor=retry))


def test_seed_cost_is_gpu_hours_times_price():
    t = _seed()
    c = cost_of(t, given_pricing(27.08, "CNY"))
    assert t.steps == 939
    assert c.total == pytest.approx(t.gpu_hours * 27.08)
    assert c.currency == "CNY" and c.billable_gpus == 1 and c.provider == ""


def test_seed_cost_with_retry_factor():
    t = _seed(retry=3.0)
    c = cost_of(t, given_pricing(27.08, "CNY"))
    assert c.total == pytest.approx(t.gpu_hours * 27.08 * 3.0)
    assert c.total == pytest.approx(t.gpu_hours_with_retries * 27.08)


def test_article_arithmetic():
    # the article: 27.08 CNY/hour x 3 hours = 81.24 CNY
    c = estimate_cost(total_s=3 * 3600, num_gpus=1, pricing=given_pricing(27.08, "CNY"))
    assert c.total == pytest.approx(81.24)


@pytest.mark.parametrize("gpus, per_instance, billed", [(1, 1, 1), (8, 8, 8), (9, 8, 16), (12, 8, 16),
                                                       (4, 8, 8), (3, 2, 4)])
def test_billable_gpus_round_up_to_whole_instances(gpus, per_instance, billed):
    assert billable_gpus(gpus, per_instance) == billed


def test_whole_instance_is_billed():
    c = estimate_cost(total_s=3600, num_gpus=4, pricing=given_pricing(2.0, gpus_per_instance=8))
    assert c.billable_gpus == 8
    assert c.total == pytest.approx(16.0)                     # 1 h x 8 GPUs x 2.0
    assert any("rent whole" in n for n in c.notes)


def test_catalog_price_names_the_cheapest_offer():
    c = estimate_cost(total_s=3600, num_gpus=1, pricing=priced())
    assert c.currency == "USD" and c.price_per_gpu_hour > 0 and c.as_of
    assert any("cheapest" in n for n in c.notes)
    assert c.total == pytest.approx(c.price_per_gpu_hour)


def test_catalog_8_gpu_instance():
    c = estimate_cost(total_s=3600, num_gpus=4, pricing=priced(provider="aws"))
    assert c.provider == "AWS" and c.billable_gpus == 8


def test_stale_or_undated_price_is_flagged():
    c = estimate_cost(total_s=3600, num_gpus=1, pricing=priced(provider="alibaba", currency="CNY"))
    assert c.price_per_gpu_hour == 27.08
    assert any("stale" in n for n in c.notes)
    later = estimate_cost(total_s=3600, num_gpus=1, pricing=priced(provider="aws", today=datetime.date(2028, 1, 1)))
    assert any("stale" in n for n in later.notes)


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(TrainplanError, match="provider 'nowhere-cloud'"):
        priced(provider="nowhere-cloud")


def test_negative_price_is_an_error():
    with pytest.raises(TrainplanError, match="price-per-gpu-hour"):
        given_pricing(-1.0)


def test_zero_samples_is_an_error():
    with pytest.raises(TrainplanError, match="--samples"):
        Workload(samples=0)


def test_no_price_for_gpu_is_an_error():
    with pytest.raises(TrainplanError, match="no .*price"):
        priced(provider="aws", spot=True, currency="CNY")


def test_cost_json_and_chain():
    c = estimate_cost(total_s=7200, num_gpus=2, pricing=given_pricing(1.5, "usd"), retry_factor=2.0)
    d = c.to_dict()
    for key in ("currency", "price_per_gpu_hour", "total", "provider"):
        assert key in d
    assert d["currency"] == "USD" and d["total"] == pytest.approx(2 * 2 * 1.5 * 2)
    assert c.chain()[-1][1] == pytest.approx(c.total)
