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

Two ways to translate:
- `_("GPU: {gpu} x {n}").format(gpu=..., n=...)` where the text is made for output (report/*): the
  msgid is the format string, looked up when the line is printed, never at import time;
- `translate(text)` for text made in English elsewhere and kept in English in the results (notes,
  suggestion costs, error messages: `--json` and the ledger never change with the language): an
  exact msgid, else a catalog msgid with `{name}` fields read as a template. "retry factor {factor}
  (default: no failed attempts)" matches "retry factor 1 (default: no failed attempts)" and its
  msgstr receives the text each field matched (itself translated when it is a msgid: "a positive
  integer" in "--batch-size must be {kind} ..."). Text no template matches stays in English.
"""

from __future__ import annotations

import os

LANGUAGES = ("en", "zh")
DEFAULT_DOMAIN = "trainplan"
LOCALE_DIR = os.path.join(os.path.dirname(__file__), "locale")

_language: str | None = None
_catalogs: dict[tuple[str, str], object] = {}
_templates: dict[tuple[str, str], list] = {}
_FIELD = r"\{(\w*)(?:![rsa])?(?::[^{}]*)?\}"      # a str.format field: {name}, {name!r}, {n:,}


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


def restore_language(state: str | None) -> None:
    """Put back what `current_state()` returned (None: undecided, read from the environment when
    next asked): the CLI's main() leaves the process's language as it found it."""
    global _language
    _language = state


def current_state() -> str | None:
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


def _compiled_templates(lang: str, domain: str) -> list:
    """(regex, field names, msgstr) of every catalog msgid with format fields, most literal text first
    (the most specific template wins); a msgid that is only fields is never a template."""
    key = (lang, domain)
    if key not in _templates:
        import re

        found = []
        for msgid, msgstr in getattr(_catalog(lang, domain), "_catalog", {}).items():
            if not isinstance(msgid, str) or "{" not in msgid:
                continue
            parts = re.split(_FIELD, msgid)
            literal = "".join(parts[0::2])
            if len(literal.strip()) < 3:
                continue
            pattern = "".join(re.escape(p) if i % 2 == 0 else "(.+?)" for i, p in enumerate(parts))
            found.append((len(literal), re.compile(pattern + r"\Z", re.DOTALL), parts[1::2], msgstr))
        found.sort(key=lambda t: -t[0])
        _templates[key] = [t[1:] for t in found]
    return _templates[key]


def translate(text: str, *, domain: str = DEFAULT_DOMAIN, lang: str | None = None) -> str:
    """`text` (made in English by code that does not translate) in the current language: the exact
    msgid, else the first template that matches it whole; English when neither is in the catalog."""
    code = lang or language()
    if code == "en" or not text:
        return text
    catalog = _catalog(code, domain)
    exact = catalog.gettext(text)
    if exact != text:
        return exact
    import re

    for regex, names, msgstr in _compiled_templates(code, domain):
        match = regex.match(text)
        if match is None:
            continue
        values = {}
        for name, value in zip(names, match.groups()):
            values.setdefault(name, translate(value, domain=domain, lang=code))
        return re.sub(_FIELD, lambda m, v=values: v.get(m.group(1), m.group(0)), msgstr)
    return text
