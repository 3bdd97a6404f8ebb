"""torchtitan: a TOML job config and its torchrun line
(`torchrun --nproc_per_node G [--nnodes N ...] -m torchtitan.train --job.config_file torchtitan.toml`).

Keys (pytorch/torchtitan v0.2.2, 73a0e69, the last release reading TOML), the mirror of
importers/torchtitan.py: torchtitan/config/job_config.py JobConfig sections
- [model] name / flavor (torchtitan/models/<name>/__init__.py: llama3 8B/70B/405B, qwen3 0.6B-235B-A22B,
  deepseek_v3 16B/671B), hf_assets_path (tokenizer), converters ["quantize.linear.float8"]
  (components/quantization/float8.py register_model_converter);
- [training] local_batch_size, global_batch_size (-1: local x data-parallel, one step; train.py:
  accumulation = global / (local x dp_replicate x dp_shard)), seq_len, steps, dtype (float32; bfloat16 =
  no fp32 copy), mixed_precision_param (bfloat16: FSDP2 MixedPrecisionPolicy over fp32 parameters),
  enable_cpu_offload;
- [parallelism] data_parallel_replicate_degree, data_parallel_shard_degree, tensor_parallel_degree,
  pipeline_parallel_degree (+ pipeline_parallel_microbatch_size: a local batch of b x m runs as m
  microbatches of b), context_parallel_degree, expert_parallel_degree, fsdp_reshard_after_forward
  (default = not pp_enabled, always, never) — parallel_dims.py: FSDP is on when dp_shard > 1 or cp > 1;
- [activation_checkpoint] mode none|full|selective with selective_ac_option "op" (per-op policy) or "n"
  (every n-th block: distributed/activation_checkpoint.py _apply_layer_sac);
- [compile] enable, components ["model", "loss"]; [optimizer] name AdamW, implementation fused|foreach,
  early_step_in_backward.
torchtitan pretrains whole models (no LoRA, no quantized base), shards with FSDP2 (no ZeRO), runs the
model's SDPA/flash attention and the plain cross-entropy over upcast logits (components/loss.py).
"""

from __future__ import annotations

from typing import Any

from trainplan.enums import (
    Attention,
    Framework,
    Fsdp,
    GradCkpt,
    Loss,
    Method,
    Offload,
    Optimizer,
    PipeSchedule,
    Precision,
    ZeroStage,
)
from trainplan.export import pieces
from trainplan.export.base import ExportContext, Exported, ExportFile
from trainplan.job.defaults import torchtitan as titan
from trainplan.memory.sharding import fsdp_for

FORMAT = "torchtitan"
FRAMEWORKS = (Framework.TORCHTITAN,)
FILE = "torchtitan.toml"
# catalog model -> (model.name, model.flavor): the flavors of torchtitan/models/<name>/__init__.py
MODELS: dict[str, tuple[str, str]] = {
    "llama-3.1-8b": ("llama3", "8B"), "llama-3.1-70b": ("llama3", "70B"), "llama-3.1-405b": ("llama3", "405B"),
    "qwen3-0.6b": ("qwen3", "0.6B"), "qwen3-1.7b": ("qwen3", "1.7B"), "qwen3-4b": ("qwen3", "4B"),
    "qwen3-8b": ("qwen3", "8B"), "qwen3-14b": ("qwen3", "14B"), "qwen3-32b": ("qwen3", "32B"),
    "qwen3-30b-a3b": ("qwen3", "30B-A3B"), "qwen3-235b-a22b": ("qwen3", "235B-A22B"),
    "deepseek-v2-lite": ("deepseek_v3", "16B"), "deepseek-v3": ("deepseek_v3", "671B"),
}


def _degrees(layout) -> dict[str, int]:
    """The parallelism degrees: the data-parallel ranks shard (FSDP), replicate per node (HSDP), or replicate (DDP)."""
    dp = layout.dp
    if layout.fsdp is Fsdp.HYBRID:
        return {"replicate": layout.nodes, "shard": dp // layout.nodes}
    if layout.fsdp is Fsdp.FULL:
        return {"replicate": 1, "shard": dp}
    return {"replicate": dp, "shard": 1}


def check(job) -> None:
    setup, layout = job.setup, job.layout
    if setup.method is not Method.FULL:
        raise pieces.refuse(FORMAT, f"torchtitan trains whole models; --method {setup.method} (adapters, quantized "
                                    "bases) runs in torchtune (--format torchtune) or the HF stack (--format swift, "
                                    "axolotl, llamafactory)")
    if setup.model.name not in MODELS:
        raise pieces.refuse(FORMAT, f"torchtitan v0.2.2 has no flavor trainplan maps for {setup.model.name}: use one "
                                    "of " + ", ".join(sorted(MODELS)))
    if layout.zero is not ZeroStage.NONE:
        raise pieces.refuse(FORMAT, "torchtitan shards with FSDP2, not DeepSpeed ZeRO: use --fsdp full")
    if layout.fsdp is Fsdp.NONE and layout.dp > 1 and (layout.tp > 1 or layout.pp > 1 or layout.cp > 1):
        raise pieces.refuse(FORMAT, "torchtitan combines TP/PP/CP with FSDP, not with DDP (parallelize.py: DDP is "
                                    "1-D only): add --fsdp full")
    if layout.ep > 1 and layout.expert_tp not in (1, layout.tp):
        # job_config.py Parallelism.expert_tensor_parallel_degree: "we only support either etp = tp or etp = 1"
        raise pieces.refuse(FORMAT, f"torchtitan runs the experts at expert tensor parallel 1 or tp ({layout.tp}), "
                                    f"not {layout.expert_tp}: use --etp 1 or --etp {layout.tp}")
    if layout.fsdp is Fsdp.NONE and layout.cp > 1:
        raise pieces.refuse(FORMAT, "context parallelism shards the weights over the cp ranks (FSDP on): "
                                    "add --fsdp full")
    if layout.fsdp is Fsdp.HYBRID and (layout.nodes == 1 or layout.dp % layout.nodes):
        raise pieces.refuse(FORMAT, f"HSDP replicates per node: the {layout.dp} data-parallel ranks must split over "
                                    f"{layout.nodes} nodes (more than one); else use --fsdp full")
    if layout.offload not in (Offload.NONE, Offload.ALL) or (layout.offload is Offload.ALL and
                                                              layout.fsdp is Fsdp.NONE):
        raise pieces.refuse(FORMAT, "torchtitan offloads through FSDP2 (training.enable_cpu_offload: parameters, "
                                    "gradients and the optimizer step): use --fsdp full --offload all, or no offload")
    fsdp_on = _degrees(layout)["shard"] > 1 or layout.cp > 1
    if layout.fsdp is not Fsdp.NONE and not fsdp_on:
        raise pieces.refuse(FORMAT, f"--fsdp {layout.fsdp} with data_parallel_shard_degree 1: torchtitan applies FSDP "
                                    "only over more than one shard rank (parallel_dims.py fsdp_enabled); drop --fsdp "
                                    "or give more GPUs")
    if setup.precision in (Precision.FP16, Precision.FP16_PURE):
        raise pieces.refuse(FORMAT, "torchtitan trains in bf16 or fp32 (training.dtype, mixed_precision_param): "
                                    "use --precision bf16")
    if setup.precision is Precision.BF16 and not fsdp_on and (layout.tp > 1 or layout.pp > 1):
        raise pieces.refuse(FORMAT, "with TP/PP and no FSDP, torchtitan turns mixed precision off "
                                    "(distributed/utils.py maybe_enable_amp): use --fsdp full or --precision fp32")
    if setup.optimizer not in (Optimizer.ADAMW, Optimizer.ADAMW_FUSED):
        raise pieces.refuse(FORMAT, f"--optimizer {setup.optimizer}: torchtitan's [optimizer] builds AdamW (fused or "
                                    "foreach) here; use --optimizer adamw-fused")
    if setup.impl.loss is not Loss.FULL or setup.impl.liger_kernels:
        raise pieces.refuse(FORMAT, "torchtitan's loss is the plain cross-entropy over upcast logits (components/"
                                    "loss.py) without Liger kernels: use --loss full and no --liger")
    if setup.attention is not Attention.FLASH:
        raise pieces.refuse(FORMAT, "torchtitan's models run SDPA's flash kernel: use --attention flash")
    if setup.grad_ckpt is GradCkpt.SELECTIVE:
        raise pieces.refuse(FORMAT, "Megatron's selective recompute (attention core) is not a torchtitan mode: use "
                                    "--grad-ckpt op (per-op policy), full (--grad-ckpt-every N) or none")
    if setup.impl.activation_offload:
        raise pieces.refuse(FORMAT, "torchtitan v0.2.2 has no activation offloading: drop --activation-offload")
    if pieces.stage(job) not in ("sft", "pt"):
        raise pieces.refuse(FORMAT, f"--stage {pieces.stage(job)}: torchtitan trains next-token prediction only")


def _precision(job) -> tuple[dict[str, Any], list[str]]:
    """[training] dtype / mixed_precision_param and [model] converters."""
    p = job.setup.precision
    if p is Precision.BF16_PURE:
        return {"dtype": "bfloat16"}, []
    if p is Precision.FP32:
        return {"mixed_precision_param": "float32"}, []
    if p is Precision.FP8:
        recipe = job.setup.impl.fp8_recipe
        if recipe is not None and titan.float8_recipe_name(recipe) is None:
            raise pieces.refuse(FORMAT, f"torchtitan runs torchao Float8Linear: --fp8-recipe {recipe} is Transformer "
                                "Engine's; use torchao-tensorwise, torchao-rowwise or torchao-rowwise-gw-hp")
        return {"mixed_precision_param": "bfloat16"}, ["quantize.linear.float8"]
    return {"mixed_precision_param": "bfloat16"}, []


def _checkpointing(setup) -> dict[str, Any]:
    if setup.grad_ckpt is GradCkpt.NONE:
        return {"mode": "none"}
    if setup.grad_ckpt is GradCkpt.OP:
        return {"mode": "selective", "selective_ac_option": "op"}
    if setup.grad_ckpt_every > 1:
        return {"mode": "selective", "selective_ac_option": str(setup.grad_ckpt_every)}
    return {"mode": "full"}


def steps(job, estimate) -> int | None:
    """The run's optimizer steps: given (max_steps), or the estimate's (dataset size / global batch)."""
    if job.workload.steps:
        return job.workload.steps
    counted = getattr(getattr(estimate, "time", None), "steps", 0) if estimate is not None else 0
    return counted or None


def config(job, estimate, ctx: ExportContext) -> tuple[dict[str, dict[str, Any]], list[str]]:
    setup, layout = job.setup, job.layout
    name, flavor = MODELS[setup.model.name]
    notes: list[str] = []
    precision, converters = _precision(job)
    assets = ctx.model_path or f"./assets/hf/{(setup.model.hf_id or name).split('/')[-1]}"   # download_hf_assets.py
    model: dict[str, Any] = {"name": name, "flavor": flavor, "hf_assets_path": assets}
    if converters:
        model["converters"] = converters
    deg = _degrees(layout)
    training: dict[str, Any] = {"dataset": "c4", "dataset_path": ctx.dataset}
    parallel: dict[str, Any] = {"data_parallel_replicate_degree": deg["replicate"],
                                "data_parallel_shard_degree": deg["shard"],
                                "tensor_parallel_degree": layout.tp, "pipeline_parallel_degree": layout.pp,
                                "context_parallel_degree": layout.cp, "expert_parallel_degree": layout.ep}
    if layout.ep > 1:
        parallel["expert_tensor_parallel_degree"] = layout.expert_tp
    if layout.pp > 1:   # one step = the local batch in microbatches; gradient accumulation is the microbatches
        training["local_batch_size"] = setup.batch_size * setup.grad_accum
        parallel["pipeline_parallel_microbatch_size"] = setup.batch_size
        stated = job.timing.pp_schedule
        if stated is not None and stated is not PipeSchedule.INTERLEAVED:
            parallel["pipeline_parallel_schedule"] = titan.schedule_name(stated)
        elif job.parallel.virtual_stages > 1:
            parallel["pipeline_parallel_schedule"] = "Interleaved1F1B"
            notes.append(f"Interleaved1F1B with {job.parallel.virtual_stages} stages per rank: torchtitan splits "
                         "the layers itself; the reader does not take virtual stages back (give --vpp with --from)")
    else:
        training["local_batch_size"] = setup.batch_size
        if setup.grad_accum > 1:
            training["global_batch_size"] = setup.batch_size * setup.grad_accum * deg["replicate"] * deg["shard"]
    training["seq_len"] = setup.seq_len
    count = steps(job, estimate)
    if count:
        training["steps"] = count
    else:
        notes.append("no dataset size or --max-steps: training.steps keeps torchtitan's default (10000)")
    training.update(precision)
    fsdp_on = deg["shard"] > 1 or layout.cp > 1
    if fsdp_on:
        base = job.fsdp or fsdp_for(setup.framework)
        parallel["fsdp_reshard_after_forward"] = "always" if base.reshard_after_forward else "never"
        if layout.offload is Offload.ALL:
            training["enable_cpu_offload"] = True
    if job.timing.compiled is None:
        notes.append("the step time assumed torchtitan's usual fused kernels (--compile not given); [compile] "
                     "enable = false, torchtitan's default, reads back as eager kernels: set it true (or give "
                     "--compile / --no-compile) to match")
    optimizer = {"name": "AdamW", "implementation": "fused" if setup.optimizer is Optimizer.ADAMW_FUSED else "foreach"}
    if setup.impl.optimizer_in_backward:
        optimizer["early_step_in_backward"] = True
    sections = {"job": {"dump_folder": ctx.output_dir, "description": f"{setup.model.name} (trainplan export)"},
                "model": model, "optimizer": optimizer, "training": training, "parallelism": parallel,
                "activation_checkpoint": _checkpointing(setup),
                "compile": _compile_section(setup)}
    if setup.precision is Precision.FP8 and setup.impl.fp8_recipe is not None:
        sections["quantize.linear.float8"] = {"recipe_name": titan.float8_recipe_name(setup.impl.fp8_recipe)}
    return sections, notes


def _compile_section(setup) -> dict:
    """[compile]: enable with the components compiled (job_config.py Compile.components, default model + loss)."""
    parts = (["model"] if setup.impl.compiled else []) + (["loss"] if setup.impl.compiled_loss else [])
    return {"enable": bool(parts), "components": parts or ["model", "loss"]}


def launch(job, ctx: ExportContext) -> str:
    return pieces.lines(["torchrun", *pieces.torchrun_words(job.layout, ctx), "-m", "torchtitan.train",
                         "--job.config_file", FILE])


def export(job, estimate, ctx: ExportContext) -> Exported:
    check(job)
    sections, notes = config(job, estimate, ctx)
    notes = pieces.framework_note(job, FORMAT, FRAMEWORKS) + notes
    header = "torchtitan v0.2.2 job config (torchtitan/config/job_config.py JobConfig)"
    return Exported(files=(ExportFile(name=FILE, text=pieces.toml_text(sections, header), format=FORMAT),),
                    commands=(launch(job, ctx),), notes=tuple(notes))

