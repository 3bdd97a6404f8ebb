"""The ledger contract on a real PostgreSQL server: TRAINPLAN_TEST_PG_URL points to a server where
we may create databases (`.ci/run` starts one); skipped when it is unset. Each test gets a fresh
database, dropped afterwards."""

from __future__ import annotations

import os
import uuid

import pytest

PG_URL = os.environ.get("TRAINPLAN_TEST_PG_URL")
pytestmark = pytest.mark.skipif(not PG_URL, reason="TRAINPLAN_TEST_PG_URL not set (no PostgreSQL server)")

pytest.importorskip("sqlalchemy")
pytest.importorskip("psycopg")

from test_ledger import LedgerContract, cli, one_line_error  # noqa: E402
from trainplan.ledger import store  # noqa: E402
from trainplan.ledger.paths import db_url  # noqa: E402


def _admin():
    from sqlalchemy import create_engine

    return create_engine(db_url(PG_URL), isolation_level="AUTOCOMMIT")


class TestPostgres(LedgerContract):
    @pytest.fixture
    def url(self):
        from sqlalchemy import text
        from sqlalchemy.engine import make_url

        name = f"trainplan_test_{uuid.uuid4().hex[:12]}"
        admin = _admin()
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(db_url(PG_URL)).set(database=name).render_as_string(hide_password=False)
        store.dispose_all()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    def test_unreachable_server_for_runs_is_one_line(self, capsys):
        code, _, err = cli(capsys, "runs", "--db", "postgresql://nobody:secret@127.0.0.1:1/none")
        one_line_error(code, err)
        assert "cannot reach the ledger database" in err and "secret" not in err
