"""Model catalog rows (tools/build_model_catalog.py reads ROWS; same form as its HF_CONFIG_MODELS)."""

from __future__ import annotations

from typing import Any

ROWS: list[dict[str, Any]] = []
