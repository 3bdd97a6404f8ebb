"""Prices people control (issue 15): price files, --price, currencies and their defaults, the kind
compared, and the commands' answers when a price is missing or given badly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainplan.cli import main
from trainplan.cost.sources import price_book
from trainplan.errors import TrainplanError
from trainplan.settings import team_price_file

TEAM = Path(__file__).parent / "fixtures" / "prices" / "team.toml"


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- the must-show commands -------------------------------------------------------------------------

def test_estimate_without_a_price_still_answers(capsys):
    # the catalog has no H800 price: memory and time are printed, the cost block asks for a price
    code, out, err = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--gpu", "h800")
    assert code == 0 and err == ""
    assert "FITS" in out and "step time" in out
    assert "cost: no on-demand price for h800-sxm: give --price h800=AMOUNT (per GPU-hour, in USD)" in out
    code, out, _ = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--gpu", "h800", "--json")
    data = json.loads(out)
    assert data["cost"]["total"] is None and data["cost"]["price_per_gpu_hour"] is None
    assert "--price h800=AMOUNT" in data["cost"]["missing"] and data["time"]["step_s"] > 0


def test_plan_ranks_every_type_in_cny_with_a_team_file(capsys):
    code, out, _ = cli(capsys, "plan", "--model", "llama-3.1-70b", "--method", "full",
                       "--gpus", "a100,a800,h800,h100,h20", "--currency", "CNY", "--prices", str(TEAM), "--json")
    assert code == 0
    data = json.loads(out)
    prices = {p["gpu"]: p for p in data["prices"]["per_gpu"]}
    assert set(prices) == {"a100-sxm4-80gb", "a800-sxm4-80gb", "h800-sxm", "h100-sxm", "h20"}
    assert data["prices"]["kind"] == "on-demand" and data["prices"]["currency"] == "CNY"
    assert data["rejected"] == []
    # the team's own prices; H20 per instance: 72 / 8 = 9.0 per GPU-hour, billed by the 8-GPU machine
    assert prices["a800-sxm4-80gb"]["price_per_gpu_hour"] == 7.0 and prices["h800-sxm"]["price_per_gpu_hour"] == 14.5
    assert prices["h20"]["price_per_gpu_hour"] == 9.0 and prices["h20"]["gpus_per_instance"] == 8
    # no team price: the catalog's USD on-demand offers (cloud_prices.csv: RunPod Community Cloud, 2026-09-25)
    # at the team file's rate, 7.2 CNY/USD: A100 1.39 x 7.2 = 10.008, H100 2.69 x 7.2 = 19.368
    assert prices["a100-sxm4-80gb"]["price_per_gpu_hour"] == pytest.approx(10.008)
    assert prices["a100-sxm4-80gb"]["original"] == {"price_per_gpu_hour": 1.39, "currency": "USD"}
    assert prices["h100-sxm"]["price_per_gpu_hour"] == pytest.approx(19.368)
    [rate] = data["prices"]["rates"]
    assert (rate["currency"], rate["per_usd"], rate["as_of"]) == ("CNY", 7.2, "2026-11-28")
    assert all(p["kind"] == "on-demand" for p in prices.values())
    for plan in data["plans"]:
        assert plan["cost"]["currency"] == "CNY"
    code, text, _ = cli(capsys, "plan", "--model", "llama-3.1-70b", "--method", "full",
                        "--gpus", "a100,a800,h800,h100,h20", "--currency", "CNY", "--prices", str(TEAM))
    assert "Prices compared (on-demand prices, per GPU-hour in CNY" in text
    assert "rate: 7.2 CNY per USD" in text and "1.39 USD" in text


def test_plan_without_the_file_names_what_is_missing(capsys):
    code, out, _ = cli(capsys, "plan", "--model", "llama-3.1-70b", "--method", "full",
                       "--gpus", "a100,a800,h800,h100,h20", "--currency", "CNY", "--json")
    reasons = {r["gpu"]: r["reason"] for r in json.loads(out)["rejected"]}
    assert "only marketplace prices are known: --price-kind marketplace or any" in reasons["a800-sxm4-80gb"]
    assert reasons["h800-sxm"].startswith("no on-demand price; give --price h800=AMOUNT")


def test_price_kind_marketplace_ranks_marketplace_prices(capsys):
    # cloud_prices.csv: A800 80GB 5.15 CNY (晨涧云) and H20 7.5 CNY (优云智算), cheapest listings
    code, out, _ = cli(capsys, "plan", "--model", "qwen2.5-7b", "--method", "lora", "--gpus", "a800,h20",
                       "--currency", "CNY", "--price-kind", "marketplace", "--json")
    prices = {p["gpu"]: p for p in json.loads(out)["prices"]["per_gpu"]}
    assert prices["a800-sxm4-80gb"]["price_per_gpu_hour"] == 5.15 and prices["h20"]["price_per_gpu_hour"] == 7.5
    assert json.loads(out)["prices"]["kind"] == "marketplace"


def test_per_gpu_prices_on_the_command_line(capsys):
    # --price h800=14.5 --currency CNY, 100 steps of 8 sequences: the bill is per hour x hours
    code, out, _ = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--gpu", "h800",
                       "--price", "h800=14.5", "--price", "a800=7", "--currency", "RMB", "--samples", "800",
                       "--batch-size", "8", "--json")
    data = json.loads(out)
    c, t = data["cost"], data["time"]
    assert (c["currency"], c["price_per_gpu_hour"], c["origin"]) == ("CNY", 14.5, "--price")
    assert t["steps"] == 100
    assert c["total"] == pytest.approx(t["total_s"] / 3600 * 14.5)
    assert c["per_step"] == pytest.approx(t["step_s"] / 3600 * 14.5)


def test_without_samples_cost_is_per_hour_and_per_step(capsys):
    code, out, _ = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--gpu", "a100",
                       "--price-per-gpu-hour", "2", "--currency", "USD")
    assert "cost per hour" in out and "2 USD/h" in out and "cost per step" in out
    assert "no total without --samples" in out and "cost 0 USD" not in out


def test_does_not_fit_is_marked(capsys):
    code, out, _ = cli(capsys, "estimate", "--model", "llama-2-7b", "--method", "full", "--gpu", "a100",
                       "--samples", "1000", "--price-per-gpu-hour", "2", "--currency", "USD")
    assert "DOES NOT FIT" in out and "Time and cost, step by step (does not fit: cost shown for reference):" in out


def test_time_chain_has_units(capsys):
    code, out, _ = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--gpu", "a100",
                       "--samples", "1000")
    lines = out.split("Time and cost, step by step:\n")[1].split("\n\n")[0].splitlines()
    first, second, _ = lines[1].split("  ", 2)          # the dashes: column widths
    start, end = len(first) + 2, len(first) + 2 + len(second)
    units = {"tokens", "FLOP", "FLOP/s", "s", "tokens/s", "%", "steps", "GPU-h", "USD/GPU-h", "USD/h", "USD"}
    values = [line[start:end].split() for line in lines[2:] if not line.startswith("  cost:")]
    assert len(values) >= 18
    for value in values:
        assert len(value) == 2 and value[1] in units, value


def test_header_names_the_lora_rank_and_targets(capsys):
    code, out, _ = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--lora-rank", "64",
                       "--lora-targets", "all-linear", "--gpu", "a100")
    assert "lora (rank 64, alpha 128, targets all-linear)" in out.splitlines()[0]


# --- settings: where prices and the currency come from ----------------------------------------------

def test_currency_from_env_and_user_config(monkeypatch, tmp_path):
    config = Path(os.environ["TRAINPLAN_CONFIG_DIR"])
    write(config / "config.toml", 'currency = "RMB"\n')
    b = price_book()
    assert b.currency == "CNY" and b.currency_origin.startswith("user config")
    monkeypatch.setenv("TRAINPLAN_CURRENCY", "eur")
    assert price_book().currency == "EUR" and price_book().currency_origin == "$TRAINPLAN_CURRENCY"
    assert price_book(currency="USD").currency == "USD"            # the flag wins


def test_price_file_order_flag_env_team_user(monkeypatch, tmp_path):
    config = Path(os.environ["TRAINPLAN_CONFIG_DIR"])
    line = 'currency = "CNY"\nas_of = "2026-11-01"\n[[price]]\ngpu = "h800"\nprice_per_gpu_hour = {}\n'
    write(config / "prices.toml", line.format(1))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "train" / "sub").mkdir(parents=True)
    write(repo / "trainplan-prices.toml", line.format(2))
    monkeypatch.chdir(repo / "train" / "sub")
    assert team_price_file() == str(repo / "trainplan-prices.toml")
    env_file = write(tmp_path / "env.toml", line.format(3))
    flag_file = write(tmp_path / "flag.toml", line.format(4))

    def price(**kw):
        import datetime

        from trainplan.cost.prices import resolve_pricing
        return resolve_pricing("h800-sxm", price_book(currency="CNY", **kw), today=datetime.date(2026, 12, 1))

    assert price().price_per_gpu_hour == 2.0                      # the team's file before the user's
    monkeypatch.setenv("TRAINPLAN_PRICES", env_file)
    assert price().price_per_gpu_hour == 3.0
    assert price(prices=flag_file).price_per_gpu_hour == 4.0
    assert price(prices=flag_file, price=("h800=5",)).price_per_gpu_hour == 5.0


def test_team_file_search_stops_at_the_repository_root(tmp_path, monkeypatch):
    write(tmp_path / "trainplan-prices.toml", "")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert team_price_file(str(tmp_path / "repo")) is None


def test_a_price_file_rate_overrides_the_catalog(tmp_path):
    f = write(tmp_path / "r.toml", '[[rate]]\ncurrency = "CNY"\nper_usd = 7.5\nas_of = "2026-11-30"\n')
    assert price_book(prices=f).rate_table().rate("CNY").per_usd == 7.5


# --- bad input: one line, exit 2 --------------------------------------------------------------------

BAD_FILES = {
    "malformed.toml": ("[[price]\ngpu = 'h800'\n", "malformed price file"),
    "no_date.toml": ('currency = "CNY"\n[[price]]\ngpu = "h800"\nprice_per_gpu_hour = 1\n', "no as_of"),
    "bad_date.toml": ('currency = "CNY"\nas_of = "last week"\n[[price]]\ngpu = "h800"\nprice_per_gpu_hour = 1\n',
                      "as_of must be a date YYYY-MM-DD"),
    "negative.toml": ('currency = "CNY"\nas_of = 2026-11-01\n[[price]]\ngpu = "h800"\nprice_per_gpu_hour = -3\n',
                      "price_per_gpu_hour must be a number, zero or more"),
    "no_currency.toml": ('as_of = "2026-11-01"\n[[price]]\ngpu = "h800"\nprice_per_gpu_hour = 1\n', "no currency"),
    "bad_gpu.toml": ('currency = "CNY"\nas_of = "2026-11-01"\n[[price]]\ngpu = "h801"\nprice_per_gpu_hour = 1\n',
                     "unknown GPU 'h801'"),
    "bad_key.toml": ('currency = "CNY"\nas_of = "2026-11-01"\n[[price]]\ngpu = "h800"\nprice = 1\n',
                     "unknown key 'price'"),
    "bad_kind.toml": ('currency = "CNY"\nas_of = "2026-11-01"\nkind = "cheap"\n[[price]]\ngpu = "h800"\n'
                      'price_per_gpu_hour = 1\n', "unknown price kind 'cheap'"),
    "bad_currency.toml": ('currency = "XYZ"\nas_of = "2026-11-01"\n[[price]]\ngpu = "h800"\nprice_per_gpu_hour = 1\n',
                          "unknown currency 'XYZ'"),
    "empty.toml": ("", "no [[price]] or [[rate]] entries"),
    "bad_rate.toml": ('[[rate]]\ncurrency = "CNY"\nper_usd = 0\nas_of = "2026-11-01"\n', "per_usd must be a positive"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_malformed_price_file_is_one_line(capsys, tmp_path, name):
    text, fragment = BAD_FILES[name]
    path = write(tmp_path / name, text)
    code, _, err = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--gpu", "h800",
                       "--prices", path)
    assert code == 2 and err.count("\n") == 1 and err.startswith("trainplan: error:"), err
    assert fragment in err and path in err


@pytest.mark.parametrize("argv, fragment", [
    (["--price", "h800=-1"], "must be a number, zero or more"),
    (["--price", "h800"], "expected GPU=AMOUNT"),
    (["--price", "h800=cheap"], "is not a number"),
    (["--price", "h801=3"], "unknown GPU 'h801'"),
    (["--price-per-gpu-hour", "-2"], "--price-per-gpu-hour must be a finite number in [0, 1e+06], got -2.0"),
    (["--currency", "XYZ"], "unknown currency 'XYZ'"),
    (["--price-kind", "cheap"], "--price-kind 'cheap' is not one of: on-demand, spot, marketplace, reserved, any"),
    (["--prices", "/nonexistent/prices.toml"], "price file not found"),
])
def test_bad_money_flags_are_one_line(capsys, argv, fragment):
    code, _, err = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--gpu", "h800", *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("trainplan: error:"), err
    assert fragment in err


def test_bad_settings_are_one_line(capsys, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_CURRENCY", "XYZ")
    code, _, err = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--gpu", "a100")
    assert code == 2 and "$TRAINPLAN_CURRENCY: unknown currency 'XYZ'" in err and err.count("\n") == 1
    monkeypatch.delenv("TRAINPLAN_CURRENCY")
    write(Path(os.environ["TRAINPLAN_CONFIG_DIR"]) / "config.toml", "currency = [1\n")
    code, _, err = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--gpu", "a100")
    assert code == 2 and "malformed user config" in err and err.count("\n") == 1


def test_price_file_error_carries_its_entry(tmp_path):
    path = write(tmp_path / "t.toml", 'currency = "CNY"\nas_of = "2026-11-01"\n[[price]]\ngpu = "a800"\n'
                                      'price_per_gpu_hour = 1\n[[price]]\ngpu = "h800"\n')
    with pytest.raises(TrainplanError, match=r"price 2 \(h800\): give one of price_per_gpu_hour"):
        price_book(prices=path)


# --- suggestions keep to GPUs that run the job and are sold in the currency's market -----------------

def _gpu_suggestions(capsys, *argv):
    code, out, _ = cli(capsys, "estimate", "--model", "qwen2.5-7b", "--method", "lora", "--gpu", "4090", *argv,
                       "--json")
    data = json.loads(out)
    return [s["change"].split()[1] for s in data["suggestions"] if s["change"].startswith("--gpu ")], data["notes"]


def test_suggestions_skip_gpus_without_bf16_tensor_cores(capsys):
    # 7B bf16 LoRA at seq 1024 needs 23.6 GiB on the device: more than a 4090's usable 21.4 GiB, less than
    # the next larger GPU's, a 32 GB V100 (28.6 GiB usable), which has no bf16 tensor cores: the 32 GB
    # RTX 5090 is suggested instead
    gpus, notes = _gpu_suggestions(capsys, "--seq-len", "1024")
    assert gpus == ["rtx5090"]
    assert any("GPU suggestions name only GPUs with bf16 tensor cores" in n for n in notes)


def test_suggestions_keep_to_the_currency_market(capsys):
    # at micro-batch 4 (74.1 GiB) the smallest GPU that fits is a 94 GB H100 NVL; in CNY the smallest the
    # catalog prices in CNY: the 96 GB H20 (cloud_prices.csv: 7.5 CNY, 优云智算)
    assert _gpu_suggestions(capsys, "--batch-size", "4")[0] == ["h100-nvl"]
    gpus, notes = _gpu_suggestions(capsys, "--batch-size", "4", "--currency", "CNY")
    assert gpus == ["h20"] and any("priced in CNY" in n for n in notes)


def test_v100_bf16_is_timed_at_its_fp32_peak_with_a_warning(capsys):
    # V100: no bf16 tensor cores (gpus.toml lists fp16 125 and fp32 15.7 TFLOP/s only)
    code, out, _ = cli(capsys, "estimate", "--model", "qwen2.5-0.5b", "--method", "lora", "--gpu", "v100",
                       "--precision", "bf16", "--json")
    data = json.loads(out)
    note = next(n for n in data["notes"] if "no bf16 tensor cores" in n)
    assert "fp32 peak (15.7 TFLOP/s)" in note and "--precision fp16" in note


def test_prices_and_rates_listings(capsys, tmp_path):
    code, out, _ = cli(capsys, "prices", "--gpu", "a800", "--currency", "RMB", "--prices", str(TEAM), "--json")
    rows = json.loads(out)
    assert {r["origin"].split()[0] for r in rows} == {"price", "catalog"}
    team = next(r for r in rows if r["origin"].startswith("price file"))
    assert team["price_cny"] == 7.0 and team["kind"] == "on-demand"
    code, out, _ = cli(capsys, "rates", "--json")
    cny = next(r for r in json.loads(out) if r["currency"] == "CNY")
    assert cny["per_usd"] == 6.9843 and cny["as_of"] == "2026-01-26"


# --- properties ---------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from trainplan.cost.bill import estimate_cost  # noqa: E402
from trainplan.cost.currency import conversion  # noqa: E402
from trainplan.cost.pricefile import parse_given_price, read_price_file  # noqa: E402
from trainplan.cost.prices import catalog_rates, given_pricing  # noqa: E402

CODES = [s.code for s in catalog_rates().currencies]


@settings(max_examples=200, deadline=None)
@given(a=st.sampled_from(CODES), b=st.sampled_from(CODES), amount=st.floats(0, 1e6))
def test_conversion_round_trip_is_the_identity(a, b, amount):
    rates = catalog_rates()
    there, back = conversion(a, b, rates), conversion(b, a, rates)
    factor = (there.factor if there else 1.0) * (back.factor if back else 1.0)
    assert amount * factor == pytest.approx(amount, rel=1e-12, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(total_s=st.floats(0, 1e7), gpus=st.integers(1, 512), per_instance=st.sampled_from([1, 2, 4, 8]),
       price=st.floats(0, 100), retry=st.floats(1, 5))
def test_bill_invariants(total_s, gpus, per_instance, price, retry):
    c = estimate_cost(total_s=total_s, num_gpus=gpus, pricing=given_pricing(price, "USD", gpus_per_instance=per_instance),
                      retry_factor=retry)
    assert gpus <= c.billable_gpus < gpus + per_instance and c.billable_gpus % per_instance == 0
    assert c.total == pytest.approx(total_s / 3600 * c.billable_gpus * price * retry)
    longer = estimate_cost(total_s=total_s * 2 + 1, num_gpus=gpus,
                           pricing=given_pricing(price, "USD", gpus_per_instance=per_instance), retry_factor=retry)
    assert longer.total >= c.total


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_any_price_flag_is_parsed_or_refused_in_one_line(text):
    try:
        gpu_id, amount = parse_given_price(text)
    except TrainplanError as exc:
        assert "\n" not in str(exc)
    else:
        assert amount >= 0 and gpu_id


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.binary(max_size=200),
                 st.lists(st.sampled_from(['currency = "CNY"', 'as_of = "2026-11-01"', "[[price]]", 'gpu = "h800"',
                                           "price_per_gpu_hour = 3", "price_per_gpu_hour = -1", 'kind = "spot"',
                                           "gpus_per_instance = 0", "[[rate]]", "per_usd = 7", 'gpu = 5',
                                           'currency = "RMB"', "[price]", "x = 1"]), max_size=12)
                 .map(lambda lines: "\n".join(lines).encode())))
def test_any_price_file_is_read_or_refused_in_one_line(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("pf") / "p.toml"
    path.write_bytes(raw)
    try:
        result = read_price_file(str(path), catalog_rates())
    except TrainplanError as exc:
        assert "\n" not in str(exc).strip() or "malformed" in str(exc)
    else:
        assert all(o.price_per_gpu_hour >= 0 and o.as_of for o in result.offers)
