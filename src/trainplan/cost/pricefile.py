"""Price files: a user's or a team's own GPU-hour prices (TOML), and `--price GPU=AMOUNT`.

    # trainplan-prices.toml (keys at the top are defaults for every entry)
    currency = "CNY"
    kind = "on-demand"            # on-demand | spot | marketplace | reserved
    as_of = "2026-11-20"
    provider = "our cluster broker"

    [[price]]
    gpu = "h800"
    price_per_gpu_hour = 14.5     # or price_per_instance_hour with gpus_per_instance

    [[price]]
    gpu = "a800"
    price_per_gpu_hour = 7
    kind = "reserved"
    gpus_per_instance = 8

    [[rate]]                      # overrides the catalog's exchange rate
    currency = "CNY"
    per_usd = 7.10
    as_of = "2026-11-30"
    source = "our bank"

Every price needs a GPU, an amount, a currency and an as_of date (YYYY-MM-DD), on the entry or
at the top; anything else wrong is a one-line error naming the file and the entry.
"""

from __future__ import annotations

import datetime
import math

from trainplan import catalog
from trainplan.cost.currency import Rates, check_code
from trainplan.cost.prices import check_amount
from trainplan.enums import PriceKind
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.settings import read_toml
from trainplan.specs import PriceOffer, Rate

TOP_KEYS = ("currency", "kind", "as_of", "provider", "source", "region", "price", "rate")
PRICE_KEYS = ("gpu", "price_per_gpu_hour", "price_per_instance_hour", "gpus_per_instance", "currency", "kind",
              "as_of", "provider", "instance", "region", "source", "notes")
RATE_KEYS = ("currency", "per_usd", "as_of", "source", "basis")
KIND_NAMES = {"on-demand": PriceKind.ON_DEMAND, "ondemand": PriceKind.ON_DEMAND, "pay-as-you-go": PriceKind.ON_DEMAND,
              "spot": PriceKind.SPOT, "preemptible": PriceKind.SPOT, "interruptible": PriceKind.SPOT,
              "marketplace": PriceKind.MARKETPLACE, "market": PriceKind.MARKETPLACE,
              "reserved": PriceKind.RESERVED, "monthly": PriceKind.RESERVED, "committed": PriceKind.RESERVED,
              "capacity-block": PriceKind.RESERVED}


def parse_kind(text: str | PriceKind, where: str = "--price-kind") -> PriceKind:
    if isinstance(text, PriceKind):
        return text
    key = text.strip().lower().replace("_", "-").replace(" ", "-") if isinstance(text, str) else ""
    if key not in KIND_NAMES:
        raise TrainplanError(f"{where}: unknown price kind {text!r}; one of "
                             f"{', '.join(k.value for k in PriceKind)}")
    return KIND_NAMES[key]


@frozen
class PriceFile:
    """The offers and exchange rates one price file gives."""

    path: str
    offers: tuple[PriceOffer, ...]
    rates: tuple[Rate, ...] = ()


def _date(value: object, where: str) -> str:
    if isinstance(value, datetime.date):      # TOML dates parse as date objects
        return value.isoformat()
    when = catalog.iso_date(value) if isinstance(value, str) else None
    if when is None:
        raise TrainplanError(f"{where}: as_of must be a date YYYY-MM-DD, got {value!r}")
    return when.isoformat()


def _text(value: object, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise TrainplanError(f"{where}: {key} must be a string, got {value!r}")
    return value.strip()


def _check_keys(entry: object, allowed: tuple[str, ...], where: str) -> dict:
    if not isinstance(entry, dict):
        raise TrainplanError(f"{where} must be a table, got {entry!r}")
    unknown = sorted(set(entry) - set(allowed))
    if unknown:
        raise TrainplanError(f"{where}: unknown key '{unknown[0]}' (known: {', '.join(allowed)})")
    return entry


def _offer(entry: dict, top: dict, where: str, origin: str, rates: Rates) -> PriceOffer:
    if "gpu" not in entry:
        raise TrainplanError(f"{where}: no gpu (a catalog id or alias such as h800)")
    try:
        gpu = catalog.resolve_gpu(_text(entry["gpu"], where, "gpu"))
    except TrainplanError as exc:
        raise TrainplanError(f"{where}: {exc}") from None
    where = f"{where} ({entry['gpu']})"
    per_instance = entry.get("gpus_per_instance", 1)
    if isinstance(per_instance, bool) or not isinstance(per_instance, int) or per_instance <= 0:
        raise TrainplanError(f"{where}: gpus_per_instance must be a positive integer, got {per_instance!r}")
    if ("price_per_gpu_hour" in entry) == ("price_per_instance_hour" in entry):
        raise TrainplanError(f"{where}: give one of price_per_gpu_hour, price_per_instance_hour")
    if "price_per_gpu_hour" in entry:
        price = check_amount(entry["price_per_gpu_hour"], f"{where}: price_per_gpu_hour")
    else:
        price = check_amount(entry["price_per_instance_hour"], f"{where}: price_per_instance_hour") / per_instance
    merged = {k: entry.get(k, top.get(k)) for k in ("currency", "kind", "as_of", "provider", "source", "region")}
    if merged["currency"] is None:
        raise TrainplanError(f"{where}: no currency (give currency = \"CNY\" on the entry or at the top of the file)")
    if merged["as_of"] is None:
        raise TrainplanError(f"{where}: no as_of (the date of the price, YYYY-MM-DD, on the entry or at the top)")
    try:
        currency = rates.code(_text(merged["currency"], where, "currency"))
    except TrainplanError as exc:
        raise TrainplanError(f"{where}: {exc}") from None
    kind = parse_kind(merged["kind"], where) if merged["kind"] is not None else PriceKind.ON_DEMAND
    provider = _text(merged["provider"], where, "provider") if merged["provider"] is not None else ""
    return PriceOffer(provider=provider, gpu_id=gpu.id, gpus_per_instance=per_instance, price_per_gpu_hour=price,
                      currency=currency, pricing=kind.value, as_of=_date(merged["as_of"], where),
                      source=_text(merged["source"], where, "source") if merged["source"] is not None else origin,
                      instance=_text(entry.get("instance", ""), where, "instance"),
                      region=_text(merged["region"], where, "region") if merged["region"] is not None else "",
                      notes=_text(entry.get("notes", ""), where, "notes"), kind=kind, origin=origin)


def _rate(entry: dict, where: str, origin: str) -> Rate:
    for key in ("currency", "per_usd", "as_of"):
        if key not in entry:
            raise TrainplanError(f"{where}: no {key}")
    value = entry["per_usd"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise TrainplanError(f"{where}: per_usd must be a positive number, got {value!r}")
    return Rate(currency=check_code(_text(entry["currency"], where, "currency")), per_usd=float(value),
                as_of=_date(entry["as_of"], where), source=_text(entry.get("source", origin), where, "source"),
                basis=_text(entry.get("basis", "given in a price file"), where, "basis"), origin=origin)


def read_price_file(path: str, rates: Rates, *, origin: str | None = None) -> PriceFile:
    """The offers and rates of the price file at `path` (TrainplanError naming the file on any fault)."""
    origin = origin or f"price file {path}"
    data = _check_keys(read_toml(path, "price file"), TOP_KEYS, f"price file {path}")
    raw_rates = data.get("rate", [])
    raw_prices = data.get("price", [])
    for key, value in (("rate", raw_rates), ("price", raw_prices)):
        if not isinstance(value, list):
            raise TrainplanError(f"price file {path}: '{key}' must be an array of tables ([[{key}]])")
    if not raw_prices and not raw_rates:
        raise TrainplanError(f"price file {path}: no [[price]] or [[rate]] entries")
    own_rates = tuple(_rate(_check_keys(e, RATE_KEYS, f"price file {path}: rate {i}"), f"price file {path}: rate {i}",
                            origin) for i, e in enumerate(raw_rates, 1))
    known = rates.with_rates(own_rates)
    offers = tuple(_offer(_check_keys(e, PRICE_KEYS, f"price file {path}: price {i}"), data,
                          f"price file {path}: price {i}", origin, known) for i, e in enumerate(raw_prices, 1))
    return PriceFile(path=path, offers=offers, rates=own_rates)


def parse_given_price(text: str) -> tuple[str, float]:
    """`--price GPU=AMOUNT` -> (catalog GPU id, amount per GPU-hour)."""
    where = f"--price {text!r}"
    if not isinstance(text, str) or text.count("=") != 1:
        raise TrainplanError(f"{where}: expected GPU=AMOUNT, e.g. --price h800=14.5")
    name, amount = (part.strip() for part in text.split("="))
    try:
        value = float(amount)
    except ValueError:
        raise TrainplanError(f"{where}: the amount {amount!r} is not a number") from None
    if not name:
        raise TrainplanError(f"{where}: expected GPU=AMOUNT, e.g. --price h800=14.5")
    try:
        gpu = catalog.resolve_gpu(name)
    except TrainplanError as exc:
        raise TrainplanError(f"{where}: {exc}") from None
    return gpu.id, check_amount(value, where)
