"""The outside surface users' scripts rely on (shared/PRODUCT.md), frozen: every command with its
flags and defaults, and the Python API's names and keywords. A deliberate change updates
tests/golden/cli_surface.json (`python tests/test_surface.py --write`) and PRODUCT.md together."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
from pathlib import Path

import trainplan
from trainplan import api
from trainplan.cli import COMMANDS, build_parser
from trainplan.job.options import BOOKKEEPING, OPTION_NAMES

GOLDEN = Path(__file__).resolve().parent / "golden" / "cli_surface.json"


def cli_surface() -> dict:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, command in sorted(sub.choices.items()):
        flags = []
        for action in command._actions:
            if action.option_strings:
                flags.append({"flags": sorted(action.option_strings), "required": action.required,
                              "default": None if action.default is argparse.SUPPRESS else repr(action.default)})
            elif action.dest != "help":
                flags.append({"positional": action.dest})
        out[name] = sorted(flags, key=lambda f: json.dumps(f))
    return out


def test_cli_surface_is_frozen():
    assert cli_surface() == json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_every_product_command_exists():
    # shared/PRODUCT.md's commands; export and serve are later issues' (not built yet)
    product = {"estimate", "plan", "table", "models", "gpus", "prices", "record", "runs", "calibrate", "accuracy",
               "trace", "probe"}
    assert product <= set(COMMANDS)


def test_python_api():
    assert set(trainplan.__all__) == {"__version__", "estimate", "plan", "fit", "table", "resolve", "track"}
    # every setup flag, typed, and the --from files (the rest of JobOptions is bookkeeping)
    assert set(api.Options.__annotations__) == set(OPTION_NAMES) - {"model"} - BOOKKEEPING | {"configs"}
    for name in ("estimate", "plan", "fit", "table", "resolve"):
        params = inspect.signature(getattr(api, name)).parameters
        assert "options" in params and params["options"].kind is inspect.Parameter.VAR_KEYWORD
    importlib.import_module("trainplan.job")     # a subpackage: the API's names must not collide with one
    assert trainplan.resolve("gpt2").setup.model.name == "gpt2"


if __name__ == "__main__" and "--write" in sys.argv:
    GOLDEN.write_text(json.dumps(cli_surface(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
