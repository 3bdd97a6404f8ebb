"""Currencies and conversion: a dated rate table (catalog/data/rates.toml, overridable by a price
file's [[rate]] entries), names users type for a currency (RMB -> CNY), and conversion through USD.

amount_in_B = amount_in_A / (A per USD) x (B per USD). Every converted number carries its
Conversion: the rates used, their dates and sources, so the output can say "at 6.9843 CNY/USD
(CFETS central parity rate, 2026-01-26)".
"""

from __future__ import annotations

from trainplan.catalog import iso_date
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.specs import CurrencySpec, Rate
from trainplan.units import date

BASE = "USD"
DEFAULT_CURRENCY = BASE
RATE_STALE_AFTER_DAYS = 180       # exchange rates move a few percent in half a year


def _key(name: str) -> str:
    return name.strip().casefold()


@frozen
class Rates:
    """The currencies known and their rates per USD (USD itself is 1 by definition)."""

    currencies: tuple[CurrencySpec, ...]
    rates: tuple[Rate, ...]

    def code(self, name: str) -> str:
        """The ISO code of `name` (a code, a name or an alias such as RMB, case-insensitive);
        TrainplanError naming the known ones otherwise."""
        if not isinstance(name, str) or not name.strip():
            raise TrainplanError(f"currency must be a code such as USD or CNY, got {name!r}")
        key = _key(name)
        for spec in self.currencies:
            if key in (_key(spec.code), _key(spec.name), *(_key(a) for a in spec.aliases)):
                return spec.code
        for rate in self.rates:
            if key == _key(rate.currency):
                return rate.currency
        known = ", ".join(s.code for s in self.currencies)
        raise TrainplanError(f"unknown currency '{name.strip()}'; known: {known}, or their names and aliases "
                             "(`trainplan rates`; a price file's [[rate]] adds another)")

    def rate(self, code: str) -> Rate | None:
        """The newest-wins rate of `code` (the last entry given: overrides come after the catalog's)."""
        found = None
        for rate in self.rates:
            if rate.currency == code:
                found = rate
        return found

    def market(self, code: str) -> str:
        return next((s.market for s in self.currencies if s.code == code), "global")

    def with_rates(self, extra: tuple[Rate, ...]) -> Rates:
        """These rates with `extra` taking precedence (a price file's own rates)."""
        known = [s.code for s in self.currencies]
        added = []
        for rate in extra:
            if rate.currency not in known:
                known.append(rate.currency)
                added.append(CurrencySpec(code=rate.currency))
        return Rates(currencies=self.currencies + tuple(added), rates=self.rates + extra)


@frozen
class Conversion:
    """amount in `to_currency` = amount in `from_currency` x factor, from the rates used."""

    from_currency: str
    to_currency: str
    factor: float
    rates: tuple[Rate, ...]         # the non-USD rates used (one, or two for a cross rate)

    def describe(self) -> str:
        parts = [f"{r.per_usd:g} {r.currency}/USD ({r.basis or 'rate'}, {r.as_of}"
                 + ("" if r.origin == "catalog" else f", from {r.origin}") + ")" for r in self.rates]
        return " and ".join(parts)

    def stale_rates(self, today: date) -> tuple[Rate, ...]:
        return tuple(r for r in self.rates if rate_is_stale(r, today))

    def to_dict(self) -> dict:
        return {"from": self.from_currency, "to": self.to_currency, "factor": self.factor,
                "rates": [{"currency": r.currency, "per_usd": r.per_usd, "as_of": r.as_of, "basis": r.basis,
                           "source": r.source, "origin": r.origin} for r in self.rates]}


def rate_is_stale(rate: Rate, today: date) -> bool:
    when = iso_date(rate.as_of)
    return when is None or (today - when).days > RATE_STALE_AFTER_DAYS


def conversion(from_currency: str, to_currency: str, rates: Rates) -> Conversion | None:
    """How to turn `from_currency` into `to_currency` (None when they are the same)."""
    if from_currency == to_currency:
        return None
    used = []
    factor = 1.0
    for code, leg in ((from_currency, "from"), (to_currency, "to")):
        if code == BASE:
            continue
        rate = rates.rate(code)
        if rate is None:
            raise TrainplanError(f"no exchange rate for {code}: add a [[rate]] (currency, per_usd, as_of, source) "
                                 "to a price file")
        used.append(rate)
        factor = factor / rate.per_usd if leg == "from" else factor * rate.per_usd
    return Conversion(from_currency=from_currency, to_currency=to_currency, factor=factor, rates=tuple(used))


def stale_note(conv: Conversion, today: date) -> str | None:
    old = conv.stale_rates(today)
    if not old:
        return None
    what = ", ".join(f"{r.currency} {r.as_of}" for r in old)
    return (f"stale exchange rate ({what}): older than {RATE_STALE_AFTER_DAYS} days on {today.isoformat()}; "
            "set a current one with a [[rate]] in a price file (--prices)")


def check_code(code: str) -> str:
    """A new currency code (in a [[rate]] entry): three letters, upper-cased."""
    text = code.strip().upper() if isinstance(code, str) else ""
    if not (len(text) == 3 and text.isascii() and text.isalpha()):
        raise TrainplanError(f"currency code must be three letters such as CNY, got {code!r}")
    return text
