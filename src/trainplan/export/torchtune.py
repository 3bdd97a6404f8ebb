"""torchtune: a recipe config YAML for the matching recipe and the `tune run` line
(`tune run --nnodes N --nproc_per_node G RECIPE --config torchtune.yaml`).

Keys (pytorch/torchtune 0.6.1 on PyPI and bd2a0fc, the last commit; shared/reference/framework_configs.md
section 6), the mirror of importers/torchtune.py:
- recipes/{full,lora}_finetune_{single_device,distributed}.py read the top-level keys (cfg.get(key,
  default) or cfg.key): batch_size, gradient_accumulation_steps, epochs, max_steps_per_epoch, dtype
  (bf16 = bf16 weights, gradients and AdamW states, "bf16-pure"; or fp32), optimizer_in_bwd (GA 1, no
  clipping), enable_activation_checkpointing, enable_activation_offloading (needs AC), compile,
  ac_mode/ac_option (full_finetune_distributed: every ac_option-th layer), fsdp_cpu_offload,
  fsdp_reshard_after_forward, tensor_parallel_dim + tensor_parallel_plan (full_finetune_distributed;
  no fused optimizer with TP), data_parallel_replicate_dim and context_parallel_dim (bd2a0fc only);
- `_component_` names a builder, instantiated with the other keys (torchtune/config/_instantiate.py):
  torchtune/models/<family>/_model_builders.py `<size>`, `lora_<size>` (lora_attn_modules q_proj,
  k_proj, v_proj, output_proj; apply_lora_to_mlp; lora_rank, lora_alpha, lora_dropout, use_dora,
  quantize_base: the qlora_* builders are partials with quantize_base=True, torchao NF4 with its
  scales quantized again); tokenizer builders take path (+ merges_file for Qwen2.5) and max_seq_len;
  torchtune/training/checkpointing FullModelHFCheckpointer with its ModelType;
- loss: torchtune.modules.loss.CEWithChunkedOutputLoss (8 logits chunks, "chunked"; in 0.6.1 and after, where
  LinearCrossEntropyLoss came later) or torch.nn.CrossEntropyLoss.
Which keys each recipe reads (0.6.1): full_finetune_single_device requires optimizer_in_bwd and compile,
the lora recipes require lr_scheduler and read neither optimizer_in_bwd nor ac_mode.
Distributed recipes shard with FSDP2 (torchtune/training/_distributed.py shard_model); there is no
DDP, no DeepSpeed and no pipeline parallelism.
"""

from __future__ import annotations

import math
from typing import Any

from trainplan.enums import Framework, Fsdp, GradCkpt, Loss, Method, Offload, Optimizer, Precision, Quant, ZeroStage
from trainplan.export import pieces
from trainplan.export.base import ExportContext, Exported, ExportFile
from trainplan.memory.sharding import fsdp_for

FORMAT = "torchtune"
FRAMEWORKS = (Framework.TORCHTUNE,)
FILE = "torchtune.yaml"

# catalog model -> (family module under torchtune.models, builder, tokenizer builder, checkpointer model_type)
_TOK_LLAMA3 = "torchtune.models.llama3.llama3_tokenizer"
MODELS: dict[str, tuple[str, str, str, str]] = {
    "llama-2-7b": ("llama2", "llama2_7b", "torchtune.models.llama2.llama2_tokenizer", "LLAMA2"),
    "llama-2-13b": ("llama2", "llama2_13b", "torchtune.models.llama2.llama2_tokenizer", "LLAMA2"),
    "llama-2-70b": ("llama2", "llama2_70b", "torchtune.models.llama2.llama2_tokenizer", "LLAMA2"),
    "llama-3-8b": ("llama3", "llama3_8b", _TOK_LLAMA3, "LLAMA3"),
    "llama-3-70b": ("llama3", "llama3_70b", _TOK_LLAMA3, "LLAMA3"),
    "llama-3.1-8b": ("llama3_1", "llama3_1_8b", _TOK_LLAMA3, "LLAMA3"),
    "llama-3.1-70b": ("llama3_1", "llama3_1_70b", _TOK_LLAMA3, "LLAMA3"),
    "llama-3.1-405b": ("llama3_1", "llama3_1_405b", _TOK_LLAMA3, "LLAMA3"),
    "llama-3.2-1b": ("llama3_2", "llama3_2_1b", _TOK_LLAMA3, "LLAMA3_2"),
    "llama-3.2-3b": ("llama3_2", "llama3_2_3b", _TOK_LLAMA3, "LLAMA3_2"),
    "mistral-7b-v0.1": ("mistral", "mistral_7b", "torchtune.models.mistral.mistral_tokenizer", "MISTRAL"),
    "phi-3-mini-4k": ("phi3", "phi3_mini", "torchtune.models.phi3.phi3_mini_tokenizer", "PHI3_MINI"),
    "phi-4": ("phi4", "phi4_14b", "torchtune.models.phi4.phi4_tokenizer", "PHI4"),
    "gemma-2-2b": ("gemma2", "gemma2_2b", "torchtune.models.gemma.gemma_tokenizer", "GEMMA2"),
    "gemma-2-9b": ("gemma2", "gemma2_9b", "torchtune.models.gemma.gemma_tokenizer", "GEMMA2"),
    "gemma-2-27b": ("gemma2", "gemma2_27b", "torchtune.models.gemma.gemma_tokenizer", "GEMMA2"),
    "qwen2.5-0.5b": ("qwen2_5", "qwen2_5_0_5b", "torchtune.models.qwen2_5.qwen2_5_tokenizer", "QWEN2"),
    "qwen2.5-1.5b": ("qwen2_5", "qwen2_5_1_5b_base", "torchtune.models.qwen2_5.qwen2_5_tokenizer", "QWEN2"),
    "qwen2.5-3b": ("qwen2_5", "qwen2_5_3b", "torchtune.models.qwen2_5.qwen2_5_tokenizer", "QWEN2"),
    "qwen2.5-7b": ("qwen2_5", "qwen2_5_7b_base", "torchtune.models.qwen2_5.qwen2_5_tokenizer", "QWEN2"),
    "qwen2.5-14b": ("qwen2_5", "qwen2_5_14b_base", "torchtune.models.qwen2_5.qwen2_5_tokenizer", "QWEN2"),
    "qwen2.5-32b": ("qwen2_5", "qwen2_5_32b_base", "torchtune.models.qwen2_5.qwen2_5_tokenizer", "QWEN2"),
    "qwen2.5-72b": ("qwen2_5", "qwen2_5_72b_base", "torchtune.models.qwen2_5.qwen2_5_tokenizer", "QWEN2"),
}
# HF module names -> torchtune's (torchtune/models/convert_weights.py: o_proj is output_proj, the MLP is w1/w2/w3)
_ATTN = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "output_proj"}
_MLP = ("gate_proj", "up_proj", "down_proj")
_OPTIMIZERS = {Optimizer.ADAMW: ("torch.optim.AdamW", {"fused": False}),
               Optimizer.ADAMW_FUSED: ("torch.optim.AdamW", {"fused": True}),
               Optimizer.ADAMW_8BIT: ("bitsandbytes.optim.AdamW8bit", {}),
               Optimizer.PAGED_ADAMW_8BIT: ("bitsandbytes.optim.PagedAdamW8bit", {}),
               Optimizer.SGD: ("torch.optim.SGD", {}),
               Optimizer.LION: ("bitsandbytes.optim.Lion", {})}
_LLAMA_TP_PLAN = "torchtune.models.llama3.base_llama_tp_plan"     # torchtune/models/llama3/_parallelism.py


def recipe(job) -> str:
    """full_finetune_* or lora_finetune_* (QLoRA too), single device unless the job shards or spans GPUs."""
    kind = "full" if job.setup.method is Method.FULL else "lora"
    distributed = job.layout.num_gpus > 1 or job.layout.fsdp is not Fsdp.NONE
    return f"{kind}_finetune_{'distributed' if distributed else 'single_device'}"


def check(job) -> None:
    setup, layout = job.setup, job.layout
    pieces.no_freeze(FORMAT, job)
    name = setup.model.name
    if name not in MODELS:
        raise pieces.refuse(FORMAT, f"torchtune 0.6.1 has no model builder trainplan maps for {name}: use --format hf "
                                    "(transformers) or one of " + ", ".join(sorted(MODELS)))
    if layout.zero is not ZeroStage.NONE:
        raise pieces.refuse(FORMAT, "torchtune has no DeepSpeed ZeRO: its distributed recipes shard with FSDP2 "
                                    "(use --fsdp full instead of --zero)")
    if layout.num_gpus > 1 and layout.fsdp is Fsdp.NONE:
        raise pieces.refuse(FORMAT, "torchtune's distributed recipes shard with FSDP2, there is no DDP: "
                                    "add --fsdp full")
    if layout.pp > 1 or layout.ep > 1:
        raise pieces.refuse(FORMAT, f"torchtune has no pipeline or expert parallelism (pp {layout.pp}, ep {layout.ep}):"
                                    " use --format torchtitan or megatron")
    if layout.tp > 1:
        if setup.method is not Method.FULL or not MODELS[name][0].startswith("llama3"):
            raise pieces.refuse(FORMAT, "tensor_parallel_dim runs in full_finetune_distributed with the Llama 3 plan "
                                        "only: use --method full on a Llama 3 model, or --tp 1")
        if setup.optimizer is Optimizer.ADAMW_FUSED:
            raise pieces.refuse(FORMAT, "full_finetune_distributed refuses a fused optimizer with tensor parallelism: "
                                        "use --optimizer adamw")
    if layout.offload not in (Offload.NONE, Offload.ALL) or (layout.offload is Offload.ALL and
                                                              layout.fsdp is Fsdp.NONE):
        raise pieces.refuse(FORMAT, "torchtune offloads through FSDP2 (fsdp_cpu_offload: parameters, gradients and the "
                                    "optimizer step on the CPU): use --fsdp full --offload all, or no offload")
    if setup.precision not in (Precision.BF16_PURE, Precision.FP32):
        raise pieces.refuse(FORMAT, f"--precision {setup.precision}: torchtune's dtype is bf16 (bf16 weights and AdamW "
                                    "states, --precision bf16-pure) or fp32 (fp16 is rejected)")
    if setup.method is Method.QLORA and (setup.quant.kind is not Quant.NF4 or not setup.quant.double_quant):
        raise pieces.refuse(FORMAT, "torchtune's QLoRA is torchao NF4 with its scales quantized again: use --quant nf4 "
                                    "--double-quant")
    if setup.optimizer not in _OPTIMIZERS:
        raise pieces.refuse(FORMAT, f"--optimizer {setup.optimizer} has no torchtune optimizer component trainplan "
                                    "reads back: use adamw, adamw-fused, adamw-8bit, paged-adamw-8bit, sgd or lion")
    if setup.impl.loss is Loss.FUSED or setup.impl.liger_kernels:
        raise pieces.refuse(FORMAT, "torchtune has no fused linear cross-entropy or Liger kernels: use --loss chunked "
                                    "(CEWithChunkedOutputLoss) and no --liger")
    if setup.impl.optimizer_in_backward and setup.method is not Method.FULL:
        raise pieces.refuse(FORMAT, "optimizer_in_bwd is read by the full_finetune recipes only: drop "
                                    "--optimizer-in-backward or use --method full")
    if setup.impl.optimizer_in_backward and setup.grad_accum > 1:
        raise pieces.refuse(FORMAT, "optimizer_in_bwd needs gradient_accumulation_steps 1: use --grad-accum 1")
    if setup.grad_ckpt in (GradCkpt.SELECTIVE, GradCkpt.OP):
        raise pieces.refuse(FORMAT, "torchtune checkpoints whole layers: use --grad-ckpt full (--grad-ckpt-every N "
                                    "for every N-th layer) or none")
    if setup.grad_ckpt_every > 1 and recipe(job) != "full_finetune_distributed":
        raise pieces.refuse(FORMAT, "every N-th layer checkpointing (ac_mode selective) is "
                                    "full_finetune_distributed's: use --grad-ckpt-every 1")
    if setup.impl.activation_offload and (setup.grad_ckpt is GradCkpt.NONE or setup.grad_ckpt_every > 1):
        raise pieces.refuse(FORMAT, "enable_activation_offloading needs enable_activation_checkpointing: add "
                                    "--grad-ckpt full")
    if setup.lora is not None:
        targets = setup.lora.targets
        mlp = [t for t in targets if t in _MLP]
        if mlp and len(mlp) != len(_MLP):
            raise pieces.refuse(FORMAT, "apply_lora_to_mlp puts LoRA on gate_proj, up_proj and down_proj together: "
                                        "give all three or none")
        unknown = [t for t in targets if t not in _ATTN and t not in _MLP and t != "all-linear"]
        if unknown:
            raise pieces.refuse(FORMAT, f"LoRA targets {', '.join(unknown)}: torchtune's lora builders take q_proj, "
                                        "k_proj, v_proj, o_proj (output_proj) and the MLP")
    if pieces.stage(job) not in ("sft", "pt"):
        raise pieces.refuse(FORMAT, f"--stage {pieces.stage(job)}: trainplan exports torchtune's finetune recipes "
                                    "only (sft)")


def _model(job) -> tuple[dict[str, Any], list[str]]:
    setup = job.setup
    family, builder = MODELS[setup.model.name][:2]
    notes: list[str] = []
    if setup.method is Method.FULL:
        return {"_component_": f"torchtune.models.{family}.{builder}"}, notes
    lora = setup.lora
    targets = lora.targets
    if not targets:
        targets = ("q_proj", "v_proj")
        notes.append("the job leaves the LoRA targets to PEFT's default for the model; torchtune needs "
                     "lora_attn_modules: q_proj and v_proj written (PEFT's Llama default)")
    if "all-linear" in targets:
        targets = (*_ATTN, *_MLP)
        notes.append("all-linear written as q_proj, k_proj, v_proj, output_proj and the MLP (the output head "
                     "stays frozen, as PEFT's all-linear); it reads back as that list")
    model: dict[str, Any] = {"_component_": f"torchtune.models.{family}.lora_{builder}",
                             "lora_attn_modules": [_ATTN[t] for t in _ATTN if t in targets],
                             "apply_lora_to_mlp": any(t in _MLP for t in targets), "apply_lora_to_output": False,
                             "lora_rank": lora.rank, "lora_alpha": _number(lora.alpha), "lora_dropout": lora.dropout}
    order = [t for t in targets if t in _ATTN]
    if order != [t for t in _ATTN if t in targets]:
        notes.append("the LoRA attention targets are written in torchtune's order (q, k, v, output)")
    if lora.dora:
        model["use_dora"] = True
    if setup.method is Method.QLORA:
        model["quantize_base"] = True      # the qlora_* builders: functools.partial(lora_*, quantize_base=True)
    return model, notes


def _tokenizer(job, folder: str) -> dict[str, Any]:
    family, _, component, _ = MODELS[job.setup.model.name]
    tok: dict[str, Any] = {"_component_": component}
    if family == "qwen2_5":
        tok.update(path=f"{folder}/vocab.json", merges_file=f"{folder}/merges.txt")
    elif family == "phi4":
        tok.update(vocab_path=f"{folder}/vocab.json", merges_path=f"{folder}/merges.txt")
    elif family.startswith("llama3"):
        tok["path"] = f"{folder}/original/tokenizer.model"
    else:
        tok["path"] = f"{folder}/tokenizer.model"
    tok["max_seq_len"] = job.setup.seq_len
    return tok


def config(job, ctx: ExportContext) -> tuple[dict[str, Any], list[str]]:
    setup, layout, work = job.setup, job.layout, job.workload
    spec = setup.model
    folder = ctx.model_path or f"/tmp/{(spec.hf_id or spec.name).rsplit('/', 1)[-1]}"
    model, notes = _model(job)
    data: dict[str, Any] = {"output_dir": ctx.output_dir, "model": model, "tokenizer": _tokenizer(job, folder)}
    data["checkpointer"] = {"_component_": "torchtune.training.FullModelHFCheckpointer", "checkpoint_dir": folder,
                            "checkpoint_files": {"filename_format": "model-{}-of-{}.safetensors",
                                                 "max_filename": "00004"},
                            "recipe_checkpoint": None, "output_dir": ctx.output_dir,
                            "model_type": MODELS[spec.name][3]}
    notes.append(f"checkpointer.checkpoint_files assumes {spec.hf_id or spec.name}'s weights are "
                 "model-0000N-of-00004.safetensors: set max_filename (or list the files) to match the download")
    data["resume_from_checkpoint"] = False
    if setup.method is not Method.FULL:
        data["save_adapter_weights_only"] = False
    data["dataset"] = {"_component_": "torchtune.datasets.instruct_dataset", "source": "json",
                       "data_files": ctx.dataset, "split": "train", "packed": work.packing}
    data.update(seed=None, shuffle=True, batch_size=setup.batch_size)
    epochs = math.ceil(work.epochs)
    if epochs != work.epochs:
        notes.append(f"torchtune counts whole epochs: {work.epochs} written as {epochs}")
    data["epochs"] = epochs
    data["max_steps_per_epoch"] = work.steps if work.steps and epochs == 1 else None
    data["gradient_accumulation_steps"] = setup.grad_accum
    component, extra = _OPTIMIZERS[setup.optimizer]
    data["optimizer"] = {"_component_": component, **extra, "lr": 2e-5}
    if setup.method is Method.FULL:
        data["optimizer_in_bwd"] = setup.impl.optimizer_in_backward
    if setup.method is not Method.FULL:
        data["lr_scheduler"] = {"_component_": "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
                                "num_warmup_steps": 100}
    data["loss"] = {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss" if setup.impl.loss is Loss.CHUNKED
                    else "torch.nn.CrossEntropyLoss"}
    if setup.impl.loss is not Loss.CHUNKED:
        notes.append("torch.nn.CrossEntropyLoss over the full logits: the recipe flattens them (no chunks)")
    data.update(device="cuda", dtype="bf16" if setup.precision is Precision.BF16_PURE else "fp32")
    every = setup.grad_ckpt_every
    if setup.grad_ckpt is GradCkpt.FULL and every > 1:   # full_finetune_distributed: ac_mode with AC off
        data.update(enable_activation_checkpointing=False, ac_mode="selective", ac_option=every)
    else:
        data["enable_activation_checkpointing"] = setup.grad_ckpt is GradCkpt.FULL
    data["enable_activation_offloading"] = setup.impl.activation_offload
    data["compile"] = setup.impl.compiled
    if recipe(job).endswith("distributed"):
        base = job.fsdp or fsdp_for(setup.framework)
        data.update(fsdp_cpu_offload=layout.offload is Offload.ALL,
                    fsdp_reshard_after_forward=base.reshard_after_forward)
        if layout.fsdp is Fsdp.HYBRID:
            data["data_parallel_replicate_dim"] = layout.nodes      # bd2a0fc: HSDP, shards within a node
            notes.append("data_parallel_replicate_dim is read by torchtune after 0.6.1 (bd2a0fc recipes)")
        if layout.tp > 1:
            data.update(tensor_parallel_dim=layout.tp, tensor_parallel_plan={"_component_": _LLAMA_TP_PLAN})
        if layout.cp > 1:
            data["context_parallel_dim"] = layout.cp
            notes.append("context_parallel_dim is read by torchtune after 0.6.1 (bd2a0fc recipes)")
    data["metric_logger"] = {"_component_": "torchtune.training.metric_logging.DiskLogger",
                             "log_dir": f"{ctx.output_dir}/logs"}
    data.update(log_every_n_steps=1, log_peak_memory_stats=True)
    return data, notes


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def launch(job, ctx: ExportContext) -> str:
    """`tune run` with torchrun's options for a distributed recipe (torchtune/_cli/run.py), none for one device."""
    name = recipe(job)
    words = ["tune", "run"]
    if name.endswith("distributed"):
        words += pieces.torchrun_words(job.layout, ctx)
    return pieces.lines([*words, name, "--config", FILE])


def export(job, estimate, ctx: ExportContext) -> Exported:
    check(job)
    data, notes = config(job, ctx)
    notes = pieces.framework_note(job, FORMAT, FRAMEWORKS) + notes
    header = f"torchtune recipe config for {recipe(job)} (tune run {recipe(job)} --config {FILE})"
    text = pieces.yaml_text(data, header)
    return Exported(files=(ExportFile(name=FILE, text=text, format=FORMAT),), commands=(launch(job, ctx),),
                    notes=tuple(notes))
