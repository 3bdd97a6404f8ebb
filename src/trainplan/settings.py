"""Where a user's and a team's own settings live, read at the edge (standard library only, no
pathlib: a one-shot `trainplan estimate` looks these up).

- config directory: $TRAINPLAN_CONFIG_DIR, else the user config directory (on Linux what
  platformdirs' user_config_dir("trainplan") gives: $XDG_CONFIG_HOME/trainplan, else
  ~/.config/trainplan; elsewhere platformdirs when installed, else the same XDG rule)
- <config dir>/config.toml: the user's defaults, `currency = "CNY"` and `price_kind = "spot"`
- <config dir>/prices.toml: the user's price file
- trainplan-prices.toml in the working directory or a parent up to the repository root: the team's
  price file, kept beside the training code
- $TRAINPLAN_PRICES: more price files (os.pathsep-separated); $TRAINPLAN_CURRENCY: the currency
"""

from __future__ import annotations

import functools
import os
import sys

from trainplan.errors import TrainplanError
from trainplan.frozen import frozen

CONFIG_DIR_ENV = "TRAINPLAN_CONFIG_DIR"
PRICES_ENV = "TRAINPLAN_PRICES"
CURRENCY_ENV = "TRAINPLAN_CURRENCY"
USER_CONFIG_FILE = "config.toml"
USER_PRICES_FILE = "prices.toml"
TEAM_PRICES_FILE = "trainplan-prices.toml"
CONFIG_KEYS = ("currency", "price_kind")


def user_dir(kind: str, env: str) -> str:
    """A per-user directory of trainplan's: $`env` when set; else on Linux what platformdirs'
    user_<kind>_dir("trainplan") gives ($XDG_<KIND>_HOME/trainplan, else ~/.local/share/trainplan for
    data and ~/.config/trainplan for config), computed without importing it; elsewhere platformdirs
    when installed, else the same XDG rule. kind: "data" or "config"."""
    given = os.environ.get(env)
    if given:
        return os.path.expanduser(given)
    if not sys.platform.startswith("linux"):
        try:
            import platformdirs
        except ImportError:
            pass
        else:
            return getattr(platformdirs, f"user_{kind}_dir")("trainplan", appauthor=False)
    fallback = os.path.join("~", ".local", "share") if kind == "data" else os.path.join("~", ".config")
    base = os.environ.get(f"XDG_{kind.upper()}_HOME", "").strip() or os.path.expanduser(fallback)
    return os.path.join(base, "trainplan")


def config_dir() -> str:
    return user_dir("config", CONFIG_DIR_ENV)


def parse_toml(raw: bytes, what: str, path: str) -> dict:
    """TOML text as a dict; one-line TrainplanError naming the file when it is not valid TOML."""
    import tomllib  # only when such a file is read

    from trainplan.safeio import check_depth

    try:
        return check_depth(tomllib.loads(raw.decode("utf-8")), what=what, path=path)
    except UnicodeDecodeError:
        raise TrainplanError(f"malformed {what} {path!r}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise TrainplanError(f"malformed {what} {path!r}: {exc}") from None
    except RecursionError:      # tomllib recurses per nesting level of arrays and inline tables
        raise TrainplanError(f"malformed {what} {path!r}: nested too deep") from None


def read_bytes(path: str, what: str) -> bytes:
    """A file's bytes; one-line TrainplanError naming `what` and the file when it cannot be read, is
    not a regular file (a FIFO would block) or is over the config size limit (trainplan.safeio)."""
    from trainplan.safeio import CONFIG_LIMIT_BYTES, read_user_bytes  # only when such a file is read

    return read_user_bytes(path, what=what, limit_bytes=CONFIG_LIMIT_BYTES)


def read_toml(path: str, what: str) -> dict:
    """A TOML file's content; one-line TrainplanError naming the file when it cannot be read or parsed."""
    return parse_toml(read_bytes(path, what), what, path)


@frozen
class UserConfig:
    """The user's defaults (None: not set) and the file they came from."""

    currency: str | None = None
    price_kind: str | None = None
    path: str = ""


@functools.lru_cache(maxsize=8)
def _user_config(path: str, mtime_ns: int) -> UserConfig:
    data = read_toml(path, "user config")
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise TrainplanError(f"user config {path}: unknown setting '{unknown[0]}' (known: {', '.join(CONFIG_KEYS)})")
    for key in CONFIG_KEYS:
        if key in data and not isinstance(data[key], str):
            raise TrainplanError(f"user config {path}: {key} must be a string, got {data[key]!r}")
    return UserConfig(currency=data.get("currency"), price_kind=data.get("price_kind"), path=path)


def user_config() -> UserConfig:
    """<config dir>/config.toml, or empty defaults when there is none."""
    path = os.path.join(config_dir(), USER_CONFIG_FILE)
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return UserConfig()
    return _user_config(path, mtime)


def user_price_file() -> str | None:
    path = os.path.join(config_dir(), USER_PRICES_FILE)
    return path if os.path.isfile(path) else None


def team_price_file(start: str | None = None) -> str | None:
    """trainplan-prices.toml in `start` (default: the working directory) or the nearest parent that
    has one, looking no further up than the first directory holding .git (the repository root)."""
    here = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(here, TEAM_PRICES_FILE)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here or os.path.exists(os.path.join(here, ".git")):
            return None
        here = parent


def env_price_files() -> tuple[str, ...]:
    value = os.environ.get(PRICES_ENV, "")
    return tuple(os.path.expanduser(p) for p in value.split(os.pathsep) if p.strip())
