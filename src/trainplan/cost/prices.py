"""Which price a bill is made at: a price the user gave, or the cheapest matching catalog offer.

This is the edge of the money stage: it reads the price catalog and the date (stale offers are
flagged), and returns a Pricing that the bill (cost/bill.py) uses without looking anything up.
"""

from __future__ import annotations

import datetime
import math

from trainplan import catalog
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.specs import PriceOffer

DEFAULT_CURRENCY = "USD"
STALE_AFTER_DAYS = 365


@frozen
class PriceChoice:
    """What the user said about money (None: not said)."""

    price_per_gpu_hour: float | None = None
    currency: str | None = None
    provider: str | None = None
    spot: bool = False


@frozen
class Pricing:
    """The price per GPU-hour a bill is made at, where it comes from, and how it was chosen."""

    price_per_gpu_hour: float
    currency: str
    gpus_per_instance: int = 1        # instances rent whole: bills round up to whole instances
    provider: str = ""                # "" when the price was given directly
    instance: str = ""
    pricing: str = "given"            # on-demand, spot, ..., or "given"
    as_of: str = ""
    source: str = "user"
    notes: tuple[str, ...] = ()       # which offer was chosen, stale prices, assumed currency
    offer: PriceOffer | None = None   # the offer, when the price is one
    from_catalog: bool = False        # the offer is the price catalog's (not a list the user gave)

    def __post_init__(self) -> None:
        check_price(self.price_per_gpu_hour)
        if not isinstance(self.gpus_per_instance, int) or self.gpus_per_instance <= 0:
            raise TrainplanError(f"GPUs per instance must be positive, got {self.gpus_per_instance!r}")


def check_price(price_per_gpu_hour: float) -> float:
    if price_per_gpu_hour is None or not math.isfinite(price_per_gpu_hour) or price_per_gpu_hour < 0:
        raise TrainplanError(f"--price-per-gpu-hour must be zero or positive, got {price_per_gpu_hour!r}")
    return float(price_per_gpu_hour)


def given_pricing(price_per_gpu_hour: float, currency: str | None = None, *, gpus_per_instance: int | None = None,
                  provider: str | None = None) -> Pricing:
    """A price the user gave (in `currency`, USD when not said), billed per GPU unless instances are given."""
    price = check_price(price_per_gpu_hour)
    notes = []
    if provider:
        notes.append(f"--price-per-gpu-hour given: the {provider} catalog price is not used")
    if not currency:
        notes.append(f"no --currency given: {DEFAULT_CURRENCY} assumed")
    per_instance = gpus_per_instance or 1
    return Pricing(price_per_gpu_hour=price, currency=(currency or DEFAULT_CURRENCY).upper(),
                   gpus_per_instance=per_instance,
                   instance=f"{per_instance}-GPU instance" if per_instance > 1 else "", notes=tuple(notes))


def offer_pricing(offer: PriceOffer, notes: tuple[str, ...] = (), *, from_catalog: bool = False) -> Pricing:
    return Pricing(price_per_gpu_hour=offer.price_per_gpu_hour, currency=offer.currency,
                   gpus_per_instance=offer.gpus_per_instance, provider=offer.provider, instance=offer.instance,
                   pricing=offer.pricing, as_of=offer.as_of, source=offer.source, notes=notes, offer=offer,
                   from_catalog=from_catalog)


def choose_offer(gpu_id: str, *, provider: str | None = None, spot: bool = False, currency: str | None = None,
                 today: datetime.date) -> tuple[PriceOffer, list[str]]:
    """The cheapest catalog offer for the GPU (and provider / spot / currency when given), with notes
    naming it, how many offers matched, and whether it is stale."""
    if provider:
        catalog.resolve_provider(provider)        # unknown provider: one-line error with suggestions
    offers = catalog.find_prices(gpu_id, provider, currency, spot)
    best = catalog.cheapest_price(gpu_id, provider, spot, currency)
    if best is None:
        where = f" at {provider}" if provider else ""
        kind = "spot" if spot else "on-demand"
        raise TrainplanError(f"no {kind} price for {gpu_id}{where} in the catalog; give --price-per-gpu-hour "
                             f"and --currency (see `trainplan prices --gpu {gpu_id}`)")
    notes = [f"price: {best.provider} {best.instance} ({best.pricing}, {best.region or 'region n/a'}), "
             f"{best.price_per_gpu_hour:g} {best.currency}/GPU-hour as of {best.as_of}"
             + (f", the cheapest of {len(offers)} matching offers" if len(offers) > 1 else "")]
    if catalog.is_stale(best, today, STALE_AFTER_DAYS):
        when = "of unknown date" if catalog.offer_date(best) is None else f"from {best.as_of}"
        notes.append(f"stale price: {best.provider} {best.gpu_id} offer is {when}, more than a year "
                     f"before {today.isoformat()} or undated; check the provider's current price")
    return best, notes


def resolve_pricing(gpu_id: str, choice: PriceChoice, *, today: datetime.date) -> Pricing:
    """A given price wins over the catalog; with none, the cheapest catalog offer for the GPU."""
    if choice.price_per_gpu_hour is not None:
        return given_pricing(choice.price_per_gpu_hour, choice.currency, provider=choice.provider)
    offer, notes = choose_offer(gpu_id, provider=choice.provider, spot=choice.spot, currency=choice.currency,
                                today=today)
    return offer_pricing(offer, tuple(notes), from_catalog=True)
