"""Translations: GNU gettext catalogs, one per domain, English as the source language.

    from trainplan.i18n import _
    print(_("does not fit"))          # "放不下" under --lang zh

The language is chosen once per process, first given first: `set_language(...)` (the CLI's
`--lang`, the web page's `lang` parameter), `$TRAINPLAN_LANG`, then the locale (`LC_ALL`,
`LC_MESSAGES`, `LANG`: `zh_CN.UTF-8` -> zh), else English. Catalogs live in
`trainplan/locale/<lang>/LC_MESSAGES/<domain>.po` (edited by people) and `.mo` (compiled by
`python tools/compile_catalogs.py`, a pure-Python msgfmt; tests/test_i18n.py fails when a `.mo` is
older than its `.po`). Domains: `trainplan` (the CLI, tables, notes and errors), `web` (the page).
A message without a translation is shown in English: nothing is ever blank.

Stdlib gettext is imported only when a non-English language is asked for (the estimate path in
English loads nothing).
"""

from __future__ import annotations

import os

LANGUAGES = ("en", "zh")
DEFAULT_DOMAIN = "trainplan"
LOCALE_DIR = os.path.join(os.path.dirname(__file__), "locale")

_language: str | None = None
_catalogs: dict[tuple[str, str], object] = {}


def _from_environment() -> str:
    for name in ("TRAINPLAN_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            code = value.split(".")[0].split("_")[0].split("-")[0].lower()
            return code if code in LANGUAGES else "en"
    return "en"


def normalize(lang: str | None) -> str:
    """'zh', 'zh-CN', 'zh_CN.UTF-8', 'ZH' -> 'zh'; 'en', 'en_US' -> 'en'. TrainplanError otherwise."""
    code = str(lang or "").strip().replace("-", "_").split(".")[0].split("_")[0].lower()
    if code not in LANGUAGES:
        from trainplan.errors import TrainplanError

        raise TrainplanError(f"--lang must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    return code


def set_language(lang: str | None) -> str:
    """Use `lang` from now on (None: from the environment); returns the language chosen."""
    global _language
    _language = _from_environment() if lang is None else normalize(lang)
    return _language


def language() -> str:
    global _language
    if _language is None:
        _language = _from_environment()
    return _language


def _catalog(lang: str, domain: str):
    key = (lang, domain)
    if key not in _catalogs:
        import gettext

        _catalogs[key] = gettext.translation(domain, localedir=LOCALE_DIR, languages=[lang], fallback=True)
    return _catalogs[key]


def gettext(message: str, *, domain: str = DEFAULT_DOMAIN, lang: str | None = None) -> str:
    """`message` in the current language (or `lang`); English when there is no translation."""
    code = lang or language()
    if code == "en":
        return message
    return _catalog(code, domain).gettext(message)


def _(message: str) -> str:
    return gettext(message)
