"""Launch lines: torchrun, deepspeed, accelerate launch, llamafactory-cli, tune run, torchtitan's
run_train.sh and `python script.py --hf-args ...`, given as a file (.sh) or as the command itself, with
environment assignments before the command (NPROC_PER_NODE=8 NNODES=2 CUDA_VISIBLE_DEVICES=0,1 ...).
`swift ...` and `megatron ...` lines belong to importers/swift.py. CUDA_LAUNCH_BLOCKING=1 among the
assignments is read as launch_blocking (every launch synchronous: trainplan.timing.launch),
OMP_NUM_THREADS as cpu_threads_per_rank (torch/distributed/run.py sets 1 only when it is unset); the
others are counted as ignored.

What sets the GPU count (shared/reference/framework_configs.md section 8):
- torchrun (torch/distributed/run.py): world = --nnodes x --nproc-per-node (default 1; also PET_* env);
  --standalone is one node. `python -m torch.distributed.run|launch` is the same.
- deepspeed (deepspeedai/DeepSpeed edaa722, deepspeed/launcher/runner.py): --num_gpus / --num_nodes default -1
  = every GPU and every host of the hostfile (`_parse_hostfile`: lines "host slots=N").
- accelerate launch (huggingface/accelerate 16cb6eb, commands/launch.py): flags over the --config_file YAML;
  --num_processes is the total over all machines.
- llamafactory-cli train x.yaml key=value (LLaMA-Factory ff6d4d1 cli.py / hparams/parser.py read_args: the YAML
  with OmegaConf.from_cli overrides on top): torchrun with NNODES (1) x NPROC_PER_NODE (the device count)
  when FORCE_TORCHRUN is set or more than one GPU is visible.
- tune run [torchrun options] RECIPE --config X key=value (pytorch/torchtune bd2a0fc torchtune/_cli/run.py):
  torchrun for distributed recipes, one process for *_single_device recipes.
- torchtitan run_train.sh (v0.2.2): torchrun --nproc_per_node=${NGPU:-8} -m torchtitan.train
  --job.config_file ${CONFIG_FILE} "$@" (CLI overrides `--section.key value` over the TOML).
Configs and script arguments go to their own readers: the llamafactory-cli YAML with its key=value overrides
to importers/llamafactory.py, `train.py --key value` arguments (over a positional YAML/JSON) to importers/hf.py
(or the reader whose format they are), --deepspeed JSONs through those readers, accelerate YAMLs (with the
launch flags laid over them) to importers/accelerate.py, torchtune/torchtitan configs (with their overrides)
to importers/torchtune.py and torchtitan.py.

The GPU and node counts are read in importers/launch_counts.py, the training script and its arguments in
importers/launch_script.py.
"""

from __future__ import annotations

import os
import re
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers import accelerate as accelerate_reader
from trainplan.importers import megatron_lm
from trainplan.importers import torchtune as tune
from trainplan.importers.base import Collector, Imported, ReadContext, as_int
from trainplan.importers.launch_counts import _count, _deepspeed_counts, _gpus, _torchrun_counts, _visible, _world
from trainplan.importers.launch_script import _CONFIG_EXT, _absorb, _load, _scalar, _script, _titan
from trainplan.importers.launch_script import script_args as script_args
from trainplan.importers.shell import TORCH_LAUNCH_MODULES

FORMAT = "launch"
_ENV = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)     # a value may span lines (a quoted argument list)
_MINE = {"torchrun", "deepspeed", "accelerate", "llamafactory-cli", "lmf", "tune", "python", "python3", "srun"}
_NOT_MINE = {"swift", "megatron"}          # importers/swift.py
_SEPARATORS = {"&&", "||", ";", "|"}
# commands that run another one (`uv run python -m torch.distributed.run ...`, `nsys profile ... torchrun ...`):
# the launcher after them is the command read
_WRAPPERS = {"uv", "nsys", "numactl", "time", "nohup", "stdbuf", "taskset", "exec"}
_TORCHRUN_FLAGS = {"standalone", "m", "module", "no_python", "run_path", "virtual_local_rank", "use_env"}
_DS_FLAGS = {"module", "no_python", "no_local_rank", "no_ssh", "no_ssh_check", "force_multi", "save_pid",
             "elastic_training", "bind_cores_to_rank", "autotuning_run"}
_ACC_FLAGS = {"cpu", "multi_gpu", "tpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "use_xpu", "m", "module",
              "no_python", "quiet", "q", "debug", "same_network", "use_parallelism_config", "ipex", "mps",
              "tpu_use_cluster", "tpu_use_sudo", "downcast_bf16", "enable_cpu_affinity"}


def detect(data: Any, path: str) -> int:
    if not isinstance(data, list) or not data:
        return 0
    _, words = _command(data)
    if not words:
        return 0
    first = os.path.basename(words[0]).lower()
    if first in _NOT_MINE:
        return 0
    if first in _MINE:
        return 20
    return 10 if first.endswith((".sh", ".py")) else 0


def _command(data: list[str]) -> tuple[dict[str, str], list[str]]:
    """The environment and the words of the first launcher command (`export A=1 && torchrun ...` too)."""
    env: dict[str, str] = {}
    segments, current = [], []
    for word in data:
        if word in _SEPARATORS:
            segments.append(current)
            current = []
        else:
            current.append(word)
    segments.append(current)
    for seg in segments:
        words = [w for w in seg if w not in ("export", "env")] if seg and seg[0] in ("export", "env") else seg
        i = 0
        while i < len(words) and _ENV.match(words[i]):
            key, value = _ENV.match(words[i]).groups()
            env[key] = value
            i += 1
        rest = words[i:]
        if rest and os.path.basename(rest[0]).lower() in _WRAPPERS:
            at = next((k for k, w in enumerate(rest) if os.path.basename(w).lower() in _MINE), None)
            rest = rest[at:] if at is not None else rest
        if rest and os.path.basename(rest[0]).lower() not in ("cd", "source", ".", "set", "echo", "mkdir"):
            return env, rest
    return env, []


def _options(words: list[str], flags: set[str]) -> tuple[dict[str, Any], list[str]]:
    """Leading options (`--a b`, `--a=b`, `--flag`) and the words after them (the script and its args)."""
    opts: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name, eq, value = word.partition("=")
        name = name.lstrip("-").replace("-", "_")
        if eq:
            opts[name] = value
        elif name in flags or i + 1 >= len(words) or words[i + 1].startswith("--"):
            opts[name] = True      # a switch, or a value the script left empty (`--master_addr $(scontrol ...)`)
        else:
            opts[name] = words[i + 1]
            i += 1
        i += 1
    return opts, words[i:]


def read(data: list[str], path: str, ctx: ReadContext | None = None) -> Imported:
    c = Collector(FORMAT, path)
    env, words = _command(data)
    if not words:
        raise TrainplanError(f"--from {path}: no launch command found")
    first = os.path.basename(words[0]).lower()
    if (as_torchrun := _torch_module_launch(words)) is not None:
        first, words = "torchrun", as_torchrun
    blocking = env.pop("CUDA_LAUNCH_BLOCKING", None)
    if blocking is not None:   # CUDA: "0 or 1 (default is 0)"; 1 makes every launch synchronous (timing.launch)
        c.set("launch_blocking", blocking.strip() == "1", key="CUDA_LAUNCH_BLOCKING", raw=blocking)
    threads = env.pop("OMP_NUM_THREADS", None)
    if threads is not None:    # torchrun/accelerate keep a user's OMP_NUM_THREADS (they set 1 only when unset)
        c.set("cpu_threads_per_rank", as_int(threads, "OMP_NUM_THREADS", path, minimum=1), key="OMP_NUM_THREADS",
              raw=threads)
    c.ignore(len(env))
    if first in ("torchrun", "deepspeed"):
        _distributed(c, words, ctx, env)
    elif first == "accelerate":
        if len(words) < 2 or words[1] != "launch":
            raise TrainplanError(f"--from {path}: only `accelerate launch ...` starts training")
        _accelerate(c, words[2:], ctx, env)
    elif first in ("llamafactory-cli", "lmf"):
        _llamafactory(c, words[1:], ctx, env)
    elif first == "tune":
        if len(words) < 2 or words[1] != "run":
            raise TrainplanError(f"--from {path}: only `tune run RECIPE --config FILE` starts training")
        _tune(c, words[2:], ctx)
    elif first == "srun":
        _srun(c, words[1:], ctx, env)
    elif first in ("python", "python3"):
        rest = _options(words[1:], {"u", "O", "B", "m"})[1]
        _script(c, rest, ctx, env, 1 if rest and megatron_lm.is_megatron_lm(rest[0]) else None)   # one process
    elif first.endswith(".py"):
        _script(c, words, ctx, env, None)
    elif first.endswith(".sh") and (first == "run_train.sh" or "CONFIG_FILE" in env):
        ngpu = env.get("NGPU")
        per_node = as_int(ngpu, "NGPU", path, minimum=1) if ngpu else 8
        if not ngpu:
            c.default("num_gpus", 8, key="NGPU", note="torchtitan run_train.sh: NGPU=${NGPU:-\"8\"}")
        _titan(c, words[1:], ctx, env, per_node)
        if ngpu:
            _gpus(c, per_node, None, "NGPU (run_train.sh: torchrun --nproc_per_node=${NGPU})")
    else:
        c.skip("command", " ".join(words[:2]), "a script trainplan cannot look into: give the launch command itself")
    return c.result()


def _distributed(c: Collector, words: list[str], ctx: ReadContext | None, env: dict) -> None:
    """`torchrun ...` or `deepspeed ...` (words[0]): its per-node and node counts, then the script it runs."""
    if os.path.basename(words[0]).lower() == "torchrun":
        opts, rest = _options(words[1:], _TORCHRUN_FLAGS)
        per_node, nodes = _torchrun_counts(c, opts, env)
        _script(c, rest, ctx, env, _world(per_node, nodes))
        _gpus(c, per_node, nodes, "torchrun --nproc_per_node x --nnodes")
    else:
        opts, rest = _options(words[1:], _DS_FLAGS)
        per_node, nodes = _deepspeed_counts(c, opts, env, ctx)
        _script(c, rest, ctx, env, _world(per_node, nodes))
        _gpus(c, per_node, nodes, "deepspeed --num_gpus/--num_nodes/--hostfile")


def _torch_module_launch(words: list[str]) -> list[str] | None:
    """`python [-u -O -OO -B] -m torch.distributed.run|launch ARGS` as `torchrun ARGS` (torch/distributed/run.py is
    torchrun's entry point; launch.py runs it too); None for any other command."""
    if not words or os.path.basename(words[0]).lower() not in ("python", "python3"):
        return None
    j = 1
    while j < len(words) and words[j] in ("-u", "-O", "-OO", "-B"):     # interpreter flags before -m
        j += 1
    if j + 1 < len(words) and words[j] == "-m" and words[j + 1] in TORCH_LAUNCH_MODULES:
        return ["torchrun", *words[j + 2:]]
    return None


def _inner_launcher(words: list[str]) -> list[str] | None:
    """The words from a distributed launcher that srun's task runs (`srun bash -c "torchrun ..."`, `python -m
    torch.distributed.run`, `deepspeed`), as `torchrun ...` / `deepspeed ...`; None when it runs a script itself."""
    for k, word in enumerate(words):
        name = os.path.basename(word).lower()
        if name.endswith(".py"):
            return None
        if name in ("torchrun", "deepspeed"):
            return words[k:]
        if (as_torchrun := _torch_module_launch(words[k:])) is not None:
            return as_torchrun
    return None


def _srun(c: Collector, words: list[str], ctx: ReadContext | None, env: dict) -> None:
    """`srun [options] [sh -c] python pretrain_gpt.py ...` under sbatch: one rank per Slurm task, the tasks
    from srun's -N/--nodes x --ntasks-per-node (or -n/--ntasks), else the job's (SLURM_NNODES x
    SLURM_NTASKS_PER_NODE, SLURM_NTASKS: what sbatch's #SBATCH directives set, importers/shell.py)."""
    opts, _ = _options(words, {"l", "label", "exclusive", "u", "unbuffered"})
    def count(key: str, *values: Any) -> int | None:
        value = next((v for v in values if v not in (None, True)), None)
        return None if value is None else _count(value, key, c.file)

    nodes = count("--nodes", opts.get("nodes"), opts.get("N"), env.get("SLURM_NNODES"))
    per_node = count("--ntasks-per-node", opts.get("ntasks_per_node"), env.get("SLURM_NTASKS_PER_NODE"))
    total = count("--ntasks", opts.get("ntasks"), opts.get("n"), env.get("SLURM_NTASKS"))
    world = per_node * (nodes or 1) if per_node else total
    inner = _inner_launcher(words)
    if inner is not None:
        # each Slurm task runs a launcher that starts its node's ranks (BLOOM's tr11-176B-ml.slurm: one task a
        # node, `python -m torch.distributed.run --nproc_per_node 8 --nnodes $SLURM_NNODES`): the launcher counts
        _distributed(c, inner, ctx, env)
        return
    at = next((i for i, w in enumerate(words) if w.endswith(".py")), None)
    if at is None:
        c.skip("command", " ".join(words[:2]), "srun of a script trainplan cannot look into: give the launch command")
        return
    _script(c, words[at:], ctx, env, world)
    if world:
        c.derived("num_gpus", world, key="srun / #SBATCH", note="one rank per Slurm task: "
                  + (f"{nodes or 1} node(s) x {per_node} tasks per node" if per_node else f"{total} tasks"))
        if nodes and nodes > 1:
            c.derived("nodes", nodes, key="srun / #SBATCH", note="Slurm nodes")


def _accelerate(c: Collector, words: list[str], ctx: ReadContext | None, env: dict) -> None:
    """`accelerate launch [flags] script args`: the flags laid over the --config_file YAML (commands/launch.py
    _validate_launch_command: a YAML value fills only a flag left out), read by importers/accelerate.py."""
    opts, rest = _options(words, _ACC_FLAGS)
    data: dict[str, Any] = {}
    where = c.file
    if opts.get("config_file"):
        loaded = _load(c, str(opts["config_file"]), ctx, "--config_file")
        if loaded is not None:
            where, data = loaded
            if not isinstance(data, dict):
                raise TrainplanError(f"--from {c.file}: {where} is not an accelerate config")
    else:
        c.skip("--config_file", None, "none given: accelerate's default_config.yaml (in $HF_HOME/accelerate) is not "
                                      "read; only the flags on the line are")
        data = {"compute_environment": "LOCAL_MACHINE"}
    data = dict(data)
    kinds = [t for flag, t in (("use_deepspeed", "DEEPSPEED"), ("use_fsdp", "FSDP"), ("multi_gpu", "MULTI_GPU"),
                               ("use_megatron_lm", "MEGATRON_LM")) if opts.get(flag) is True]
    if kinds:
        data["distributed_type"] = kinds[0]
    data.setdefault("distributed_type", "MULTI_GPU" if _count(opts.get("num_processes", 1), "--num_processes",
                                                                c.file) not in (None, 1) else "NO")
    for key in ("num_processes", "num_machines", "mixed_precision"):
        if key in opts:
            data[key] = _scalar(opts[key])
    for key, value in opts.items():
        if key in ("zero_stage", "offload_optimizer_device", "offload_param_device", "gradient_accumulation_steps",
                   "deepspeed_config_file", "zero3_init_flag"):
            data["deepspeed_config"] = {**(data.get("deepspeed_config") or {}), key: _scalar(value)}
        elif key.startswith("fsdp_"):
            data["fsdp_config"] = {**(data.get("fsdp_config") or {}), key: _scalar(value)}
        elif key.startswith("parallelism_config_"):
            data["parallelism_config"] = {**(data.get("parallelism_config") or {}), key: _scalar(value)}
    if "dynamo_backend" in opts:
        data["dynamo_config"] = {**(data.get("dynamo_config") or {}), "dynamo_backend": opts["dynamo_backend"]}
    if where == c.file and len(data) <= 2 and "num_processes" not in opts:
        c.ignore(len(opts))      # no config file and no flag that says anything about the job
    else:
        imported = accelerate_reader.read(data, where, ctx)
        _absorb(c, imported) if where == c.file else c.merge(imported)
    _script(c, rest, ctx, env, None)


def _llamafactory(c: Collector, words: list[str], ctx: ReadContext | None, env: dict) -> None:
    """`llamafactory-cli train x.yaml key=value ...`: the overrides laid over the YAML
    (importers/llamafactory.py with_overrides, as hparams/parser.py read_args does), read by that reader."""
    from trainplan.importers import llamafactory

    if not words or words[0] != "train":
        raise TrainplanError(f"--from {c.file}: only `llamafactory-cli train CONFIG [key=value ...]` starts training")
    args = words[1:]
    config = args[0] if args and args[0].lower().endswith(_CONFIG_EXT) else None
    if config is None:
        c.skip("llamafactory-cli train", " ".join(args[:3]), "no YAML/JSON config after `train`")
    else:
        loaded = _load(c, config, ctx, "llamafactory-cli train CONFIG")
        if loaded is not None:
            found, data = loaded
            if not isinstance(data, dict):
                raise TrainplanError(f"--from {c.file}: {found} is not a LLaMA-Factory config")
            c.merge(llamafactory.read(llamafactory.with_overrides(data, args[1:], c.file), found, ctx))
    nnodes = env.get("NNODES")
    nodes = as_int(nnodes, "NNODES", c.file, minimum=1) if nnodes else None
    per = env.get("NPROC_PER_NODE")
    per_node = as_int(per, "NPROC_PER_NODE", c.file, minimum=1) if per else _visible(env)
    if per_node is None:
        c.skip("NPROC_PER_NODE", None, "unset: LLaMA-Factory uses every GPU of the node; give --num-gpus")
    _gpus(c, per_node, nodes, "NPROC_PER_NODE x NNODES" if per else "CUDA_VISIBLE_DEVICES x NNODES")


def _tune(c: Collector, words: list[str], ctx: ReadContext | None) -> None:
    opts, rest = _options(words, _TORCHRUN_FLAGS)
    if not rest:
        raise TrainplanError(f"--from {c.file}: tune run needs a recipe")
    recipe = os.path.splitext(os.path.basename(rest[0]))[0]
    args = rest[1:]
    config = args[args.index("--config") + 1] if "--config" in args and args.index("--config") + 1 < len(args) \
        else None
    overrides = [a for i, a in enumerate(args) if "=" in a and not a.startswith("-") and
                 (i == 0 or args[i - 1] != "--config")]
    distributed = "distributed" in recipe
    loaded = _load(c, config, ctx, "--config") if config and config.endswith((".yaml", ".yml")) else None
    if config and not config.endswith((".yaml", ".yml")):
        c.skip("--config", config, "a built-in torchtune config name: copy it with `tune cp` and give the file")
    if loaded is not None:
        found, data = loaded
        if not isinstance(data, dict):
            raise TrainplanError(f"--from {c.file}: {found} is not a torchtune config")
        data = tune.apply_overrides(data, overrides, c.file)
        c.merge(tune.read_recipe(data, found, ctx, recipe=recipe))
    else:
        c.set("framework", "torchtune", key="tune run", raw=recipe)
        method = "lora" if "lora" in recipe else "full" if "full" in recipe else None
        if method:
            c.set("method", "qlora" if config and "qlora" in config.lower() else method, key="tune run RECIPE",
                  raw=recipe)
        if distributed:
            c.derived("fsdp", "full", key="tune run RECIPE", note=f"recipe {recipe}: FSDP2")
        c.ignore(len(overrides))
    if opts:     # torchrun options: _cli/run.py _run_distributed (torchrun), else _run_single_device (one process)
        per_node, nodes = _torchrun_counts(c, opts, {})
        _gpus(c, per_node, nodes, "tune run --nproc_per_node x --nnodes")
    else:
        c.set("num_gpus", 1, key="tune run RECIPE", raw=recipe,
              note="no torchrun options: tune run runs the recipe in one process (torchtune/_cli/run.py)")
