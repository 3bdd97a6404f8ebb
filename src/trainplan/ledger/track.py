"""Record what a real training run used, automatically, into the ledger.

    import trainplan.ledger.track
    with trainplan.ledger.track(model="llama-3.1-8b", method="lora", batch_size=4, seq_len=2048, gpu="h100",
                         source="team-a") as run:
        for batch in loader:
            ...                                   # forward, backward, optimizer step
            run.step(tokens=batch["input_ids"].numel())

    trainer = Trainer(..., callbacks=[trainplan.ledger.track.TrainplanCallback(source="team-a")])

Measured: torch.cuda.max_memory_allocated / max_memory_reserved (peaks reset on entry), the
device memory NVML reports (nvidia-ml-py, when importable; sampled at every step and at the end:
the caching allocator keeps its peak reserved, so the step boundary sees the device peak), the
median step time after `warmup_steps` steps, tokens/s per GPU when steps report tokens. The
estimate trainplan makes for the setup is stored with the run.

Recording never breaks the training it observes: every failure (no CUDA, a bad setup, an
unreachable database) becomes a warning; an unreachable database spools the run (JSONL in the
data directory) for the next successful connection; a database that refuses the run for good (not
a database, a schema it cannot take) leaves it in the spool's set-aside file, so the measurement of
a long run is never lost. Only the process of rank 0 records.
torch, transformers and lightning are imported lazily; the stats provider is injectable.
"""

from __future__ import annotations

import os
import statistics
import sys
import time as _time
import types
import warnings
from typing import Any, Callable, Protocol

from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.ledger import spool
from trainplan.ledger.capture import environment, record_from_options, save
from trainplan.ledger.paths import db_url
from trainplan.ledger.records import RunRecord
from trainplan.model.hfconfig import spec_from_hf_config


class CudaStats(Protocol):
    """What the tracker reads from the device (a fake in tests, torch + NVML on a GPU)."""

    def reset_peak(self) -> None: ...
    def peak_allocated(self) -> int | None: ...
    def peak_reserved(self) -> int | None: ...
    def device_used(self) -> int | None: ...
    def environment(self) -> dict[str, Any]: ...


class TorchCudaStats:
    """torch.cuda statistics of one device, NVML's used memory of the same device."""

    def __init__(self, device: int | None = None) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available: nothing to measure")
        self._torch = torch
        self.device = torch.cuda.current_device() if device is None else device
        self._nvml = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(self._nvml_index())
        except Exception:             # nvidia-ml-py missing or NVML unusable: no device view
            self._nvml = None

    def _nvml_index(self) -> int:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible and all(p.strip().isdigit() for p in visible.split(",")):
            return int(visible.split(",")[self.device])
        return self.device

    def reset_peak(self) -> None:
        self._torch.cuda.reset_peak_memory_stats(self.device)

    def peak_allocated(self) -> int | None:
        return int(self._torch.cuda.max_memory_allocated(self.device))

    def peak_reserved(self) -> int | None:
        return int(self._torch.cuda.max_memory_reserved(self.device))

    def device_used(self) -> int | None:
        if self._nvml is None:
            return None
        return int(self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used)

    def environment(self) -> dict[str, Any]:
        t = self._torch
        env: dict[str, Any] = {"gpu_name": t.cuda.get_device_name(self.device), "gpu_count": t.cuda.device_count(),
                               "cuda": t.version.cuda, "torch": t.__version__}
        if self._nvml is not None:
            try:
                driver = self._nvml.nvmlSystemGetDriverVersion()
                env["driver"] = driver.decode() if isinstance(driver, bytes) else driver
            except Exception:
                pass
        return env


def _rank() -> int:
    for key in ("RANK", "SLURM_PROCID", "LOCAL_RANK"):
        if os.environ.get(key, "").isdigit():
            return int(os.environ[key])
    return 0


def _warn(what: str, exc: BaseException | None = None) -> None:
    detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    warnings.warn(f"trainplan.ledger.track: {what}{detail} (training goes on)", RuntimeWarning, stacklevel=3)


class Tracker:
    """The context manager `track(...)` returns; call `step()` after every optimizer step."""

    def __init__(self, *, source: str = "track", db: str | None = None, notes: str = "",
                 stats: CudaStats | Callable[[], CudaStats] | None = None, warmup_steps: int = 1,
                 tokens_per_step: int | None = None, record_rank: int | None = 0,
                 clock: Callable[[], float] = _time.perf_counter, **setup: Any) -> None:
        self.source, self.db, self.notes, self.setup = source, db, notes, dict(setup)
        self.warmup_steps, self.tokens_per_step, self.record_rank = warmup_steps, tokens_per_step, record_rank
        self._stats_arg, self._clock = stats, clock
        self.stats: CudaStats | None = None
        self.step_times: list[float] = []
        self.step_tokens: list[int | None] = []
        self.device_peak: int | None = None
        self.result: Any = None          # SaveResult once recorded
        self._last: float | None = None
        self._open = False

    # -- the context ----------------------------------------------------------------------------
    def __enter__(self) -> "Tracker":
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.finish(failed=exc_type is not None)
        return False                      # never swallow the training's own exception

    def start(self) -> None:
        self._open = True
        try:
            stats = self._stats_arg if self._stats_arg is not None else TorchCudaStats
            if isinstance(stats, type) or not hasattr(stats, "reset_peak"):
                stats = stats()           # a class or a factory
            self.stats = stats
            self.stats.reset_peak()
            self._sample_device()
        except Exception as exc:
            self.stats = None
            _warn("no memory statistics", exc)
        self._last = self._clock()

    def step(self, tokens: int | None = None) -> None:
        """Mark the end of one optimizer step (`tokens`: processed by this process in it)."""
        try:
            now = self._clock()
            if self._last is not None:
                self.step_times.append(now - self._last)
                self.step_tokens.append(tokens if tokens is not None else self.tokens_per_step)
            self._last = now
            self._sample_device()
        except Exception as exc:
            _warn("step not timed", exc)

    def _sample_device(self) -> None:
        if self.stats is None:
            return
        used = self.stats.device_used()
        if used:
            self.device_peak = max(self.device_peak or 0, used)

    # -- what was measured ----------------------------------------------------------------------
    def measured(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.stats is not None:
            out["peak_allocated_bytes"] = self.stats.peak_allocated()
            out["peak_reserved_bytes"] = self.stats.peak_reserved()
            self._sample_device()
            out["device_bytes"] = self.device_peak
        timed = list(zip(self.step_times, self.step_tokens))[self.warmup_steps:] or \
            list(zip(self.step_times, self.step_tokens))
        if timed:
            out["step_s"] = statistics.median(t for t, _ in timed)
            with_tokens = [(t, n) for t, n in timed if n]
            if with_tokens:
                out["tokens_per_s_per_gpu"] = sum(n for _, n in with_tokens) / sum(t for t, _ in with_tokens)
        return {k: v for k, v in out.items() if v}

    def finish(self, failed: bool = False) -> None:
        """Record the run (rank `record_rank` only); warnings, never exceptions."""
        if not self._open:
            return
        self._open = False
        if self.record_rank is not None and _rank() != self.record_rank:
            return
        try:
            self.result = self._record(failed)
        except Exception as exc:
            _warn("run not recorded", exc)

    def _record(self, failed: bool) -> Any:
        measured = self.measured()
        if not measured:
            _warn("nothing was measured; no run recorded")
            return None
        env = environment(**(self.stats.environment() if self.stats is not None else {}))
        notes = "; ".join(x for x in (self.notes, "training ended with an exception" if failed else "",
                                      f"{len(self.step_times)} steps timed, first {self.warmup_steps} skipped") if x)
        record = None
        if self.setup.get("model"):
            try:
                record = record_from_options(JobOptions(**self.setup), measured, source=self.source, notes=notes, env=env,
                                            measured_here=True)
            except Exception as exc:
                _warn("setup not estimated, run recorded without an estimate", exc)
        if record is None:
            setup = {k: (v if isinstance(v, str | int | float | bool | type(None)) else str(v))
                     for k, v in self.setup.items()}
            setup.setdefault("model", "unspecified")
            record = RunRecord(source=self.source, setup=setup, measured=measured, environment=env, notes=notes)
        try:
            result = save([record], self.db, spool_on_failure=True)
        except TrainplanError as exc:
            kept = spool.put_aside(db_url(self.db), [record], str(exc))
            _warn(f"run not recorded ({exc}); kept in {kept}")
            return None
        if result.spooled:
            _warn(str(result.warning).removeprefix("trainplan: "))
        return result


def track(**kwargs: Any) -> Tracker:
    """A Tracker for one training run: setup flags as keyword arguments (model=, method=,
    batch_size=, seq_len=, gpu=, num_gpus=, ...) plus source=, db=, notes=, stats=, warmup_steps=,
    tokens_per_step=. Use as a context manager and call `.step()` after each optimizer step."""
    return Tracker(**kwargs)


# --- Hugging Face Trainer ---------------------------------------------------------------------------

_HF_OPTIM = {"adamw_torch": "adamw", "adamw_torch_fused": "adamw-fused", "adamw_bnb_8bit": "adamw-8bit",
             "adamw_8bit": "adamw-8bit", "paged_adamw_8bit": "paged-adamw-8bit", "adafactor": "adafactor",
             "sgd": "sgd", "lion_32bit": "lion"}


def setup_from_trainer(args: Any, model: Any = None) -> dict[str, Any]:
    """Setup flags read from TrainingArguments (and the model: its config, its peft adapters)."""
    out: dict[str, Any] = {}
    get = lambda name, default=None: getattr(args, name, default)  # noqa: E731
    if get("per_device_train_batch_size"):
        out["batch_size"] = int(get("per_device_train_batch_size"))
    if get("gradient_accumulation_steps"):
        out["grad_accum"] = int(get("gradient_accumulation_steps"))
    out["grad_ckpt"] = "full" if get("gradient_checkpointing") else "none"
    out["precision"] = "bf16" if get("bf16") else "fp16" if get("fp16") else "fp32"
    optim = str(getattr(get("optim"), "value", get("optim")) or "")
    if optim in _HF_OPTIM:
        out["optimizer"] = _HF_OPTIM[optim]
    if get("world_size"):
        out["num_gpus"] = int(get("world_size"))
    out["framework"] = "deepspeed" if get("deepspeed") else "hf"
    peft = getattr(model, "peft_config", None)
    if isinstance(peft, dict) and peft:
        cfg = next(iter(peft.values()))
        out["method"] = "qlora" if getattr(model, "is_loaded_in_4bit", False) else "lora"
        for key, attr in (("lora_rank", "r"), ("lora_alpha", "lora_alpha"), ("lora_dropout", "lora_dropout")):
            if getattr(cfg, attr, None) is not None:
                out[key] = getattr(cfg, attr)
        targets = getattr(cfg, "target_modules", None)
        if targets:
            out["lora_targets"] = targets if isinstance(targets, str) else ",".join(sorted(targets))
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "to_dict"):
        try:
            name = getattr(config, "name_or_path", None) or getattr(config, "model_type", "model")
            out["model"] = spec_from_hf_config(config.to_dict(), name=str(name))
        except Exception:
            pass
    return out


def _hf_callback_class() -> type:
    from transformers import TrainerCallback

    class TrainplanCallback(TrainerCallback):
        """Records the run into the trainplan ledger (peaks, step times, the setup and its estimate)."""

        def __init__(self, **track_kwargs: Any) -> None:
            self.track_kwargs = track_kwargs
            self.tracker: Tracker | None = None

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            try:
                setup = setup_from_trainer(args, model)
                setup.update(self.track_kwargs)
                if "tokens_per_step" not in setup and setup.get("seq_len") and setup.get("batch_size"):
                    setup["tokens_per_step"] = setup["batch_size"] * setup.get("grad_accum", 1) * setup["seq_len"]
                self.tracker = Tracker(**setup)
                self.tracker.start()
            except Exception as exc:
                self.tracker = None
                _warn("callback not started", exc)

        def on_step_end(self, args, state, control, **kwargs):
            if self.tracker is not None:
                self.tracker.step()

        def on_train_end(self, args, state, control, **kwargs):
            if self.tracker is not None:
                self.tracker.finish()

    return TrainplanCallback


def _lightning_callback_class() -> type:
    try:
        from lightning.pytorch import Callback
    except ImportError:
        from pytorch_lightning import (
            Callback,  # raises ImportError when neither is installed
        )

    class TrainplanLightningCallback(Callback):
        """Records the run into the trainplan ledger from a Lightning Trainer."""

        def __init__(self, **track_kwargs: Any) -> None:
            self.tracker = Tracker(**track_kwargs)

        def on_train_start(self, trainer, pl_module):
            self.tracker.start()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.tracker.step()

        def on_train_end(self, trainer, pl_module):
            self.tracker.finish()

    return TrainplanLightningCallback


_LAZY = {"TrainplanCallback": _hf_callback_class, "TrainplanLightningCallback": _lightning_callback_class}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        cls = _LAZY[name]()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """`trainplan.ledger.track(...)` calls track(): the module is callable."""

    def __call__(self, **kwargs: Any) -> Tracker:
        return track(**kwargs)


sys.modules[__name__].__class__ = _CallableModule
