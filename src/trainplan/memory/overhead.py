"""Memory outside PyTorch's allocated tensors: the CUDA context, library workspaces, the caching
allocator's reserve and communication buffers.

Defaults and their sources (shared/reference/hardware.md section 4):
- CUDA context with lazy module loading (CUDA >= 11.7, PyTorch default since 1.13): ~300-500 MB;
  stas00/ml-engineering measured 0.47 GiB on A100 (torch 2.1.1, lazy); pytorch/pytorch #107667.
  Default here: 0.5 GiB.
- cuBLAS workspace: 8 MiB per stream on Hopper's default config (`CUBLAS_WORKSPACE_CONFIG`
  default :4096:8 on CUDA >= 12.2 = 4 MiB x 8), counted inside PyTorch's reserve since torch 2.2.
- NCCL: 0.5-2 GiB per process in multi-GPU jobs (stas00; NVIDIA/nccl #964: 544-688 MB on 4x A100);
  default 0.75 GiB when more than one GPU.
- Caching allocator: reserved exceeds the peak allocated by the rounding of blocks (512 B, 2 MiB
  for large blocks, 20 MiB segments) and fragmentation; no published quantitative source was found
  (hardware.md section 4). Default: 10% of the peak plus 256 MiB, the median of our own
  measurements: the 16 H200 runs of benchmarks/data/gpu_h200.csv give (reserved - 256 MiB) /
  allocated - 1 between 0.04 and 0.22, median 0.098 (torch 2.11, CUDA 13). The ledger's
  calibration refits it from the user's own runs. Those runs also measured device - reserved at
  0.73-0.74 GiB on an H200 with CUDA 13, above the 0.5 GiB context default kept here for older
  stacks (the A100 figure above).
"""

from __future__ import annotations

from trainplan.frozen import frozen
from trainplan.units import GIB, MIB

CUDA_CONTEXT_BYTES = int(0.5 * GIB)
NCCL_BYTES = int(0.75 * GIB)
RESERVE_FRACTION = 0.10
RESERVE_FIXED_BYTES = 256 * MIB


@frozen
class Overhead:
    reserve_fraction: float = RESERVE_FRACTION
    reserve_fixed_bytes: int = RESERVE_FIXED_BYTES
    cuda_context_bytes: int = CUDA_CONTEXT_BYTES
    nccl_bytes: int = NCCL_BYTES


def reserved_from_allocated(peak_allocated: int, overhead: Overhead) -> int:
    return int(peak_allocated * (1 + overhead.reserve_fraction)) + overhead.reserve_fixed_bytes


def device_from_reserved(reserved: int, num_gpus: int, overhead: Overhead, unified_bytes: int = 0) -> int:
    comm = overhead.nccl_bytes if num_gpus > 1 else 0
    return reserved + overhead.cuda_context_bytes + comm + unified_bytes
