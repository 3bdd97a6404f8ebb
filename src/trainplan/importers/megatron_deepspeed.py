"""Megatron-DeepSpeed's own flags on `pretrain_gpt.py` (bigscience-workshop/Megatron-DeepSpeed and microsoft's):
the DeepSpeed engine's ZeRO stage and pipeline partitioning, read for importers/megatron_lm.py.

* `--zero-stage N`: the DeepSpeed engine's ZeRO stage. Stage 0 with `--bf16` under pipeline parallelism is not
  unsharded: DeepSpeed runs a bf16 model under pipeline parallelism with ZeRO off through its BF16_Optimizer
  (deepspeed/runtime/engine.py `_do_optimizer_sanity_check` returns BFLOAT16), which partitions the fp32 master
  weights and the optimizer states over data parallel (runtime/bf16_optimizer.py `fp32_groups_flat_partition`):
  ZeRO-1's sharding ("bf16 must use z0! it implements its own zero stage 1 equivalent", BigScience's
  tr11-176B-ml.slurm).
* `--pp-partition-method`: the pipeline is DeepSpeed's PipelineModule, whose `partition_method` 'type:REGEX'
  balances the layers whose class names match over the stages (deepspeed/runtime/pipe/module.py
  `_partition_layers`: partition_balanced over `_find_layer_type`'s 0/1 weights), not the decoder layers alone:
  stages of unequal decoder layers. 'type:transformer|embedding' (BLOOM's) counts the decoder layers and both
  EmbeddingPipe layers, the input embedding and the tied output head: the first and the last stage hold one
  decoder layer fewer (ParallelConfig.head_as_layer).
"""

from __future__ import annotations

from trainplan.importers.base import Collector


def zero_stage(c: Collector, stage: int, raw: str | None, *, bf16: bool, pp: int) -> bool:
    """Set `zero` from `--zero-stage` (module docstring); False where stage 0 shards nothing (the caller's
    default then stands)."""
    if stage:
        c.set("zero", min(stage, 3), key="--zero-stage", raw=raw,
              note="Megatron-DeepSpeed: the DeepSpeed engine's ZeRO stage")
        return True
    if bf16 and pp > 1:
        c.set("zero", 1, key="--zero-stage", raw=raw,
              note="Megatron-DeepSpeed, ZeRO stage 0 with --bf16 under pipeline parallelism: DeepSpeed's "
                   "BF16_Optimizer partitions fp32 master weights and optimizer states over data parallel (ZeRO-1)")
        return True
    return False


def partition_method(c: Collector, raw: str | None, pp: int) -> None:
    """`--pp-partition-method` as an uneven pipeline, and the embedding and head as a layer each where its type
    regex names the embedding (module docstring)."""
    method = (raw or "").strip("'\"")
    if not method or pp <= 1:
        return
    c.set("uneven_pipeline", True, key="--pp-partition-method", raw=method,
          note="Megatron-DeepSpeed: DeepSpeed PipelineModule(partition_method=...) balances the named layer types "
               "over the stages, not the decoder layers alone")
    if method.lower().startswith("type:") and "embedding" in method.lower():
        c.set("pp_head_as_layer", True, key="--pp-partition-method", raw=method,
              note="the embedding and the tied output head (EmbeddingPipe) weigh a layer each in the split")
