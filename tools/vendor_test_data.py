"""Copy the development data the tests and benchmarks use from ../shared into tests/data (so that a
checkout without ../shared runs every test), or with --check report what differs.

    python tools/vendor_test_data.py [--shared ../shared] [--check]

tests/data/published_dev.json, published_dev2.json   <- shared/ground_truth/ (and its README)
tests/data/reference/gpus.csv, cloud_prices.csv, model_configs.json   <- shared/reference/
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
FILES = {"ground_truth/published_dev.json": "published_dev.json",
         "ground_truth/published_dev2.json": "published_dev2.json",
         "ground_truth/README.md": "ground_truth_README.md",
         "reference/gpus.csv": "reference/gpus.csv",
         "reference/cloud_prices.csv": "reference/cloud_prices.csv",
         "reference/model_configs.json": "reference/model_configs.json"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--check", action="store_true", help="only report files that differ")
    args = ap.parse_args(argv)
    differ = 0
    for source, target in FILES.items():
        src, dst = args.shared / source, DATA / target
        if not src.is_file():
            print(f"missing in {args.shared}: {source}")
            differ += 1
            continue
        same = dst.is_file() and filecmp.cmp(src, dst, shallow=False)
        if args.check:
            if not same:
                print(f"differs: {target}")
                differ += 1
        elif not same:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            print(f"copied {source} -> tests/data/{target}")
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
