"""The PriceBook of what a user said: their flags, their price files and settings (the edge of the
money stage: it reads files and the environment; cost/prices.py then looks nothing up).

Sources, first asked first: --price-per-gpu-hour, --price GPU=AMOUNT, --prices FILE,
$TRAINPLAN_PRICES, the team's trainplan-prices.toml (working directory up to the repository root),
the user's <config dir>/prices.toml, the catalog. Exchange rates: a price file's [[rate]] over the
catalog's, the file asked first winning. Currency: --currency, $TRAINPLAN_CURRENCY, the user
config's `currency`, USD. Kind compared: --price-kind, --spot, the user config's `price_kind`,
on-demand.
"""

from __future__ import annotations

import functools
import os

from trainplan import catalog, settings
from trainplan.cost.currency import DEFAULT_CURRENCY, Rates
from trainplan.cost.prices import CATALOG, PriceBook, PriceSource, catalog_rates, check_amount
from trainplan.enums import PriceKind
from trainplan.errors import TrainplanError, UnknownNameError
from trainplan.frozen import replace
from trainplan.specs import PriceOffer


@functools.lru_cache(maxsize=32)
def _read(path: str, mtime_ns: int, size: int, origin: str):
    from trainplan.cost.pricefile import read_price_file  # TOML and the file format: only for a file

    return read_price_file(path, catalog_rates(), origin=origin)


def load_price_file(path: str, origin: str):
    """A price file, parsed once per version of it (path, modification time and size)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TrainplanError(f"price file not found: {path!r}") from None
    except ValueError:          # a NUL character in the name
        raise TrainplanError(f"price file {path!r}: a file name cannot hold a NUL character") from None
    except OSError as exc:
        raise TrainplanError(f"cannot read price file {path}: {exc.strerror or exc}") from None
    return _read(os.path.abspath(path), st.st_mtime_ns, st.st_size, origin)


def price_files(prices: str | None) -> list[tuple[str, str]]:
    """(path, origin) of every price file that applies, first asked first."""
    found = []
    if prices:
        found.append((os.path.expanduser(prices), f"price file {prices}"))
    found += [(p, f"price file {p} (${settings.PRICES_ENV})") for p in settings.env_price_files()]
    team = settings.team_price_file()
    if team:
        found.append((team, f"team price file {team}"))
    user = settings.user_price_file()
    if user:
        found.append((user, f"user price file {user}"))
    seen: set[str] = set()
    out = []
    for path, origin in found:
        key = os.path.abspath(path)
        if key not in seen:
            seen.add(key)
            out.append((path, origin))
    return out


def _currency(currency: str | None, rates: Rates) -> tuple[str, str]:
    if currency:
        return rates.code(currency), "--currency"
    env = os.environ.get(settings.CURRENCY_ENV, "").strip()
    if env:
        try:
            return rates.code(env), f"${settings.CURRENCY_ENV}"
        except TrainplanError as exc:
            raise TrainplanError(f"${settings.CURRENCY_ENV}: {exc}") from None
    config = settings.user_config()
    if config.currency:
        try:
            return rates.code(config.currency), f"user config {config.path}"
        except TrainplanError as exc:
            raise TrainplanError(f"user config {config.path}: {exc}") from None
    return DEFAULT_CURRENCY, "default"


def _kind(price_kind: str | None, spot: bool) -> tuple[PriceKind, bool, str]:
    """(kind, any kind?, where it was said)."""
    said, origin = price_kind, "--price-kind"
    if not said and spot:
        return PriceKind.SPOT, False, "--spot"
    if not said:
        config = settings.user_config()
        said, origin = config.price_kind, f"user config {config.path}"
    if not said:
        return PriceKind.ON_DEMAND, False, "default"
    if said.strip().lower() == "any":
        return PriceKind.ON_DEMAND, True, origin
    from trainplan.cost.pricefile import parse_kind

    return parse_kind(said, origin), False, origin


def _provider(provider: str | None, sources: list[PriceSource]) -> str | None:
    if not provider:
        return None
    try:
        return catalog.resolve_provider(provider)
    except UnknownNameError:
        key = provider.strip().casefold()
        for source in sources:
            if any(o.provider.strip().casefold() == key for o in source.offers or ()):
                return provider.strip()
        raise


def price_book(*, currency: str | None = None, price_kind: str | None = None, spot: bool = False,
               provider: str | None = None, price_per_gpu_hour: float | None = None,
               price: tuple[str, ...] | list[str] = (), prices: str | None = None,
               offers: tuple[PriceOffer, ...] | None = None) -> PriceBook:
    """The PriceBook of these settings and the price files that apply. `offers`: a price list given
    in code, asked before the files (the planner's tests and the API)."""
    base = catalog_rates()
    files = [load_price_file(path, origin) for path, origin in price_files(prices)]
    extra_rates = tuple(r for f in reversed(files) for r in f.rates)     # the file asked first is applied last
    rates = base.with_rates(extra_rates) if extra_rates else base
    listed = tuple(o if o.origin != "catalog" else replace(o, origin="price list") for o in offers or ())
    sources = [PriceSource(origin="price list", offers=listed)] if offers is not None else []
    sources += [PriceSource(origin=f.offers[0].origin if f.offers else f.path, offers=f.offers)
                for f in files if f.offers]
    sources.append(CATALOG)
    code, currency_origin = _currency(currency, rates)
    kind, any_kind, kind_origin = _kind(price_kind, spot)
    flat = None if price_per_gpu_hour is None else check_amount(price_per_gpu_hour, "--price-per-gpu-hour")
    given: dict[str, float] = {}
    for text in price or ():
        from trainplan.cost.pricefile import parse_given_price

        gpu_id, amount = parse_given_price(text)
        given[gpu_id] = amount          # the last --price for a GPU wins
    return PriceBook(sources=tuple(sources), rates=rates, currency=code, currency_origin=currency_origin, kind=kind,
                     any_kind=any_kind, kind_origin=kind_origin, provider=_provider(provider, sources),
                     flat_price=flat, given=tuple(given.items()))


def options_book(options, offers: tuple[PriceOffer, ...] | None = None) -> PriceBook:
    """The PriceBook of a JobOptions."""
    return price_book(currency=options.currency, price_kind=options.price_kind, spot=options.spot,
                      provider=options.provider, price_per_gpu_hour=options.price_per_gpu_hour,
                      price=options.price, prices=options.prices, offers=offers)


def market_gpus(book: PriceBook) -> frozenset[str] | None:
    """The GPU types sold in the market of the book's currency: those with a price in that currency
    in the catalog, the user's price files or --price. None when the currency's market is global
    (rates.toml `market`) or nothing is priced in it (the catalog does not know that market)."""
    rates = book.rate_table()
    if rates.market(book.currency) == "global":
        return None
    ids = {o.gpu_id for o in catalog.load_prices() if o.currency == book.currency}
    ids |= {o.gpu_id for s in book.user_sources() for o in s.offers or () if o.currency == book.currency}
    ids |= {gpu_id for gpu_id, _ in book.given}
    return frozenset(ids) or None
