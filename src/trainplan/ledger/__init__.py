"""The ledger: measured training runs in a database (SQLite by default, any SQLAlchemy URL for
teams), with the estimate trainplan made for each setup at record time, so that residuals are
exact and reproducible. Calibration (trainplan.ledger.calibration) fits corrections from it.

Modules (SQLAlchemy and Alembic are imported only by the ones that need them):
- paths: the data directory, the default database URL, the spool and calibration files (stdlib)
- records: RunRecord, validation, the natural key (fingerprint), building records (stdlib)
- schema: the `runs` table; migrations/: its Alembic history (upgrade head on first use)
- store: engines, migrations, inserts that skip duplicates, queries
- spool: a JSONL file of runs that could not be written, flushed on the next connection
"""
