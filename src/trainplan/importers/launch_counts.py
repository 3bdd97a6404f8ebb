"""The process and GPU counts of launch lines (importers/launch.py), and the num_gpus / nodes settings they make:
torchrun's --nproc_per_node x --nnodes (torch/distributed/run.py; PET_* environment variables; "auto"/"gpu"
and elastic MIN:MAX ranges are not a count), deepspeed's --num_gpus / --num_nodes and its hostfile
(deepspeedai/DeepSpeed edaa722, deepspeed/launcher/runner.py `_parse_hostfile`), CUDA_VISIBLE_DEVICES.
"""

from __future__ import annotations

import re
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.base import Collector, ReadContext, as_int


def _world(per_node: int | None, nodes: int | None) -> int | None:
    return per_node * (nodes or 1) if per_node else None


def _gpus(c: Collector, per_node: int | None, nodes: int | None, what: str) -> None:
    if nodes is not None:
        c.set("nodes", nodes, key=what.split(" x ")[-1] if " x " in what else what, raw=nodes)
    if per_node is not None:
        c.set("num_gpus", per_node * (nodes or 1), key=what, raw={"per_node": per_node, "nodes": nodes or 1},
              note=f"{per_node} per node x {nodes or 1} node(s)")


def _count(value: Any, key: str, file: str) -> int | None:
    """A process count; None for "auto"/"gpu" (every visible GPU) and for MIN:MAX ranges."""
    text = str(value).strip().lower()
    if ":" in text:
        low, _, high = text.partition(":")
        return as_int(low, key, file, minimum=1) if low == high else None
    if text in ("auto", "gpu", "cuda", "xpu", "cpu"):
        return None
    return as_int(text, key, file, minimum=1)


def _visible(env: dict[str, str]) -> int | None:
    devices = env.get("CUDA_VISIBLE_DEVICES")
    return len([d for d in devices.split(",") if d.strip()]) if devices else None


def _torchrun_counts(c: Collector, opts: dict, env: dict) -> tuple[int | None, int | None]:
    per = opts.get("nproc_per_node", env.get("PET_NPROC_PER_NODE"))
    nnodes = opts.get("nnodes", env.get("PET_NNODES"))
    per_node = 1 if per is None else _count(per, "--nproc_per_node", c.file)
    if per_node is None:
        vis = _visible(env)
        if vis:
            per_node = vis
        else:
            c.skip("--nproc_per_node", per, "every GPU of the node: give --num-gpus")
    nodes = None
    if opts.get("standalone") is True:
        nodes = 1
    elif nnodes is not None:
        nodes = _count(nnodes, "--nnodes", c.file)
        if nodes is None:
            c.skip("--nnodes", nnodes, "an elastic MIN:MAX node range: give --nodes")
    return per_node, nodes


def _deepspeed_counts(c: Collector, opts: dict, env: dict, ctx: ReadContext | None) -> tuple[int | None, int | None]:
    num_gpus = as_int(opts.get("num_gpus", opts.get("num_accelerators", -1)), "--num_gpus", c.file, minimum=-1)
    num_nodes = as_int(opts.get("num_nodes", -1), "--num_nodes", c.file, minimum=-1)
    for key in ("include", "i", "exclude", "e"):
        if key in opts:
            c.skip(f"--{key}", opts[key], "host/slot filters are not applied: give --num-gpus and --nodes")
    hostfile = opts.get("hostfile", opts.get("H"))
    if hostfile:
        found = ctx.resolve_path(str(hostfile)) if ctx is not None else None
        if found is None:
            c.skip("--hostfile", hostfile, "file not found: hosts and slots unknown")
        else:
            slots = _hostfile(found, c.file)
            hosts = slots[:num_nodes] if num_nodes > 0 else slots
            per = [min(s, num_gpus) if num_gpus > 0 else s for s in hosts]
            c.includes.append(found)
            if len(set(per)) == 1:
                return per[0], len(per)
            c.skip("--hostfile", hostfile, f"hosts with different slot counts {per}: give --num-gpus and --nodes")
            return None, len(per)
    vis = _visible(env)
    per_node = num_gpus if num_gpus > 0 else vis
    if per_node is None:
        c.skip("--num_gpus", num_gpus, "-1: every GPU of the node: give --num-gpus")
    return per_node, (num_nodes if num_nodes > 0 else None)


def _hostfile(path: str, where: str) -> list[int]:
    """Slots per host, in order (deepspeed/launcher/runner.py _parse_hostfile). Read through safeio:
    a regular text file only (a FIFO or a device is refused, never read)."""
    from trainplan.safeio import CONFIG_LIMIT_BYTES, read_user_text

    slots: dict[str, int] = {}
    for line in read_user_text(path, what="hostfile", limit_bytes=CONFIG_LIMIT_BYTES).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.search(r"^(\S+)\s+slots=(\d+)", line)
        if not m:
            raise TrainplanError(f"--from {where}: hostfile {path} has a bad entry: {line!r}")
        if m.group(1) in slots:
            raise TrainplanError(f"--from {where}: hostfile {path} lists {m.group(1)} twice")
        slots[m.group(1)] = int(m.group(2))
    if not slots:
        raise TrainplanError(f"--from {where}: hostfile {path} is empty")
    return list(slots.values())
