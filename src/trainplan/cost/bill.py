"""The rental bill: wall-clock x billable GPUs x price per GPU-hour x retry factor.

total = total_s / 3600 x billable_gpus x price_per_gpu_hour x retry_factor,
billable_gpus = ceil(num_gpus / gpus_per_instance) x gpus_per_instance (an 8-GPU instance is rented
whole). The price comes from the catalog (provider, GPU, on-demand or spot, currency; the cheapest
matching offer, named in the notes, with its as_of date; offers older than a year, or undated, are
flagged) or is given directly (price_per_gpu_hour + currency).
The seed article's chain: 27.08 CNY/h x 3 h (1 A100, retries included) = 81.24 CNY.
"""

from __future__ import annotations

import datetime
import math
from trainplan.frozen import frozen

from trainplan import catalog
from trainplan.errors import TrainplanError
from trainplan.specs import PriceOffer
from trainplan.units import SECONDS_PER_HOUR

DEFAULT_CURRENCY = "USD"
STALE_AFTER_DAYS = 365


def billable_gpus(num_gpus: int, gpus_per_instance: int = 1) -> int:
    """GPUs paid for: whole instances, ceil(num_gpus / gpus_per_instance) x gpus_per_instance."""
    if num_gpus <= 0:
        raise TrainplanError(f"--num-gpus must be positive, got {num_gpus}")
    if gpus_per_instance <= 0:
        raise TrainplanError(f"GPUs per instance must be positive, got {gpus_per_instance}")
    return math.ceil(num_gpus / gpus_per_instance) * gpus_per_instance


def check_price(price_per_gpu_hour: float) -> float:
    if price_per_gpu_hour is None or not math.isfinite(price_per_gpu_hour) or price_per_gpu_hour < 0:
        raise TrainplanError(f"--price-per-gpu-hour must be zero or positive, got {price_per_gpu_hour!r}")
    return float(price_per_gpu_hour)


@frozen
class CostEstimate:
    """The bill for one run (retries included). Keys of PRODUCT.md's `cost` JSON and more."""

    currency: str
    price_per_gpu_hour: float
    total: float
    provider: str                 # "" when the price was given directly
    instance: str
    pricing: str                  # on-demand, spot, ..., or "given"
    as_of: str
    billable_gpus: int
    gpu_hours: float              # billable GPU-hours of one attempt
    retry_factor: float
    source: str
    notes: tuple[str, ...]

    @property
    def per_hour(self) -> float:
        """What the rented GPUs cost per wall-clock hour."""
        return self.billable_gpus * self.price_per_gpu_hour

    def to_dict(self) -> dict:
        return {"currency": self.currency, "price_per_gpu_hour": self.price_per_gpu_hour, "total": self.total,
                "provider": self.provider, "instance": self.instance, "pricing": self.pricing,
                "as_of": self.as_of, "billable_gpus": self.billable_gpus, "gpu_hours": self.gpu_hours,
                "retry_factor": self.retry_factor, "per_hour": self.per_hour, "source": self.source,
                "notes": list(self.notes)}

    def chain(self) -> list[tuple[str, float, str]]:
        """(label, value, formula) rows: GPU-hours -> money."""
        who = f"{self.provider} {self.instance}".strip() or "given"
        rows = [("price per GPU-hour", self.price_per_gpu_hour,
                 f"{who}, {self.pricing}, as of {self.as_of or 'unknown'} ({self.currency})"),
                ("billable GPU-hours", self.gpu_hours * self.retry_factor,
                 f"{self.gpu_hours:.4g} GPU-hours ({self.billable_gpus} billable GPUs)"
                 + (f" x retry factor {self.retry_factor:g}" if self.retry_factor != 1.0 else ""))]
        rows.append(("cost", self.total, f"{self.gpu_hours * self.retry_factor:.4g} GPU-hours x "
                                          f"{self.price_per_gpu_hour:g} {self.currency}"))
        return rows


def choose_offer(gpu_id: str, *, provider: str | None = None, spot: bool = False, currency: str | None = None,
                 today: datetime.date | None = None) -> tuple[PriceOffer, list[str]]:
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
    today = today or datetime.date.today()
    if catalog.is_stale(best, today, STALE_AFTER_DAYS):
        when = "of unknown date" if catalog.offer_date(best) is None else f"from {best.as_of}"
        notes.append(f"stale price: {best.provider} {best.gpu_id} offer is {when}, more than a year "
                     f"before {today.isoformat()} or undated; check the provider's current price")
    return best, notes


def estimate_cost(*, total_s: float, num_gpus: int, gpu_id: str, retry_factor: float = 1.0,
                  price_per_gpu_hour: float | None = None, currency: str | None = None,
                  gpus_per_instance: int | None = None, provider: str | None = None, spot: bool = False,
                  today: datetime.date | None = None) -> CostEstimate:
    """The bill for `total_s` seconds (one attempt) on `num_gpus` GPUs of `gpu_id`.

    A given price wins over the catalog; with neither, the cheapest catalog offer for the GPU.
    """
    if total_s < 0:
        raise TrainplanError(f"training time must not be negative, got {total_s}")
    if retry_factor < 1.0:
        raise TrainplanError(f"--retry-factor must be at least 1, got {retry_factor}")
    notes: list[str] = []
    if price_per_gpu_hour is not None:
        price = check_price(price_per_gpu_hour)
        if provider:
            notes.append(f"--price-per-gpu-hour given: the {provider} catalog price is not used")
        cur = (currency or DEFAULT_CURRENCY).upper()
        if not currency:
            notes.append(f"no --currency given: {DEFAULT_CURRENCY} assumed")
        per_instance = gpus_per_instance or 1
        offer_fields = {"provider": "", "instance": f"{per_instance}-GPU instance" if per_instance > 1 else "",
                        "pricing": "given", "as_of": "", "source": "user"}
    else:
        offer, more = choose_offer(gpu_id, provider=provider, spot=spot, currency=currency, today=today)
        notes += more
        price, cur = offer.price_per_gpu_hour, offer.currency
        per_instance = gpus_per_instance or offer.gpus_per_instance
        offer_fields = {"provider": offer.provider, "instance": offer.instance, "pricing": offer.pricing,
                        "as_of": offer.as_of, "source": offer.source}
    billable = billable_gpus(num_gpus, per_instance)
    if billable > num_gpus:
        notes.append(f"{per_instance}-GPU instances rent whole: {billable} GPUs billed for {num_gpus} used")
    gpu_hours = total_s / SECONDS_PER_HOUR * billable
    if retry_factor != 1.0:
        notes.append(f"cost includes the retry factor {retry_factor:g}")
    return CostEstimate(currency=cur, price_per_gpu_hour=price, total=gpu_hours * price * retry_factor,
                        billable_gpus=billable, gpu_hours=gpu_hours, retry_factor=retry_factor,
                        notes=tuple(notes), **offer_fields)


def cost_of(time, gpu_id: str, **price) -> CostEstimate:
    """Convenience: the bill for a trainplan.timing.TimeEstimate (its total_s, GPUs, retry factor)."""
    return estimate_cost(total_s=time.total_s, num_gpus=time.num_gpus, gpu_id=gpu_id,
                         retry_factor=time.retry_factor, **price)
