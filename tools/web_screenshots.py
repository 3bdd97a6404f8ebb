"""Take the web page's screenshots into docs/ (web-estimate.png, web-zh.png, web-plan.png).

    python tools/web_screenshots.py

Runs tests/test_web_page.py (headless Debian chromium through Playwright, uvicorn on a free
localhost port) with TRAINPLAN_WEB_SCREENSHOTS=docs, so the pictures are the ones the browser test
itself sees. The Chinese page needs a CJK font to be legible (Debian: fonts-wqy-microhei or
fonts-noto-cjk); without one the test still passes (it reads the text, not the pixels).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main() -> int:
    env = dict(os.environ, TRAINPLAN_WEB_SCREENSHOTS=str(ROOT / "docs"))
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(ROOT / "tests" / "test_web_page.py")], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
