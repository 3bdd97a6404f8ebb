"""Pipeline stages: which decoder layers each pipeline rank holds and how many micro-batches'
activations it stashes when its first backward starts.

- Narayanan et al. 2021 (PTD-P) section 2.2 and megatron/core/pipeline_parallel/schedules.py:
  1F1B warms up p - i - 1 micro-batches on stage i (0-based), so it stashes p - i when it starts
  the backward of the first; the interleaved schedule warms up 2(p - i - 1) + (v - 1)p model
  chunks of 1/v stage each (first stage: p(1 + (p - 1)/(pv)) micro-batches, the penalty in
  megatron/training/theoretical_memory_usage.py). The first stage holds the embedding, the last
  the final norm, output layer and logits; with tied embeddings the last stage keeps a copy of
  the word embedding (Megatron `setup_embeddings_and_output_layer`).
"""

from __future__ import annotations

from trainplan.frozen import frozen
from trainplan.job.training import Layout, TrainingSetup

TYPE_CHECKING = False   # annotations only
if TYPE_CHECKING:
    from trainplan.memory.parallel import ParallelConfig


@frozen
class Stage:
    """One pipeline stage: the decoder layers its GPUs run and how many micro-batches they stash."""

    index: int
    layers: tuple[int, ...]
    has_embedding: bool
    has_head: bool
    in_flight: float          # micro-batches whose activations are alive at the backward peak



def pipeline_slots(num_layers: int, head_as_layer: bool) -> int:
    """The layer places the pipeline split divides: the decoder layers, plus the embedding and the loss where
    they take a layer's place each (ParallelConfig.head_as_layer; Megatron-Core asks this to divide)."""
    return num_layers + 2 if head_as_layer else num_layers


def layers_per_stage(num_layers: int, pp: int, *, head_as_layer: bool = False) -> tuple[int, ...]:
    """Layers of each stage; a remainder goes to the last stages, which stash fewer micro-batches. With
    `head_as_layer` the embedding and the loss take a layer's place each (ParallelConfig.head_as_layer): the
    first and the last stage hold one layer fewer, and a remainder goes to the first stages (torchtitan's
    generate_llm_fqn_per_model_part; Megatron-Core asks num_layers + 2 to divide). A first or last stage whose
    place is only the embedding or only the loss holds no decoder layer (Megatron-DeepSpeed's
    --pp-partition-method 'type:transformer|embedding' gives each of num_layers + 2 stages one weighted layer:
    deepspeed/runtime/pipe/module.py _partition_layers, partition_balanced over the matching layers). Where the
    places are fewer than the stages, the plain split."""
    if head_as_layer and pp > 1:
        base, extra = divmod(pipeline_slots(num_layers, head_as_layer), pp)
        if base >= 1:       # a place for every stage: the middle ones hold a layer, the first and the last >= 0
            sizes = [base + (1 if i < extra else 0) for i in range(pp)]
            sizes[0], sizes[-1] = sizes[0] - 1, sizes[-1] - 1
            return tuple(sizes)
    base, extra = divmod(num_layers, pp)
    return tuple(base + (1 if i >= pp - extra else 0) for i in range(pp))


def in_flight_microbatches(stage: int, pp: int, virtual: int, microbatches: int) -> float:
    """Micro-batches whose activations stage `stage` holds when its first backward starts.

    1F1B: min(p - i, m). Interleaved: (2(p - i - 1) + (v - 1)p + 1) chunks of 1/v stage each,
    at most m x v (megatron/core/pipeline_parallel/schedules.py warmup counts).
    """
    if pp == 1:
        return 1.0
    if virtual == 1:
        return float(min(pp - stage, microbatches))
    chunks = 2 * (pp - stage - 1) + (virtual - 1) * pp + 1
    return min(chunks, microbatches * virtual) / virtual


def pipeline_stages(setup: TrainingSetup, layout: Layout, cfg: ParallelConfig) -> tuple[Stage, ...]:
    sizes = layers_per_stage(setup.model.num_layers, layout.pp, head_as_layer=cfg.head_as_layer)
    out, start = [], 0
    for i, n in enumerate(sizes):
        out.append(Stage(index=i, layers=tuple(range(start, start + n)), has_embedding=i == 0,
                         has_head=i == layout.pp - 1,
                         in_flight=1.0 if cfg.sequential else
                         in_flight_microbatches(i, layout.pp, cfg.virtual_stages, setup.grad_accum)))
        start += n
    if cfg.dual_pipe and layout.pp > 1:
        return _dual_pipe_ranks(tuple(out), setup.grad_accum)
    return tuple(out)


def _dual_pipe_ranks(stages: tuple[Stage, ...], microbatches: int) -> tuple[Stage, ...]:
    """DualPipe's ranks (timing.pipeline): rank i holds stages i and p - 1 - i, so the first and last rank
    both hold the embedding and the head (two copies of the parameters, DeepSeek-V3 report Table 2), and
    its activations are p + 1 stage micro-batches: (p + 1) / 2 micro-batches over the rank's two stages."""
    p = len(stages)
    in_flight = min((p + 1) / 2, float(microbatches))
    return tuple(Stage(index=i, layers=tuple(sorted(stages[i].layers + stages[p - 1 - i].layers)),
                       has_embedding=i in (0, p - 1), has_head=i in (0, p - 1), in_flight=in_flight)
                 for i in range(p))
