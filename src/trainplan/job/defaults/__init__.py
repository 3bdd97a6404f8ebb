"""Each framework's own defaults for the keys a config may leave out, one module per framework
(`llamafactory.py`, `hf.py`, `trl.py`, `axolotl.py`, `swift.py`, `torchtune.py`, `torchtitan.py`,
`accelerate.py`, `deepspeed.py`): the home of those facts, read from the framework's source at the
version named in the module's VERSION, each with the file that defines it.

The config readers (trainplan/importers/) fill a key the file leaves out from here, and say so
("framework default ... <source>"); tests/test_framework_defaults.py compares every one with the
framework's own source, read as text from its release on PyPI (tools/framework_sources.py: pinned
versions, downloaded once into a cache, parsed with `ast`, never imported).
"""

from __future__ import annotations

import importlib
from typing import Any

from trainplan.frozen import frozen

FRAMEWORKS = ("llamafactory", "hf", "trl", "axolotl", "swift", "torchtune", "torchtitan", "accelerate", "deepspeed")


@frozen
class Default:
    """One default: the JobOptions field it sets, its value (in trainplan's terms), the framework's
    own key and value, and where the framework defines it."""

    field: str
    value: Any
    key: str
    source: str          # repo path (and symbol) that defines the default
    raw: Any = None      # the framework's own value when it differs in form (None -> 2 x rank)
    note: str = ""


def module(name: str):
    if name not in FRAMEWORKS:
        raise KeyError(name)
    return importlib.import_module(f"trainplan.job.defaults.{name}")


def defaults(name: str) -> dict[str, Default]:
    """field -> Default of a framework (the module's DEFAULTS)."""
    return {d.field: d for d in module(name).DEFAULTS}


def version(name: str) -> str:
    return module(name).VERSION
