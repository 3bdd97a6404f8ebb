"""Megatron: the Megatron-LM / Megatron-Core `pretrain_gpt.py` arguments (megatron_lm.sh, a torchrun
line) and the same plan as a Megatron-SWIFT `megatron sft` line (megatron_swift.sh), which reads the
model's shape from its Hugging Face config.

Megatron-LM names (megatron/training/arguments.py, Megatron-LM core_r0.13+): --tensor-model-parallel-size,
--pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage (interleaved 1F1B),
--context-parallel-size, --expert-model-parallel-size, --sequence-parallel (with TP), --micro-batch-size,
--global-batch-size (= micro x accumulation x data-parallel), --seq-length, --recompute-granularity
full|selective (+ --recompute-method uniform --recompute-num-layers 1 for every layer),
--use-distributed-optimizer (fp32 master weights and Adam states sharded over data parallel: trainplan's
ZeRO-1), --optimizer-cpu-offload, --bf16 / --fp16 (none: fp32), --fp8-format hybrid over --bf16,
--attention-backend flash|unfused, and the model's shape (--num-layers, --hidden-size, --ffn-hidden-size,
--num-attention-heads, --group-query-attention --num-query-groups, --kv-channels, --normalization,
--swiglu, --position-embedding-type, --untie-embeddings-and-output-weights, --disable-bias-linear /
--add-qkv-bias, --qk-layernorm, --num-experts / --moe-router-topk / --moe-ffn-hidden-size). `--from`
reads the written script back (importers/megatron_lm.py); tests check the arguments against the job by
hand and the round trip.

Megatron-SWIFT names (modelscope/ms-swift 3602360 swift/megatron/arguments/megatron_args.py; the
defaults differ from Megatron-LM's: use_distributed_optimizer True, recompute_granularity selective,
padding_free True, so each is written): read back by importers/swift.py's `megatron sft` reader.
"""

from __future__ import annotations

from typing import Any

from trainplan.enums import (
    Attention,
    Framework,
    Fsdp,
    GradCkpt,
    Method,
    MlpKind,
    MoeDispatcher,
    NormKind,
    Offload,
    Optimizer,
    PipeSchedule,
    Position,
    Precision,
    ZeroStage,
)
from trainplan.export import pieces
from trainplan.export.base import ExportContext, Exported, ExportFile
from trainplan.memory.stages import pipeline_slots
from trainplan.timing.fp8 import MEGATRON_RECIPE_NAMES

FORMAT = "megatron"
FRAMEWORKS = (Framework.MEGATRON,)
LM_FILE = "megatron_lm.sh"
SWIFT_FILE = "megatron_swift.sh"


def check(job) -> None:
    setup, layout = job.setup, job.layout
    pieces.no_freeze(FORMAT, job)
    schedule = job.timing.pp_schedule
    if schedule not in (None, PipeSchedule.ONE_F_ONE_B, PipeSchedule.INTERLEAVED):
        raise pieces.refuse(FORMAT, f"--pp-schedule {schedule}: Megatron runs 1F1B, interleaved with virtual stages "
                                    "(--vpp); use --format torchtitan for GPipe and the zero-bubble schedules")
    fp8_recipe_arg(setup, FORMAT)
    if setup.method is Method.QLORA:
        raise pieces.refuse(FORMAT, "Megatron has no bitsandbytes 4-bit base: use --method lora, or --format swift / "
                                    "axolotl for QLoRA")
    if layout.fsdp is not Fsdp.NONE:
        raise pieces.refuse(FORMAT, "the job runs FSDP; Megatron shards the optimizer with --use-distributed-optimizer "
                                    "(--zero 1): use --zero 1, or --format torchtitan/accelerate for FSDP")
    if layout.zero not in (ZeroStage.NONE, ZeroStage.OPTIMIZER):
        raise pieces.refuse(FORMAT, f"--zero {int(layout.zero)}: Megatron's distributed optimizer shards optimizer "
                                    "states only (ZeRO-1); use --zero 1, or --format deepspeed for ZeRO-2/3")
    if layout.offload in (Offload.PARAMS, Offload.ALL):
        raise pieces.refuse(FORMAT, "Megatron offloads the optimizer only (--optimizer-cpu-offload): use --offload "
                                    "optimizer")
    if layout.offload is Offload.OPTIMIZER and layout.zero is ZeroStage.NONE:
        raise pieces.refuse(FORMAT, "--optimizer-cpu-offload runs inside the distributed optimizer: add --zero 1")
    if setup.precision in (Precision.BF16_PURE, Precision.FP16_PURE):
        raise pieces.refuse(FORMAT, "Megatron keeps fp32 master weights and main grads: use --precision "
                                    f"{setup.precision.value.removesuffix('-pure')}")
    if setup.optimizer not in (Optimizer.ADAMW_FUSED, Optimizer.SGD):
        raise pieces.refuse(FORMAT, f"--optimizer {setup.optimizer}: Megatron builds fused Adam(W) or SGD; use "
                                    "--optimizer adamw-fused")
    if setup.attention is Attention.SDPA:
        raise pieces.refuse(FORMAT, "Megatron's attention backends are flash, fused and unfused (Transformer Engine): "
                                    "use --attention flash (or eager for unfused)")
    if setup.grad_ckpt is GradCkpt.OP or setup.grad_ckpt_every > 1:
        raise pieces.refuse(FORMAT, "Megatron recomputes whole layers (full) or the attention core (selective): use "
                                    "--grad-ckpt full, selective or none, every layer")
    if setup.impl.liger_kernels or setup.impl.optimizer_in_backward or setup.impl.activation_offload:
        raise pieces.refuse(FORMAT, "Liger kernels, optimizer-in-backward and activation offloading are not "
                                    "Megatron options trainplan writes: drop --liger/--optimizer-in-backward/"
                                    "--activation-offload")
    if pieces.stage(job) not in ("sft", "pt"):
        raise pieces.refuse(FORMAT, f"--stage {pieces.stage(job)}: trainplan writes Megatron pretraining/SFT arguments "
                                    "only (use --format swift for `swift rlhf`)")


def global_batch(job) -> int:
    setup, layout = job.setup, job.layout
    return setup.batch_size * setup.grad_accum * layout.dp


def _shape(spec) -> list[str]:
    """The model's shape as Megatron-LM flags (megatron/training/arguments.py _add_network_size_args)."""
    flags = ["--num-layers", str(spec.num_layers), "--hidden-size", str(spec.hidden_size),
             "--ffn-hidden-size", str(spec.intermediate_size), "--num-attention-heads", str(spec.num_heads)]
    if spec.num_kv_heads != spec.num_heads:
        flags += ["--group-query-attention", "--num-query-groups", str(spec.num_kv_heads)]
    if spec.head_dim * spec.num_heads != spec.hidden_size:
        flags += ["--kv-channels", str(spec.head_dim)]
    flags += ["--normalization", "RMSNorm" if spec.norm_kind is NormKind.RMS else "LayerNorm"]
    if spec.mlp_kind is MlpKind.GATED:
        flags += ["--swiglu"]
    flags += ["--position-embedding-type", "rope" if spec.position is Position.ROPE else "learned_absolute"]
    flags += ["--max-position-embeddings", str(spec.max_position_embeddings or 4096)]
    if not spec.tied_embeddings:
        flags += ["--untie-embeddings-and-output-weights"]
    if not (spec.qkv_bias or spec.out_bias or spec.mlp_bias):
        flags += ["--disable-bias-linear"]
    elif spec.qkv_bias and not (spec.out_bias or spec.mlp_bias):
        flags += ["--disable-bias-linear", "--add-qkv-bias"]
    if spec.qk_norm:
        flags += ["--qk-layernorm"]
    if spec.moe is not None:
        flags += ["--num-experts", str(spec.moe.num_experts), "--moe-router-topk", str(spec.moe.top_k),
                  "--moe-ffn-hidden-size", str(spec.moe.expert_intermediate_size)]
        if spec.moe.num_shared_experts:
            flags += ["--moe-shared-expert-intermediate-size", str(spec.moe.shared_intermediate_size)]
    return flags


def lm_shape_missing(spec) -> str:
    """Why the shape flags cannot describe the model ("" when they can): Megatron-LM's MLA and the
    dense/MoE layer pattern need flags trainplan does not write; ALiBi is not a Megatron position."""
    if spec.mla is not None:
        return "multi-latent attention (--multi-latent-attention, --q-lora-rank, --kv-lora-rank, ...)"
    if spec.position not in (Position.ROPE, Position.LEARNED):
        return f"{spec.position} positions"
    moe = spec.moe
    if moe is not None and (moe.first_dense_layers or moe.layer_freq > 1 or moe.dense_layers):
        return "a dense/MoE layer pattern (--moe-layer-freq)"
    return ""


def fp8_recipe_arg(setup, fmt: str) -> str | None:
    """Megatron's --fp8-recipe for the setup's recipe (None: none stated, Megatron's default)."""
    recipe = setup.impl.fp8_recipe
    if setup.precision is not Precision.FP8 or recipe is None:
        return None
    if recipe not in MEGATRON_RECIPE_NAMES:
        raise pieces.refuse(fmt, f"Megatron runs Transformer Engine's FP8: --fp8-recipe {recipe} is torchao's; use "
                            "te-delayed, te-current, te-blockwise or te-mxfp8")
    return MEGATRON_RECIPE_NAMES[recipe]


def _precision_lm(p: Precision) -> list[str]:
    return {Precision.BF16: ["--bf16"], Precision.FP16: ["--fp16"], Precision.FP8: ["--bf16", "--fp8-format", "hybrid"],
            Precision.FP32: []}[p]


def _recompute_lm(ckpt: GradCkpt) -> list[str]:
    if ckpt is GradCkpt.FULL:
        return ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]
    if ckpt is GradCkpt.SELECTIVE:
        return ["--recompute-granularity", "selective"]
    return []


def lm_arguments(job, estimate, ctx: ExportContext) -> list[str]:
    """The pretrain_gpt.py arguments of `job` (full fine-tune / pretraining)."""
    setup, layout, par = job.setup, job.layout, job.parallel
    spec = setup.model
    args = ["--tensor-model-parallel-size", str(layout.tp), "--pipeline-model-parallel-size", str(layout.pp)]
    if layout.pp > 1 and par.virtual_stages > 1 and par.head_as_layer:
        # the embedding and the loss take a layer's place: Megatron splits num_layers + 2 over pp x vpp chunks
        args += ["--virtual-pipeline-model-parallel-size", str(par.virtual_stages)]
    elif layout.pp > 1 and par.virtual_stages > 1:
        args += ["--num-layers-per-virtual-pipeline-stage", str(spec.num_layers // (layout.pp * par.virtual_stages))]
    if layout.cp > 1:
        args += ["--context-parallel-size", str(layout.cp)]
    if layout.ep > 1:
        args += ["--expert-model-parallel-size", str(layout.ep)]
    if spec.moe is not None and layout.expert_tp != layout.tp:     # unset: Megatron runs the experts at tp
        args += ["--expert-tensor-parallel-size", str(layout.expert_tp)]
    if layout.tp > 1 and par.sequence_parallel:
        args += ["--sequence-parallel"]
    args += ["--micro-batch-size", str(setup.batch_size), "--global-batch-size", str(global_batch(job)),
             "--seq-length", str(setup.seq_len)]
    args += _shape(spec)
    args += _recompute_lm(setup.grad_ckpt)
    if layout.zero is ZeroStage.OPTIMIZER:
        args += ["--use-distributed-optimizer"]
    if setup.impl.comm_overlap:
        # the overlap the estimate counted (timing.overlap): TP collectives under the GEMMs need sequence
        # parallelism; the parameter all-gather overlap needs the distributed optimizer
        if layout.tp > 1 and par.sequence_parallel:
            args += ["--tp-comm-overlap"]
        args += ["--overlap-grad-reduce"]
        if layout.zero is ZeroStage.OPTIMIZER:
            args += ["--overlap-param-gather"]
    if setup.impl.moe_a2a_overlap:        # combined 1F1B (timing.overlap.moe_a2a_overlap)
        args += ["--overlap-moe-expert-parallel-comm"]
    if par.head_as_layer and layout.pp > 1:         # memory.stages.layers_per_stage
        args += ["--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"]
    if setup.impl.moe_dispatcher is MoeDispatcher.DEEPEP:     # timing.dispatch
        args += ["--moe-token-dispatcher-type", "flex", "--moe-flex-dispatcher-backend", "deepep"]
    if layout.offload is Offload.OPTIMIZER:
        args += ["--optimizer-cpu-offload"]
    args += _precision_lm(setup.precision)
    if (recipe := fp8_recipe_arg(setup, FORMAT)) is not None:
        args += ["--fp8-recipe", recipe]
    args += ["--attention-backend", "flash" if setup.attention is Attention.FLASH else "unfused"]
    args += ["--optimizer", "sgd" if setup.optimizer is Optimizer.SGD else "adam"]
    steps = _steps(job, estimate)
    if steps:
        args += ["--train-iters", str(steps)]
    args += ["--lr", "1e-5", "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model",
             pieces.model_name(job, ctx), "--data-path", ctx.dataset, "--save", ctx.output_dir]
    return args


def _steps(job, estimate) -> int | None:
    if job.workload.steps:
        return job.workload.steps
    counted = getattr(getattr(estimate, "time", None), "steps", 0) if estimate is not None else 0
    return counted or None


def swift_arguments(job, estimate, ctx: ExportContext) -> dict[str, Any]:
    """The `megatron sft` arguments (Megatron-SWIFT names, megatron_args.py), each written where its default
    is not the job's."""
    setup, layout, par = job.setup, job.layout, job.parallel
    args: dict[str, Any] = {"model": pieces.model_name(job, ctx),
                            "tuner_type": "full" if setup.method is Method.FULL else "lora"}
    if setup.lora is not None:
        lora = setup.lora
        args.update(lora_rank=lora.rank, lora_alpha=_number(lora.alpha), lora_dropout=lora.dropout,
                    target_modules=["all-linear"] if not lora.targets or "all-linear" in lora.targets
                    else list(lora.targets))
    args.update(tensor_model_parallel_size=layout.tp, pipeline_model_parallel_size=layout.pp,
                context_parallel_size=layout.cp, expert_model_parallel_size=layout.ep)
    if setup.model.moe is not None:          # ms-swift's default is 1, not tp (megatron_args.py)
        args["expert_tensor_parallel_size"] = layout.expert_tp
    if par.virtual_stages > 1:
        args["virtual_pipeline_model_parallel_size"] = par.virtual_stages
    args["sequence_parallel"] = par.sequence_parallel
    args.update(micro_batch_size=setup.batch_size, global_batch_size=global_batch(job), max_length=setup.seq_len,
                padding_free=setup.impl.padding_free)
    if job.workload.packing:
        args["packing"] = True
    args["recompute_granularity"] = setup.grad_ckpt.value
    if setup.grad_ckpt is GradCkpt.FULL:
        args.update(recompute_method="uniform", recompute_num_layers=1)
    args["use_distributed_optimizer"] = layout.zero is ZeroStage.OPTIMIZER
    if setup.impl.comm_overlap:          # megatron_args.py: tp_comm_overlap needs sequence_parallel
        args.update(tp_comm_overlap=layout.tp > 1 and par.sequence_parallel, overlap_grad_reduce=True,
                    overlap_param_gather=layout.zero is ZeroStage.OPTIMIZER)
    if layout.offload is Offload.OPTIMIZER:
        args["optimizer_cpu_offload"] = True
    args["torch_dtype"] = {Precision.BF16: "bfloat16", Precision.FP8: "bfloat16", Precision.FP16: "float16",
                           Precision.FP32: "float32"}[setup.precision]
    if setup.precision is Precision.FP8:
        args["fp8_format"] = "hybrid"
        if (recipe := fp8_recipe_arg(setup, FORMAT)) is not None:
            args["fp8_recipe"] = recipe
    args["attention_backend"] = "flash" if setup.attention is Attention.FLASH else "unfused"
    args["optimizer"] = "sgd" if setup.optimizer is Optimizer.SGD else "adam"
    steps = _steps(job, estimate)
    if steps:
        args["train_iters"] = steps
    else:
        args["num_train_epochs"] = _number(job.workload.epochs)
    args.update(dataset=ctx.dataset, output_dir=ctx.output_dir)
    return args


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def _flag_words(args: dict[str, Any]) -> list[str]:
    words = []
    for key, value in args.items():
        words.append(f"--{key}")
        if isinstance(value, bool):
            words.append("true" if value else "false")
        elif isinstance(value, list):
            words += [str(v) for v in value]
        else:
            words.append(str(value))
    return words


def _script(header: str, words: list[str], per_line: list[list[str]]) -> str:
    """A bash script: the command's leading words, then one argument (and its values) per line."""
    out = ["#!/bin/bash", *(f"# {line}" for line in header.splitlines()), " ".join(words) + " \\"]
    out += [f"  {' '.join(group)} \\" for group in per_line[:-1]]
    out.append(f"  {' '.join(per_line[-1])}")
    return "\n".join(out) + "\n"


def _groups(words: list[str]) -> list[list[str]]:
    groups: list[list[str]] = []
    for word in words:
        if word.startswith("--") or not groups:
            groups.append([word])
        else:
            groups[-1].append(word)
    return groups


def export(job, estimate, ctx: ExportContext) -> Exported:
    check(job)
    layout = job.layout
    notes: list[str] = pieces.framework_note(job, FORMAT, FRAMEWORKS)
    files: list[ExportFile] = []
    commands: list[str] = []
    missing = lm_shape_missing(job.setup.model)
    if missing:
        notes.append(f"{job.setup.model.name} has {missing}: the Megatron-LM arguments are not written; "
                     "Megatron-SWIFT reads the shape from the HF config")
    elif job.setup.method is Method.FULL:
        lm = lm_arguments(job, estimate, ctx)
        header = ("Megatron-LM pretrain_gpt.py (megatron/training/arguments.py); run in a Megatron-LM checkout on "
                  "every node\n--data-path names a Megatron indexed dataset (tools/preprocess_data.py)")
        files.append(ExportFile(name=LM_FILE, text=_script(header, ["torchrun", *pieces.torchrun_words(layout, ctx),
                                                                    "pretrain_gpt.py"], _groups(lm)),
                                format="megatron-lm"))
        commands.append(f"bash {LM_FILE}")
    else:
        notes.append("pretrain_gpt.py has no LoRA: only the Megatron-SWIFT line (megatron sft --tuner_type lora) "
                     "is written")
    swift = swift_arguments(job, estimate, ctx)
    header = ("Megatron-SWIFT (ms-swift swift/megatron/arguments/megatron_args.py): the model's shape comes from "
              "its HF config")
    lead = [*pieces.torchrun_env(layout, ctx), "megatron", "sft"]
    files.append(ExportFile(name=SWIFT_FILE, text=_script(header, lead, _groups(_flag_words(swift))),
                            format="megatron-swift"))
    commands.append(f"bash {SWIFT_FILE}")
    stages = layout.pp * job.parallel.virtual_stages
    slots = pipeline_slots(job.setup.model.num_layers, job.parallel.head_as_layer)
    if layout.pp > 1 and job.parallel.virtual_stages > 1 and slots % stages:
        notes.append(f"{job.setup.model.num_layers} layers do not split into {stages} virtual stages: "
                     "--num-layers-per-virtual-pipeline-stage is rounded down; Megatron asks for an even split")
    if layout.pp > 1 and slots % layout.pp:
        notes.append(f"{job.setup.model.num_layers} layers over {layout.pp} pipeline stages: uneven "
                     "(--decoder-first/last-pipeline-num-layers in Megatron-LM)")
    return Exported(files=tuple(files), commands=tuple(commands), notes=tuple(notes))
