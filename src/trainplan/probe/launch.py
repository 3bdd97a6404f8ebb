"""Multi-GPU probes through an existing launcher: torchrun (DDP, or FSDP2 with --fsdp) or the
DeepSpeed launcher with a ZeRO config (--zero 1-3). One node, data parallel only.

The probe is a user of trainplan's exporters (trainplan.export), so that what it measures is what
`trainplan export` would have the user run: the DeepSpeed JSON is export/deepspeed.py `config(job,
auto=False)` (less the two keys `deepspeed_config` says), the launch words are export/launch.py's
`torchrun` / `deepspeed` on one node (with the probe's worker as the program).

The parent writes a job file (the request, the device, the steps, the strategy, the DeepSpeed
config), starts the launcher on `python -m trainplan.probe.worker --job FILE`, and each rank writes
its own measurement; the probe reports the most loaded rank (the estimate's "per GPU" is the most
loaded GPU) and keeps every rank's peaks (measured.per_rank). The work folder is a temporary one,
removed after the run with whatever the launcher left in its temp dir (torchelastic's log folders),
unless the caller names a folder to keep.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from trainplan.enums import Fsdp, Offload, Precision, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.export import deepspeed as export_deepspeed
from trainplan.export import launch as export_launch
from trainplan.export.base import ExportContext
from trainplan.frozen import frozen, replace
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.job.training import Layout
from trainplan.probe.result import MEMORY_VIEWS, Measurement, request_json
from trainplan.specs import ModelSpec

LAUNCHERS = ("auto", "torchrun", "deepspeed")
WORKER_MODULE = "trainplan.probe.worker"
JOB_FILE = "job.json"
DS_CONFIG_FILE = export_deepspeed.FILE   # ds_config.json, the name trainplan export gives it
LAUNCHER_TMP = "tmp"       # the launched processes' TMPDIR, inside the work folder (removed after the run)
TERMINATE_GRACE_S = 30     # a launcher past its timeout: SIGTERM, then SIGKILL after this long


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


def deepspeed_config(job) -> dict[str, Any]:
    """The probe's ds_config: what `trainplan export --format deepspeed` writes for the same job
    (export/deepspeed.py `config(job, auto=False)`: concrete batch triple, precision, stage, offload, the
    bucket knobs only where the job sets them, DeepSpeed's defaults otherwise, as the estimate assumes),
    with two changes the worker needs, because it hands deepspeed.initialize the optimizer itself (HF
    Trainer's, probe/run.make_optimizer):
    - no `optimizer` section: a client optimizer wins over the config's (DeepSpeed runtime/engine.py
      `_configure_optimizer`), so the file says what runs;
    - `zero_force_ds_cpu_optimizer: false` under optimizer offload: otherwise DeepSpeed refuses a client
      optimizer that is not DeepSpeedCPUAdam ("You are using ZeRO-Offload with a client provided
      optimizer", engine.py). Under the HF Trainer accelerate swaps DeepSpeedCPUAdam in instead
      (accelerator.py `_prepare_deepspeed`); the states live in CPU memory either way, the GPU's is the same.
    bf16 master weights (--precision bf16-pure) with offload need DeepSpeedCPUAdam (runtime/base_optimizer.py),
    which the probe does not build: refused here in one line."""
    if job.setup.precision is Precision.BF16_PURE and job.layout.offload is not Offload.NONE:
        raise TrainplanError("probe --zero: --precision bf16-pure with --offload needs DeepSpeedCPUAdam (DeepSpeed's "
                             "bf16 master weights), which the probe does not build; probe --precision bf16 or "
                             "without --offload")
    try:
        out = export_deepspeed.config(job, auto=False)
    except TrainplanError as exc:   # the exporter's refusals, in the probe's words
        raise TrainplanError(str(exc).replace("--format deepspeed: ", "probe --zero: ", 1)) from None
    out.pop("optimizer", None)
    if "offload_optimizer" in out["zero_optimization"]:
        out["zero_force_ds_cpu_optimizer"] = False
    return out


def _context(num_gpus: int) -> ExportContext:
    return ExportContext(nodes=1, gpus_per_node=num_gpus)


def _argv(words: list[str]) -> list[str]:
    """The export's launch words (an option and its value are one word there, for display) as argv."""
    return [part for word in words for part in shlex.split(word)]


def torchrun_command(num_gpus: int, job_path: str, python: str = sys.executable) -> list[str]:
    """export/launch.py's one-node torchrun (`--standalone --nproc_per_node G`: a free port), started as
    `python -m torch.distributed.run` so that the ranks run this interpreter."""
    words = _argv(export_launch.torchrun(_context(num_gpus), []))   # ["torchrun", options...]
    return [python, "-m", "torch.distributed.run", *words[1:], "-m", WORKER_MODULE, "--job", job_path]


def deepspeed_command(num_gpus: int, job_path: str, deepspeed: str = "deepspeed") -> list[str]:
    """export/launch.py's one-node DeepSpeed launcher (`--num_gpus G`); the ranks read LOCAL_RANK
    (--no_local_rank: no --local_rank argument) and run the worker module."""
    words = _argv(export_launch.deepspeed(_context(num_gpus), []))  # ["deepspeed", options...]
    return [deepspeed, *words[1:], "--no_local_rank", "--module", WORKER_MODULE, "--job", job_path]


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


def plan_launch(req: JobOptions, job, *, device: str, steps: int, launcher: str, workdir: str) -> LaunchPlan:
    """The launch of `job` (the resolved Job of `req`) from the folder `workdir`; nothing is written."""
    setup, layout = job.setup, job.layout
    check_layout(layout, device)
    if setup.precision is Precision.FP8:
        raise TrainplanError("--precision fp8 is not probed")
    chosen, strategy = choose(layout, launcher)
    work = Path(workdir)
    job_path = str(work / JOB_FILE)
    ds_config = deepspeed_config(job) if chosen == "deepspeed" else None
    ranks_job = {"request": request_fields(req, work), "device": device, "steps": steps, "strategy": strategy,
                 "hybrid": layout.fsdp is Fsdp.HYBRID, "out_dir": str(work / "ranks"),
                 "deepspeed_config": ds_config}
    command = (torchrun_command(layout.num_gpus, job_path) if chosen == "torchrun"
               else deepspeed_command(layout.num_gpus, job_path, _deepspeed_bin()))
    return LaunchPlan(launcher=chosen, strategy=strategy, command=tuple(command), job=ranks_job,
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
        (work / DS_CONFIG_FILE).write_text(export_deepspeed.dumps(plan.deepspeed_config))
    return replace(plan, written=True)


def _existing_dir(workdir: str) -> None:
    if not os.path.isdir(workdir):
        raise TrainplanError(f"workdir {workdir!r}: not an existing directory")


def describe_launch(req: JobOptions, *, device: str, steps: int, launcher: str,
                    workdir: str | None = None) -> dict[str, Any]:
    """--print-launch: the command and the content of its files; nothing is started and, unless
    `workdir` (an existing folder) is given, nothing is written: the files' paths name a folder
    that does not exist yet (under the temp dir), and their content is in the result (`job`,
    `deepspeed_config`; files_written False)."""
    if req.num_gpus <= 1:
        raise TrainplanError("--print-launch applies with --num-gpus > 1")
    req = req if req.gpu is not None else replace(req, gpu="a100-80gb")
    job = resolve_job(req, priced=False, calibration=None)
    if workdir is not None:
        _existing_dir(workdir)
    work = workdir or os.path.join(tempfile.gettempdir(), f"trainplan-probe-{os.urandom(4).hex()}")
    plan = plan_launch(req, job, device=device, steps=steps, launcher=launcher, workdir=work)
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


def _run_launcher(plan: LaunchPlan, env: dict[str, str], timeout_s: float | None) -> subprocess.CompletedProcess:
    """The launcher, waited for. Past `timeout_s` it gets SIGTERM, which torchrun and the DeepSpeed
    launcher pass on to the ranks they started (in sessions of their own), and SIGKILL after a grace."""
    try:
        proc = subprocess.Popen(plan.command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise TrainplanError(f"{plan.launcher} is not installed (pip install deepspeed)") from None
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise TrainplanError(f"{plan.launcher} did not finish within {timeout_s:.0f} s") from None
    return subprocess.CompletedProcess(plan.command, proc.returncode, out, err)


def _launch(req: JobOptions, est, work: Path, *, device: str, steps: int, launcher: str,
            timeout_s: float | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The ranks' results and the launch notes; the launcher's temp dir (inside `work`) is removed."""
    plan = write_job(plan_launch(req, est.job, device=device, steps=steps, launcher=launcher, workdir=str(work)))
    scratch = work / LAUNCHER_TMP
    scratch.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": os.pathsep.join(
        p for p in (_package_root(), os.environ.get("PYTHONPATH", "")) if p)}
    try:
        proc = _run_launcher(plan, env, timeout_s)
        notes = [(f"{est.layout.num_gpus} ranks launched with {plan.launcher} ({plan.strategy}); the most "
                  f"loaded rank is reported, every rank's peaks under measured.per_rank")]
        ranks = _read_ranks(Path(plan.job["out_dir"]), est.layout.num_gpus, proc, notes)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return ranks, notes


def run_distributed(req: JobOptions, est, *, device: str, steps: int, launcher: str = "auto",
                    timeout_s: float | None = None, workdir: str | None = None) -> tuple[Measurement, list[str]]:
    """Launch the ranks, wait, and combine what they measured. The job files and the ranks' results
    go to a temporary folder that is removed afterwards (what the ranks measured is in the result:
    measured.per_rank), or, with `workdir` (an existing folder), stay there (job.json, ds_config.json,
    ranks/rank<N>.json). Either way the launcher's own temp files (torchelastic's logs) go."""
    if device == "cuda":
        import torch

        visible = torch.cuda.device_count()
        if visible < est.layout.num_gpus:
            raise TrainplanError(f"--num-gpus {est.layout.num_gpus}: torch sees {visible} CUDA device(s) here")
    kw = {"device": device, "steps": steps, "launcher": launcher, "timeout_s": timeout_s}
    if workdir is not None:
        _existing_dir(workdir)
        ranks, notes = _launch(req, est, Path(workdir), **kw)
        notes.append(f"the job files and each rank's result are kept in {workdir}")
    else:
        with tempfile.TemporaryDirectory(prefix="trainplan-probe-", ignore_cleanup_errors=True) as work:
            ranks, notes = _launch(req, est, Path(work), **kw)
    for rank in ranks:
        notes += [n for n in rank.get("notes", []) if n not in notes]
    return combine(ranks), notes
