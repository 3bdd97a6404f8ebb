"""Count every tensor storage a training step creates, by identity, with its lifetime.

A TorchDispatchMode sees each op's outputs; a storage not seen before is an allocation of
`storage.nbytes()` bytes, and a weakref finalizer on the storage object reports its free (PyTorch
keeps one Python object per live storage, so the finalizer runs exactly when the last tensor or
view of it dies). The same code runs on fake tensors (the trace) and on real CPU tensors (the
reference run the tests compare against), so the two can be held to agree byte for byte.

torch's own MemTracker (torch.distributed._tools.mem_tracker) registers a gradient hook on every
parameter and fails on frozen ones (every LoRA model, pitfall c); this tracker registers nothing on
parameters. Module context comes from trace.modules (forward, backward and the recomputation of
checkpointed layers), which holds no autograd object, so the traced step keeps exactly what the
untraced one keeps.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from trainplan.trace.modules import ROOT, ModuleTracker
from trainplan.trace.names import clean_name

CUDA_BLOCK_BYTES = 512   # CUDA caching allocator rounds every block to 512 bytes (kMinBlockSize)


def cuda_block_bytes(nbytes: int) -> int:
    """Bytes the CUDA caching allocator counts as allocated for a request (c10 CUDACachingAllocator
    round_size: multiples of 512; zero-byte tensors take no block)."""
    return -(-nbytes // CUDA_BLOCK_BYTES) * CUDA_BLOCK_BYTES


@dataclass(slots=True)
class StorageRecord:
    """One storage: its size and when (event index) it was born and died."""

    nbytes: int
    born: int
    phase: str                 # "state" (before the step), "forward", "backward", "optimizer"
    module: str                # innermost module running at its creation ("" for none)
    recompute: bool = False    # created while recomputing a checkpointed layer in backward
    died: int | None = None
    kind: str = ""             # set for known storages: parameters, gradients, optimizer_state, inputs


@dataclass
class PeakContext:
    event: int = -1
    phase: str = ""
    module: str = ""
    recompute: bool = False


@dataclass
class TrackerState:
    records: list[StorageRecord] = field(default_factory=list)
    live: dict[int, int] = field(default_factory=dict)        # storage key -> record index
    allocated_bytes: int = 0
    cuda_allocated_bytes: int = 0
    peak_bytes: int = 0
    peak_cuda_bytes: int = 0
    event: int = 0
    peak: PeakContext = field(default_factory=PeakContext)
    timeline: list[tuple[str, int, int]] = field(default_factory=list)   # label, bytes, event


def _storage_key(storage: torch.UntypedStorage) -> int:
    return storage._cdata


class MemoryTracker(TorchDispatchMode):
    """Records allocations and frees of tensor storages during a step."""

    def __init__(self, *, module_events: bool = False) -> None:
        super().__init__()
        self.state = TrackerState()
        self.phase = "state"
        self.modules = ModuleTracker(self._module_event)
        self._module_events = module_events

    # -- storages -------------------------------------------------------------------------
    def register(self, tensor: torch.Tensor, kind: str, module: str = "", *,
                 on_device: bool = True) -> None:
        """Count a storage that exists before the step (parameters, optimizer state, inputs).
        `on_device=False`: a host tensor in a GPU run (AdamW's step counter), counted as 0 bytes."""
        index = self._see(tensor, module=module, counted=on_device)
        if index is not None:
            self.state.records[index].kind = self.state.records[index].kind or kind

    def kind_of_live(self, tensor: torch.Tensor, kind: str, module: str) -> None:
        """Label a live storage (a gradient, found after backward) with its kind and owner."""
        key = _storage_key(tensor.untyped_storage())
        index = self.state.live.get(key)
        if index is not None:
            self.state.records[index].kind = kind
            self.state.records[index].module = module

    def _see(self, tensor: torch.Tensor, module: str | None = None, counted: bool = True) -> int | None:
        try:
            storage = tensor.untyped_storage()
        except (NotImplementedError, RuntimeError):   # no storage (sparse, nested): not counted
            return None
        key = _storage_key(storage)
        st = self.state
        if key in st.live:
            return st.live[key]
        nbytes = storage.nbytes() if counted else 0
        index = len(st.records)
        st.event += 1
        st.records.append(StorageRecord(
            nbytes=nbytes, born=st.event, phase=self.phase,
            module=self._innermost() if module is None else module,
            recompute=self.modules.recompute_depth > 0))
        st.live[key] = index
        st.allocated_bytes += nbytes
        st.cuda_allocated_bytes += cuda_block_bytes(nbytes)
        weakref.finalize(storage, self._on_free, key, index)
        if st.allocated_bytes > st.peak_bytes:
            st.peak_bytes = st.allocated_bytes
            st.peak = PeakContext(event=st.event, phase=self.phase, module=self._innermost(),
                                  recompute=self.modules.recompute_depth > 0)
        st.peak_cuda_bytes = max(st.peak_cuda_bytes, st.cuda_allocated_bytes)
        return index

    def _on_free(self, key: int, index: int) -> None:
        st = self.state
        if st.live.get(key) != index:
            return
        del st.live[key]
        record = st.records[index]
        st.event += 1
        record.died = st.event
        st.allocated_bytes -= record.nbytes
        st.cuda_allocated_bytes -= cuda_block_bytes(record.nbytes)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self._see(leaf)
        return out

    # -- phases and modules -----------------------------------------------------------------
    def mark(self, phase: str) -> None:
        """Enter a phase of the step and add a timeline point."""
        self.phase = phase
        self.modules.reset_backward()
        self.state.timeline.append((phase, self.state.allocated_bytes, self.state.event))

    def _innermost(self) -> str:
        return self.modules.current()

    def _module_event(self, label: str, name: str) -> None:
        if self._module_events:
            self.state.timeline.append((f"{label} {clean_name(name) or ROOT}",
                                        self.state.allocated_bytes, self.state.event))

    def __enter__(self):
        self.modules.__enter__()
        return super().__enter__()

    def __exit__(self, *args):
        result = super().__exit__(*args)
        self.modules.__exit__(*args)
        return result
