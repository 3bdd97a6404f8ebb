"""An export put together (`build_export`: the formats asked for, their files and launch lines, the
header block) and written (`write_export`: through trainplan.safeio.write_atomic, never over an
existing file unless asked)."""

from __future__ import annotations

import importlib
import os

from trainplan.enums import Framework, Fsdp, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.export import header
from trainplan.export.base import EXPORTERS, Export, ExportContext, Exported, ExportFile

LAUNCH = "launch"                     # the launch lines (export/launch.py), a format of its own
FORMATS = (*EXPORTERS, LAUNCH)
README = "README.md"
# the "trainer" formats: one per export (the engine formats deepspeed and accelerate go beside one)
TRAINERS = ("hf", "llamafactory", "swift", "axolotl", "torchtune", "torchtitan", "megatron")
ENGINES = ("deepspeed", "accelerate")
# formats whose frameworks cannot run DeepSpeed ZeRO / FSDP (torchtune: FSDP2 only; torchtitan: FSDP2;
# megatron: its distributed optimizer)
_NO_ZERO = ("torchtune", "torchtitan", "megatron")
# the formats written for a job's framework when --format is not given
_DEFAULT = {Framework.LLAMAFACTORY: ("llamafactory",), Framework.HF: ("hf",), Framework.TRL: ("hf",),
            Framework.DEEPSPEED: ("hf",), Framework.FSDP: (), Framework.SWIFT: ("swift",),
            Framework.AXOLOTL: ("axolotl",), Framework.TORCHTUNE: ("torchtune",),
            Framework.TORCHTITAN: ("torchtitan",), Framework.MEGATRON: ("megatron",)}
_HEADED = (".yaml", ".yml", ".sh", ".toml", ".cfg")   # files that take a `#` comment block


def default_formats(job) -> tuple[str, ...]:
    """A job's framework's own formats, with DeepSpeed's JSON under ZeRO, accelerate's under FSDP, launch."""
    framework = job.setup.framework
    if framework not in _DEFAULT:
        raise TrainplanError(f"no exporter writes --framework {framework} configs: give --format "
                             f"({', '.join(FORMATS)})")
    out = list(_DEFAULT[framework])
    if job.layout.zero is not ZeroStage.NONE and out[:1] != ["axolotl"] and out[:1] != ["swift"]:
        out.append("deepspeed")
    if job.layout.fsdp is not Fsdp.NONE and (not out or out[0] in ("hf", "llamafactory")):
        out.append("accelerate")
    return (*out, LAUNCH)


def parse_formats(text: str | None, job) -> tuple[str, ...]:
    """--format a,b,c (None: the job's framework's formats), checked against each other and the layout."""
    if text is None or not text.strip():
        return default_formats(job)
    names = tuple(dict.fromkeys(n.strip().lower() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in FORMATS]
    if unknown:
        raise TrainplanError(f"--format {unknown[0]!r} is not one of: {', '.join(FORMATS)}")
    trainers = [n for n in names if n in TRAINERS]
    if len(trainers) > 1:
        raise TrainplanError(f"--format names two trainers' configs ({', '.join(trainers)}): one run has one")
    zero, fsdp = job.layout.zero is not ZeroStage.NONE, job.layout.fsdp is not Fsdp.NONE
    for name in names:
        # Megatron's distributed optimizer shards the optimizer states over data parallel: trainplan's ZeRO-1
        if name in _NO_ZERO and zero and not (name == "megatron" and job.layout.zero is ZeroStage.OPTIMIZER):
            raise TrainplanError(f"--format {name} cannot run DeepSpeed ZeRO-{int(job.layout.zero)}: export "
                                 f"this job as deepspeed, hf, llamafactory, swift or axolotl, or plan it with "
                                 f"--framework {name}")
    if "deepspeed" in names and not zero:
        raise TrainplanError("--format deepspeed: the job runs no DeepSpeed ZeRO (give --zero 0-3 ... or leave "
                             "deepspeed out)")
    if "deepspeed" in names and any(n in ("swift", "axolotl") for n in names):
        names = tuple(n for n in names if n != "deepspeed")   # they write the DeepSpeed JSON they name themselves
    if zero and "deepspeed" not in names and any(n in ("hf", "llamafactory", "accelerate") for n in names):
        names = (*names, "deepspeed")          # the configs name the DeepSpeed JSON: it comes with them
    if fsdp and "llamafactory" in names and "accelerate" not in names:
        names = (*names, "accelerate")         # LLaMA-Factory takes FSDP from accelerate's config only
    return names


def _module(fmt: str):
    try:
        return importlib.import_module(EXPORTERS[fmt])
    except ModuleNotFoundError as exc:
        if exc.name == EXPORTERS[fmt]:
            raise TrainplanError(f"--format {fmt}: no exporter for it in this version") from None
        raise


def _run(fmt: str, job, estimate, ctx: ExportContext, names: tuple[str, ...]) -> Exported:
    """One exporter; the HF-Trainer family gets the DeepSpeed JSON's name (written with "auto" values)."""
    from trainplan.export import deepspeed

    mod = _module(fmt)
    ds_file = deepspeed.FILE if "deepspeed" in names else None
    if fmt == "deepspeed":
        hf_family = any(n in names for n in ("hf", "llamafactory", "accelerate"))
        return mod.export(job, estimate, ctx, auto=hf_family)
    if fmt in ("hf", "llamafactory", "accelerate"):
        return mod.export(job, estimate, ctx, ds_file=ds_file)
    return mod.export(job, estimate, ctx)


def context_for(job, **given) -> ExportContext:
    """An ExportContext with the job's nodes and GPUs per node unless given."""
    nodes = given.pop("nodes", None) or job.layout.nodes
    per_node = given.pop("gpus_per_node", None) or job.layout.num_gpus // nodes
    if nodes * per_node != job.layout.num_gpus:
        raise TrainplanError(f"--nodes {nodes} x --gpus-per-node {per_node} = {nodes * per_node} is not the job's "
                             f"{job.layout.num_gpus} GPUs")
    return ExportContext(nodes=nodes, gpus_per_node=per_node, **{k: v for k, v in given.items() if v is not None})


def build_export(job, estimate, formats: tuple[str, ...] | str | None, ctx: ExportContext | None = None) -> Export:
    """The files, launch lines and header of `job` in `formats` (a tuple, a comma list, or None for the
    framework's own)."""
    ctx = ctx or context_for(job)
    names = parse_formats(formats if isinstance(formats, str) or formats is None else ",".join(formats), job)
    files: list[ExportFile] = []
    commands: list[str] = []
    notes: list[str] = []
    for fmt in names:
        if fmt == LAUNCH:
            continue
        got = _run(fmt, job, estimate, ctx, names)
        files += got.files
        commands += got.commands
        notes += got.notes
    if LAUNCH in names:
        from trainplan.export import launch

        got = launch.export(job, estimate, ctx, files={f.format: f.name for f in files})
        files += got.files
        commands += got.commands
        notes += got.notes
    seen: set[str] = set()
    for f in files:
        if f.name in seen:
            raise TrainplanError(f"two formats write {f.name}: export them separately")
        seen.add(f.name)
    block = header.lines(job, estimate, ctx, files=tuple(f.name for f in files))
    top = header.comment(block)
    headed = tuple(ExportFile(name=f.name, format=f.format, text=_with_header(f.text, top))
                   if f.name.endswith(_HEADED) else f for f in files)
    return Export(files=headed, commands=tuple(commands), header=top, notes=tuple(dict.fromkeys(notes)))


def _with_header(text: str, top: str) -> str:
    if text.startswith("#!"):
        shebang, _, rest = text.partition("\n")
        return f"{shebang}\n{top}{rest}"
    return f"{top}\n{text}"


def readme(export: Export) -> str:
    body = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in export.header.splitlines()]
    out = ["# trainplan export", "", *body, "", "## Files", ""]
    out += [f"- `{f.name}` ({f.format})" for f in export.files]
    if export.commands:
        out += ["", "## Launch", ""]
        for command in export.commands:
            out += ["```sh", command, "```"]
    if export.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in export.notes]
    return "\n".join(out) + "\n"


def write_export(export: Export, directory: str, *, force: bool = False) -> tuple[str, ...]:
    """Write every file (and README.md) into `directory` (created if missing). An existing file is an
    error, before anything is written, unless `force`."""
    from trainplan.safeio import write_atomic

    items = [*((f.name, f.text) for f in export.files), (README, readme(export))]
    paths = [os.path.join(directory, name) for name, _ in items]
    if not force:
        there = [p for p in paths if os.path.lexists(p)]
        if there:
            raise TrainplanError(f"--out {directory!r}: {os.path.basename(there[0])} exists "
                                 f"({len(there)} of the {len(paths)} files do): give --force to replace them")
    written = []
    for path, (_, text) in zip(paths, items):
        written.append(write_atomic(path, text, what="--out", make_parents=True))
    for path in written:
        if path.endswith(".sh"):
            os.chmod(path, os.stat(path).st_mode | 0o111)
    return tuple(written)
