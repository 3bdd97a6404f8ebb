"""deepspeed defaults for the keys a config may leave out (being written)."""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = ""
DEFAULTS: tuple[Default, ...] = ()
