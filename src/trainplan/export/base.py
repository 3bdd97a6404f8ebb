"""What every exporter shares: the request, the files it writes, the launch lines, the header.

An exporter turns one resolved Job (and the estimate made of it) into the files and commands a
framework runs it with. It is a module of this package with

    FORMAT: str                                   # the --format name (e.g. "deepspeed", "llamafactory")
    FRAMEWORKS: tuple[Framework, ...]             # the frameworks whose runs it describes
    def export(job: Job, estimate: Estimate | None, ctx: ExportContext) -> Exported

and is listed in EXPORTERS below. Exporters write only what the framework's own config format
holds, in the framework's own key names (../shared/reference/framework_configs.md gives the fields,
defaults and defining files of each format), and leave a key out where the framework's default is
what the job runs, so that reading the files back with `--from` gives the same Job (tests hold every
exporter to that round trip). A setting the format cannot express is not dropped silently: it goes
to `Exported.notes`.

Nothing here touches the disk: `write_export` (trainplan.export.write) writes an Export's files
through trainplan.safeio.
"""

from __future__ import annotations

from trainplan.frozen import field, frozen

# --format name -> module under trainplan.export (imported only when that format is asked for)
EXPORTERS: dict[str, str] = {
    "deepspeed": "trainplan.export.deepspeed",
    "accelerate": "trainplan.export.accelerate",
    "hf": "trainplan.export.hf",
    "llamafactory": "trainplan.export.llamafactory",
    "swift": "trainplan.export.swift",
    "axolotl": "trainplan.export.axolotl",
    "torchtune": "trainplan.export.torchtune",
    "torchtitan": "trainplan.export.torchtitan",
    "megatron": "trainplan.export.megatron",
}


@frozen
class ExportContext:
    """How the run is launched: the nodes and GPUs per node, the rendezvous, the names of the files."""

    nodes: int = 1
    gpus_per_node: int = 1
    master_addr: str = "$MASTER_ADDR"      # left as a shell variable: the user's head node
    master_port: int = 29500
    node_rank: str = "$NODE_RANK"
    hostfile: str = "hostfile"             # DeepSpeed's hostfile name (written beside the configs)
    dataset: str = "YOUR_DATASET"          # a placeholder the user replaces (named in the header)
    output_dir: str = "output"
    model_path: str | None = None          # what the config names as the model (None: the HF id or name)


@frozen
class ExportFile:
    """One file of an export: its name inside the export directory, its text, its format."""

    name: str
    text: str
    format: str


@frozen
class Exported:
    """What one exporter produced."""

    files: tuple[ExportFile, ...] = ()
    commands: tuple[str, ...] = ()         # launch lines, one per node kind ("node 0", "every node")
    notes: tuple[str, ...] = ()            # settings the format cannot express, assumptions made


@frozen
class Export:
    """All the files and commands of one export, with the header block that says what the plan assumed."""

    files: tuple[ExportFile, ...]
    commands: tuple[str, ...]
    header: str                            # README-style comment: GPU, count, GiB per GPU, step, cost
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {"files": [{"name": f.name, "format": f.format, "text": f.text} for f in self.files],
                "commands": list(self.commands), "header": self.header, "notes": list(self.notes)}
