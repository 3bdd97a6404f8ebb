"""Imported cases are identified by their source, id and the case as written minus its free-text
fields (notes, quotes, ...), so that a re-import after editing a case's notes updates the stored
run instead of adding a second one (issue 18). The shape of the table does not change: this
revision recomputes the fingerprint of every stored imported case (rows with a raw case). Where two
stored rows are the same case by the new identity (the duplicates the old identity made), the
newest takes the new fingerprint and the older keep theirs: nothing is deleted.

Revision ID: 0002_case_identity
Revises: 0001_runs
Create Date: 2026-12-01
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0002_case_identity"
down_revision = "0001_runs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from trainplan.ledger.records import fingerprint_of

    conn = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("fingerprint", sa.String),
                    sa.column("source", sa.String), sa.column("external_id", sa.String),
                    sa.column("raw", sa.Text))
    taken = {fp for (fp,) in conn.execute(sa.select(runs.c.fingerprint))}
    rows = conn.execute(sa.select(runs.c.id, runs.c.fingerprint, runs.c.source, runs.c.external_id, runs.c.raw)
                        .where(runs.c.raw.isnot(None)).order_by(runs.c.id.desc())).all()
    for row in rows:
        raw = row.raw
        try:
            raw = json.loads(raw) if isinstance(raw, str | bytes) else raw
        except ValueError:
            continue                          # an unreadable row keeps its key (`trainplan runs` reports it)
        if not isinstance(raw, dict):
            continue
        new = fingerprint_of(source=row.source, external_id=row.external_id, setup=None, environment=None,
                             measured=None, raw=raw)
        if new == row.fingerprint or new in taken:
            continue
        conn.execute(runs.update().where(runs.c.id == row.id).values(fingerprint=new))
        taken.add(new)


def downgrade() -> None:
    """Fingerprints are keys, not shape: the recomputed ones stay valid for revision 0001."""
