"""The page: static/index.html with its words in the language asked for (`?lang=zh`).

The template marks each English phrase as `{{phrase}}`; the script's phrases are its `t("phrase")`
calls. Both are looked up in the gettext domain "web" (locale/zh/LC_MESSAGES/web.po) and the
script's are handed to it as JSON inside the page, so one .po holds every word of the page and a
phrase without a translation shows in English. `page_phrases()` lists them all (a test holds
web.po to it)."""

from __future__ import annotations

import functools
import html
import json
import os
import re

from trainplan import i18n

STATIC_DIR = os.path.join(os.path.dirname(__file__), "static")
DOMAIN = "web"
_TEMPLATE_PHRASE = re.compile(r"\{\{([^{}]+)\}\}")
_SCRIPT_PHRASE = re.compile(r"""\bt\("((?:[^"\\]|\\.)+)"\)""")
SCRIPTS = ("charts.js", "app.js")


def _read(name: str) -> str:
    with open(os.path.join(STATIC_DIR, name), encoding="utf-8") as handle:
        return handle.read()


@functools.cache
def _sources() -> tuple[str, tuple[str, ...]]:
    template = _read("index.html")
    script_phrases = []
    for name in SCRIPTS:
        for match in _SCRIPT_PHRASE.finditer(_read(name)):
            script_phrases.append(json.loads(f'"{match.group(1)}"'))
    return template, tuple(dict.fromkeys(script_phrases))


def page_phrases() -> tuple[str, ...]:
    """Every English phrase of the page: the template's and the scripts'."""
    template, script = _sources()
    return tuple(dict.fromkeys([m.group(1) for m in _TEMPLATE_PHRASE.finditer(template)] + list(script)))


@functools.cache
def render(lang: str) -> str:
    """index.html in `lang` ('en' or 'zh')."""
    template, script = _sources()

    def word(text: str) -> str:
        return i18n.gettext(text, domain=DOMAIN, lang=lang)

    body = _TEMPLATE_PHRASE.sub(lambda m: html.escape(word(m.group(1))), template)
    messages = json.dumps({p: word(p) for p in script}, ensure_ascii=False).replace("</", "<\\/")
    return body.replace("%%LANG%%", lang).replace("%%MESSAGES%%", messages)
