"""The runs table: setup, environment, measurements and the estimate made at record time.

Revision ID: 0001_runs
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_runs"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("external_id", sa.String(300)),
        sa.Column("trainplan_version", sa.String(40)),
        sa.Column("model", sa.String(200)), sa.Column("method", sa.String(20)), sa.Column("precision", sa.String(20)),
        sa.Column("optimizer", sa.String(40)), sa.Column("framework", sa.String(40)), sa.Column("gpu", sa.String(80)),
        sa.Column("num_gpus", sa.Integer), sa.Column("batch_size", sa.Integer), sa.Column("seq_len", sa.Integer),
        sa.Column("grad_ckpt", sa.String(20)), sa.Column("zero", sa.Integer), sa.Column("fsdp", sa.String(20)),
        sa.Column("tp", sa.Integer), sa.Column("pp", sa.Integer),
        sa.Column("meas_peak_allocated_bytes", sa.BigInteger), sa.Column("meas_peak_reserved_bytes", sa.BigInteger),
        sa.Column("meas_device_bytes", sa.BigInteger), sa.Column("meas_step_s", sa.Float),
        sa.Column("meas_tokens_per_s_per_gpu", sa.Float),
        sa.Column("est_peak_allocated_bytes", sa.BigInteger), sa.Column("est_peak_reserved_bytes", sa.BigInteger),
        sa.Column("est_device_bytes", sa.BigInteger), sa.Column("est_step_s", sa.Float),
        sa.Column("est_tokens_per_s_per_gpu", sa.Float),
        sa.Column("setup", sa.JSON, nullable=False),
        sa.Column("environment", sa.JSON, nullable=False),
        sa.Column("measured", sa.JSON, nullable=False),
        sa.Column("estimate", sa.JSON),
        sa.Column("raw", sa.JSON),
        sa.Column("notes", sa.Text),
        sa.UniqueConstraint("fingerprint", name="uq_runs_fingerprint"),
    )
    op.create_index("ix_runs_group", "runs", ["framework", "gpu", "method"])
    op.create_index("ix_runs_model", "runs", ["model"])
    op.create_index("ix_runs_source", "runs", ["source"])
    op.create_index("ix_runs_created_at", "runs", ["created_at"])


def downgrade() -> None:
    op.drop_table("runs")
