"""The ledger's URL helpers read URLs with str methods (no regex compiled on the estimate path):
each is held equal to the regular expression that defines it, on hand-picked URLs and on random
text over the characters that matter (hypothesis)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from trainplan.ledger import paths

SQLITE = re.compile(r"^(sqlite(?:\+\w+)?):///([^?]*)(\?.*)?$")
PASSWORD = r"(://[^:/@]+):[^@]*@"
NAME = r"[^A-Za-z0-9._-]+"

_TEXT = st.text(alphabet=st.sampled_from(list("sqlite+_:/?@.-aZ9é\n x")), max_size=30)


def _regex_parts(url: str):
    m = SQLITE.match(url)
    return None if m is None else (m.group(1), m.group(2), m.group(3) or "")


def test_known_urls():
    assert paths._sqlite_parts("sqlite:///data/ledger.sqlite") == ("sqlite", "data/ledger.sqlite", "")
    assert paths._sqlite_parts("sqlite+pysqlite:///x.db?mode=ro") == ("sqlite+pysqlite", "x.db", "?mode=ro")
    assert paths._sqlite_parts("sqlite+:///x.db") is None                       # \w+ needs a driver name
    assert paths._sqlite_parts("postgresql+psycopg://u:p@h/db") is None
    assert paths.redact("postgresql+psycopg://ann:s3cr@t@db:5432/x") == "postgresql+psycopg://ann:***@t@db:5432/x"
    assert paths.redact("sqlite:////tmp/a.db") == "sqlite:////tmp/a.db"
    assert paths._safe_name("db:5432/ledger x") == "db_5432_ledger_x"


@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT)
def test_sqlite_parts_is_the_regex(a, b):
    for url in (a, "sqlite:///" + a, "sqlite+" + a + ":///" + b, "sqlite:///" + a + "?" + b):
        assert paths._sqlite_parts(url) == _regex_parts(url), url


@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT)
def test_redact_is_the_regex(a, b):
    for url in (a, a + "://" + b, "postgresql://" + a + ":" + b + "@h", a + "://u:p@" + b + "://v:q@w"):
        assert paths.redact(url) == re.sub(PASSWORD, r"\1:***@", url), url


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=30))
def test_safe_name_is_the_regex(text):
    assert paths._safe_name(text) == re.sub(NAME, "_", text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aB1-_ \t\u00a0\u2003.\n")), max_size=20))
def test_catalog_lookup_key_is_the_regex(text):
    from trainplan.catalog import _key

    key = text.strip().lower()
    expected = re.sub(r"[\s_]+", "-", key) if ("_" in key or not key.isprintable() or " " in key) else key
    assert _key(text) == expected
