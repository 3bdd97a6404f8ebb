"""Which price a bill is made at. The PriceBook (cost/sources.py builds it at the edge) holds every
place a price can come from, in the order they are asked: a price for every GPU
(--price-per-gpu-hour), per-GPU prices (--price GPU=AMOUNT), price files (--prices, then
$TRAINPLAN_PRICES, the team's trainplan-prices.toml, the user's prices.toml), then the catalog.

`resolve_pricing` takes the first source that prices the GPU in the kind asked (on-demand unless
--price-kind / --spot says otherwise), its cheapest offer there (typical listings before a
crawler's lowest listing, offers in the bill's currency before converted ones), converted with the
dated rate table when it is in another currency. Nothing is looked up after the book is built:
the catalog source reads the catalog's offers of one GPU, cached.
"""

from __future__ import annotations

import math

from trainplan import catalog
from trainplan.cost.currency import DEFAULT_CURRENCY, Conversion, Rates, conversion, stale_note
from trainplan.enums import PriceKind
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.specs import PriceOffer
from trainplan.units import date

STALE_AFTER_DAYS = 365
__all__ = ["DEFAULT_CURRENCY", "NoPriceError", "PriceBook", "PriceSource", "Pricing", "check_price",
           "given_pricing", "offer_pricing", "resolve_pricing"]


class NoPriceError(TrainplanError):
    """No source prices this GPU (in the kind asked): memory and time go on without a bill.
    `short`: the same in a few words, for a ranking's list of GPU types left out."""

    def __init__(self, message: str, short: str = "") -> None:
        super().__init__(message)
        self.short = short or message


@frozen
class PriceSource:
    """One place prices come from: offers read from a file or given, or the catalog (offers None)."""

    origin: str                                  # "catalog", "price file ./trainplan-prices.toml", ...
    offers: tuple[PriceOffer, ...] | None = None

    def offers_for(self, gpu_id: str) -> tuple[PriceOffer, ...]:
        if self.offers is None:
            return catalog.gpu_offers(gpu_id)
        return tuple(o for o in self.offers if o.gpu_id == gpu_id)


CATALOG = PriceSource(origin="catalog")


@frozen
class PriceBook:
    """Every source of prices in the order asked, the rate table, the currency bills are in, and the
    kind of price compared."""

    sources: tuple[PriceSource, ...] = (CATALOG,)
    rates: Rates | None = None                   # None: the catalog's (read when first needed)
    currency: str = DEFAULT_CURRENCY
    currency_origin: str = "default"             # --currency, $TRAINPLAN_CURRENCY, the user config, default
    kind: PriceKind = PriceKind.ON_DEMAND
    any_kind: bool = False                       # --price-kind any: compare every kind
    kind_origin: str = "default"
    provider: str | None = None                  # canonical name, or as a price file spells it
    flat_price: float | None = None              # --price-per-gpu-hour: every GPU type at this price
    given: tuple[tuple[str, float], ...] = ()    # --price GPU=AMOUNT: (GPU id, price in `currency`)

    @property
    def kind_label(self) -> str:
        return "every kind" if self.any_kind else self.kind.value

    def rate_table(self) -> Rates:
        return self.rates if self.rates is not None else catalog_rates()

    def user_sources(self) -> tuple[PriceSource, ...]:
        return tuple(s for s in self.sources if s.offers is not None)


def catalog_rates() -> Rates:
    currencies, rates = catalog.load_rates()
    return Rates(currencies=currencies, rates=rates)


@frozen
class Pricing:
    """The price per GPU-hour a bill is made at (in `currency`), where it comes from and how it was chosen."""

    price_per_gpu_hour: float
    currency: str
    gpus_per_instance: int = 1        # instances rent whole: bills round up to whole instances
    provider: str = ""                # "" when the price was given directly
    instance: str = ""
    pricing: str = "given"            # the source's pricing model (on-demand, capacity-block, ...) or "given"
    kind: PriceKind | None = None     # None: a price the user gave, which counts as any kind
    as_of: str = ""
    source: str = "user"
    origin: str = "given"             # catalog, a price file, --price, --price-per-gpu-hour
    notes: tuple[str, ...] = ()       # which offer was chosen, stale prices, conversions
    offer: PriceOffer | None = None   # the offer, when the price is one
    conversion: Conversion | None = None   # the offer's currency -> `currency`

    def __post_init__(self) -> None:
        check_price(self.price_per_gpu_hour)
        if not isinstance(self.gpus_per_instance, int) or self.gpus_per_instance <= 0:
            raise TrainplanError(f"GPUs per instance must be positive, got {self.gpus_per_instance!r}")

    @property
    def from_catalog(self) -> bool:
        return self.origin == "catalog"

    @property
    def kind_label(self) -> str:
        return "given" if self.kind is None else self.kind.value


def check_amount(value: object, where: str) -> float:
    """A price per GPU-hour: a finite number, zero or more."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise TrainplanError(f"{where} must be a number, zero or more, got {value!r}")
    return float(value)


def check_price(price_per_gpu_hour: float) -> float:
    return check_amount(price_per_gpu_hour, "--price-per-gpu-hour")


def given_pricing(price_per_gpu_hour: float, currency: str | None = None, *, gpus_per_instance: int | None = None,
                  provider: str | None = None, origin: str = "--price-per-gpu-hour") -> Pricing:
    """A price the user gave (in `currency`, USD when not said), billed per GPU unless instances are given."""
    price = check_price(price_per_gpu_hour)
    notes = []
    if provider:
        notes.append(f"{origin} given: the {provider} catalog price is not used")
    if not currency:
        notes.append(f"no --currency given: {DEFAULT_CURRENCY} assumed")
    code = catalog_rates().code(currency) if currency else DEFAULT_CURRENCY
    per_instance = gpus_per_instance or 1
    return Pricing(price_per_gpu_hour=price, currency=code, gpus_per_instance=per_instance,
                   instance=f"{per_instance}-GPU instance" if per_instance > 1 else "", origin=origin,
                   notes=tuple(notes))


def offer_pricing(offer: PriceOffer, notes: tuple[str, ...] = (), *, currency: str | None = None,
                  rates: Rates | None = None, today: date | None = None) -> Pricing:
    """The bill's price for `offer`, converted to `currency` (default: the offer's) with `rates`."""
    code = currency or offer.currency
    conv = conversion(offer.currency, code, rates or catalog_rates())
    price = offer.price_per_gpu_hour if conv is None else offer.price_per_gpu_hour * conv.factor
    extra = []
    if conv is not None:
        extra.append(f"converted: {offer.price_per_gpu_hour:g} {offer.currency} x {conv.factor:.6g} = {price:.4g} "
                     f"{code} per GPU-hour at {conv.describe()}")
        old = stale_note(conv, today) if today is not None else None
        if old:
            extra.append(old)
    return Pricing(price_per_gpu_hour=price, currency=code, gpus_per_instance=offer.gpus_per_instance,
                   provider=offer.provider, instance=offer.instance, pricing=offer.pricing, kind=offer.kind,
                   as_of=offer.as_of, source=offer.source, origin=offer.origin, notes=tuple(notes) + tuple(extra),
                   offer=offer, conversion=conv)


def _provider_key(name: str) -> str:
    return name.strip().casefold()


def _matches_provider(offer: PriceOffer, provider: str | None) -> bool:
    return provider is None or _provider_key(offer.provider) == _provider_key(provider)


def _converted(o: PriceOffer, book: PriceBook, rates: Rates) -> float:
    conv = conversion(o.currency, book.currency, rates)
    return o.price_per_gpu_hour * (1.0 if conv is None else conv.factor)


def _best(offers: list[PriceOffer], book: PriceBook, rates: Rates, today: date) -> PriceOffer:
    """Typical listings before a crawler's lowest listing, dated offers before stale or undated
    ones, offers in the bill's currency before converted ones, then the cheapest after conversion."""
    return min(offers, key=lambda o: (o.pricing in catalog.ATYPICAL_PRICING,
                                      catalog.is_stale(o, today, STALE_AFTER_DAYS), o.currency != book.currency,
                                      _converted(o, book, rates), o.provider, o.instance))


def _choice_note(o: PriceOffer, offers: list[PriceOffer], source: PriceSource, book: PriceBook, rates: Rates,
                 today: date) -> list[str]:
    where = o.region or "region n/a"
    who = f"{o.provider} {o.instance}".strip() or source.origin
    cheaper = sum(_converted(x, book, rates) < _converted(o, book, rates) for x in offers)
    if len(offers) == 1:
        among = ""
    elif cheaper == 0:
        among = f", the cheapest of {len(offers)} matching {o.kind.value} offers"
    else:
        among = (f", preferred to {cheaper} cheaper of {len(offers)} matching offers (a crawler's lowest listing, "
                 f"stale, or in another currency than {book.currency})")
    notes = [f"price: {who} ({o.kind.value}" + (f", {o.pricing}" if o.pricing != o.kind.value else "")
             + f", {where}), {o.price_per_gpu_hour:g} {o.currency}/GPU-hour as of {o.as_of}{among}"
             + ("" if source.offers is None else f" (from {source.origin})")]
    if catalog.is_stale(o, today, STALE_AFTER_DAYS):
        when = "of unknown date" if catalog.offer_date(o) is None else f"from {o.as_of}"
        notes.append(f"stale price: {o.provider or source.origin} {o.gpu_id} offer is {when}, more than a year "
                     f"before {today.isoformat()} or undated; check the current price")
    if o.pricing in catalog.ATYPICAL_PRICING:
        notes.append(f"{o.gpu_id}: {o.price_per_gpu_hour:g} {o.currency} is the lowest listing a crawler saw on a "
                     "marketplace, not a price to count on")
    return notes


def resolve_pricing(gpu_id: str, book: PriceBook, *, today: date, strict: bool = False) -> Pricing:
    """The price of `gpu_id` from the first source that has one of the kind asked. Not strict (one
    estimate): when no source has that kind, the first source's other kinds, with a note. Strict
    (rankings): NoPriceError, so that one kind is compared. NoPriceError says how to give a price."""
    if book.flat_price is not None:
        return given_pricing(book.flat_price, book.currency if book.currency_origin != "default" else None,
                             provider=book.provider)
    for gid, price in book.given:
        if gid == gpu_id:
            notes = ((f"--price given for {gpu_id}: the {book.provider} catalog price is not used",)
                     if book.provider else ())
            return Pricing(price_per_gpu_hour=price, currency=book.currency, origin="--price", notes=notes,
                           source="--price")
    rates = book.rate_table()
    fallback: tuple[PriceSource, list[PriceOffer]] | None = None
    for source in book.sources:
        offers = [o for o in source.offers_for(gpu_id) if _matches_provider(o, book.provider)]
        if not offers:
            continue
        of_kind = offers if book.any_kind else [o for o in offers if o.kind is book.kind]
        if of_kind:
            offer = _best(of_kind, book, rates, today)
            return offer_pricing(offer, tuple(_choice_note(offer, of_kind, source, book, rates, today)),
                                 currency=book.currency, rates=rates, today=today)
        if fallback is None:
            fallback = (source, offers)
    if fallback is not None and not strict:
        source, offers = fallback
        offer = _best(offers, book, rates, today)
        note = (f"no {book.kind.value} price for {gpu_id}" + (f" at {book.provider}" if book.provider else "")
                + f": the {offer.kind.value} price is used (give --price-kind to choose)")
        return offer_pricing(offer, (note, *_choice_note(offer, offers, source, book, rates, today)),
                             currency=book.currency, rates=rates, today=today)
    raise missing_price(gpu_id, book, fallback[1] if fallback else ())


def missing_price(gpu_id: str, book: PriceBook, other_kinds: list[PriceOffer] | tuple = ()) -> NoPriceError:
    """What to say when nothing prices `gpu_id`: what is missing and the ways to give it."""
    from trainplan.settings import TEAM_PRICES_FILE, USER_PRICES_FILE, config_dir

    where = f" at {book.provider}" if book.provider else ""
    kinds = sorted({o.kind.value for o in other_kinds})
    also = f" (only {', '.join(kinds)} prices are known: --price-kind {kinds[0]} or any)" if kinds else ""
    try:
        short = next((a for a in catalog.resolve_gpu(gpu_id).aliases if len(a) <= 6), gpu_id)
    except TrainplanError:      # a GPU given as a spec, not in the catalog
        short = gpu_id
    head = f"no {book.kind_label} price for {gpu_id}{where}{also}"
    return NoPriceError(
        f"{head}: give --price {short}=AMOUNT (per GPU-hour, in {book.currency}) or a price file (--prices FILE, "
        f"$TRAINPLAN_PRICES, {TEAM_PRICES_FILE} in the training repo, or {config_dir()}/{USER_PRICES_FILE}); "
        f"`trainplan prices --gpu {short}` lists the catalog's",
        short=f"no {book.kind_label} price{where}{also}; give --price {short}=AMOUNT or a price file")


def with_currency(book: PriceBook, currency: str) -> PriceBook:
    return replace(book, currency=book.rate_table().code(currency))
