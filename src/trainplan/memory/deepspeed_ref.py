"""DeepSpeed's own model-state estimators, re-implemented for cross-checks (bytes, not GiB).

Sources: deepspeed/runtime/zero/stage_1_and_2.py `estimate_zero2_model_states_mem_needs` and
deepspeed/runtime/zero/stage3.py `estimate_zero3_model_states_mem_needs` / `model_to_params`
(the formulas behind `estimate_zero2_model_states_mem_needs_all_cold` and its stage-3 twin, which
print a table for "params, optim states and gradients"; activations and buffers are not included).
"""

from __future__ import annotations

from trainplan.model.architecture import structure
from trainplan.specs import ModelSpec


def estimate_zero2_model_states_mem_needs(total_params: int, num_gpus_per_node: int = 1, num_nodes: int = 1,
                                          cpu_offload: bool = True,
                                          additional_buffer_factor: float = 1.5) -> tuple[int, int]:
    """(CPU bytes per node, GPU bytes per GPU) for ZeRO-2.

    Without offload: 4 bytes/param on every GPU (16-bit weights + 16-bit gradients) plus
    16 bytes/param / GPUs (fp32 master, fp32 gradient partition, Adam m and v).
    With optimizer offload: 2 bytes/param on the GPU; CPU max(4 x GPUs, 16) bytes/param x 1.5.
    """
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu_mem = 2 * total_params
        cpu_mem = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        gpu_mem = 4 * total_params + int(16 * total_params / total_gpus)
        cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem)


def estimate_zero3_model_states_mem_needs(total_params: int, largest_layer_params: int, num_gpus_per_node: int = 1,
                                          num_nodes: int = 1, cpu_offload: bool = True,
                                          cpu_offload_params: bool = True, zero_init: bool = True,
                                          additional_buffer_factor: float = 1.5) -> tuple[int, int, int]:
    """(CPU bytes per node, GPU bytes per GPU, largest-layer bytes) for ZeRO-3.

    The GPU always holds 4 bytes x the largest layer (its 16-bit weights and gradients gathered);
    without offload 18 bytes/param / GPUs on top; with optimizer offload 2 bytes/param / GPUs.
    """
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    largest_layer_memory = 4 * largest_layer_params
    if cpu_offload:
        if cpu_offload_params:
            gpu_mem = largest_layer_memory
            per_param = 18 * gpus_factor if zero_init else max(4 * num_gpus_per_node, 18 * gpus_factor)
        else:
            gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)
            per_param = 16 * gpus_factor if zero_init else max(4 * num_gpus_per_node, 16 * gpus_factor)
        cpu_mem = total_params * per_param * additional_buffer_factor
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        loaded = largest_layer_params if zero_init else total_params
        cpu_mem = loaded * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


def largest_layer_params(spec: ModelSpec) -> int:
    """`model_to_params`: the most parameters any single module holds directly (not recursively):
    the embedding, the head or the largest linear of the HF module tree."""
    st = structure(spec)
    biggest = max(st.embedding_params, st.lm_head.params if st.lm_head else 0)
    for kind, _ in st.layers:
        for lin in kind.linears:
            biggest = max(biggest, lin.in_features * lin.out_features + (lin.out_features if lin.bias else 0))
    return biggest
