"""Several configs and the command line, laid over trainplan's defaults: later files over earlier
ones, flags given on the command line (or keywords given to the API) over every file. The
result is a JobOptions whose `provenance` says where each value it holds came from."""

from __future__ import annotations

from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.importers.base import Imported, Origin, Setting
from trainplan.job.options import BOOKKEEPING, OPTION_NAMES, JobOptions

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any


def apply(imports: list[Imported], options: JobOptions, given: dict[str, Any]) -> JobOptions:
    """`options` (defaults and flags) with every imported setting not overridden by a flag in
    `given` (field -> value the user gave explicitly)."""
    values: dict[str, Any] = {}
    sources: dict[str, Setting] = {}
    for imported in imports:
        for s in imported.settings:
            if s.field not in OPTION_NAMES or s.field in BOOKKEEPING:
                raise TrainplanError(f"--from {imported.file}: reader produced unknown setting {s.field!r}")
            values[s.field] = s.value
            sources[s.field] = s
    for name, value in given.items():
        if name in BOOKKEEPING:
            continue
        if name in sources and sources[name].value != value:
            overridden = sources[name]
            note = f"overrides {overridden.key or name}={overridden.raw if overridden.raw is not None else overridden.value!r}"
            note += f" in {overridden.file}" if overridden.file else ""
        else:
            note = ""
        values.pop(name, None)
        sources[name] = Setting(field=name, value=value, origin=Origin.FLAG, key="--" + name.replace("_", "-"),
                                note=note)
    unread = tuple(u for imported in imports for u in imported.unread)
    return replace(options, **values, provenance=tuple(sources.values()), unread=unread, given=tuple(sorted(given)),
                   ignored_keys=sum(i.ignored for i in imports),
                   configs=tuple(dict.fromkeys(f for i in imports for f in (i.file, *i.includes))))


def from_configs(paths: list[str] | tuple[str, ...], options: JobOptions, given: dict[str, Any]) -> JobOptions:
    """Read each `--from` source and lay them over `options` (flags in `given` win)."""
    if not paths:
        return replace(options, given=tuple(sorted(given)))
    from trainplan.importers.read import read_config  # parsers load only when a config is read

    return apply([read_config(p) for p in paths], options, given)


def check_gpu_count(options: JobOptions) -> None:
    """A config that shards over several GPUs (ZeRO, FSDP) but names no GPU count: one clear line
    naming the file and key, instead of the layout check's generic one (called by the CLI and the
    API once the configs and flags are merged)."""
    origin = {s.field: s for s in options.provenance}
    if options.num_gpus != 1 or "num_gpus" in origin or "num_gpus" in options.given \
            or str(options.offload).lower() != "none":
        return
    sharded = [n for n in ("zero", "fsdp") if n in origin and origin[n].origin is not Origin.FLAG
               and str(getattr(options, n)).lower() not in ("0", "none")]
    if not sharded:
        return
    s = origin[sharded[0]]
    raise TrainplanError(f"--from {s.file or 'config'}: {s.key or sharded[0]} = {s.raw if s.raw is not None else s.value} "
                         "shards over several GPUs, but the configs name no GPU count: give --num-gpus N "
                         "(and --nodes), or the launch line (torchrun/deepspeed/accelerate launch) with --from")
