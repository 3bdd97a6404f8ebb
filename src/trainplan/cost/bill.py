"""The rental bill: wall-clock x billable GPUs x price per GPU-hour x retry factor.

total = total_s / 3600 x billable_gpus x price_per_gpu_hour x retry_factor,
billable_gpus = ceil(num_gpus / gpus_per_instance) x gpus_per_instance (an 8-GPU instance is rented
whole). The price is a Pricing (cost/prices.py: a catalog offer with its as_of date, or a given
price), chosen before the bill is made; nothing here looks anything up.
The seed article's chain: 27.08 CNY/h x 3 h (1 A100, retries included) = 81.24 CNY.
"""

from __future__ import annotations

import math

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


def estimate_cost(*, total_s: float, num_gpus: int, pricing: Pricing, retry_factor: float = 1.0) -> CostEstimate:
    """The bill for `total_s` seconds (one attempt) on `num_gpus` GPUs at `pricing`."""
    if total_s < 0:
        raise TrainplanError(f"training time must not be negative, got {total_s}")
    if retry_factor < 1.0:
        raise TrainplanError(f"--retry-factor must be at least 1, got {retry_factor}")
    notes = list(pricing.notes)
    per_instance = pricing.gpus_per_instance
    billable = billable_gpus(num_gpus, per_instance)
    if billable > num_gpus:
        notes.append(f"{per_instance}-GPU instances rent whole: {billable} GPUs billed for {num_gpus} used")
    gpu_hours = total_s / SECONDS_PER_HOUR * billable
    if retry_factor != 1.0:
        notes.append(f"cost includes the retry factor {retry_factor:g}")
    return CostEstimate(currency=pricing.currency, price_per_gpu_hour=pricing.price_per_gpu_hour,
                        total=gpu_hours * pricing.price_per_gpu_hour * retry_factor, provider=pricing.provider,
                        instance=pricing.instance, pricing=pricing.pricing, as_of=pricing.as_of,
                        billable_gpus=billable, gpu_hours=gpu_hours, retry_factor=retry_factor,
                        source=pricing.source, notes=tuple(notes))


def cost_of(time, pricing: Pricing) -> CostEstimate:
    """The bill for a trainplan.timing TimeEstimate (its total_s, GPUs, retry factor)."""
    return estimate_cost(total_s=time.total_s, num_gpus=time.num_gpus, pricing=pricing,
                         retry_factor=time.retry_factor)
