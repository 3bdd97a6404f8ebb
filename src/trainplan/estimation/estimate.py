"""estimate(job): parameters, memory per GPU, time and cost of one resolved Job. Pure: it reads no
file and looks nothing up (the Job carries its price, calibration and the GPU types to suggest)."""

from __future__ import annotations

from trainplan.cost.bill import cost_of
from trainplan.estimation.advice import suggestions
from trainplan.estimation.result import Estimate
from trainplan.job.frameworks import profile
from trainplan.job.job import Job
from trainplan.job.training import TrainingSetup
from trainplan.ledger.calibration import calibrate_estimate
from trainplan.ledger.recorded import with_measurement
from trainplan.memory import estimate_memory
from trainplan.memory.dora import reruns_base
from trainplan.memory.state import param_groups
from trainplan.model.params import count_params
from trainplan.timing.estimate import TimeEstimate, estimate_time


def estimate(job: Job) -> Estimate:
    """Memory, time and cost of `job`, with the changes that would make it fit when it does not."""
    setup, layout, gpu = job.setup, job.layout, job.gpu
    memory_model = job.memory_model()
    memory = estimate_memory(setup, layout, gpu, headroom=job.headroom, model=memory_model)
    tips = () if memory.fits else tuple(suggestions(job, memory, memory_model))
    notes = [f"framework profile: {profile(setup.framework).summary}"]
    notes += list(memory.notes)
    notes += list(job.notes)               # job/validate.check_job: legal combinations worth a word
    notes += _assumption_notes(setup)
    time = estimate_time(setup, layout, gpu, job.workload, job.timing)
    notes += list(time.assumptions)
    raw_step_s = time.step_s
    if job.calibration is not None:
        memory, calibrated_time, note = calibrate_estimate(memory, time, setup, layout,
                                                           calibration=job.calibration)
        if note:
            time = calibrated_time
            notes.append(note)
            tips = () if memory.fits else tuple(suggestions(job, memory, memory_model))
    if job.recorded is not None and not memory.fits:   # a recorded run of this very setup fits (ledger/recorded.py)
        run = job.recorded.success_for(setup, layout, zero=job.zero, fsdp=job.fsdp, parallel=job.parallel)
        if run is not None:
            memory, note = with_measurement(memory, run)
            notes.append(note)
            tips = ()
    notes += hfu_warning(time, gpu.id, calibrated=job.calibration is not None and time.step_s != raw_step_s)
    cost = None if job.pricing is None else cost_of(time, job.pricing, fits=memory.fits)
    notes += list(cost.notes) if cost is not None else []
    if job.gpus_note and any(t.change.startswith("--gpu ") for t in tips):
        notes.append(job.gpus_note)
    return Estimate(job=job, params=count_params(setup.model), trainable_params=param_groups(setup).trainable_params,
                    memory=memory, time=time, cost=cost, suggestions=tips,
                    notes=tuple(dict.fromkeys(notes)))   # a note both models make is said once


def hfu_warning(time: TimeEstimate, gpu_id: str, *, calibrated: bool = False) -> list[str]:
    """A warning when the predicted HFU is above the GPU's best measured matmul (MAMF, as a fraction
    of its dense peak; trainplan.timing.efficiency.MAMF_FRACTION): no whole step runs faster than its
    fastest single matmul, so an --efficiency override or a calibration has made the step too fast."""
    ceiling = time.step.efficiency.mamf_fraction
    if time.hfu <= ceiling:
        return []
    why = ("the --efficiency override" if time.step.efficiency.overridden else
           "the calibration" if calibrated else "the efficiency model")
    return [f"warning: predicted HFU {time.hfu:.1%} is above {gpu_id}'s best measured matmul ({ceiling:.0%} of "
            f"its {time.step.efficiency.peak_dtype} peak, MAMF): no step runs that fast; {why} is too optimistic"]


def _assumption_notes(setup: TrainingSetup) -> list[str]:
    notes = [
        "activations follow what autograd saves in the Hugging Face modeling code on CUDA; "
        f"attention kernel {setup.attention}",
        f"loss: {setup.impl.loss}" + (" (fp32 upcast of the logits)" if setup.impl.loss_upcast else ""),
        "reserved = allocated x 1.10 + 256 MiB (caching allocator: the median of 16 measured H200 runs; "
        "calibrate with the ledger); "
        "device = reserved + 0.5 GiB CUDA context (+ NCCL buffers when multi-GPU)",
    ]
    if setup.model.model_type in ("gemma2", "gpt_oss") and setup.attention.value == "eager":
        notes.append(f"{setup.model.model_type}: transformers refuses SDPA (_supports_sdpa = False), so eager "
                     "attention is assumed unless --attention flash: the s x s softmax is kept per head")
    if str(setup.optimizer) == "badam":
        notes.append("BAdam: one decoder layer trains at a time (its fp32 copy and Adam states); the peak is "
                     "the bottom layer's block, whose backward runs through every layer; shown as freeze -1")
    elif str(setup.method) == "freeze":
        span = "first" if setup.freeze_bottom else "last"
        notes.append(f"freeze tuning: the {span} {setup.freeze_trainable_layers} decoder layer(s) train")
    if setup.lora is not None and setup.lora.dora:
        # peft tuners/lora/dora.py DoraLinearLayer.forward: each forward rebuilds B @ A at the weight's size,
        # takes the norm of W + scaling x BA, and keeps base and adapter outputs for the magnitude's gradient
        rerun = ("; with dropout active peft reruns each adapted base linear on the dropped input (its "
                 "output and W's cast copy kept, its FLOPs counted): --lora-dropout 0 lets it reuse the base "
                 "output") if reruns_base(setup) else ""
        notes.append("DoRA: the weight norm peft recomputes every forward (eye(in), B @ A and W + s BA at each "
                     "adapted weight's size, transient), the base and adapter outputs kept for the magnitude's "
                     "gradient and its elementwise traffic are counted (memory.dora, timing.traffic)" + rerun)
    if setup.grad_accum > 1:
        notes.append("gradient accumulation > 1: gradients stay allocated through every micro-batch's forward")
    return notes
