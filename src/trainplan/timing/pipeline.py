"""Pipeline-parallel bubbles, per schedule, as a fraction of a stage's compute per optimizer step.

A stage runs m micro-batches per step, each a forward F, an input-gradient backward B and a
weight-gradient backward W (times t_f, t_b, t_w; recomputation belongs to B, which it precedes).
Its compute is m (t_f + t_b + t_w); the bubble is the idle time on top of it:

* GPipe and 1F1B (PipeDream-flush): (p - 1)(t_f + t_b + t_w), i.e. (p - 1) / m of the compute
  (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM", section 2.2.1). GPipe has the same bubble and holds m micro-batches' activations.
* Interleaved 1F1B with v model chunks per rank: (p - 1) / (v m) (same paper, section 2.2.2).
* ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR, section 2.1): W passes delayed
  into the cool-down fill part of the bubble, which shrinks to (p - 1)(t_f + t_b - t_w); one third
  of 1F1B's when t_f = t_b = t_w (the authors' table: (p - 1) / 3m). With v chunks (torchtitan's
  InterleavedZeroBubble) it divides by v as interleaving does. A method without weight gradients
  of frozen layers (LoRA) has little W to move and keeps most of the 1F1B bubble.
* ZB-V and ZB-H2: zero bubble in the paper's analysis (ZB-V with two chunks per rank at 1F1B's
  activation memory, twice the pipeline traffic); taken as 0, which the notes say.
* DualPipe (DeepSeek-V3 technical report, section 3.2.1 and Table 2; deepseek-ai/DualPipe README):
  micro-batches fed from both ends, each rank holding stages i and p - 1 - i (two copies of the
  parameters, p + 1 stage activations), a forward and a backward chunk overlapped: bubble
  (p/2 - 1)(F&B + B - 3W) with B the full backward and F&B the two overlapped chunks, taken as
  t_f + t_b + t_w (their compute; the communication is what the overlap hides): (p/2 - 1)(t_f + 2 t_b - t_w).
  Its expert all-to-alls run under the paired chunk's compute (timing.overlap.moe_a2a_overlap). It needs
  an even p and an even m >= 2p (dualpipe/dualpipe.py DualPipe.step asserts).

Framework defaults: Megatron runs 1F1B, interleaved when virtual stages are given
(megatron/core/pipeline_parallel/schedules.py get_forward_backward_func); DeepSpeed's PipelineEngine
TrainSchedule is 1F1B (deepspeed/runtime/pipe/schedule.py); torchtitan's
`parallelism.pipeline_parallel_schedule` defaults to "1F1B" (torchtitan/config/job_config.py).
The number of micro-batches m is the gradient-accumulation count in every one of them (Megatron:
global batch / (micro-batch x data parallel); DeepSpeed: gradient_accumulation_steps; torchtitan:
local batch / pipeline_parallel_microbatch_size).
"""

from __future__ import annotations

from trainplan.enums import Framework, PipeSchedule
from trainplan.frozen import frozen
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.stages import layers_per_stage
from trainplan.timing.options import TimingOptions


@frozen
class PassTimes:
    """Per micro-batch times (or FLOPs: only their ratios matter) of the three passes on one stage."""

    forward: float
    backward_input: float      # input gradients, with the recomputed forward
    backward_weight: float     # weight gradients

    @property
    def total(self) -> float:
        return self.forward + self.backward_input + self.backward_weight


def default_schedule(virtual_stages: int) -> PipeSchedule:
    """Megatron's rule, which DeepSpeed (no chunks) and torchtitan's default agree with."""
    return PipeSchedule.INTERLEAVED if virtual_stages > 1 else PipeSchedule.ONE_F_ONE_B


def bubble_fraction(schedule: PipeSchedule, *, stages: int, micro_batches: int, virtual_stages: int = 1,
                    passes: PassTimes | None = None) -> float:
    """Bubble time / compute time of one stage per step (0 without a pipeline)."""
    p, m = stages, max(1, micro_batches)
    if p <= 1:
        return 0.0
    v = max(1, virtual_stages)
    if schedule in (PipeSchedule.GPIPE, PipeSchedule.ONE_F_ONE_B):
        return (p - 1) / m
    if schedule is PipeSchedule.INTERLEAVED:
        return (p - 1) / (v * m)
    if schedule is PipeSchedule.ZB_H1:
        t = passes or PassTimes(forward=1.0, backward_input=1.0, backward_weight=1.0)
        idle = max(0.0, t.forward + t.backward_input - t.backward_weight)
        return (p - 1) * idle / (v * m * t.total) if t.total > 0 else 0.0
    if schedule is PipeSchedule.DUALPIPE:
        t = passes or PassTimes(forward=1.0, backward_input=1.0, backward_weight=1.0)
        idle = max(0.0, t.forward + 2.0 * t.backward_input - t.backward_weight)
        return max(0, p // 2 - 1) * idle / (m * t.total) if t.total > 0 else 0.0
    return 0.0      # ZB-V (and ZB-H2): zero in the paper's analysis


def bubble_note(schedule: PipeSchedule, fraction: float, *, stages: int, micro_batches: int,
                virtual_stages: int, stated: bool) -> str:
    share = fraction / (1.0 + fraction)
    how = "" if stated else " (the framework's default)"
    if schedule is PipeSchedule.ZBV:
        return (f"pipeline schedule zbv{how}: no bubble counted (zero bubble in Qi et al. 2024's analysis; "
                f"p={stages}, m={micro_batches})")
    return (f"pipeline bubble {share:.1%} of the step ({schedule.value}{how}, p={stages}, m={micro_batches}, "
            f"v={virtual_stages})")


def bubble_floor(schedule: PipeSchedule | None, *, stages: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """A lower bound of bubble_fraction that needs no pass times (for the planner's bounds): exact for
    GPipe, 1F1B and interleaved 1F1B, 0 for the zero-bubble schedules."""
    v = max(1, virtual_stages)
    schedule = schedule or default_schedule(v)
    if schedule in (PipeSchedule.ZB_H1, PipeSchedule.ZBV, PipeSchedule.DUALPIPE):
        return 0.0
    return bubble_fraction(schedule, stages=stages, micro_batches=micro_batches, virtual_stages=v)


def heaviest_stage_s(mean_stage_s: float, head_s: float, layers: tuple[int, ...], *,
                     rebalanced: bool = False) -> float:
    """Compute per micro-batch of the pipeline rank with the most work, which every micro-batch waits for.

    `mean_stage_s` is the whole model's compute of a micro-batch over the p ranks (pp x it is the total);
    `head_s` the LM head's GEMMs and the loss, which run on the last rank only (Megatron-Core builds the
    output layer and the loss in the post-process stage, the last: models/gpt/gpt_model.py `post_process`;
    torchtitan's pipeline split gives `norm` and `output` to the last stage); the decoder layers split as
    `layers` (memory.stages.layers_per_stage: what each rank holds over all its virtual stages). The
    embedding lookup on the first rank moves bytes, no GEMM: not counted.

    `rebalanced`: layers that do not divide over the stages run only with a layout the user wrote
    (Megatron's --decoder-first/last-pipeline-num-layers, --pipeline-model-parallel-layout), which is taken as
    the one that evens the ranks out: n layers on the last rank beside the head and the rest spread over the
    others, n (at least 1) the one that makes the heaviest rank lightest."""
    stages = len(layers)
    total_layers = sum(layers)
    if stages <= 1 or total_layers <= 0:
        return mean_stage_s
    body = max(0.0, mean_stage_s * stages - head_s)
    per_layer = body / total_layers
    if rebalanced:
        return min(max(-(-(total_layers - n) // (stages - 1)) * per_layer, n * per_layer + head_s)
                   for n in range(1, max(1, total_layers // stages) + 1))
    return max(per_layer * n + (head_s if i == stages - 1 else 0.0) for i, n in enumerate(layers))


# Frameworks that split the pipeline by decoder layers (the head and loss on the last stage, unless counted as a
# layer: ParallelConfig.head_as_layer). DeepSpeed's PipelineModule partitions by parameter count by default
# (deepspeed/runtime/pipe/module.py partition_method="parameters"), which weighs the LM head by its size.
_LAYER_SPLIT = frozenset({Framework.MEGATRON, Framework.TORCHTITAN})


def heaviest_rank_mb(setup: TrainingSetup, layout: Layout, options: TimingOptions, compute_mb: float, head_mb: float,
                     notes: list[str]) -> float:
    """The micro-batch compute the pipeline runs at (heaviest_stage_s) for a framework that splits by layers; a note
    where the last rank is over 1% above the mean. DualPipe's rank 0 holds the first and the last stage and its
    split is the report's own (not rebalanced here); device_map=auto runs one stage at a time."""
    if (layout.pp <= 1 or setup.framework not in _LAYER_SPLIT or options.sequential_pipeline
            or options.pp_schedule is PipeSchedule.DUALPIPE):
        return compute_mb
    # layers that do not divide over the (virtual) stages need a layout the user wrote (taken as the balanced one)
    rebalanced = (not options.pp_head_as_layer and setup.framework is Framework.MEGATRON
                  and setup.model.num_layers % (layout.pp * max(1, options.pp_interleave)) != 0)
    heaviest = heaviest_stage_s(compute_mb, head_mb, layers_per_stage(setup.model.num_layers, layout.pp,
                                                                    head_as_layer=options.pp_head_as_layer),
                                rebalanced=rebalanced)
    if heaviest > compute_mb * 1.01:
        notes.append(f"pipeline stages unequal: the last of {layout.pp} ranks also runs the LM head and the loss "
                     f"({head_mb * 1e3:.1f} ms a micro-batch), {heaviest / compute_mb - 1:.0%} above the mean "
                     "stage; every micro-batch waits for it")
    return heaviest
