"""The data side of the clock: sequences, padding, steps per epoch, total steps.

Global batch = micro-batch x gradient accumulation x data-parallel size (sequences per optimizer
step). Steps per epoch = ceil(sequences / global batch); total = ceil(steps per epoch x epochs).
The seed article's example: 10,000 samples, batch 32, 3 epochs -> ceil(10000 / 32) = 313 -> 939.
"""

from __future__ import annotations

import math
from collections import Counter

from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from trainplan.job.training import Workload


def global_batch(micro_batch: int, grad_accum: int, dp: int) -> int:
    """Sequences per optimizer step."""
    return micro_batch * grad_accum * dp


def expected_batch_max(lengths: tuple[int, ...], batch_size: int) -> float:
    """E[max of `batch_size` lengths drawn at random] from the empirical distribution (with
    replacement): sum_x x (F(x)^b - F(x-)^b). Dynamic padding pads each micro-batch to this."""
    if not lengths:
        raise TrainplanError("the list of sample lengths is empty")
    n = len(lengths)
    below = 0
    total = 0.0
    for value, count in sorted(Counter(lengths).items()):
        lo = (below / n) ** batch_size
        below += count
        total += value * ((below / n) ** batch_size - lo)
    return total


MEGA_BATCH_MULT = 50    # transformers trainer_pt_utils.get_length_grouped_indices: at most 50 sampler batches a mega-batch


def grouped_batch_max(lengths: tuple[int, ...], micro_batch: int, group: int) -> float:
    """The mean padded length of a micro-batch under the HF Trainer's length-grouped sampler (group_by_length;
    transformers 5 train_sampling_strategy "group_by_length"): LengthGroupedSampler(batch_size = `group`, the
    per-device batch x gradient accumulation; trainer.py _get_train_sampler) permutes the samples, cuts mega-batches
    of mult x group (mult = min(n // (4 group), 50), at least 1) and sorts each by length, longest first
    (trainer_pt_utils.get_length_grouped_indices); the loader then takes `micro_batch` consecutive samples, so
    micro-batch k of a mega-batch of M is padded to its (k x micro_batch + 1)-th longest sample. That order statistic
    is taken at its expected quantile (M - k x micro_batch) / (M + 1) of the lengths (the Weibull plotting position),
    the lengths' empirical quantile read there; averaged over the M / micro_batch micro-batches."""
    if not lengths:
        raise TrainplanError("the list of sample lengths is empty")
    n = len(lengths)
    if micro_batch == 1:
        return sum(lengths) / n                 # one sample a micro-batch: nothing to pad
    ordered = sorted(lengths)
    mult = max(1, min(n // (4 * group), MEGA_BATCH_MULT))
    mega = mult * group
    count = max(1, mega // micro_batch)
    total = expected_batch_max(lengths, mega)          # the longest of the mega-batch: exactly
    for k in range(1, count):
        p = (mega - k * micro_batch) / (mega + 1)
        total += ordered[min(n - 1, max(0, math.ceil(p * n) - 1))]
    return total / count


def length_group(micro_batch: int, grad_accum: int, grouped: bool) -> int:
    """The samples the length-grouped sampler sorts together per batch: the micro-batch x accumulation
    (transformers trainer.py _get_train_sampler: train_batch_size * gradient_accumulation_steps); 0 off."""
    return micro_batch * grad_accum if grouped else 0


@frozen
class SequenceShape:
    """What one sequence in a micro-batch looks like to the kernels and to the data."""

    padded_len: float            # tokens the model computes per sequence
    real_tokens: float           # dataset tokens per sequence (tokens/s counts these)
    samples_per_sequence: float  # > 1 when packing
    note: str
    attention_len: float = 0.0   # the causal span the attention kernel sees (0: padded_len, the whole
                                 # sequence); padding-free packing: each sample's own
    kept: float = 1.0            # of the dataset's samples, those trained on (the rest longer than seq_len and
                                 # deleted: TimingOptions.drop_long_samples)

    @property
    def attention_span(self) -> float:
        """Tokens the attention runs over, per sequence of the kernel: padded_len unless each packed
        sample attends only within itself."""
        return self.attention_len or self.padded_len


def sequence_shape(*, seq_len: int, micro_batch: int, tokens_per_sample: float | None,
                   packing: bool, padding_free: bool = False,
                   lengths: tuple[int, ...] | None = None, drop_long: bool = False,
                   group: int = 0) -> SequenceShape:
    """Packing fills every sequence to seq_len; the attention spans the whole pack, unless the batches
    are padding-free: packed samples laid end to end with their own position ids, which flash varlen
    attention reads as one causal span per sample (transformers' DataCollatorWithFlattening and
    `_flash_attention_forward` turning position_ids into cu_seqlens; TRL's padding_free / bfd packing,
    ms-swift's packing, which turns padding_free on). The span is then a sample's: sum(L^2) / sum(L)
    over the lengths given (a longer sample costs quadratically more), else the mean.
    Without packing each sample is its own sequence, truncated at seq_len and padded to the longest
    in its micro-batch (expected from `lengths` when given; with only a mean length every sample is
    taken to have that length, so no padding is counted). Padding-free batching (flash varlen)
    computes only real tokens. `drop_long`: samples longer than seq_len are deleted instead of truncated
    (ms-swift's truncation_strategy 'delete'), so the lengths are those that fit and only their share of the
    samples is trained on (SequenceShape.kept). `group`: the samples the HF Trainer's length-grouped sampler sorts
    together per batch (group_by_length: micro-batch x accumulation; 0: random batches), grouped_batch_max."""
    if lengths and drop_long and max(lengths) > seq_len:
        fitting = tuple(x for x in lengths if x <= seq_len) or (seq_len,)
        kept = len(fitting) / len(lengths)
        shape = sequence_shape(seq_len=seq_len, micro_batch=micro_batch, tokens_per_sample=tokens_per_sample,
                               packing=packing, padding_free=padding_free, lengths=fitting, group=group)
        return replace(shape, kept=kept, note=f"samples longer than {seq_len} tokens deleted, not truncated "
                                              f"(truncation_strategy 'delete'): {kept:.0%} of them trained on; "
                                              + shape.note)
    if lengths:
        clipped = tuple(min(x, seq_len) for x in lengths)
        mean = sum(clipped) / len(clipped)
    else:
        mean = float(min(tokens_per_sample or seq_len, seq_len))
    if packing:
        span = 0.0
        note = f"packed: {seq_len / mean:.2f} samples of {mean:.0f} tokens per {seq_len}-token sequence"
        if padding_free and mean < seq_len:
            span = sum(x * x for x in clipped) / sum(clipped) if lengths else mean
            note += f"; padding-free, so each sample attends only within itself ({span:.0f}-token causal span)"
        elif padding_free and not lengths and tokens_per_sample is None:
            note += ("; sample lengths not given: each pack is timed as one sample, the most attention it can "
                     "cost (--tokens-per-sample or --lengths-file give the data's)")
        return SequenceShape(padded_len=float(seq_len), real_tokens=float(seq_len),
                             samples_per_sequence=seq_len / mean, note=note, attention_len=span)
    if padding_free or not lengths:
        why = "padding-free batching" if padding_free else "uniform sample length assumed (no padding counted)"
        if group and not lengths:
            why += "; group_by_length has no lengths to group (--dataset or --lengths-file gives them)"
        return SequenceShape(padded_len=mean, real_tokens=mean, samples_per_sequence=1.0,
                             note=f"one sample per sequence, {mean:.0f} tokens; {why}")
    if group:
        padded = grouped_batch_max(clipped, micro_batch, group)
        how = "batches grouped by length (group_by_length)"
    else:
        padded, how = expected_batch_max(clipped, micro_batch), "dynamic padding"
    return SequenceShape(padded_len=padded, real_tokens=mean, samples_per_sequence=1.0,
                         note=f"{how}: {mean:.0f} real tokens padded to {padded:.0f} per "
                              f"sequence on average ({mean / padded:.0%} useful)")


def steps_per_epoch(samples: int, batch: int, samples_per_sequence: float = 1.0) -> int:
    """ceil(sequences / global batch), sequences = samples / samples per sequence (rounded up)."""
    if samples <= 0:
        raise TrainplanError(f"--samples must be positive, got {samples}")
    sequences = math.ceil(samples / samples_per_sequence - 1e-9)
    return math.ceil(sequences / batch)


def total_steps(per_epoch: int, epochs: float) -> int:
    """Steps for `epochs` passes (a fractional last epoch rounds up to a whole step)."""
    if epochs <= 0:
        raise TrainplanError(f"--epochs must be positive, got {epochs}")
    return math.ceil(per_epoch * epochs - 1e-9)


def evaluation_share(workload: Workload, steps: int, per_epoch: int, samples_per_step: float) -> tuple[float, str]:
    """(samples evaluated / samples trained, the note) of the run's periodic evaluation (Workload.eval_samples), as
    transformers 5.25's Trainer runs it (trainer_callback.py DefaultFlowCallback.on_step_end / on_epoch_end,
    TrainerState.compute_steps): at every step where global_step % eval_steps == 0 and at the last step when it is
    not one of them, so ceil(steps / eval_steps) times (a fractional eval_steps is ceil(max_steps x eval_steps));
    or at the end of each epoch, the last one cut short included. 0 without evaluation or a run length."""
    if not steps or not (workload.eval_each_epoch or workload.eval_every_steps):
        return 0.0, ""
    if workload.eval_samples is None:
        return 0.0, ("evaluation not counted: how many samples it evaluates is not known (--val-size: a count, or a "
                     "share with --samples or --dataset)")
    if not workload.eval_samples:
        return 0.0, ""
    if workload.eval_each_epoch:
        evals = math.ceil(steps / per_epoch - 1e-9) if per_epoch else 1
        how = "after each epoch" + ("" if per_epoch else " (the run's epochs not known: one)")
    else:
        every = workload.eval_every_steps
        k = math.ceil(steps * every) if every < 1 else int(every)
        evals = math.ceil(steps / k)
        how = f"every {k:,} steps"
    share = evals * workload.eval_samples / (steps * samples_per_step)
    return share, (f"evaluation: {evals:,} evaluation{'s' if evals != 1 else ''} of {workload.eval_samples:,} held-out "
                   f"samples ({how}), forward only: {share:.1%} of the samples trained")
