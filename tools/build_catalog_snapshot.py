"""Rewrite src/trainplan/catalog/data/snapshot.json from the catalog TOML files and the ModelSpec
each catalog model converts to (see catalog/store.py).

    python tools/build_catalog_snapshot.py
"""

from __future__ import annotations

from trainplan import catalog
from trainplan.catalog.store import write_snapshot


def main() -> None:
    print(f"wrote {write_snapshot(catalog.derived_snapshot_values())}")


if __name__ == "__main__":
    main()
