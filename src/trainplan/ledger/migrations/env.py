"""Alembic environment for the trainplan ledger.

trainplan runs `upgrade head` itself on first use (trainplan.ledger.store.migrate), handing over its
open connection in `config.attributes["connection"]`. Concurrent first uses are serialised: a
PostgreSQL advisory lock held for the migration's transaction, SQLite's write lock (the store
begins SQLite transactions with BEGIN IMMEDIATE). The alembic command line works too, with
`-x url=...` or sqlalchemy.url set.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, text

MIGRATION_LOCK = 724_300_106   # pg_advisory_xact_lock key of the trainplan ledger


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=None, transaction_per_migration=False,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
        context.run_migrations()


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option("sqlalchemy.url")
    engine = create_engine(url)
    with engine.connect() as conn:
        _run(conn)
        conn.commit()


if context.is_offline_mode():
    context.configure(url=context.config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
