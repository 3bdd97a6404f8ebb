"""The launch lines of an export (one node and several) and DeepSpeed's hostfile, the mirror of
importers/launch.py (which reads them back with `--from launch.sh`):

- torchrun (torch/distributed/run.py): `--nnodes N --nproc_per_node G --node_rank R --master_addr A
  --master_port P` (world = nnodes x nproc_per_node), the same line on every node with its NODE_RANK;
- deepspeed (deepspeed/launcher/runner.py): `deepspeed --hostfile hostfile --num_nodes N --num_gpus G
  --master_addr A --master_port P script --deepspeed ds_config.json`, run on node 0 only (pdsh starts
  the other hosts of the hostfile, lines "host slots=G", `_parse_hostfile`);
- accelerate launch (commands/launch.py): `--config_file accelerate.yaml --num_processes (total)
  --num_machines N --machine_rank R --main_process_ip A --main_process_port P`, on every node;
- llamafactory-cli (LLaMA-Factory src/llamafactory/cli.py, launcher.py): `FORCE_TORCHRUN=1 NNODES=N
  NODE_RANK=R NPROC_PER_NODE=G MASTER_ADDR=A MASTER_PORT=P llamafactory-cli train llamafactory.yaml`
  (DeepSpeed needs the torchrun launch: "Please use FORCE_TORCHRUN=1"); FSDP goes through
  `accelerate launch --config_file accelerate.yaml src/train.py llamafactory.yaml`
  (examples/extras/fsdp_qlora/train.sh).
`train.py` stands for the user's HF Trainer script (HfArgumentParser over the JSON it is given).
"""

from __future__ import annotations

from trainplan.enums import Fsdp, ZeroStage
from trainplan.export.base import ExportContext, Exported, ExportFile

FORMAT = "launch"
SCRIPT = "train.py"          # the user's training script (a placeholder the header names)
FILE = "launch.sh"
HOSTS = "node{}"             # hostfile placeholders: node0, node1, ...


def hostfile(ctx: ExportContext) -> str:
    lines = [("# DeepSpeed hostfile: one line per node, `HOST slots=GPUS` (replace node0, node1, ... with the "
             "hosts' names; node 0 must reach the others by ssh without a password)")]
    lines += [f"{HOSTS.format(i)} slots={ctx.gpus_per_node}" for i in range(ctx.nodes)]
    return "\n".join(lines) + "\n"


def _rendezvous(ctx: ExportContext) -> list[str]:
    return [f"--node_rank {ctx.node_rank}", f"--master_addr {ctx.master_addr}", f"--master_port {ctx.master_port}"]


def torchrun(ctx: ExportContext, program: list[str]) -> list[str]:
    words = ["torchrun"]
    if ctx.nodes > 1:
        words += [f"--nnodes {ctx.nodes}", f"--nproc_per_node {ctx.gpus_per_node}", *_rendezvous(ctx)]
    else:
        words += ["--standalone", f"--nproc_per_node {ctx.gpus_per_node}"]
    return words + program


def deepspeed(ctx: ExportContext, program: list[str]) -> list[str]:
    if ctx.nodes > 1:
        return ["deepspeed", f"--hostfile {ctx.hostfile}", f"--num_nodes {ctx.nodes}",
                f"--num_gpus {ctx.gpus_per_node}", f"--master_addr {ctx.master_addr}",
                f"--master_port {ctx.master_port}", *program]
    return ["deepspeed", f"--num_gpus {ctx.gpus_per_node}", *program]


def accelerate(ctx: ExportContext, config: str, program: list[str]) -> list[str]:
    words = ["accelerate launch", f"--config_file {config}", f"--num_processes {ctx.nodes * ctx.gpus_per_node}",
             f"--num_machines {ctx.nodes}"]
    if ctx.nodes > 1:
        words += [f"--machine_rank {ctx.node_rank}", f"--main_process_ip {ctx.master_addr}",
                  f"--main_process_port {ctx.master_port}"]
    return words + program


def llamafactory(ctx: ExportContext, config: str) -> list[str]:
    env = ["FORCE_TORCHRUN=1"]
    if ctx.nodes > 1:
        env += [f"NNODES={ctx.nodes}", f"NODE_RANK={ctx.node_rank}"]
    env.append(f"NPROC_PER_NODE={ctx.gpus_per_node}")
    if ctx.nodes > 1:
        env += [f"MASTER_ADDR={ctx.master_addr}", f"MASTER_PORT={ctx.master_port}"]
    return env + ["llamafactory-cli train", config]


def line(words: list[str]) -> str:
    """One shell command, continued over lines."""
    return " \\\n  ".join(words)


def export(job, estimate, ctx: ExportContext, *, files: dict[str, str]) -> Exported:
    """The launch line for the configs written (format -> file name), as launch.sh, and the hostfile
    when the DeepSpeed launcher spans several nodes. Nothing when no format of this module's is there
    (the other formats' exporters give their own commands)."""
    layout = job.layout
    zero, fsdp = layout.zero is not ZeroStage.NONE, layout.fsdp is not Fsdp.NONE
    out: list[ExportFile] = []
    notes: list[str] = []
    where = f"on every node, with NODE_RANK 0..{ctx.nodes - 1} and MASTER_ADDR the address of node 0" \
        if ctx.nodes > 1 else "on the node"
    if "llamafactory" in files:
        if fsdp and "accelerate" in files:
            words = accelerate(ctx, files["accelerate"], ["src/train.py", files["llamafactory"]])
            notes.append("src/train.py is LLaMA-Factory's own (run from its repository, or the installed "
                         "llamafactory/launcher.py)")
        else:
            words = llamafactory(ctx, files["llamafactory"])
    elif "accelerate" in files:
        words = accelerate(ctx, files["accelerate"], [SCRIPT, *([files["hf"]] if "hf" in files else [])])
    elif "deepspeed" in files and zero:
        program = [SCRIPT, files["hf"]] if "hf" in files else [SCRIPT, f"--deepspeed {files['deepspeed']}"]
        words = deepspeed(ctx, program)
        if ctx.nodes > 1:
            where = "on node 0 only: the launcher starts every host of the hostfile (pdsh)"
            out.append(ExportFile(name=ctx.hostfile, text=hostfile(ctx), format=FORMAT))
    elif "hf" in files:
        words = torchrun(ctx, [SCRIPT, files["hf"]])
    else:
        return Exported()
    command = line(words)
    text = f"#!/usr/bin/env bash\n# run {where}, from this folder\n{command}\n"
    out.append(ExportFile(name=FILE, text=text, format=FORMAT))
    return Exported(files=tuple(out), commands=(command,), notes=tuple(notes))
