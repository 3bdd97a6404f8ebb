"""The rental bill: wall-clock x billable GPUs x price per GPU-hour x retry factor.

total = total_s / 3600 x billable_gpus x price_per_gpu_hour x retry_factor,
billable_gpus = ceil(num_gpus / gpus_per_instance) x gpus_per_instance (an 8-GPU instance is rented
whole). The price is a Pricing (cost/prices.py: a catalog offer with its as_of date, or a given
price), chosen before the bill is made; nothing here looks anything up.
Without a run length (no --samples) there is no total, only the cost per hour, per step and per
million tokens. The seed article's chain: 27.08 CNY/h x 3 h (1 A100, retries included) = 81.24 CNY.
"""

from __future__ import annotations

import math

from trainplan.cost.currency import Conversion
from trainplan.cost.prices import Pricing
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.units import SECONDS_PER_HOUR


def billable_gpus(num_gpus: int, gpus_per_instance: int = 1) -> int:
    """GPUs paid for: whole instances, ceil(num_gpus / gpus_per_instance) x gpus_per_instance."""
    if num_gpus <= 0:
        raise TrainplanError(f"--num-gpus must be positive, got {num_gpus}")
    if gpus_per_instance <= 0:
        raise TrainplanError(f"GPUs per instance must be positive, got {gpus_per_instance}")
    return math.ceil(num_gpus / gpus_per_instance) * gpus_per_instance


@frozen
class CostEstimate:
    """The bill for one run (retries included). Keys of PRODUCT.md's `cost` JSON and more.
    `total` is None when the run's length is unknown (no --samples): per hour, per step and per
    million tokens are still known."""

    currency: str
    price_per_gpu_hour: float
    total: float | None
    provider: str                 # "" when the price was given directly
    instance: str
    pricing: str                  # the source's pricing model (on-demand, capacity-block, ...) or "given"
    as_of: str
    billable_gpus: int
    gpu_hours: float              # billable GPU-hours of one attempt (0 when the run's length is unknown)
    retry_factor: float
    source: str
    notes: tuple[str, ...]
    kind: str = "given"           # PriceKind value, or "given"
    origin: str = "given"         # catalog, a price file, --price, --price-per-gpu-hour
    per_step: float | None = None
    per_million_tokens: float | None = None
    for_reference: bool = False   # the setup does not fit: the bill of a run that cannot happen as is
    conversion: Conversion | None = None

    @property
    def per_hour(self) -> float:
        """What the rented GPUs cost per wall-clock hour."""
        return self.billable_gpus * self.price_per_gpu_hour

    def to_dict(self) -> dict:
        return {"currency": self.currency, "price_per_gpu_hour": self.price_per_gpu_hour, "total": self.total,
                "provider": self.provider, "instance": self.instance, "pricing": self.pricing, "kind": self.kind,
                "origin": self.origin, "as_of": self.as_of, "billable_gpus": self.billable_gpus,
                "gpu_hours": self.gpu_hours, "retry_factor": self.retry_factor, "per_hour": self.per_hour,
                "per_step": self.per_step, "per_million_tokens": self.per_million_tokens,
                "for_reference": self.for_reference,
                "conversion": None if self.conversion is None else self.conversion.to_dict(),
                "source": self.source, "notes": list(self.notes)}

    def chain(self) -> list[tuple[str, float, str, str]]:
        """(label, value, unit, formula) rows: price -> per hour -> per step -> the run."""
        cur = self.currency
        who = f"{self.provider} {self.instance}".strip() or self.origin
        rows = [("price per GPU-hour", self.price_per_gpu_hour, f"{cur}/GPU-h",
                 f"{who}, {self.kind}, as of {self.as_of or 'unknown'}"
                 + (f"; converted from {self.conversion.from_currency}" if self.conversion else "")),
                ("cost per hour", self.per_hour, f"{cur}/h",
                 f"{self.billable_gpus} billable GPUs x {self.price_per_gpu_hour:.4g} {cur}")]
        if self.per_step is not None:
            rows.append(("cost per step", self.per_step, cur, f"step time x {self.per_hour:.4g} {cur}/h / 3600"))
        if self.per_million_tokens is not None:
            rows.append(("cost per million tokens", self.per_million_tokens, cur,
                         "cost per step / tokens per step x 1e6"))
        if self.total is None:
            return rows
        rows.append(("billable GPU-hours", self.gpu_hours * self.retry_factor, "GPU-h",
                     f"{self.gpu_hours:.4g} GPU-hours ({self.billable_gpus} billable GPUs)"
                     + (f" x retry factor {self.retry_factor:g}" if self.retry_factor != 1.0 else "")))
        rows.append(("cost", self.total, cur, f"{self.gpu_hours * self.retry_factor:.4g} GPU-hours x "
                                              f"{self.price_per_gpu_hour:.4g} {cur}"))
        return rows


def billed_gpu_hours(total_s: float, billable: int) -> float:
    """GPU-hours paid for `total_s` seconds of `billable` GPUs (one attempt)."""
    return total_s / SECONDS_PER_HOUR * billable


def billed_total(gpu_hours: float, price_per_gpu_hour: float, retry_factor: float) -> float:
    """The bill: GPU-hours x price x retry factor."""
    return gpu_hours * price_per_gpu_hour * retry_factor


def bill_of(total_s: float, num_gpus: int, pricing: Pricing, retry_factor: float = 1.0) -> float:
    """estimate_cost(...).total alone (no notes, no record): what the planner ranks by."""
    return billed_total(billed_gpu_hours(total_s, billable_gpus(num_gpus, pricing.gpus_per_instance)),
                        pricing.price_per_gpu_hour, retry_factor)


def estimate_cost(*, total_s: float, num_gpus: int, pricing: Pricing, retry_factor: float = 1.0,
                  step_s: float | None = None, tokens_per_step: float | None = None, has_total: bool = True,
                  for_reference: bool = False) -> CostEstimate:
    """The bill for `total_s` seconds (one attempt) on `num_gpus` GPUs at `pricing`; per step and per
    million tokens when the step is given; no total when `has_total` is False (length unknown)."""
    if total_s < 0:
        raise TrainplanError(f"training time must not be negative, got {total_s}")
    if retry_factor < 1.0:
        raise TrainplanError(f"--retry-factor must be at least 1, got {retry_factor}")
    notes = list(pricing.notes)
    per_instance = pricing.gpus_per_instance
    billable = billable_gpus(num_gpus, per_instance)
    if billable > num_gpus:
        notes.append(f"{per_instance}-GPU instances rent whole: {billable} GPUs billed for {num_gpus} used")
    per_hour = billable * pricing.price_per_gpu_hour
    per_step = None if step_s is None else step_s / SECONDS_PER_HOUR * per_hour
    per_mtok = None if per_step is None or not tokens_per_step else per_step / tokens_per_step * 1e6
    gpu_hours = billed_gpu_hours(total_s, billable) if has_total else 0.0
    if has_total and retry_factor != 1.0:
        notes.append(f"cost includes the retry factor {retry_factor:g}")
    if not has_total:
        notes.append("no --samples given: cost per hour, per step and per million tokens only (give --samples "
                     "and --epochs for the run's cost)")
    if for_reference:
        notes.append("does not fit: cost shown for reference")
    return CostEstimate(currency=pricing.currency, price_per_gpu_hour=pricing.price_per_gpu_hour,
                        total=billed_total(gpu_hours, pricing.price_per_gpu_hour, retry_factor) if has_total else None,
                        provider=pricing.provider, instance=pricing.instance, pricing=pricing.pricing,
                        as_of=pricing.as_of, billable_gpus=billable, gpu_hours=gpu_hours, retry_factor=retry_factor,
                        source=pricing.source, notes=tuple(notes), kind=pricing.kind_label, origin=pricing.origin,
                        per_step=per_step, per_million_tokens=per_mtok, for_reference=for_reference,
                        conversion=pricing.conversion)


def cost_of(time, pricing: Pricing, *, fits: bool = True) -> CostEstimate:
    """The bill for a trainplan.timing TimeEstimate (its total_s, GPUs, retry factor; per step and per
    million tokens from its step; no total when it has no steps, i.e. no --samples)."""
    return estimate_cost(total_s=time.total_s, num_gpus=time.num_gpus, pricing=pricing,
                         retry_factor=time.retry_factor, step_s=time.step_s, tokens_per_step=time.tokens_per_step,
                         has_total=bool(time.steps), for_reference=not fits)
