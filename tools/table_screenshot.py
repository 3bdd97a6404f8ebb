"""Render the resource table's HTML page in headless Chromium and save docs/resource-table.png.

    python tools/table_screenshot.py            # the issue's table (6 models x full/lora/qlora x 4 GPU types)
    python tools/table_screenshot.py --lang zh --out docs/resource-table-zh.png

The page is the one `trainplan table --format html` writes (trainplan.cli.table), rendered by
Debian's chromium (/usr/bin/chromium) through Playwright's Python API; no browser is downloaded
(never `playwright install`). The Chinese page needs a CJK font (fonts-noto-cjk or
fonts-wqy-microhei) to be legible.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
TABLE = ["table", "--models", "llama-2-7b,llama-2-13b,llama-2-70b,qwen2.5-7b,qwen2.5-14b,qwen2.5-72b",
         "--methods", "full,lora,qlora", "--gpus", "a100,a800,h800,4090", "--format", "html"]


def write_page(path: pathlib.Path, lang: str) -> None:
    from trainplan import cli

    with contextlib.redirect_stdout(io.StringIO()):      # its "wrote ..." line: the tool says where the PNG went
        code = cli.main(TABLE + ["--output", str(path), "--lang", lang])
    if code:
        raise SystemExit(f"trainplan table failed with exit code {code}")


def screenshot(page_path: pathlib.Path, out: pathlib.Path, width: int = 1500) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900}, device_scale_factor=1)
            page.goto(page_path.resolve().as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=str(out), full_page=True)
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lang", default="en")
    ap.add_argument("--out", default=str(ROOT / "docs" / "resource-table.png"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        page = pathlib.Path(tmp) / "table.html"
        write_page(page, args.lang)
        screenshot(page, pathlib.Path(args.out))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
