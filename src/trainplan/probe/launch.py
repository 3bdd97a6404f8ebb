"""Multi-GPU probes through an existing launcher: torchrun (DDP, or FSDP2 with --fsdp) or the
DeepSpeed launcher with a generated ZeRO config (--zero 1-3). One node, data parallel only.

The parent writes a job file (the request, the device, the steps, the strategy, the DeepSpeed
config), starts the launcher on `python -m trainplan.probe.worker --job FILE`, and each rank writes
its own measurement; the probe reports the most loaded rank (the estimate's "per GPU" is the most
loaded GPU) and keeps every rank's peaks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from trainplan.enums import Fsdp, Offload, Precision, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_layout, build_setup, resolve_gpu
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.sharding import ZeroConfig
from trainplan.probe.result import MEMORY_VIEWS, Measurement, request_json
from trainplan.specs import ModelSpec

LAUNCHERS = ("auto", "torchrun", "deepspeed")
WORKER_MODULE = "trainplan.probe.worker"
JOB_FILE = "job.json"
DS_CONFIG_FILE = "ds_config.json"
GRAD_CLIP = 1.0   # HF Trainer's max_grad_norm; DeepSpeed's gradient_clipping


@frozen
class LaunchPlan:
    launcher: str                      # torchrun | deepspeed
    strategy: str                      # ddp | fsdp2 | zero1 | zero2 | zero3
    command: tuple[str, ...]
    job: dict[str, Any]                # what every rank reads
    deepspeed_config: dict[str, Any] | None
    workdir: str
    model_config_json: str | None = None   # a model given as a config: written beside the job
    written: bool = False              # the job files are on disk (write_job ran)

    def to_dict(self) -> dict[str, Any]:
        return {"launcher": self.launcher, "strategy": self.strategy, "command": list(self.command),
                "deepspeed_config": self.deepspeed_config, "workdir": self.workdir,
                "files_written": self.written, "job": self.job,
                "job_file": str(Path(self.workdir) / JOB_FILE),
                "deepspeed_config_file": (None if self.deepspeed_config is None
                                          else str(Path(self.workdir) / DS_CONFIG_FILE)),
                "rank_results": self.job["out_dir"]}


def check_layout(layout: Layout, device: str) -> None:
    if layout.nodes > 1:
        raise TrainplanError("probe launches on one node; for --nodes > 1 run your job and `trainplan record` it")
    if layout.tp * layout.pp * layout.cp * layout.ep > 1:
        raise TrainplanError("probe launches data-parallel layouts only (DDP, FSDP2, ZeRO); tensor, pipeline, "
                             "context and expert parallel need Megatron or torchtitan")
    if device == "cpu" and layout.zero is not ZeroStage.NONE:
        raise TrainplanError("--zero on --device cpu: the DeepSpeed launcher probes CUDA devices only "
                             "(use --fsdp full for a CPU trial)")


def choose(layout: Layout, launcher: str) -> tuple[str, str]:
    """(launcher, strategy): --zero -> deepspeed, --fsdp -> torchrun + FSDP2, else torchrun + DDP."""
    if launcher not in LAUNCHERS:
        raise TrainplanError(f"--launcher {launcher!r} is not one of: {', '.join(LAUNCHERS)}")
    zero = layout.zero is not ZeroStage.NONE
    if launcher == "torchrun" and zero:
        raise TrainplanError("--zero needs the DeepSpeed launcher (--launcher deepspeed or auto); "
                             "torchrun runs DDP or FSDP2 (--fsdp full)")
    if launcher == "deepspeed" and not zero:
        raise TrainplanError("--launcher deepspeed needs --zero 1, 2 or 3")
    if zero:
        return "deepspeed", f"zero{int(layout.zero)}"
    return "torchrun", "ddp" if layout.fsdp is Fsdp.NONE else "fsdp2"


def deepspeed_config(setup: TrainingSetup, layout: Layout) -> dict[str, Any]:
    """The ZeRO config the estimate assumes: DeepSpeed's own defaults (memory/sharding.ZeroConfig),
    16-bit weights with fp32 master weights in the optimizer, HF Trainer's clipping."""
    knobs, stage = ZeroConfig(), int(layout.zero)
    zero: dict[str, Any] = {"stage": stage, "overlap_comm": knobs.overlap(stage),
                            "contiguous_gradients": knobs.contiguous_gradients,
                            "reduce_bucket_size": knobs.reduce_bucket_size,
                            "allgather_bucket_size": knobs.allgather_bucket_size}
    if stage == 3:
        zero.update(stage3_prefetch_bucket_size=knobs.prefetch_bucket_size,
                    stage3_max_live_parameters=knobs.max_live_parameters,
                    stage3_max_reuse_distance=knobs.max_reuse_distance,
                    stage3_param_persistence_threshold=knobs.param_persistence_threshold,
                    sub_group_size=knobs.sub_group_size)
    if layout.offload in (Offload.OPTIMIZER, Offload.ALL):
        zero["offload_optimizer"] = {"device": knobs.offload_device, "pin_memory": True}
    if layout.offload in (Offload.PARAMS, Offload.ALL):
        if stage != 3:
            raise TrainplanError("--offload params needs --zero 3")
        zero["offload_param"] = {"device": knobs.offload_device, "pin_memory": True}
    compute = setup.precision.compute_dtype
    return {
        "train_micro_batch_size_per_gpu": setup.batch_size,
        "gradient_accumulation_steps": setup.grad_accum,
        "train_batch_size": setup.batch_size * setup.grad_accum * layout.dp,
        "gradient_clipping": GRAD_CLIP,
        "bf16": {"enabled": compute == "bf16"},
        "fp16": {"enabled": compute == "fp16", "loss_scale": 0, "initial_scale_power": 16},
        "zero_optimization": zero,
        "zero_allow_untested_optimizer": True,   # HF Trainer's torch AdamW, not DeepSpeed's FusedAdam
        "zero_force_ds_cpu_optimizer": False,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


def torchrun_command(num_gpus: int, job_path: str, python: str = sys.executable) -> list[str]:
    """torchrun (python -m torch.distributed.run) on one node, a free port (--standalone)."""
    return [python, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
            "--nproc-per-node", str(num_gpus), "-m", WORKER_MODULE, "--job", job_path]


def deepspeed_command(num_gpus: int, job_path: str, deepspeed: str = "deepspeed") -> list[str]:
    """The DeepSpeed launcher on the local node; ranks read LOCAL_RANK (no --local_rank argument)."""
    return [deepspeed, "--num_gpus", str(num_gpus), "--no_local_rank", "--module", WORKER_MODULE,
            "--job", job_path]


def _deepspeed_bin() -> str:
    beside = Path(sys.executable).with_name("deepspeed")
    return str(beside) if beside.exists() else shutil.which("deepspeed") or "deepspeed"


MODEL_CONFIG_FILE = "config.json"


def request_fields(req: JobOptions, workdir: Path) -> dict[str, Any]:
    """The request as JSON for the ranks; a ModelSpec travels as its config.json (written by
    write_job into the work folder, named here)."""
    fields = request_json(req)
    if isinstance(req.model, ModelSpec):
        if not req.model.hf_config_json:
            raise TrainplanError(f"{req.model.name} has no config.json attached; give the model as a "
                                 f"config.json path")
        fields["model"] = str(workdir / MODEL_CONFIG_FILE)
    return fields


def plan_launch(req: JobOptions, setup: TrainingSetup, layout: Layout, *, device: str, steps: int,
                launcher: str, workdir: str) -> LaunchPlan:
    check_layout(layout, device)
    if setup.precision is Precision.FP8:
        raise TrainplanError("--precision fp8 is not probed")
    chosen, strategy = choose(layout, launcher)
    work = Path(workdir)
    job_path = str(work / JOB_FILE)
    ds_config = deepspeed_config(setup, layout) if chosen == "deepspeed" else None
    job = {"request": request_fields(req, work), "device": device, "steps": steps, "strategy": strategy,
           "hybrid": layout.fsdp is Fsdp.HYBRID, "out_dir": str(work / "ranks"),
           "deepspeed_config": ds_config}
    command = (torchrun_command(layout.num_gpus, job_path) if chosen == "torchrun"
               else deepspeed_command(layout.num_gpus, job_path, _deepspeed_bin()))
    return LaunchPlan(launcher=chosen, strategy=strategy, command=tuple(command), job=job,
                      deepspeed_config=ds_config, workdir=str(work),
                      model_config_json=req.model.hf_config_json if isinstance(req.model, ModelSpec) else None)


def write_job(plan: LaunchPlan) -> LaunchPlan:
    """The job files in the plan's work folder (which must exist): the job, the DeepSpeed config,
    the model's config.json when the model was given as one, and the ranks' folder."""
    work = Path(plan.workdir)
    (work / "ranks").mkdir(parents=True, exist_ok=True)
    (work / JOB_FILE).write_text(json.dumps(plan.job, indent=2))
    if plan.model_config_json:
        (work / MODEL_CONFIG_FILE).write_text(plan.model_config_json)
    if plan.deepspeed_config is not None:
        (work / DS_CONFIG_FILE).write_text(json.dumps(plan.deepspeed_config, indent=2))
    return replace(plan, written=True)


def describe_launch(req: JobOptions, *, device: str, steps: int, launcher: str,
                    workdir: str | None = None) -> dict[str, Any]:
    """--print-launch: the command and the content of its files; nothing is started and, unless
    `workdir` (an existing folder) is given, nothing is written: the files' paths name a folder
    that does not exist yet (under the temp dir), and their content is in the result (`job`,
    `deepspeed_config`; files_written False)."""
    if req.num_gpus <= 1:
        raise TrainplanError("--print-launch applies with --num-gpus > 1")
    req = req if req.gpu is not None else replace(req, gpu="a100-80gb")
    setup, layout = build_setup(req), build_layout(req, resolve_gpu(req.gpu))
    if workdir is not None and not os.path.isdir(workdir):
        raise TrainplanError(f"workdir {workdir!r}: not an existing directory")
    work = workdir or os.path.join(tempfile.gettempdir(), f"trainplan-probe-{os.urandom(4).hex()}")
    plan = plan_launch(req, setup, layout, device=device, steps=steps, launcher=launcher, workdir=work)
    if workdir is not None:
        plan = write_job(plan)
    return plan.to_dict()


def _package_root() -> str:
    import trainplan

    return str(Path(trainplan.__file__).resolve().parents[1])


def _max(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def combine(ranks: list[dict[str, Any]]) -> Measurement:
    """The most loaded rank per memory view; per step, the slowest rank (ranks wait for each other)."""
    first = ranks[0]
    times = tuple(max(r["step_times_s"][i] for r in ranks) for i in range(len(first["step_times_s"])))
    how = {k: f"{v} (max over {len(ranks)} ranks)" for k, v in first["how"].items()}
    per_rank = [{"rank": r["rank"], **{view: r[view] for view in MEMORY_VIEWS}} for r in ranks]
    return Measurement(device=first["device"], warmup_s=max(r["warmup_s"] for r in ranks), step_times_s=times,
                       tokens_per_step=first["tokens_per_step"], how=how, extra={"per_rank": per_rank},
                       **{view: _max([r[view] for r in ranks]) for view in MEMORY_VIEWS})


def _read_ranks(out_dir: Path, num_gpus: int, proc: subprocess.CompletedProcess,
                notes: list[str]) -> list[dict[str, Any]]:
    ranks = [json.loads(p.read_text()) for p in sorted(out_dir.glob("rank*.json"))]
    errors = [f"rank {r['rank']}: {r['error']}" for r in ranks if "error" in r]
    if errors:
        raise TrainplanError(errors[0])
    tail = [line for line in (proc.stderr or "").strip().splitlines() if line.strip()]
    last = tail[-1] if tail else "no output"
    if len(ranks) != num_gpus:
        if os.environ.get("TRAINPLAN_DEBUG"):
            sys.stderr.write(proc.stderr)
        raise TrainplanError(f"the launcher exited with {proc.returncode} and {len(ranks)} of {num_gpus} ranks "
                             f"reported: {last}")
    if proc.returncode != 0:   # every rank measured and wrote its file: a failure in teardown
        notes.append(f"the launcher exited with {proc.returncode} after every rank reported ({last})")
    return sorted(ranks, key=lambda r: r["rank"])


def run_distributed(req: JobOptions, est, *, device: str, steps: int, launcher: str = "auto",
                    timeout_s: float | None = None) -> tuple[Measurement, list[str]]:
    """Launch the ranks, wait, and combine what they measured."""
    if device == "cuda":
        import torch

        visible = torch.cuda.device_count()
        if visible < est.layout.num_gpus:
            raise TrainplanError(f"--num-gpus {est.layout.num_gpus}: torch sees {visible} CUDA device(s) here")
    with tempfile.TemporaryDirectory(prefix="trainplan-probe-") as work:
        plan = plan_launch(req, est.setup, est.layout, device=device, steps=steps, launcher=launcher,
                           workdir=work)
        plan = write_job(plan)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (_package_root(), os.environ.get("PYTHONPATH", "")) if p)}
        try:
            proc = subprocess.run(plan.command, env=env, capture_output=True, text=True, timeout=timeout_s)
        except FileNotFoundError:
            raise TrainplanError(f"{plan.launcher} is not installed (pip install deepspeed)") from None
        except subprocess.TimeoutExpired:
            raise TrainplanError(f"{plan.launcher} did not finish within {timeout_s:.0f} s") from None
        notes = [f"{est.layout.num_gpus} ranks launched with {plan.launcher} ({plan.strategy}); the most "
                 f"loaded rank is reported, every rank's peaks under measured.per_rank"]
        ranks = _read_ranks(Path(plan.job["out_dir"]), est.layout.num_gpus, proc, notes)
    for rank in ranks:
        notes += [n for n in rank.get("notes", []) if n not in notes]
    return combine(ranks), notes
