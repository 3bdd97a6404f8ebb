"""How a probe measures: torch.cuda statistics and NVML on a GPU, the trace's storage tracker on
the CPU, and the environment a measurement belongs to.

CUDA: after the warm-up step `reset_peak_memory_stats`, then `max_memory_allocated` and
`max_memory_reserved` over steps 2..n (max_memory_reserved cannot start below what step 1 left
reserved: the caching allocator keeps it, as in any real run). The device view is NVML's, read
after each measured step (the caching allocator returns nothing by itself, so that reading is the
step's high-water mark): the process's own `usedGpuMemory` when NVML lists this process, else the
device's used memory less what was used before this process touched the GPU.

CPU: the trace's MemoryTracker on real tensors counts every storage born and freed during the
measured steps, plus the state alive at their start (parameters, buffers, optimizer state, the
batch); each storage is rounded to the CUDA allocator's 512-byte blocks, the view the estimate's
`peak_allocated_bytes` stands for. A CPU has no caching allocator reserve and no NVML: those two
views are None.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
from typing import Any

from trainplan.catalog import gpu_in_text
from trainplan.errors import TrainplanError

PACKAGES = ("torch", "transformers", "peft", "bitsandbytes", "deepspeed", "accelerate", "nvidia-ml-py")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def environment(device: str, index: int = 0) -> dict[str, Any]:
    """GPU (or CPU), driver, CUDA and library versions of this machine."""
    import torch

    env: dict[str, Any] = {"device": device, "python": platform.python_version(),
                           "torch_cuda": torch.version.cuda, **package_versions()}
    if device == "cuda":
        props = torch.cuda.get_device_properties(index)
        env.update(gpu_name=props.name, gpu_memory_bytes=int(props.total_memory),
                   gpu_count=torch.cuda.device_count(), driver=_nvml_driver(),
                   compute_capability=f"{props.major}.{props.minor}")
    else:
        env.update(gpu_name=None, gpu_memory_bytes=None, gpu_count=0, driver=None,
                   cpu=platform.processor() or platform.machine(), cpu_count=os.cpu_count())
    return env


def require_cuda() -> None:
    """A one-line TrainplanError when torch sees no CUDA device."""
    import torch

    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
        raise TrainplanError(f"--device cuda: torch {torch.__version__} ({build}) sees no CUDA device; "
                             f"run on a machine with a GPU, or use --device cpu with a small model")


def local_gpu_id(name: str) -> str | None:
    """The catalog id of a GPU from its CUDA name ("NVIDIA H200" -> h200-sxm, "NVIDIA H100 80GB
    HBM3" -> h100-sxm, "NVIDIA H100 PCIe" -> h100-pcie, "NVIDIA GeForce RTX 4090" -> rtx4090), or
    None when the catalog lacks it (catalog.gpu_in_text, the one rule for GPU names in text)."""
    gpu = gpu_in_text(name)
    return gpu.id if gpu is not None else None


# -- NVML -----------------------------------------------------------------------------------------

def _nvml():
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:   # no driver, no device: NVML raises its own NVMLError subclasses
        return None
    return pynvml


def _nvml_driver() -> str | None:
    nvml = _nvml()
    if nvml is None:
        return None
    driver = nvml.nvmlSystemGetDriverVersion()
    return driver.decode() if isinstance(driver, bytes) else driver


def gpu_name(index: int = 0) -> str:
    """The CUDA device's name, through NVML when it answers (no CUDA context in this process)."""
    nvml = _nvml()
    if nvml is not None:
        try:
            name = nvml.nvmlDeviceGetName(_nvml_handle(nvml, index))
            return name.decode() if isinstance(name, bytes) else name
        except nvml.NVMLError:
            pass
    import torch

    return torch.cuda.get_device_name(index)


def _nvml_handle(nvml, index: int):
    """NVML numbers every GPU of the machine; torch only the visible ones (CUDA_VISIBLE_DEVICES)."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if index < len(visible):
        entry = visible[index]
        if entry.isdigit():
            return nvml.nvmlDeviceGetHandleByIndex(int(entry))
        return nvml.nvmlDeviceGetHandleByUUID(entry)
    return nvml.nvmlDeviceGetHandleByIndex(index)


class NvmlReader:
    """The device view of this process's GPU memory. Open it before the process touches the GPU:
    the device's used memory at that moment is the baseline of the fallback view."""

    def __init__(self, index: int = 0) -> None:
        self.nvml = _nvml()
        self.handle = None
        self.baseline_bytes = 0
        if self.nvml is not None:
            try:
                self.handle = _nvml_handle(self.nvml, index)
                self.baseline_bytes = self._device_used()
            except self.nvml.NVMLError:
                self.handle = None
        self.how = "unavailable"
        self.peak_bytes: int | None = None

    def _device_used(self) -> int:
        return int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)

    def _own_process(self) -> int | None:
        pid = os.getpid()
        try:
            processes = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
        except self.nvml.NVMLError:   # not supported in some virtualised setups
            return None
        for proc in processes:
            if proc.pid == pid and proc.usedGpuMemory is not None:
                return int(proc.usedGpuMemory)
        return None

    def read(self) -> None:
        """One reading; the peak keeps the highest. An NVML failure leaves the view unmeasured."""
        if self.handle is None:
            return
        try:
            own = self._own_process()
            if own is not None:
                value, self.how = own, "NVML usedGpuMemory of this process, read after each measured step"
            else:
                value = self._device_used() - self.baseline_bytes
                self.how = ("NVML device used memory less the baseline before this process touched the GPU "
                            "(this process is not in NVML's process list: a container's pid namespace)")
        except self.nvml.NVMLError as exc:
            self.how = f"NVML read failed: {exc}"
            return
        self.peak_bytes = value if self.peak_bytes is None else max(self.peak_bytes, value)


# -- meters -----------------------------------------------------------------------------------------

class CudaMeter:
    """torch.cuda peaks over the measured steps, NVML's device view beside them."""

    def __init__(self, index: int = 0) -> None:
        self.index = index
        self.nvml = NvmlReader(index)          # before any CUDA allocation: the baseline

    def sync(self) -> None:
        import torch

        torch.cuda.synchronize(self.index)

    def start(self, model, optimizer, input_ids) -> None:
        import torch

        self.sync()
        torch.cuda.reset_peak_memory_stats(self.index)

    def after_step(self) -> None:
        self.nvml.read()

    def stop(self) -> tuple[dict[str, int | None], dict[str, str], dict[str, Any]]:
        import torch

        self.sync()
        views = {"peak_allocated_bytes": int(torch.cuda.max_memory_allocated(self.index)),
                 "peak_reserved_bytes": int(torch.cuda.max_memory_reserved(self.index)),
                 "device_bytes": self.nvml.peak_bytes}
        how = {"peak_allocated_bytes": "torch.cuda.max_memory_allocated over steps 2..n",
               "peak_reserved_bytes": "torch.cuda.max_memory_reserved over steps 2..n (includes what "
                                      "step 1 left reserved: the caching allocator keeps it)",
               "device_bytes": self.nvml.how if self.nvml.handle is not None
               else "not measured: nvidia-ml-py (pynvml) is not importable or NVML has no device"}
        return views, how, {}

    def close(self) -> None:
        pass


class CpuMeter:
    """The trace's storage tracker on real CPU tensors over the measured steps."""

    def __init__(self) -> None:
        from trainplan.trace.tracker import MemoryTracker

        self.tracker = MemoryTracker()
        self._entered = False

    def sync(self) -> None:
        pass

    def start(self, model, optimizer, input_ids) -> None:
        from trainplan.trace.run import (
            _register_state,  # parameters, buffers, optimizer state, batch
        )

        self.tracker.__enter__()
        self._entered = True
        _register_state(self.tracker, model, optimizer, input_ids)

    def after_step(self) -> None:
        pass

    def close(self) -> None:
        if self._entered:
            self._entered = False
            self.tracker.__exit__(None, None, None)

    def stop(self) -> tuple[dict[str, int | None], dict[str, str], dict[str, Any]]:
        self.close()
        state = self.tracker.state
        views = {"peak_allocated_bytes": state.peak_cuda_bytes, "peak_reserved_bytes": None,
                 "device_bytes": None}
        how = {"peak_allocated_bytes": "trainplan's storage tracker on real CPU tensors over steps 2..n, "
                                       "each storage rounded to the CUDA allocator's 512-byte blocks",
               "peak_reserved_bytes": "not measured: a CPU has no caching-allocator reserve",
               "device_bytes": "not measured: a CPU has no NVML device view"}
        return views, how, {"peak_allocated_unrounded_bytes": state.peak_bytes}
