"""DeepSpeed: the ds_config keys trainplan's reader (importers/deepspeed.py) assumes when a config
leaves them out are stated in that reader and the ZeRO knobs' defaults in memory/sharding.py
(ZeroConfig); tests/test_framework_defaults.py checks both against deepspeed 0.19.6's
runtime/zero/config.py. No key here sets a JobOptions field of its own."""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = "deepspeed 0.19.6 (PyPI)"
DEFAULTS: tuple[Default, ...] = ()
