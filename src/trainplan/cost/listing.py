"""`trainplan prices` and `trainplan rates`: every offer the sources know (the user's price files and
the catalog), converted for display when a currency is asked, and the exchange-rate table."""

from __future__ import annotations

import datetime
from typing import Any

from trainplan import catalog
from trainplan.cost.currency import conversion, rate_is_stale
from trainplan.cost.prices import STALE_AFTER_DAYS, PriceBook


def price_rows(book: PriceBook, *, gpu: str | None = None, convert: bool = False,
               today: datetime.date) -> list[dict[str, Any]]:
    """One row per offer of the book's sources (its provider and, unless the book compares every kind,
    its kind), first source first, each sorted by price in its currency; with `convert`, each price
    also in the book's currency at the rate table's rate."""
    gpu_id = catalog.resolve_gpu(gpu).id if gpu else None
    rates = book.rate_table()
    key_provider = book.provider.strip().casefold() if book.provider else None
    rows = []
    for source in book.sources:
        offers = source.offers_for(gpu_id) if gpu_id else (source.offers if source.offers is not None
                                                           else catalog.load_prices())
        for o in offers:
            if key_provider and o.provider.strip().casefold() != key_provider:
                continue
            if not book.any_kind and book.kind_origin in ("--price-kind", "--spot") and o.kind is not book.kind:
                continue
            row = {"provider": o.provider, "gpu": o.gpu_id, "instance": o.instance, "region": o.region,
                   "kind": o.kind.value, "pricing": o.pricing, "price_per_gpu_hour": o.price_per_gpu_hour,
                   "currency": o.currency, "as_of": o.as_of, "date_known": catalog.offer_date(o) is not None,
                   "stale": catalog.is_stale(o, today, STALE_AFTER_DAYS), "origin": o.origin}
            if convert:
                conv = conversion(o.currency, book.currency, rates)
                row[f"price_{book.currency.lower()}"] = round(o.price_per_gpu_hour * (conv.factor if conv else 1.0), 4)
                row["rate_as_of"] = "" if conv is None else ", ".join(r.as_of for r in conv.rates)
            rows.append(row)
    if convert:
        column = f"price_{book.currency.lower()}"
        rows.sort(key=lambda r: r[column])
    return rows


def rate_rows(book: PriceBook, *, today: datetime.date) -> list[dict[str, Any]]:
    """The exchange rates in force (a price file's over the catalog's), one per currency."""
    rates = book.rate_table()
    rows = [{"currency": "USD", "per_usd": 1.0, "as_of": "", "basis": "base currency", "stale": False,
             "origin": "definition", "source": ""}]
    for spec in rates.currencies:
        rate = rates.rate(spec.code)
        if rate is None:
            continue
        rows.append({"currency": spec.code, "per_usd": rate.per_usd, "as_of": rate.as_of, "basis": rate.basis,
                     "stale": rate_is_stale(rate, today), "origin": rate.origin, "source": rate.source})
    return rows
