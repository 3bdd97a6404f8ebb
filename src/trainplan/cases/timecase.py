"""Time cases (`kind == "time"`): setup, layout, GPU, workload and the metric the source reports.

Moved from benchmarks/time_accuracy.py (which imports it from here, output unchanged). Each case
maps to a TrainingSetup / Layout / GpuSpec / Workload as best its fields allow; the prediction is
the metric the source reports (step time, tokens/s/GPU, GPU-hours).
"""

from __future__ import annotations

import json

from trainplan.cases import data
from trainplan.cases.common import (
    Skip,
    case_model,
    framework_default,
    lora_dropout,
    lora_targets,
)
from trainplan.cases.measured import RUN_EVALS, RUN_STEPS, plain_number
from trainplan.cases.memorycase import data_parallel, fsdp_version, grad_accum, layout_flags
from trainplan.cases.modelcard import Mapped, model_card_case
from trainplan.cases.optimizer_text import framework_optimizer, galore_flags, memory_optimizer
from trainplan.cases.stated import implied_gpus, names_fp16, names_megatron, network_of
from trainplan.cases.text import (
    attention_of,
    ckpt_every_of,
    embedded_settings,
    experts_of,
    flash_version_of,
    framework_or_assumed,
    gpu_of,
    grad_ckpt_of,
    kbit_prep_fp32,
    pipeline_of,
    precision_of,
    quant_of,
)
from trainplan.cases.trainers import drops_long_samples, stated_head_as_layer, stated_moe_dispatch
from trainplan.cases.trainers import trainer_defaults, trainer_facts
from trainplan.enums import (
    LOW_RANK_OPTIMIZERS,
    Attention,
    Framework,
    Fsdp,
    GradCkpt,
    Loss,
    Method,
    Offload,
    Optimizer,
    Precision,
    Quant,
    ZeroStage,
)
from trainplan.frozen import replace
from trainplan.job.capabilities import capabilities, flash_refusal
from trainplan.job.frameworks import default_expert_tp, profile
from trainplan.job.resolve import supported_attention
from trainplan.job.setup import preference
from trainplan.job.training import (
    Layout,
    LoraConfig,
    QuantConfig,
    TrainingSetup,
    Workload,
)
from trainplan.memory.sharding import fsdp_for
from trainplan.model.params import named_targets
from trainplan.specs import ModelSpec
from trainplan.timing.estimate import TimeEstimate, TimingOptions, estimate_time
from trainplan.timing.fp8 import fp8_in_text, recipe_from_text
from trainplan.timing.links import internode_link

METRIC_KEYS = {"step_time_s": "step_s", "tokens_per_s_per_gpu": "tokens_per_s_per_gpu", "gpu_hours": "gpu_hours",
               "tflops_per_gpu": "tflops_per_gpu", "mfu": "mfu", "hfu": "hfu", "run_s": "run_s"}


def _lora(case: dict, framework: Framework, spec: ModelSpec) -> LoraConfig | None:
    lora = case.get("lora")
    if case["method"] not in ("lora", "qlora"):
        return None
    if not lora:
        raise Skip("LoRA settings not given")
    targets = named_targets(spec, lora_targets(case)[0])
    return LoraConfig(rank=lora["rank"], alpha=float(lora.get("alpha") or 2 * lora["rank"]),
                      dropout=lora_dropout(case, framework), targets=targets, dora=bool(case.get("dora")))


def _default_micro_batch(framework: Framework) -> tuple[int, str] | None:
    """(the micro-batch the framework runs when its config leaves it out, where that is defined), from
    the framework's defaults module (job/defaults); None for a framework without one (Megatron requires
    --micro-batch-size)."""
    default = framework_default(framework, "batch_size")
    if default is None:
        return None
    return int(default.value), f"the framework's default ({default.key}, {default.source})"


def _filled(case: dict) -> tuple[dict, list[str]]:
    """The case with what its other fields fix filled in, by global batch = micro-batch x accumulation x
    data-parallel GPUs: a GPU count not stated is the data-parallel size (`parallel.dp`, or global batch /
    (micro-batch x accumulation) when both are stated) times the model-parallel degrees
    (cases/stated.implied_gpus); a micro-batch not stated is global / (data-parallel GPUs x
    accumulation) when it divides exactly (accumulation 1 where not stated, the trainers' default, except
    for Megatron, which has no accumulation setting: it runs global // (micro x data-parallel) micro-batches
    and requires --micro-batch-size, megatron/training/arguments.py, so its micro-batch is not implied).
    Otherwise, for a throughput per GPU, a GPU count not stated is taken as the smallest the layout needs
    (tensor x pipeline x context parallel: data parallelism adds GPUs that each run the same micro-batches,
    which changes tokens/s per GPU little)."""
    notes: list[str] = []
    measured = case.get("measured") or {}
    gpus = case.get("gpus") or {}
    per_gpu = any(measured.get(k) for k in ("tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "hfu"))
    per_step = any(measured.get(k) for k in ("step_time_s", "gpu_hours", "hours_per_1B_tokens",
                                            "tokens_per_s_reported"))
    total, tps = measured.get("tokens_per_s_total"), measured.get("tokens_per_s_per_gpu")
    if not gpus.get("count") and total and tps and round(float(total) / float(tps)) >= 1:
        case = {**case, "gpus": {**gpus, "count": round(float(total) / float(tps))}}
        notes.append(f"GPU count not stated: {case['gpus']['count']}, the source's total over its per-GPU tokens/s")
    elif not gpus.get("count") and (implied := implied_gpus(case)) is not None:
        case = {**case, "gpus": {**gpus, "count": implied[0]}}
        notes.append(f"GPU count not stated: {implied[1]}")
    elif not gpus.get("count") and case.get("micro_batch") and per_gpu and not per_step and not total:
        par = case.get("parallel") or {}
        smallest = 1
        for key in ("tp", "pp", "cp", "sp"):
            value = par.get(key)
            smallest *= value if isinstance(value, int) and value > 0 else 1
        case = {**case, "gpus": {**gpus, "count": smallest}}
        notes.append(f"GPU count not stated: {smallest} assumed, the smallest its layout needs "
                     "(tokens/s per GPU changes little with data-parallel GPUs)")
    global_batch, count = case.get("global_batch"), (case.get("gpus") or {}).get("count")
    if (not case.get("micro_batch") and isinstance(global_batch, int) and global_batch > 0 and count
            and not measured.get("gpu_hours")):    # GPU-hours without a micro-batch: the model-card reading
        dp, accum = data_parallel(case), int(case.get("grad_accum") or 1)
        megatron_implied = names_megatron(case) and not case.get("grad_accum")
        if global_batch % (dp * accum) == 0 and not megatron_implied:
            case = {**case, "micro_batch": global_batch // (dp * accum)}
            notes.append(f"micro-batch not stated: global batch {global_batch} / ({dp} data-parallel GPUs x "
                         f"{accum} accumulation) = {case['micro_batch']}")
    return case, notes


def map_case(case: dict) -> Mapped:
    """The time case as setup, layout, GPU, workload, timing options and the metric to predict."""
    case, filled_notes = _filled(case)
    said, _ = embedded_settings(case.get("framework"))
    defaults, default_notes = trainer_defaults(case)
    said = {**defaults, **said}
    framework, assumed = framework_or_assumed(case)     # no profile for the framework named: stated
    compiled = said.get("compile")
    unpacked = data.dataset(case) if said.get("packing") is False else None
    if said.get("packing") is False and unpacked is None:
        raise Skip("unpacked dataset: real sample lengths are not given (seq_len is only the maximum)")
    spec, how = case_model(case, size_proxy=True)
    gpu, _ = gpu_of(case)
    method = Method.FULL if case["method"] == "pretrain" else Method(case["method"])
    prec_text = json.dumps(case.get("precision") or {}).lower()
    # the memory reader's precision (cases.text.precision_of), else the framework's own
    flags = layout_flags(case)
    stated, _, _ = precision_of(case, framework, flags["zero"] > 0 or flags["fsdp"] != "none")
    precision = Precision(stated) if stated and stated != "fp8" else profile(framework).precision
    if not stated and names_fp16(case):
        # the case computes in fp16 where the framework's default is bf16: same storage, but the GPU's fp16
        # rate (Volta and Turing have tensor cores for fp16 only)
        precision = {Precision.BF16: Precision.FP16, Precision.BF16_PURE: Precision.FP16_PURE}.get(precision, precision)
    # the framework's own implementation (job.frameworks.PROFILES, the one the memory reader and `--from` start
    # from), then what this case states
    impl = profile(framework).impl
    if framework is Framework.TORCHTUNE:
        precision = Precision.BF16_PURE
        impl = replace(impl, optimizer_in_backward=bool(said.get("optimizer_in_backward")))
    elif framework in (Framework.FSDP, Framework.MEGATRON):
        impl = replace(impl, grad_dtype_fp32_accum=framework is Framework.MEGATRON or "default" in prec_text)
    if fp8_in_text(json.dumps((case.get("precision") or {}).get("compute") if isinstance(case.get("precision"), dict)
                              else case.get("precision"))):
        # FP8 matmuls whatever the framework (torchtitan/torchao Float8, Megatron/llm-foundry/accelerate TE)
        precision = Precision.FP8
        impl = replace(impl, fp8_recipe=recipe_from_text(prec_text, framework))   # None: the framework's
    facts, fact_notes = trainer_facts(case)
    dispatch, dispatch_notes = stated_moe_dispatch(case)
    facts, fact_notes = {**facts, **dispatch}, [*fact_notes, *dispatch_notes]
    fact_notes = [*filled_notes, *([assumed] if assumed else []), *fact_notes,
                  *([f"model {how}"] if how.startswith("not in the catalog") else [])]
    stated_ckpt = grad_ckpt_of(case.get("grad_ckpt"), framework)
    if stated_ckpt is None and "grad_ckpt" in defaults:
        fact_notes = [*fact_notes, *default_notes]
    if facts:
        impl = replace(impl, **facts)
    impl = replace(impl, experts_impl=experts_of(case))     # transformers 4.x's loop unless it says v5
    if (version := flash_version_of(case.get("attention"))) and version > 2 \
            and flash_refusal(framework, Attention.FLASH, version, gpu) is None:
        impl = replace(impl, flash_version=version)     # FlashAttention-3 / -4 where it runs (job.capabilities)
    if said.get("loss"):
        impl = replace(impl, loss=Loss(said["loss"]))     # `chunked_ce=True`, `loss=fused`: as the memory reader
    if said.get("liger") and capabilities(framework).liger:
        # Liger's kernels and its fused linear cross-entropy, as the memory reader applies them
        impl = replace(impl, liger_kernels=True, loss=Loss.FUSED)
    optimizer = (framework_optimizer(memory_optimizer(case.get("optimizer"))[0], framework)
                 or profile(framework).optimizer)
    # GaLore's rank and per-layer step as its text states them (the memory reader's rule, cases.optimizer_text.galore_flags)
    galore = galore_flags(case.get("optimizer"), fact_notes, apollo=optimizer is Optimizer.APOLLO_ADAMW) \
        if optimizer in LOW_RANK_OPTIMIZERS else {}
    if galore.get("optimizer_in_backward"):
        impl = replace(impl, optimizer_in_backward=True)
    quant = None
    # a case that says its tensor parallelism runs without sequence parallelism (parallel.sp false; a number
    # there is a Ulysses degree)
    options = TimingOptions(compiled=compiled, sequence_parallel=(case.get("parallel") or {}).get("sp") is not False,
                            pp_head_as_layer=stated_head_as_layer(case) or profile(framework).pp_head_as_layer,
                            drop_long_samples=drops_long_samples(case, framework),
                            group_by_length=bool(said.get("group_by_length")))
    if unpacked is not None:
        # unpacked samples of the catalog dataset the text names: each its own length, padded to the
        # longest of its micro-batch (trainplan.timing.steps.sequence_shape)
        options = replace(options, sample_lengths=unpacked.lengths())
        fact_notes = [*fact_notes, "unpacked samples (cases.data.dataset); " + unpacked.describe()]
    if data.padding_free(case, framework):
        # packed samples that attend only within themselves: the catalog dataset the text names gives
        # their lengths, else each pack is timed as one sample (trainplan.timing.steps.sequence_shape)
        impl = replace(impl, padding_free=True)
        stats = unpacked if unpacked is not None else data.dataset(case)   # the text's dataset, looked up once
        if stats is not None:
            options = replace(options, sample_lengths=stats.lengths())
            fact_notes = [*fact_notes, "padding-free packing (cases.data.padding_free); " + stats.describe()]
    if method is Method.QLORA:
        qtext = json.dumps(case.get("quantization") or {}).lower()
        kind, double_quant, _ = quant_of(case)
        quant = QuantConfig(kind=Quant(kind or "nf4"), double_quant=double_quant)
        if "gptq" in qtext:
            options = replace(options, quant_kernel="gptq")
        if kbit_prep_fp32(case, framework):
            # the memory reader's rule (cases.text.kbit_prep_fp32): non-quantized weights in fp32, under
            # the framework's own precision (autocast for HF Trainer recipes, none for a plain loop)
            impl = replace(impl, load_fp32=True)
            precision = profile(framework).precision
    micro = case.get("micro_batch")
    seq = case.get("seq_len")
    if not seq:
        raise Skip("sequence length not given")
    par = case.get("parallel") or {}
    count = (case.get("gpus") or {}).get("count")
    measured = case.get("measured") or {}
    workload = Workload(tokens_per_sample=seq, packing=unpacked is None)
    note = "; ".join(fact_notes)
    if measured.get("gpu_hours") and not (micro and count):
        return model_card_case(case, spec, gpu, method, precision, impl, options)
    if not micro and count and (default := _default_micro_batch(framework)) is not None:
        micro, why = default
        fact_notes = [*fact_notes, f"micro-batch not stated: {micro}, {why}"]
        note = "; ".join(fact_notes)
    if not micro or not count:
        raise Skip("micro-batch or GPU count not given")
    if measured.get("gpu_hours"):
        if not measured.get("tokens_total"):
            raise Skip("GPU-hours without the run's total tokens")
        workload = Workload(samples=int(measured["tokens_total"] // seq), tokens_per_sample=seq, packing=True)
    pairs, reference, ref_forward = preference(case.get("stage"), None, method)   # cases.normalize: DPO, ORPO, ...
    setup = TrainingSetup(model=spec, method=method, precision=precision,
                          optimizer=optimizer,
                          **{k: v for k, v in galore.items() if k in ("galore_rank", "apollo_rank")},
                          batch_size=micro, seq_len=seq, grad_accum=grad_accum(case, framework),
                          grad_ckpt=GradCkpt(stated_ckpt or said.get("grad_ckpt") or profile(framework).grad_ckpt),
                          grad_ckpt_every=ckpt_every_of(case.get("grad_ckpt")) or 1,
                          attention=supported_attention(spec, Attention(attention_of(case.get("attention"))
                                                                    or profile(framework).attention)),
                          lora=_lora(case, framework, spec), quant=quant, framework=framework, impl=impl,
                          sequences_per_sample=pairs, reference_model=reference, reference_forward=ref_forward)
    # one reading of the layout for memory and time (cases/memorycase.py layout_flags, read above)
    layout = Layout(gpu_id=gpu.id, num_gpus=count, nodes=flags["nodes"], zero=ZeroStage(flags["zero"]),
                    fsdp=Fsdp(flags["fsdp"]), offload=Offload(flags["offload"]), tp=flags["tp"], pp=flags["pp"],
                    cp=flags.get("ulysses", flags["cp"]), ep=flags["ep"],
                    etp=flags.get("etp", default_expert_tp(framework, flags["ep"])), ulysses="ulysses" in flags)
    nodes = layout.nodes
    version = fsdp_version(par)
    if version is not None and layout.fsdp is not Fsdp.NONE:
        options = replace(options, fsdp=replace(fsdp_for(framework), version=version))
    if layout.pp > 1:
        mb, ga, schedule, stages, pp_notes = pipeline_of(case, framework, layout.pp, setup.batch_size,
                                                         setup.grad_accum)
        setup = replace(setup, batch_size=mb, grad_accum=ga)
        options = replace(options, pp_interleave=stages, pp_schedule=schedule)
        fact_notes = [*fact_notes, *pp_notes]
        note = "; ".join(fact_notes)
    if framework is Framework.FSDP and gpu.generation == "ampere" and nodes > 1:
        options = replace(options, interconnect="roce-200")   # llm-foundry README: 1600 Gbps RoCE per node
    network = network_of(case)
    if network is not None and nodes > 1:
        options = replace(options, interconnect=network)
        note = "; ".join([*fact_notes, f"inter-node network as the case states it: {internode_link(network).name}"])

    def mapped(metric: str, value: float | None, why: str) -> Mapped:
        return Mapped(setup=setup, layout=layout, gpu=gpu, workload=workload, options=options, metric=metric,
                      measured=value, note=why)

    if measured.get("gpu_hours"):
        return mapped("gpu_hours", measured["gpu_hours"], note)
    if measured.get("run_s"):
        workload, run_note = _run_with_evaluations(measured, workload, setup, layout)
        note = "; ".join([*fact_notes, run_note])
        return mapped("run_s", measured["run_s"], note)
    if measured.get("step_time_s") and measured.get("tokens_per_s_per_gpu"):
        # The step a source times covers step_s x tokens/s per GPU tokens. Where that is not the
        # setup's optimizer step (micro-batch x sequence x accumulation per data-parallel rank, over its
        # model-parallel GPUs), the
        # source's "step" is something else (often one micro-batch): the throughput, which does not
        # depend on what a step is, is compared instead.
        covered = float(measured["step_time_s"]) * float(measured["tokens_per_s_per_gpu"])
        per_rank = setup.batch_size * seq * setup.grad_accum / (layout.cp * layout.tp * layout.pp)   # per GPU
        if not 0.8 <= covered / per_rank <= 1.25:
            note = "; ".join([*fact_notes, f"the source's step covers {covered:.0f} tokens per GPU, the optimizer "
                              f"step {per_rank:.0f}: tokens/s per GPU compared instead of the step time"])
            return mapped("tokens_per_s_per_gpu", measured["tokens_per_s_per_gpu"], note)
    if measured.get("step_time_s"):
        return mapped("step_time_s", measured["step_time_s"], note)
    tps = measured.get("tokens_per_s_per_gpu")
    if tps:
        return mapped("tokens_per_s_per_gpu", tps, note)
    total, per_billion = measured.get("tokens_per_s_total"), measured.get("hours_per_1B_tokens")
    if total or per_billion:
        # the same throughput over all the run's GPUs (or as hours per billion tokens): per GPU, exactly
        per_gpu = float(total) / count if total else 1e9 / (float(per_billion) * 3600.0) / count
        what = "tokens/s over all GPUs" if total else "hours per 1B tokens"
        note = "; ".join([*fact_notes, f"the source's {what} read per GPU over its {count} GPUs"])
        return mapped("tokens_per_s_per_gpu", per_gpu, note)
    reported = measured.get("tokens_per_s_reported")
    if reported:
        est = estimate_time(setup, layout, gpu, workload, options)
        per_token = est.flops_per_step / est.tokens_per_step
        if reported * per_token > est.step.peak_flops_per_s:
            note = "reported tokens/s read as the sum over GPUs (per GPU it would exceed the dense peak)"
            return mapped("tokens_per_s_per_gpu", reported / count, note)
        return mapped("tokens_per_s_per_gpu", reported, note)
    for metric in ("tflops_per_gpu", "mfu", "hfu"):     # HFU last: a source's hardware FLOPs count its recompute
        if measured.get(metric):
            return mapped(metric, measured[metric], note)
    if not measured:
        return mapped("tokens_per_s_per_gpu", None, "no measured block")
    raise Skip("no time metric this benchmark predicts")


def _run_with_evaluations(measured: dict, workload: Workload, setup: TrainingSetup,
                          layout: Layout) -> tuple[Workload, str]:
    """The workload of a run timed whole (measured.run_s, cases.measured RUN_EVALS): its optimizer steps and its
    evaluated samples as a fraction of the samples it trained on (forward only: timing.estimate eval_s)."""
    steps = next((float(v) for k in RUN_STEPS if (v := plain_number(measured.get(k)))), None)
    evals = next((float(v) for k in RUN_EVALS if (v := plain_number(measured.get(k))) is not None), 0.0)
    if not steps or steps < 1:
        raise Skip("a run's wall time without its optimizer steps")
    trained = steps * setup.batch_size * setup.grad_accum * layout.dp
    fraction = evals / trained
    return (replace(workload, steps=max(1, round(steps)), eval_fraction=fraction),
            f"the run's wall time: {steps:g} optimizer steps of {trained / steps:g} samples and {evals:g} samples "
            f"evaluated ({fraction:.1%} of those trained, forward only)")


def predict(mapped: Mapped) -> tuple[float, TimeEstimate]:
    """(the predicted value of the case's metric, the whole TimeEstimate)."""
    est = estimate_time(mapped.setup, mapped.layout, mapped.gpu, mapped.workload, mapped.options)
    return predicted_values(est)[METRIC_KEYS[mapped.metric]], est


def predicted_values(est: TimeEstimate) -> dict[str, float | None]:
    """What a time case is compared on: the estimate's comparable values and, for a run timed whole (run_s),
    its steps, evaluations and checkpoint saves together."""
    return {**est.comparable(), "run_s": est.total_s if est.steps else None}
