"""trainplan probe (issue 8): the CPU path end to end, errors, the multi-GPU launch it generates,
and the GPU measurement matrix (--tiny on the CPU, --dry-run)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainplan.cli import main
from trainplan.enums import ZeroStage
from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup, resolve_job
from trainplan.job.training import Layout
from trainplan.probe import launch
from trainplan.probe.measure import local_gpu_id
from trainplan.probe.result import Measurement, error_pct

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "fixtures" / "trace" / "tiny_llama.json"
TINY_QWEN = ROOT / "tests" / "fixtures" / "trace" / "tiny_qwen2.json"
MATRIX = ROOT / "benchmarks" / "gpu" / "matrix.py"
REPORT = ROOT / "benchmarks" / "gpu" / "report.py"
CPU_ARGS = ["probe", "--device", "cpu", "--model", str(TINY), "--batch-size", "2", "--seq-len", "64"]


def _needs_torch():
    import peft  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401


# -- the probe on the CPU --------------------------------------------------------------------------

@pytest.mark.trace
def test_probe_cpu_prints_measured_beside_estimated(capsys):
    _needs_torch()
    assert main(CPU_ARGS + ["--no-record"]) == 0
    out = capsys.readouterr().out
    for text in ("measured", "estimated", "error", "peak allocated", "peak reserved", "device (NVML)",
                 "step time", "tokens/s per GPU", "Probed on CPU", "3 steps (1 warm-up)"):
        assert text in out, text
    allocated = next(line for line in out.splitlines() if line.startswith("peak allocated"))
    assert "MiB" in allocated and "%" in allocated
    assert "not measured: a CPU has no caching-allocator reserve" in out


@pytest.mark.trace
def test_probe_cpu_json_equals_the_real_trace():
    """The probe's steady-state step on the CPU keeps what the trace's real-tensor step keeps, to
    the byte, and the estimate is within 2% of it."""
    _needs_torch()
    from trainplan.trace import run_trace

    proc = subprocess.run([sys.executable, "-m", "trainplan.cli", *CPU_ARGS, "--json", "--no-record"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) >= {"setup", "environment", "measured", "estimated", "error_pct", "notes", "steps"}
    measured, estimated = data["measured"], data["estimated"]
    trace = run_trace(build_setup(JobOptions(model=str(TINY), batch_size=2, seq_len=64)), real_tensors=True)
    assert measured["peak_allocated_bytes"] == trace.peak_cuda_allocated_bytes
    assert measured["peak_allocated_unrounded_bytes"] == trace.peak_allocated_bytes
    assert measured["peak_reserved_bytes"] is None and measured["device_bytes"] is None
    assert len(measured["step_times_s"]) == 2 and measured["tokens_per_step"] == 128
    assert measured["tokens_per_s"] == pytest.approx(128 / measured["step_s"])
    assert abs(data["error_pct"]["peak_allocated_bytes"]) < 2.0
    assert data["error_pct"]["peak_reserved_bytes"] is None
    assert data["error_pct"]["step_s"] is None   # a CPU step is no GPU step
    assert estimated["peak_allocated_bytes"] > 0 and estimated["gpu"] == "a100-sxm4-80gb"
    assert data["environment"]["device"] == "cpu" and data["environment"]["torch"]
    assert data["setup"]["model"] == "tiny_llama" and data["setup"]["batch_size"] == 2


@pytest.mark.trace
def test_probe_cpu_lora_checkpointing_grad_accum(capsys):
    _needs_torch()
    args = ["probe", "--device", "cpu", "--model", str(TINY_QWEN), "--batch-size", "2", "--seq-len", "32",
            "--method", "lora", "--grad-ckpt", "full", "--grad-accum", "2", "--precision", "bf16-pure",
            "--steps", "2", "--json", "--no-record"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["setup"]["method"] == "lora" and data["steps"] == 2
    assert data["measured"]["tokens_per_step"] == 2 * 32 * 2
    assert abs(data["error_pct"]["peak_allocated_bytes"]) < 5.0


@pytest.mark.trace
def test_cpu_probe_is_not_recorded(capsys):
    _needs_torch()
    assert main(CPU_ARGS + ["--steps", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recorded"] is None
    assert any(note.startswith("not recorded: CPU probes stay out of the ledger") for note in data["notes"])


# -- the ledger --------------------------------------------------------------------------------------

def _gpu_result():
    """A probe result as a GPU run gives it (no GPU needed to test the recording)."""
    from trainplan.estimation import estimate
    from trainplan.job.resolve import resolve_job
    from trainplan.probe.result import Predicted, ProbeResult, request_json

    req = JobOptions(model="qwen2.5-0.5b", batch_size=4, seq_len=1024, gpu="h200")
    est = estimate(resolve_job(req))
    gib = 2**30
    measured = Measurement(device="cuda", peak_allocated_bytes=19 * gib, peak_reserved_bytes=20 * gib,
                           device_bytes=21 * gib, warmup_s=2.0, step_times_s=(0.06, 0.061, 0.059),
                           tokens_per_step=4096)
    return ProbeResult(setup=est.setup_dict(), environment={"device": "cuda", "gpu_name": "NVIDIA H200"},
                       measured=measured, predicted=Predicted.from_estimate(est), steps=4,
                       request=request_json(req))


def test_record_stores_a_gpu_probe_once(tmp_path, monkeypatch):
    import alembic  # noqa: F401
    import sqlalchemy  # noqa: F401

    from trainplan.ledger import store
    from trainplan.probe.record import record, run_record

    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path))
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    result = _gpu_result()
    rec = run_record(result)
    assert rec.source == "trainplan probe" and rec.index()["gpu"] == "h200-sxm"
    assert rec.index()["model"] == "qwen2.5-0.5b" and rec.index()["batch_size"] == 4
    assert rec.measured["tokens_per_s_per_gpu"] == pytest.approx(4096 / 0.06)
    assert rec.estimate["peak_allocated_bytes"] == result.predicted.peak_allocated_bytes
    first = record(result, db=db)
    assert first.recorded == rec.fingerprint[:16] and "recorded in the ledger" in first.notes[-1]
    again = record(result, db=db)
    assert again.notes[-1].endswith("(already there)")
    assert store.count_runs(store.engine_for(db)) == 1
    store.dispose_all()


def test_record_spools_when_the_database_is_unreachable(tmp_path, monkeypatch):
    import alembic  # noqa: F401
    import sqlalchemy  # noqa: F401

    from trainplan.ledger import spool
    from trainplan.probe.record import record

    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path))
    result = record(_gpu_result(), db="sqlite:////nonexistent-dir/for/sure/ledger.sqlite")
    assert result.recorded is None and result.notes[-1].startswith("not recorded yet:")
    assert len(spool.pending()) == 1


def test_record_without_the_ledger_extra(monkeypatch):
    import importlib.util

    from trainplan.probe import record as record_module

    real = importlib.util.find_spec
    monkeypatch.setattr(record_module.importlib.util, "find_spec",
                        lambda name, *a: None if name == "sqlalchemy" else real(name, *a))
    result = record_module.record(_gpu_result())
    assert result.recorded is None and "'ledger' extra" in result.notes[-1]


# -- errors: one line, exit 2 ------------------------------------------------------------------------

def _one_line_error(capsys, args: list[str], needle: str) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainplan: error:") and err.count("\n") == 1 and "Traceback" not in err, err
    assert needle in err, err
    return err


@pytest.mark.trace
def test_missing_cuda_device_is_one_line(capsys, monkeypatch):
    _needs_torch()
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = ["probe", "--model", str(TINY), "--batch-size", "2", "--seq-len", "64", "--no-record"]
    _one_line_error(capsys, args, "--device cuda")


@pytest.mark.trace
@pytest.mark.parametrize("extra, needle", [
    (["--method", "qlora"], "bitsandbytes"),
    (["--optimizer", "adamw-8bit"], "bitsandbytes"),
    (["--precision", "fp8"], "fp8"),
    (["--steps", "1"], "--steps 1"),
    (["--device", "tpu"], "--device 'tpu'"),
], ids=["qlora-cpu", "8bit-cpu", "fp8", "one-step", "bad-device"])
def test_unsupported_on_cpu_is_one_line(capsys, extra, needle):
    _needs_torch()
    _one_line_error(capsys, CPU_ARGS + ["--no-record"] + extra, needle)


def test_cpu_refuses_a_model_too_large_for_ram():
    from trainplan.probe.run import check_cpu_fits

    with pytest.raises(TrainplanError, match="over half"):
        check_cpu_fits(10**15)
    check_cpu_fits(10**6)


# -- results ---------------------------------------------------------------------------------------

def test_error_pct_and_measurement():
    assert error_pct(110, 100) == pytest.approx(10.0)
    assert error_pct(90, 100) == pytest.approx(-10.0)
    assert error_pct(None, 100) is None and error_pct(5, None) is None and error_pct(5, 0) is None
    m = Measurement(device="cuda", peak_allocated_bytes=10, peak_reserved_bytes=12, device_bytes=20,
                    warmup_s=3.0, step_times_s=(1.0, 3.0, 2.0), tokens_per_step=100)
    assert m.step_s == 2.0 and m.tokens_per_s == 50.0
    with pytest.raises(ValueError, match="at least one timed step"):
        Measurement(device="cpu", peak_allocated_bytes=1, peak_reserved_bytes=None, device_bytes=None,
                    warmup_s=1.0, step_times_s=(), tokens_per_step=1)


@pytest.mark.parametrize("name, gpu_id", [
    ("NVIDIA H200", "h200-sxm"), ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"), ("NVIDIA GeForce RTX 4090", "rtx4090"), ("NVIDIA L40S", "l40s"),
    ("Some Future GPU", None)])
def test_local_gpu_name_to_catalog(name, gpu_id):
    assert local_gpu_id(name) == gpu_id


def test_combine_ranks_reports_the_most_loaded():
    ranks = [{"rank": r, "device": "cuda", "peak_allocated_bytes": 100 + r, "peak_reserved_bytes": 200 - r,
              "device_bytes": None if r else 300, "warmup_s": 2.0, "step_times_s": [1.0 + r, 1.0],
              "tokens_per_step": 64, "how": {"peak_allocated_bytes": "x"}} for r in range(2)]
    m = launch.combine(ranks)
    assert (m.peak_allocated_bytes, m.peak_reserved_bytes, m.device_bytes) == (101, 200, 300)
    assert m.step_times_s == (2.0, 1.0) and len(m.extra["per_rank"]) == 2
    assert m.how["peak_allocated_bytes"] == "x (max over 2 ranks)"


# -- multi-GPU: the generated launch (content checked, not run) ---------------------------------------

def _job(**kw):
    req = JobOptions(**{"model": "qwen2.5-0.5b", "batch_size": 2, "seq_len": 1024, "gpu": "h100", **kw})
    return req, resolve_job(req, priced=False, calibration=None)


def _plan(tmp_path, launcher="auto", **kw):
    req, job = _job(**kw)
    return launch.plan_launch(req, job, device="cuda", steps=3, launcher=launcher, workdir=str(tmp_path))


def _exported_for_the_probe(job) -> dict:
    """What `trainplan export --format deepspeed` writes for the job, with the two keys the probe's
    worker changes (launch.deepspeed_config says why): no `optimizer` (the worker passes its own),
    zero_force_ds_cpu_optimizer false under optimizer offload."""
    from trainplan.export import deepspeed as export_deepspeed

    out = export_deepspeed.config(job, auto=False)
    out.pop("optimizer", None)
    if "offload_optimizer" in out["zero_optimization"]:
        out["zero_force_ds_cpu_optimizer"] = False
    return out


def test_deepspeed_zero3_config_for_two_gpus(tmp_path):
    plan = _plan(tmp_path, num_gpus=2, zero=3, offload="optimizer", grad_accum=4)
    assert plan.launcher == "deepspeed" and plan.strategy == "zero3"
    assert plan.command[0].endswith("deepspeed")
    assert list(plan.command[1:]) == ["--num_gpus", "2", "--no_local_rank", "--module", "trainplan.probe.worker",
                                      "--job", str(tmp_path / "job.json")]
    cfg = plan.deepspeed_config
    assert cfg["train_micro_batch_size_per_gpu"] == 2 and cfg["gradient_accumulation_steps"] == 4
    assert cfg["train_batch_size"] == 2 * 4 * 2
    assert cfg["bf16"] == {"enabled": True} and cfg["fp16"]["enabled"] is False
    assert cfg["gradient_clipping"] == 1.0
    zero = cfg["zero_optimization"]
    # no knob given: DeepSpeed's own defaults apply (bucket sizes left out), as the estimate assumes them
    assert zero["stage"] == 3 and not any(key.endswith(("bucket_size", "threshold")) for key in zero)
    assert zero["offload_optimizer"] == {"device": "cpu", "pin_memory": True} and "offload_param" not in zero
    assert cfg["zero_allow_untested_optimizer"] is True and cfg["zero_force_ds_cpu_optimizer"] is False
    assert "optimizer" not in cfg   # the worker hands DeepSpeed HF Trainer's optimizer
    launch.write_job(plan)
    job = json.loads((tmp_path / "job.json").read_text())
    assert json.loads((tmp_path / "ds_config.json").read_text()) == cfg == job["deepspeed_config"]
    assert job["request"]["model"] == "qwen2.5-0.5b" and job["request"]["num_gpus"] == 2
    assert job["strategy"] == "zero3" and job["steps"] == 3 and (tmp_path / "ranks").is_dir()


def test_deepspeed_zero2_fp16_has_no_stage3_keys(tmp_path):
    plan = _plan(tmp_path, num_gpus=2, zero=2, precision="fp16")
    zero = plan.deepspeed_config["zero_optimization"]
    assert zero["stage"] == 2 and not any(key.startswith("stage3") for key in zero)
    assert plan.deepspeed_config["fp16"]["enabled"] is True and plan.deepspeed_config["bf16"]["enabled"] is False
    assert "zero_force_ds_cpu_optimizer" not in plan.deepspeed_config   # no offload: DeepSpeed's default


_DS_JOBS = {
    "zero1": {"zero": 1}, "zero2": {"zero": 2}, "zero3": {"zero": 3},
    "zero2-offload-optimizer": {"zero": 2, "offload": "optimizer"},
    "zero3-offload-all": {"zero": 3, "offload": "all", "grad_accum": 8},
    "zero3-offload-params-4gpus": {"zero": 3, "offload": "params", "num_gpus": 4},
    "zero2-fp16": {"zero": 2, "precision": "fp16"}, "zero1-bf16-pure": {"zero": 1, "precision": "bf16-pure"},
    "zero2-lion": {"zero": 2, "optimizer": "lion"}, "zero3-nvme": {"zero": 3, "offload": "all", "offload_device": "nvme"},
    "zero3-buckets": {"zero": 3, "reduce_bucket_size": 10**7, "prefetch_bucket_size": 10**6},
}


@pytest.mark.parametrize("kw", list(_DS_JOBS.values()), ids=list(_DS_JOBS))
def test_probe_deepspeed_config_is_the_exporters(tmp_path, kw, monkeypatch):
    """The probe's ds_config is `trainplan export --format deepspeed`'s for the same job (ZeRO-1/2/3,
    offload, precision, the knobs given), less what the worker changes; DeepSpeed's own config class takes it."""
    kw = {"num_gpus": 2, **kw}
    req, job = _job(**kw)
    plan = launch.plan_launch(req, job, device="cuda", steps=3, launcher="auto", workdir=str(tmp_path))
    assert plan.deepspeed_config == _exported_for_the_probe(job)
    assert plan.deepspeed_config["zero_optimization"]["stage"] == kw["zero"]
    assert plan.deepspeed_config["train_batch_size"] == 2 * job.setup.grad_accum * kw["num_gpus"]
    ds = pytest.importorskip("deepspeed.runtime.config")

    class Mpu:
        def get_data_parallel_world_size(self) -> int:
            return kw["num_gpus"]

    monkeypatch.setattr(ds.dist, "get_rank", lambda *a, **k: 0)
    parsed = ds.DeepSpeedConfig(json.loads(json.dumps(plan.deepspeed_config)), mpu=Mpu())
    assert parsed.zero_optimization_stage == kw["zero"] and parsed.train_batch_size == plan.deepspeed_config[
        "train_batch_size"]


def test_probe_commands_are_the_export_launch_lines(tmp_path):
    """The printed command is export/launch.py's one-node line with the probe's worker as the program
    (torchrun as `python -m torch.distributed.run`, so the ranks run this interpreter)."""
    import shlex

    from trainplan.export import launch as export_launch
    from trainplan.export.base import ExportContext

    ctx = ExportContext(nodes=1, gpus_per_node=4)
    job_file = str(tmp_path / "job.json")
    torchrun = _plan(tmp_path, num_gpus=4, fsdp="full")
    expected = shlex.split(" ".join(export_launch.torchrun(ctx, ["-m", "trainplan.probe.worker", "--job", job_file])))
    assert list(torchrun.command) == [sys.executable, "-m", "torch.distributed.run", *expected[1:]]
    assert "--nproc_per_node" in torchrun.command and "--standalone" in torchrun.command
    zero = _plan(tmp_path, num_gpus=4, zero=2)
    program = ["--no_local_rank", "--module", "trainplan.probe.worker", "--job", job_file]
    expected = shlex.split(" ".join(export_launch.deepspeed(ctx, program)))
    assert list(zero.command[1:]) == expected[1:] and zero.command[0].endswith("deepspeed")


def test_torchrun_fsdp2_command_for_two_gpus(tmp_path):
    plan = _plan(tmp_path, num_gpus=2, fsdp="full")
    assert plan.launcher == "torchrun" and plan.strategy == "fsdp2" and plan.deepspeed_config is None
    assert list(plan.command) == [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                  "--nproc_per_node", "2", "-m", "trainplan.probe.worker",
                                  "--job", str(tmp_path / "job.json")]
    assert _plan(tmp_path, num_gpus=2).strategy == "ddp"


@pytest.mark.parametrize("kw, launcher, needle", [
    ({"num_gpus": 2, "zero": 2}, "torchrun", "DeepSpeed launcher"),
    ({"num_gpus": 2}, "deepspeed", "needs --zero"),
    ({"num_gpus": 2}, "mpirun", "not one of"),
    ({"num_gpus": 2, "zero": 2, "offload": "params"}, "auto", "probe --zero: parameter offload needs ZeRO-3"),
    ({"num_gpus": 2, "zero": 2, "offload": "optimizer", "precision": "bf16-pure"}, "auto", "DeepSpeedCPUAdam"),
])
def test_launcher_choice_errors(tmp_path, kw, launcher, needle):
    with pytest.raises(TrainplanError, match=needle):
        _plan(tmp_path, launcher=launcher, **kw)
    assert list(tmp_path.iterdir()) == []


def test_layouts_the_probe_does_not_launch(tmp_path):
    req = JobOptions(model="qwen2.5-0.5b", num_gpus=2, tp=2)
    with pytest.raises(TrainplanError, match="data-parallel layouts only"):
        launch.check_layout(Layout(num_gpus=2, tp=2), "cuda")
    with pytest.raises(TrainplanError, match="one node"):
        launch.check_layout(Layout(num_gpus=4, nodes=2), "cuda")
    with pytest.raises(TrainplanError, match="CUDA devices only"):
        launch.check_layout(Layout(num_gpus=2, zero=ZeroStage.GRADIENTS), "cpu")
    assert req.tp == 2


def test_print_launch_cli(capsys, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the job folders would land in tmp_path
    args = ["probe", "--model", "llama-3.1-8b", "--num-gpus", "2", "--zero", "3", "--batch-size", "1",
            "--seq-len", "2048", "--print-launch", "--json"]
    assert main(args) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["launcher"] == "deepspeed" and plan["command"][1:3] == ["--num_gpus", "2"]
    assert plan["files_written"] is False and list(tmp_path.iterdir()) == []   # it runs nothing, writes nothing
    assert plan["job"]["request"]["model"] == "llama-3.1-8b" and plan["job"]["deepspeed_config"] == plan["deepspeed_config"]
    assert Path(plan["workdir"]).parent == tmp_path and Path(plan["job_file"]).parent == Path(plan["workdir"])
    # the API writes the files when given a folder, so the printed command can be run as is
    work = tmp_path / "work"
    work.mkdir()
    written = launch.describe_launch(JobOptions(model="llama-3.1-8b", num_gpus=2, zero=3), device="cuda", steps=3,
                                     launcher="auto", workdir=str(work))
    assert written["files_written"] is True
    assert json.loads(Path(written["deepspeed_config_file"]).read_text()) == written["deepspeed_config"]
    assert json.loads(Path(written["job_file"]).read_text())["request"]["model"] == "llama-3.1-8b"
    assert main(["probe", "--model", "qwen2.5-0.5b", "--num-gpus", "2", "--fsdp", "full", "--print-launch"]) == 0
    text = capsys.readouterr().out
    assert "torch.distributed.run" in text and "--nproc_per_node 2" in text and "trainplan.probe.worker" in text
    _one_line_error(capsys, ["probe", "--model", "qwen2.5-0.5b", "--print-launch"], "--num-gpus > 1")


def _left_in(tmp: Path) -> list[str]:
    """What a probe left in the temp dir: its work folders, torchelastic's log folders."""
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(("trainplan-probe-", "torchelastic_")))


@pytest.mark.trace
def test_two_ranks_on_the_cpu_through_torchrun(capsys, tmp_path, monkeypatch):
    """The whole multi-GPU path (torchrun, the worker, DDP over gloo, the ranks combined) on the
    CPU: DDP's gradient buckets included, the estimate holds; the temp dir is left as it was."""
    _needs_torch()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    args = CPU_ARGS + ["--num-gpus", "2", "--steps", "2", "--json", "--no-record"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["num_gpus"] == 2 and len(data["measured"]["per_rank"]) == 2
    assert abs(data["error_pct"]["peak_allocated_bytes"]) < 2.0
    assert any("torchrun (ddp)" in note for note in data["notes"])
    assert _left_in(tmp_path) == []   # the work folder and the launcher's logs are gone


@pytest.mark.trace
def test_a_cpu_probe_keeps_its_files_in_the_folder_asked_for(tmp_path, monkeypatch):
    """run_distributed(workdir=...): the job files and every rank's result stay there; the launcher's
    temp files go; nothing lands in the temp dir. A launcher past its timeout is stopped, and its
    temporary work folder removed."""
    _needs_torch()
    import tempfile

    from trainplan.estimation import estimate

    tmp, work = tmp_path / "tmp", tmp_path / "kept"
    tmp.mkdir()
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    req = JobOptions(model=str(TINY), batch_size=2, seq_len=64, num_gpus=2, gpu="a100-80gb")
    est = estimate(resolve_job(req, priced=False, calibration=None))
    measured, notes = launch.run_distributed(req, est, device="cpu", steps=2, workdir=str(work))
    assert sorted(p.name for p in work.iterdir()) == ["job.json", "ranks"]
    ranks = sorted(p.name for p in (work / "ranks").iterdir())
    assert ranks == ["rank0.json", "rank1.json"] and len(measured.extra["per_rank"]) == 2
    assert any(str(work) in note for note in notes) and _left_in(tmp) == []
    with pytest.raises(TrainplanError, match="did not finish within"):
        launch.run_distributed(req, est, device="cpu", steps=2, timeout_s=0.5)
    assert _left_in(tmp) == []


# -- the measurement matrix ----------------------------------------------------------------------------

@pytest.mark.trace
def test_matrix_tiny_runs_end_to_end_on_the_cpu(tmp_path):
    _needs_torch()
    out = tmp_path / "tiny.csv"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(MATRIX), "--tiny", "--out", str(out)], capture_output=True,
                          text=True, cwd=ROOT)
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 30, f"--tiny took {elapsed:.1f} s"
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows), [r["status"] for r in rows]
    for row in rows:
        assert int(row["measured_peak_allocated_bytes"]) > 0 and int(row["estimated_peak_allocated_bytes"]) > 0
        assert abs(float(row["error_peak_allocated_pct"])) < 5.0
        assert row["torch"] and row["transformers"] and row["peft"]
        assert row["measured_peak_reserved_bytes"] == "" and row["command"].startswith("trainplan probe")
    assert "median |err|" in proc.stdout and "peak allocated" in proc.stdout


def test_matrix_dry_run_lists_the_gpu_grid():
    proc = subprocess.run([sys.executable, str(MATRIX), "--dry-run"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("25 setups on cuda (estimates for h200)")
    rows = [line for line in lines[2:] if line.strip()]
    assert len(rows) == 25
    for model in ("qwen2.5-0.5b", "qwen2.5-1.5b", "llama-3.2-3b", "llama-3.1-8b"):
        assert any(model in r for r in rows), model
    for kind in (" full ", " lora ", " qlora ", "bf16-pure", "eager", "ckpt=full"):
        assert any(kind in r for r in rows), kind
    assert "GiB" in rows[0] and "(past the budget" not in proc.stdout   # the whole grid fits the budget
    cumulative = [float(r.split()[-1].rstrip("s")) for r in rows]
    assert cumulative == sorted(cumulative) and cumulative[-1] < 430


def test_report_median_and_max_error(tmp_path):
    path = tmp_path / "m.csv"
    cols = ["setup", "status", "measured_peak_allocated_bytes", "estimated_peak_allocated_bytes",
            "error_peak_allocated_pct", "error_peak_reserved_pct", "error_device_pct", "error_step_pct"]
    rows = [{"setup": "a", "status": "ok", "measured_peak_allocated_bytes": 2**31,
             "estimated_peak_allocated_bytes": 2**31, "error_peak_allocated_pct": "1.0",
             "error_peak_reserved_pct": "-4.0", "error_device_pct": "", "error_step_pct": "10"},
            {"setup": "b", "status": "ok", "measured_peak_allocated_bytes": 2**31,
             "estimated_peak_allocated_bytes": 2**31, "error_peak_allocated_pct": "-3.0",
             "error_peak_reserved_pct": "2.0", "error_device_pct": "", "error_step_pct": "-20"},
            {"setup": "c", "status": "oom: out of memory", "error_peak_allocated_pct": "50"}]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=cols)
        writer.writeheader()
        writer.writerows(rows)
    proc = subprocess.run([sys.executable, str(REPORT), str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    sys.path.insert(0, str(REPORT.parent))
    try:
        import report
    finally:
        sys.path.remove(str(REPORT.parent))
    stats = {s["view"]: s for s in report.summary(report.read(path))}
    assert stats["peak allocated"]["n"] == 2 and stats["peak allocated"]["median_abs_pct"] == 2.0
    assert stats["peak allocated"]["max_abs_pct"] == 3.0 and stats["peak allocated"]["worst"] == "b"
    assert stats["device (NVML)"]["n"] == 0 and stats["step time"]["max_abs_pct"] == 20.0
    assert "2 of 3 setups measured" in proc.stdout and "c: oom" in proc.stdout


# -- NVML's device view (a stand-in pynvml: no GPU needed) ----------------------------------------------

class _FakeNvml:
    class NVMLError(Exception):
        pass

    def __init__(self, used: list[int], processes: list | None, fail_processes: bool = False):
        self.used, self.processes, self.fail_processes = list(used), processes, fail_processes

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("handle", index)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return ("uuid", uuid)

    def nvmlDeviceGetMemoryInfo(self, handle):
        class Info:
            used = self.used.pop(0) if len(self.used) > 1 else self.used[0]
        return Info()

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        if self.fail_processes:
            raise self.NVMLError("not supported")
        return self.processes

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA H200"


def _reader(monkeypatch, fake, visible=""):
    from trainplan.probe import measure

    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    return measure.NvmlReader(0)


def test_nvml_reads_this_process(monkeypatch):
    import os
    from types import SimpleNamespace

    procs = [SimpleNamespace(pid=1, usedGpuMemory=5), SimpleNamespace(pid=os.getpid(), usedGpuMemory=700)]
    reader = _reader(monkeypatch, _FakeNvml([100], procs))
    reader.read()
    procs[1].usedGpuMemory = 600
    reader.read()
    assert reader.peak_bytes == 700 and "of this process" in reader.how


def test_nvml_falls_back_to_device_used_less_baseline(monkeypatch):
    reader = _reader(monkeypatch, _FakeNvml([1000, 5000, 4000], None, fail_processes=True), visible="3")
    assert reader.handle == ("handle", 3) and reader.baseline_bytes == 1000
    reader.read()
    reader.read()
    assert reader.peak_bytes == 4000 and "baseline" in reader.how


def test_nvml_absent_leaves_the_device_view_unmeasured(monkeypatch):
    from trainplan.probe import measure

    monkeypatch.setitem(sys.modules, "pynvml", None)   # import pynvml -> ImportError
    reader = measure.NvmlReader(0)
    reader.read()
    assert reader.handle is None and reader.peak_bytes is None
    assert measure.gpu_name.__doc__   # names come from torch when NVML is absent
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml([0], []))
    assert measure.gpu_name(0) == "NVIDIA H200"


def test_a_model_spec_travels_to_the_ranks_as_its_config(tmp_path):
    from trainplan.model.hfconfig import spec_from_hf_config

    spec = spec_from_hf_config(json.loads(TINY.read_text()), name="tiny")
    req = JobOptions(model=spec, num_gpus=2, gpu="h100")
    fields = launch.request_fields(req, tmp_path)
    assert fields["model"] == str(tmp_path / "config.json") and fields["gpu"] == "h100"
    assert list(tmp_path.iterdir()) == []   # planning writes nothing; write_job does
    job = resolve_job(req, priced=False, calibration=None)
    plan = launch.plan_launch(req, job, device="cuda", steps=3, launcher="auto", workdir=str(tmp_path))
    assert plan.job["request"]["model"] == str(tmp_path / "config.json") and not plan.written
    assert launch.write_job(plan).written
    assert json.loads((tmp_path / "config.json").read_text()) == json.loads(TINY.read_text())
