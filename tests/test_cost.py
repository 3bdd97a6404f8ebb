"""The rental bill (trainplan.cost): the price chosen (cost/prices.py), the bill made (cost/bill.py),
currencies (cost/currency.py). Every expected figure is computed by hand in the comment beside it."""

from __future__ import annotations

import datetime

import pytest

from trainplan.cost.bill import billable_gpus, cost_of, estimate_cost
from trainplan.cost.currency import Rates, conversion, rate_is_stale
from trainplan.cost.prices import (
    NoPriceError,
    PriceBook,
    PriceSource,
    catalog_rates,
    given_pricing,
    offer_pricing,
    resolve_pricing,
)
from trainplan.cost.sources import price_book
from trainplan.enums import Method, Precision, PriceKind
from trainplan.errors import TrainplanError
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.specs import CurrencySpec, GpuSpec, ModelSpec, PriceOffer, Rate
from trainplan.timing.estimate import estimate_time

LLAMA2_7B = ModelSpec(name="llama-2-7b", model_type="llama", naming="llama", hidden_size=4096, num_layers=32,
                      num_heads=32, num_kv_heads=32, head_dim=128, intermediate_size=11008, vocab_size=32000,
                      tied_embeddings=False)
A100 = GpuSpec(id="a100-sxm4-80gb", name="A100 SXM4 80GB", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=2039e9,
               peak_flops_per_s={"bf16": 312e12, "fp16": 312e12}, interconnect="NVLink 3",
               gpu_gpu_bw_bytes_per_s=600e9, pcie="Gen4 x16", generation="ampere")
TODAY = datetime.date(2026, 11, 29)
# a rate table of round numbers, so that conversions can be checked by hand
RATES = Rates(currencies=(CurrencySpec(code="USD"), CurrencySpec(code="CNY", aliases=("RMB",), market="cn"),
                          CurrencySpec(code="EUR")),
              rates=(Rate(currency="CNY", per_usd=7.0, as_of="2026-11-01", source="test"),
                     Rate(currency="EUR", per_usd=0.8, as_of="2026-11-01", source="test")))


def offer(gpu_id="a100-sxm4-80gb", price=2.0, currency="USD", kind=PriceKind.ON_DEMAND, per_instance=1,
          provider="p", as_of="2026-11-01", pricing=None) -> PriceOffer:
    return PriceOffer(provider=provider, gpu_id=gpu_id, gpus_per_instance=per_instance, price_per_gpu_hour=price,
                      currency=currency, pricing=pricing or kind.value, as_of=as_of, source="test", kind=kind,
                      origin="price list")


def book(*offers: PriceOffer, currency="USD", **kw) -> PriceBook:
    return PriceBook(sources=(PriceSource(origin="price list", offers=offers),), rates=RATES, currency=currency, **kw)


def catalog_priced(gpu_id: str = "a100-sxm4-80gb", *, today: datetime.date = TODAY, **settings):
    return resolve_pricing(gpu_id, price_book(**settings), today=today)


def _seed(retry: float = 1.0):
    # the seed article: 7B full fine-tune in fp16, batch 32, 10,000 samples x 1024 tokens, 3 epochs, 1 A100
    setup = TrainingSetup(model=LLAMA2_7B, method=Method.FULL, precision=Precision.FP16_PURE, batch_size=32,
                          seq_len=1024)
    return estimate_time(setup, Layout(), A100, Workload(samples=10_000, tokens_per_sample=1024, epochs=3,
                                                         retry_factor=retry))


# --- the bill ----------------------------------------------------------------------------------------

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


def test_whole_instances_and_retries_by_hand():
    # 12 GPUs on 8-GPU instances: 2 instances = 16 GPUs billed; 2 h x 16 x 14.5 = 464; x retry 1.5 = 696
    c = estimate_cost(total_s=2 * 3600, num_gpus=12, pricing=given_pricing(14.5, "CNY", gpus_per_instance=8),
                      retry_factor=1.5)
    assert c.billable_gpus == 16 and c.gpu_hours == pytest.approx(32.0)
    assert c.total == pytest.approx(696.0)
    assert c.per_hour == pytest.approx(232.0)                 # 16 x 14.5
    assert any("rent whole" in n for n in c.notes) and any("retry factor 1.5" in n for n in c.notes)


def test_per_step_and_per_million_tokens_without_a_run_length():
    # 8 GPUs at 2.0/h = 16/h; a 1.8 s step costs 16 x 1.8 / 3600 = 0.008; 65,536 tokens per step:
    # 0.008 / 65536 x 1e6 = 0.1220703125 per million tokens; no --samples: no total
    c = estimate_cost(total_s=0.0, num_gpus=8, pricing=given_pricing(2.0, "USD"), step_s=1.8,
                      tokens_per_step=65536, has_total=False)
    assert c.total is None and c.gpu_hours == 0.0
    assert c.per_step == pytest.approx(0.008) and c.per_million_tokens == pytest.approx(0.1220703125)
    labels = [row[0] for row in c.chain()]
    assert labels == ["price per GPU-hour", "cost per hour", "cost per step", "cost per million tokens"]
    assert [row[2] for row in c.chain()] == ["USD/GPU-h", "USD/h", "USD", "USD"]
    assert c.to_dict()["total"] is None


def test_does_not_fit_marks_the_bill_for_reference():
    c = estimate_cost(total_s=3600, num_gpus=1, pricing=given_pricing(1.0, "USD"), for_reference=True)
    assert c.for_reference and "does not fit: cost shown for reference" in c.notes


def test_cost_json_and_chain():
    c = estimate_cost(total_s=7200, num_gpus=2, pricing=given_pricing(1.5, "usd"), retry_factor=2.0)
    d = c.to_dict()
    assert {"currency", "price_per_gpu_hour", "total", "provider", "kind", "per_hour", "per_step"} <= set(d)
    assert d["currency"] == "USD" and d["total"] == pytest.approx(2 * 2 * 1.5 * 2)
    assert c.chain()[-1][1] == pytest.approx(c.total) and c.chain()[-1][2] == "USD"


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_price_is_an_error(bad):
    with pytest.raises(TrainplanError, match="price-per-gpu-hour must be a number, zero or more"):
        given_pricing(bad)


def test_zero_samples_is_an_error():
    with pytest.raises(TrainplanError, match="--samples"):
        Workload(samples=0)


# --- currencies --------------------------------------------------------------------------------------

def test_conversion_by_hand():
    # 2.0 USD at 7.0 CNY/USD = 14.0 CNY; 10 EUR = 10 / 0.8 USD = 12.5 USD = 87.5 CNY
    assert conversion("USD", "CNY", RATES).factor == pytest.approx(7.0)
    assert 10 * conversion("EUR", "CNY", RATES).factor == pytest.approx(87.5)
    assert 70 * conversion("CNY", "USD", RATES).factor == pytest.approx(10.0)
    assert conversion("CNY", "CNY", RATES) is None
    p = offer_pricing(offer(price=2.0), currency="CNY", rates=RATES, today=TODAY)
    assert p.price_per_gpu_hour == pytest.approx(14.0) and p.currency == "CNY"
    assert p.conversion.rates[0].per_usd == 7.0
    assert any("7 CNY/USD" in n and "2026-11-01" in n for n in p.notes)


def test_rmb_is_cny_and_unknown_currency_is_an_error():
    assert RATES.code("rmb") == "CNY" and RATES.code(" cny ") == "CNY"
    assert catalog_rates().code("RMB") == "CNY" and catalog_rates().code("人民币") == "CNY"
    with pytest.raises(TrainplanError, match="unknown currency 'XYZ'; known: USD, CNY"):
        catalog_rates().code("XYZ")


def test_catalog_rate_is_dated_and_sourced():
    # rates.toml: CFETS central parity 6.9843 CNY per USD on 2026-01-26 (Xinhua)
    rate = catalog_rates().rate("CNY")
    assert (rate.per_usd, rate.as_of) == (6.9843, "2026-01-26") and "China Foreign Exchange Trade System" in rate.source
    assert not rate_is_stale(rate, datetime.date(2026, 3, 1)) and rate_is_stale(rate, datetime.date(2026, 12, 1))


def test_derived_cross_rates_match_their_inputs():
    # each derived rate's `derived_from` gives two IMF figures; per_usd must be their quotient to 4 digits
    import re
    import tomllib

    from trainplan.catalog import DATA_DIR
    with open(f"{DATA_DIR}/rates.toml", "rb") as handle:
        entries = [e for e in tomllib.load(handle)["rate"] if "derived_from" in e]
    assert len(entries) == 6
    for e in entries:
        a, b = (float(x.replace(",", "")) for x in re.findall(r"([\d,]+\.\d+)", e["derived_from"])[:2])
        assert a / b == pytest.approx(e["per_usd"], rel=1e-4), e["currency"]


# --- choosing the price -----------------------------------------------------------------------------

def test_kind_compared_and_the_fallback():
    b = book(offer(price=1.0, kind=PriceKind.MARKETPLACE), offer(price=3.0), offer(price=2.5))
    assert resolve_pricing("a100-sxm4-80gb", b, today=TODAY).price_per_gpu_hour == 2.5   # on-demand, cheapest
    only_market = book(offer(price=1.0, kind=PriceKind.MARKETPLACE))
    loose = resolve_pricing("a100-sxm4-80gb", only_market, today=TODAY)
    assert loose.price_per_gpu_hour == 1.0 and "marketplace price is used" in loose.notes[0]
    with pytest.raises(NoPriceError, match="only marketplace prices are known"):
        resolve_pricing("a100-sxm4-80gb", only_market, today=TODAY, strict=True)
    every = book(offer(price=1.0, kind=PriceKind.MARKETPLACE), offer(price=3.0), any_kind=True)
    assert resolve_pricing("a100-sxm4-80gb", every, today=TODAY, strict=True).price_per_gpu_hour == 1.0


def test_bill_currency_first_then_cheapest_converted():
    # CNY bill: a 15 CNY offer is preferred to a 2.0 USD one (14 CNY) -- the local market's price first;
    # with only USD offers, the cheapest converted: 1.5 USD = 10.5 CNY
    b = book(offer(price=2.0), offer(price=15.0, currency="CNY"), currency="CNY")
    assert resolve_pricing("a100-sxm4-80gb", b, today=TODAY).price_per_gpu_hour == 15.0
    usd = book(offer(price=2.0), offer(price=1.5), currency="CNY")
    assert resolve_pricing("a100-sxm4-80gb", usd, today=TODAY).price_per_gpu_hour == pytest.approx(10.5)


def test_dated_before_stale_and_typical_before_lowest_listing():
    b = book(offer(price=1.0, as_of="2020-01-01"), offer(price=2.0))
    assert resolve_pricing("a100-sxm4-80gb", b, today=TODAY).price_per_gpu_hour == 2.0
    c = book(offer(price=0.5, pricing="cheapest-listing", kind=PriceKind.MARKETPLACE),
             offer(price=0.9, kind=PriceKind.MARKETPLACE), kind=PriceKind.MARKETPLACE)
    assert resolve_pricing("a100-sxm4-80gb", c, today=TODAY).price_per_gpu_hour == 0.9


def test_given_prices_win_and_count_as_any_kind():
    b = book(offer(price=2.0), given=(("a100-sxm4-80gb", 9.0),), kind=PriceKind.SPOT)
    p = resolve_pricing("a100-sxm4-80gb", b, today=TODAY, strict=True)
    assert p.price_per_gpu_hour == 9.0 and p.origin == "--price" and p.kind is None
    flat = book(offer(price=2.0), flat_price=4.0, currency="CNY", currency_origin="--currency")
    assert resolve_pricing("h100-sxm", flat, today=TODAY).price_per_gpu_hour == 4.0


def test_first_source_with_the_kind_wins():
    mine = PriceSource(origin="price file mine.toml", offers=(offer(price=5.0, currency="CNY"),))
    b = PriceBook(sources=(mine, PriceSource(origin="list", offers=(offer(price=0.1),))), rates=RATES,
                  currency="CNY")
    p = resolve_pricing("a100-sxm4-80gb", b, today=TODAY)
    assert p.price_per_gpu_hour == 5.0 and "from price file mine.toml" in p.notes[0]


def test_missing_price_says_how_to_give_one():
    with pytest.raises(NoPriceError) as info:
        resolve_pricing("h800-sxm", book(offer()), today=TODAY)
    text = str(info.value)
    assert "no on-demand price for h800-sxm" in text and "--price h800=AMOUNT" in text and "--prices FILE" in text


# --- the catalog's prices ------------------------------------------------------------------------------

def test_catalog_price_names_the_cheapest_offer():
    # cloud_prices.csv: RunPod Community Cloud A100 SXM 80GB 1.39 USD/GPU-hour (2026-09-25), on-demand
    c = estimate_cost(total_s=3600, num_gpus=1, pricing=catalog_priced())
    assert (c.currency, c.price_per_gpu_hour, c.provider, c.kind) == ("USD", 1.39, "RunPod", "on-demand")
    assert any("the cheapest of" in n for n in c.notes)


def test_catalog_price_in_cny_converted_with_the_dated_rate():
    # 1.39 USD x 6.9843 CNY/USD (rates.toml, 2026-01-26) = 9.708177 CNY
    p = catalog_priced(currency="RMB", today=datetime.date(2026, 12, 1))
    assert p.currency == "CNY" and p.price_per_gpu_hour == pytest.approx(9.708177)
    assert any("stale exchange rate" in n for n in p.notes)


def test_catalog_8_gpu_instance():
    c = estimate_cost(total_s=3600, num_gpus=4, pricing=catalog_priced(provider="aws"))
    assert c.provider == "AWS" and c.billable_gpus == 8


def test_stale_or_undated_price_is_flagged():
    c = estimate_cost(total_s=3600, num_gpus=1, pricing=catalog_priced(provider="alibaba", currency="CNY"))
    assert c.price_per_gpu_hour == 27.08
    assert any("stale" in n for n in c.notes)
    later = estimate_cost(total_s=3600, num_gpus=1, pricing=catalog_priced(provider="aws",
                                                                          today=datetime.date(2028, 1, 1)))
    assert any("stale" in n for n in later.notes)


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(TrainplanError, match="provider 'nowhere-cloud'"):
        catalog_priced(provider="nowhere-cloud")


def test_no_spot_price_at_a_provider():
    # cloud_prices.csv has AWS spot rows only for A10G and A100 40GB: none for the 80GB A100
    with pytest.raises(NoPriceError, match="no spot price for a100-sxm4-80gb at AWS"):
        resolve_pricing("a100-sxm4-80gb", price_book(provider="aws", spot=True), today=TODAY, strict=True)
