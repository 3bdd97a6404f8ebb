"""The ledger's table, in SQLAlchemy Core. The Alembic migrations under migrations/versions are the
authority for the database's shape; this module mirrors the head revision for queries."""

from __future__ import annotations

from sqlalchemy import (
                        JSON,
                        BigInteger,
                        Column,
                        DateTime,
                        Float,
                        Index,
                        Integer,
                        MetaData,
                        String,
                        Table,
                        Text,
                        UniqueConstraint,
)

metadata = MetaData()

BIGINT_PK = BigInteger().with_variant(Integer(), "sqlite")   # SQLite autoincrements INTEGER PRIMARY KEY only

runs = Table(
    "runs", metadata,
    Column("id", BIGINT_PK, primary_key=True, autoincrement=True),
    Column("fingerprint", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("source", String(200), nullable=False),
    Column("external_id", String(300)),
    Column("trainplan_version", String(40)),
    # indexed setup
    Column("model", String(200)), Column("method", String(20)), Column("precision", String(20)),
    Column("optimizer", String(40)), Column("framework", String(40)), Column("gpu", String(80)),
    Column("num_gpus", Integer), Column("batch_size", Integer), Column("seq_len", Integer),
    Column("grad_ckpt", String(20)), Column("zero", Integer), Column("fsdp", String(20)),
    Column("tp", Integer), Column("pp", Integer),
    # measurements
    Column("meas_peak_allocated_bytes", BigInteger), Column("meas_peak_reserved_bytes", BigInteger),
    Column("meas_device_bytes", BigInteger), Column("meas_step_s", Float), Column("meas_tokens_per_s_per_gpu", Float),
    # the estimate made at record time
    Column("est_peak_allocated_bytes", BigInteger), Column("est_peak_reserved_bytes", BigInteger),
    Column("est_device_bytes", BigInteger), Column("est_step_s", Float), Column("est_tokens_per_s_per_gpu", Float),
    # everything, as JSON
    Column("setup", JSON, nullable=False),
    Column("environment", JSON, nullable=False),
    Column("measured", JSON, nullable=False),
    Column("estimate", JSON),
    Column("raw", JSON),
    Column("notes", Text),
    UniqueConstraint("fingerprint", name="uq_runs_fingerprint"),
    Index("ix_runs_group", "framework", "gpu", "method"),
    Index("ix_runs_model", "model"),
    Index("ix_runs_source", "source"),
    Index("ix_runs_created_at", "created_at"),
)
