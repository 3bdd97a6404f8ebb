"""Megatron-LM `pretrain_gpt.py` arguments: the model's shape, parallelism, batch, precision and
recomputation a Megatron-LM launch line (or script, importers/shell.py) gives.

Read at NVIDIA/Megatron-LM d98e8a64 (2026-08-22): megatron/training/arguments.py (the network-size,
training and MoE flags, and validate_args: --ffn-hidden-size defaults to 4h, or int(4h x 2/3 / 64) x 64
with --swiglu; --kv-channels to h / heads; --global-batch-size to micro x data-parallel), the fields
of megatron/core/transformer/transformer_config.py and megatron/core/model_parallel_config.py that
argparse exposes (normalization 'LayerNorm', add_bias_linear True (--disable-bias-linear), add_qkv_bias
False, gated_linear_unit False, qk_layernorm False, hidden_dropout 0.1, attention_dropout 0.1,
moe_router_topk 2, fp8 None (--fp8-format), fp8_recipe 'delayed', recompute_granularity None,
sequence_parallel False, bf16 / fp16 False: fp32 otherwise), and megatron/training/vocab_utils.py (the
vocabulary padded to a multiple of --make-vocab-size-divisible-by (128) x tensor parallel).

The model is built from the flags (pretrain_gpt.py has no model name): a gated (--swiglu) model as a
Llama-structured spec, a plain-MLP one as a GPT-2-structured spec, each then given the flags' biases,
norm, QK-norm, positions and dropouts; MoE flags make a Mixtral-structured spec (Qwen2-MoE with a
shared expert). The vocabulary comes from --vocab-size, GPT-2's BPE files (50,257 tokens), or a
--tokenizer-model the catalog knows; otherwise the model is left to --model.
"""

from __future__ import annotations

import math
import os
from typing import Any

from trainplan.enums import MlpKind, NormKind, Position
from trainplan.frozen import replace
from trainplan.importers.base import MEGATRON_OVERLAP_FLAGS, Collector, as_float, as_int, read_megatron_overlap
from trainplan.importers.megatron_deepspeed import partition_method, zero_stage

VERSION = "NVIDIA/Megatron-LM d98e8a64 (2026-08-22)"
SCRIPTS = ("pretrain_gpt.py",)
_ARGS = "megatron/training/arguments.py"
_TC = "megatron/core/transformer/transformer_config.py"
_MPC = "megatron/core/model_parallel_config.py"
GPT2_BPE_VOCAB = 50257   # GPT-2's BPE vocabulary (gpt2-vocab.json; transformers GPT2Config.vocab_size)
LLAMA2_VOCAB = 32000     # Llama 2's SentencePiece tokenizer (Llama-2 config.json vocab_size; Mixtral's is the same)

# flags that change memory or time and that trainplan does not model: said, never dropped
_UNMODELLED = {
    "fp8_param_gather": "FP8 parameter all-gather (fp8 weights in the distributed optimizer) is not modelled",
    "use_precision_aware_optimizer": "16-bit / fp8 optimizer states (exp_avg_dtype) are not modelled",
    "grad_reduce_in_bf16": "gradients reduced in bf16 (trainplan reduces Megatron's fp32 main grads)",
    "moe_layer_freq": "a dense/MoE layer pattern is not modelled: every layer is read as MoE",
    "multi_latent_attention": "multi-latent attention flags are not read: give --model",
    "cpu_offloading": "activation offloading (--cpu-offloading) is not modelled",
    "fine_grained_activation_offloading": "activation offloading is not modelled",
    "rampup_batch_size": "the batch-size ramp is not modelled: the full global batch is timed",
    "step_batch_size_schedule": "the batch-size schedule is not modelled: the full global batch is timed",
    "num_layers_per_virtual_pipeline_stage_uneven": "uneven virtual stages are not modelled",
    "decoder_first_pipeline_num_layers": "an uneven first pipeline stage is not modelled",
    "decoder_last_pipeline_num_layers": "an uneven last pipeline stage is not modelled",
    "recompute_modules": "recompute modules other than the attention core are not modelled",
    "cross_entropy_loss_fusion": "Megatron's fused cross-entropy kernel: the loss is timed as the unfused fp32 one",
    # Megatron-DeepSpeed's pretrain_gpt.py: its DeepSpeed engine is configured by a JSON this reader does not open
    "deepspeed": "Megatron-DeepSpeed: the DeepSpeed engine's offload is not read from these flags (its ZeRO stage is, "
                 "from --zero-stage): give --offload",
    "deepspeed_config": "Megatron-DeepSpeed's DeepSpeed JSON is not read here: give it with another --from",
    # Megatron-FSDP (megatron/core/distributed/fsdp): parameters, gradients and optimizer states sharded over
    # data parallel, which trainplan's Megatron profile does not run (its distributed optimizer is ZeRO-1)
    "use_megatron_fsdp": "Megatron-FSDP shards parameters and gradients too: not modelled for --framework "
                         "megatron (estimated with the distributed optimizer's sharding only)",
    "data_parallel_sharding_strategy": "Megatron-FSDP's sharding strategy is not modelled",
}
# flash-attention switches: Megatron-LM's --use-flash-attn, microsoft/Megatron-DeepSpeed's v1/v2/triton ones
_FLASH_FLAGS = ("use_flash_attn", "use_flash_attn_v1", "use_flash_attn_v2", "use_flash_attn_triton")
# the flags read here (the others are counted as ignored: learning rate, logging, data paths, ...)
_READ = {
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "group_query_attention",
    "num_query_groups", "kv_channels", "seq_length", "max_position_embeddings", "position_embedding_type",
    "normalization", "swiglu", "squared_relu", "untie_embeddings_and_output_weights", "disable_bias_linear",
    "add_qkv_bias", "qk_layernorm", "hidden_dropout", "attention_dropout", "vocab_size", "tokenizer_type",
    "tokenizer_model", "merge_file", "make_vocab_size_divisible_by", "num_experts", "moe_router_topk",
    "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size", "tensor_model_parallel_size",
    "pipeline_model_parallel_size", "context_parallel_size", "expert_model_parallel_size",
    "expert_tensor_parallel_size", "num_layers_per_virtual_pipeline_stage", "virtual_pipeline_model_parallel_size",
    "sequence_parallel", "micro_batch_size", "global_batch_size", "use_distributed_optimizer", *MEGATRON_OVERLAP_FLAGS,
    "overlap_moe_expert_parallel_comm", "optimizer_cpu_offload", "moe_token_dispatcher_type",
    "moe_flex_dispatcher_backend", "moe_enable_deepep", "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
    "bf16", "fp16", "fp8_format", "fp8_recipe", "recompute_granularity", "recompute_method", "recompute_num_layers",
    "recompute_activations", "checkpoint_activations", "activations_checkpoint_method", "attention_backend",
    *_FLASH_FLAGS, "optimizer", "train_iters", "train_samples", "zero_stage", "pad_vocab_size_to",
    "pp_partition_method", *_UNMODELLED,
}


def is_megatron_lm(script: str) -> bool:
    return os.path.basename(script) in SCRIPTS


def parse_flags(words: list[str]) -> dict[str, list[str]]:
    """`--name value ...` and `--flag` words: name (underscored) -> the values after it ([] for a switch)."""
    flags: dict[str, list[str]] = {}
    current: list[str] | None = None
    for word in words:
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            current = flags[name.replace("-", "_")] = [value] if eq else []
        elif current is not None:
            current.append(word)
    return flags


class _Flags:
    def __init__(self, c: Collector, flags: dict[str, list[str]]) -> None:
        self.c, self.flags = c, flags

    def on(self, name: str) -> bool:
        return name in self.flags

    def text(self, name: str) -> str | None:
        values = self.flags.get(name)
        return values[0] if values else None

    def int(self, name: str, minimum: int | None = 1) -> int | None:
        value = self.text(name)
        return None if value is None else as_int(value, "--" + name.replace("_", "-"), self.c.file, minimum=minimum)

    def float(self, name: str) -> float | None:
        value = self.text(name)
        return None if value is None else as_float(value, "--" + name.replace("_", "-"), self.c.file)


def read_args(c: Collector, words: list[str], world: int | None) -> None:
    """Settings from the words after pretrain_gpt.py; `world` is the launcher's process count (None: not known)."""
    f = _Flags(c, parse_flags(words))
    c.set("framework", "megatron", key="pretrain_gpt.py", note="Megatron-LM (Megatron-Core GPTModel)")
    c.derived("method", "full", key="pretrain_gpt.py", note="pretrain_gpt.py trains every weight (no adapters)")
    tp, pp, cp = (f.int(n) or 1 for n in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                           "context_parallel_size"))
    for name, field_name, value in (("tensor_model_parallel_size", "tp", tp),
                                    ("pipeline_model_parallel_size", "pp", pp),
                                    ("context_parallel_size", "cp", cp)):
        if f.on(name):
            c.set(field_name, value, key="--" + name.replace("_", "-"), raw=f.text(name))
    ep = f.int("expert_model_parallel_size")
    if ep is not None:
        c.set("ep", ep, key="--expert-model-parallel-size", raw=f.text("expert_model_parallel_size"))
    if f.on("expert_tensor_parallel_size"):
        c.set("etp", f.int("expert_tensor_parallel_size"), key="--expert-tensor-parallel-size")
    spec = _model(c, f, tp)
    _batch(c, f, world, tp * pp * cp, spec.num_layers if spec else f.int("num_layers"), pp)
    _precision(c, f)
    _recompute(c, f)
    partition_method(c, f.text("pp_partition_method"), pp)
    sp = f.on("sequence_parallel")
    if sp:
        c.set("sequence_parallel", True, key="--sequence-parallel", raw=True)
    else:
        c.default("sequence_parallel", False, key="--sequence-parallel", version=VERSION,
                  note=f"{_MPC} sequence_parallel = False")
    stage = f.int("zero_stage", minimum=0) if f.on("deepspeed") and f.on("zero_stage") else None
    sharded = stage is not None and zero_stage(c, stage, f.text("zero_stage"), bf16=f.on("bf16"), pp=pp)
    if not sharded and f.on("use_distributed_optimizer"):
        c.set("zero", 1, key="--use-distributed-optimizer", raw=True,
              note="fp32 master weights and Adam states sharded over data parallel (trainplan's ZeRO-1)")
    elif not sharded:
        c.default("zero", 0, key="--use-distributed-optimizer", version=VERSION,
                  note=f"{_ARGS} --use-distributed-optimizer (store_true): each data-parallel rank keeps the whole "
                       "fp32 optimizer state")
    overlap = [n for n in MEGATRON_OVERLAP_FLAGS if f.on(n)]
    read_megatron_overlap(c, overlap, "--" + overlap[0].replace("_", "-") if overlap else "")
    if f.on("overlap_moe_expert_parallel_comm"):
        c.set("moe_a2a_overlap", True, key="--overlap-moe-expert-parallel-comm", raw=True)
    # Megatron-Core's transformer_block.py get_num_layers_to_build: the embedding / the loss take a layer's place
    accounted = [n for n in ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")
                 if f.on(n)]
    if accounted:
        c.set("pp_head_as_layer", True, key="--" + accounted[0].replace("_", "-"), raw=True,
              note="the first and the last pipeline stage hold one layer fewer" + (
                  "" if len(accounted) == 2 else " (one of the two flags: read as both)"))
    # the flex dispatcher runs DeepEP or its HybridEP branch (--moe-flex-dispatcher-backend; before it,
    # --moe-enable-deepep): a token once per destination rank and node (timing.dispatch)
    dispatcher = (f.text("moe_token_dispatcher_type") or "").lower()
    if dispatcher == "flex" or f.on("moe_enable_deepep"):
        flex_backend = (f.text("moe_flex_dispatcher_backend") or "deepep").lower()
        c.set("moe_dispatcher", "deepep", key="--moe-token-dispatcher-type" if dispatcher else "--moe-enable-deepep",
              raw=dispatcher or True, note=f"flex dispatcher, {flex_backend} backend (DeepEP-class dispatch)")
    elif dispatcher:
        c.set("moe_dispatcher", "alltoall", key="--moe-token-dispatcher-type", raw=dispatcher,
              note="a copy of each token per routed expert" if dispatcher == "alltoall" else
              "allgather dispatcher timed as alltoall (a copy per routed expert)")
    if f.on("optimizer_cpu_offload"):
        c.set("offload", "optimizer", key="--optimizer-cpu-offload", raw=True)
        c.set("offload_device", "cpu", key="--optimizer-cpu-offload", raw=True)
    backend = (f.text("attention_backend") or "").lower()
    flash = next((n for n in _FLASH_FLAGS if f.on(n)), None)
    if backend in ("unfused", "local"):
        c.set("attention", "eager", key="--attention-backend", raw=backend,
              note="unfused attention: softmax over the materialised score matrix")
    elif backend or flash:
        c.set("attention", "flash", key="--attention-backend" if backend else "--" + flash.replace("_", "-"),
              raw=backend or True, note="a fused (flash / cuDNN) attention kernel")
    elif f.on("deepspeed"):
        # Megatron-DeepSpeed's ParallelAttention without a flash flag: torch.baddbmm scores, FusedScaleMaskSoftmax,
        # torch.bmm (bigscience-workshop/Megatron-DeepSpeed megatron/model/transformer.py @8387ae17)
        c.set("attention", "eager", key="--deepspeed", raw=True,
              note="Megatron-DeepSpeed attention without --use-flash-attn: the score matrix materialised "
                   "(baddbmm, fused scale-mask-softmax, bmm)")
    optimizer = (f.text("optimizer") or "adam").lower()
    if optimizer not in ("adam", "sgd"):
        c.skip("--optimizer", optimizer, "an optimizer trainplan does not model")
    elif f.on("optimizer"):
        c.set("optimizer", "adamw-fused" if optimizer == "adam" else "sgd", key="--optimizer", raw=f.text("optimizer"))
    else:
        c.default("optimizer", "adamw-fused", key="--optimizer", version=VERSION,
                  note=f"{_ARGS} --optimizer default 'adam': fused Adam with decoupled weight decay")
    for name, why in _UNMODELLED.items():
        if f.on(name):
            c.skip("--" + name.replace("_", "-"), f.flags[name] or True, why)
    c.ignore(sum(1 for name in f.flags if name not in _READ))


def _batch(c: Collector, f: _Flags, world: int | None, model_parallel: int, layers: int | None, pp: int) -> None:
    seq = f.int("seq_length")
    if seq is not None:
        c.set("seq_len", seq, key="--seq-length", raw=f.text("seq_length"))
    else:
        c.skip("--seq-length", None, "pretrain_gpt.py requires --seq-length; trainplan's --seq-len is used")
    micro = f.int("micro_batch_size")
    if micro is None:
        c.skip("--micro-batch-size", None, "pretrain_gpt.py requires --micro-batch-size; trainplan's --batch-size "
                                           "is used")
        micro = 1
    else:
        c.set("batch_size", micro, key="--micro-batch-size", raw=f.text("micro_batch_size"))
    gbs = f.int("global_batch_size")
    if world is not None and world % model_parallel == 0:
        dp = world // model_parallel
        if gbs is None:
            c.default("grad_accum", 1, key="--global-batch-size", version=VERSION,
                      note=f"{_ARGS} validate_args: global_batch_size = micro_batch_size x data_parallel_size")
        elif gbs % (micro * dp):
            c.skip("--global-batch-size", gbs, f"not a multiple of micro-batch {micro} x data-parallel {dp}")
        else:
            c.derived("grad_accum", gbs // (micro * dp), key="--global-batch-size",
                      note=f"--global-batch-size {gbs} / (--micro-batch-size {micro} x data-parallel {dp} = "
                           f"{world} GPUs / (tp x pp x cp = {model_parallel})) micro-batches per step")
    elif gbs is not None:
        c.skip("--global-batch-size", gbs, "micro-batches per step = global batch / (micro-batch x data parallel): "
                                           "the launcher does not give the GPU count; give --num-gpus and "
                                           "--grad-accum")
    iters, samples = f.int("train_iters"), f.int("train_samples")
    if iters is not None:
        c.set("max_steps", iters, key="--train-iters", raw=f.text("train_iters"))
    elif samples is not None and gbs:
        c.derived("max_steps", math.ceil(samples / gbs), key="--train-samples",
                  note=f"--train-samples {samples} / --global-batch-size {gbs}")
    vpp = None
    per_stage = f.int("num_layers_per_virtual_pipeline_stage")
    if per_stage and layers and pp > 1:
        vpp = max(1, layers // (pp * per_stage))
    elif f.on("virtual_pipeline_model_parallel_size"):
        vpp = f.int("virtual_pipeline_model_parallel_size")
    if vpp and vpp > 1:
        c.set("vpp", vpp, key="--num-layers-per-virtual-pipeline-stage" if per_stage else
              "--virtual-pipeline-model-parallel-size", raw=per_stage or vpp)


def _precision(c: Collector, f: _Flags) -> None:
    note = "16-bit weights with fp32 main grads, fp32 master weights and Adam states"
    if f.on("fp8_format"):
        c.set("precision", "fp8", key="--fp8-format", raw=f.text("fp8_format"),
              note="Transformer Engine FP8 GEMMs over bf16; " + note)
        from trainplan.timing.fp8 import megatron_recipe

        recipe = (f.text("fp8_recipe") or "delayed").lower()
        known = megatron_recipe(recipe)
        if known is None:
            c.skip("--fp8-recipe", recipe, "an FP8 recipe trainplan has no cost for")
        elif f.on("fp8_recipe"):
            c.set("fp8_recipe", known.value, key="--fp8-recipe", raw=recipe)
        else:
            c.default("fp8_recipe", known.value, key="--fp8-recipe", version=VERSION,
                      note=f"{_TC} fp8_recipe = 'delayed'")
    elif f.on("bf16") or f.on("fp16"):
        name = "bf16" if f.on("bf16") else "fp16"
        c.set("precision", name, key="--" + name, raw=True, note=note)
    else:
        c.default("precision", "fp32", key="--bf16", version=VERSION,
                  note=f"{_MPC} bf16 = fp16 = False: fp32 weights and compute without --bf16 / --fp16")


def _recompute(c: Collector, f: _Flags) -> None:
    gran = (f.text("recompute_granularity") or "").lower()
    if gran in ("full", "selective"):
        c.set("grad_ckpt", gran, key="--recompute-granularity", raw=gran)
        method, layers = (f.text("recompute_method") or "uniform").lower(), f.int("recompute_num_layers")
        if gran == "full" and (method != "uniform" or layers not in (None, 1)):
            c.skip("--recompute-method", [method, layers], "recomputing blocks of several layers (or some layers "
                                                          "only) is not modelled: every layer is recomputed")
    elif f.on("recompute_activations"):
        c.set("grad_ckpt", "selective", key="--recompute-activations", raw=True,
              note=f"{_ARGS}: --recompute-activations sets recompute_granularity 'selective'")
    elif f.on("checkpoint_activations") or f.on("activations_checkpoint_method"):
        key = "checkpoint_activations" if f.on("checkpoint_activations") else "activations_checkpoint_method"
        c.set("grad_ckpt", "full", key="--" + key.replace("_", "-"), raw=f.text(key) or True,
              note="an earlier Megatron-LM's name for full recomputation of every layer (now "
                   "--recompute-granularity full --recompute-method uniform)")
    else:
        c.default("grad_ckpt", "none", key="--recompute-granularity", version=VERSION,
                  note=f"{_TC} recompute_granularity = None")


def _vocab(c: Collector, f: _Flags) -> tuple[int, str] | None:
    """(the tokenizer's vocabulary, how it was found), or None when nothing says."""
    if f.on("vocab_size"):
        return f.int("vocab_size"), "--vocab-size"
    if f.on("pad_vocab_size_to"):
        # Megatron-DeepSpeed (bigscience-workshop fork, megatron/tokenizer/tokenizer.py _vocab_size_with_padding):
        # `after = args.pad_vocab_size_to`, the padded vocabulary itself (a multiple of the divisor, checked there)
        return f.int("pad_vocab_size_to"), "--pad-vocab-size-to (Megatron-DeepSpeed: the padded vocabulary)"
    kind = f.text("tokenizer_type") or ""
    if kind == "GPT2BPETokenizer" or (not kind and f.on("merge_file")):
        return GPT2_BPE_VOCAB, "GPT-2's BPE files (gpt2-vocab.json / gpt2-merges.txt): 50,257 tokens"
    if kind == "Llama2Tokenizer":
        return LLAMA2_VOCAB, "Llama2Tokenizer: Llama 2's SentencePiece model, 32,000 pieces"
    name = f.text("tokenizer_model")
    if name:
        from trainplan.catalog import resolve_model
        from trainplan.errors import TrainplanError

        try:
            known = resolve_model(name)
        except TrainplanError:
            return None
        return known.vocab_size, f"--tokenizer-model {name}: the catalog's {known.name} vocabulary"
    return None


def _model(c: Collector, f: _Flags, tp: int):
    """The ModelSpec the network-size flags describe (None, said, when they do not)."""
    layers, hidden, heads = f.int("num_layers"), f.int("hidden_size"), f.int("num_attention_heads")
    if not (layers and hidden and heads):
        c.skip("--num-layers/--hidden-size/--num-attention-heads", None,
               "the model's shape is incomplete: give --model")
        return None
    if f.on("multi_latent_attention"):
        return None
    vocab = _vocab(c, f)
    if vocab is None:
        c.skip("--tokenizer-type", f.text("tokenizer_type"), "the vocabulary is not known (no --vocab-size, GPT-2 BPE "
                                                             "files or catalog --tokenizer-model): give --model")
        return None
    tokens, how = vocab
    multiple = (f.int("make_vocab_size_divisible_by") or 128) * tp
    padded = math.ceil(tokens / multiple) * multiple
    gated = f.on("swiglu")
    ffn = f.int("ffn_hidden_size") or (int((4 * hidden * 2 / 3) / 64) * 64 if gated else 4 * hidden)
    kv_channels = f.int("kv_channels") or hidden // heads
    groups = f.int("num_query_groups") if f.on("group_query_attention") else heads
    seq = f.int("seq_length") or 2048
    max_pos = f.int("max_position_embeddings") or seq
    experts = f.int("num_experts")
    from trainplan.model.hfconfig import spec_from_hf_config

    name = f"megatron-gpt-{layers}L-{hidden}h" + (f"-{experts}e" if experts else "")
    if gated or experts:
        config: dict[str, Any] = {"model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers,
                                  "num_attention_heads": heads, "num_key_value_heads": groups or heads,
                                  "head_dim": kv_channels, "intermediate_size": ffn, "vocab_size": padded,
                                  "max_position_embeddings": max_pos}
        if experts:
            shared = f.int("moe_shared_expert_intermediate_size")
            config.update(model_type="qwen2_moe" if shared else "mixtral", num_local_experts=experts,
                          num_experts=experts, num_experts_per_tok=f.int("moe_router_topk") or 2,
                          moe_intermediate_size=f.int("moe_ffn_hidden_size") or ffn,
                          intermediate_size=f.int("moe_ffn_hidden_size") or ffn,
                          shared_expert_intermediate_size=shared or 0, decoder_sparse_step=1, mlp_only_layers=[])
        spec = spec_from_hf_config(config, name=name)
    else:
        spec = spec_from_hf_config({"model_type": "gpt2", "n_embd": hidden, "n_layer": layers, "n_head": heads,
                                    "n_inner": ffn, "vocab_size": padded, "n_positions": max_pos}, name=name)
    bias = not f.on("disable_bias_linear")
    position = (f.text("position_embedding_type") or "learned_absolute").lower()
    norm = (f.text("normalization") or "LayerNorm").lower()
    spec = replace(
        spec, num_kv_heads=groups or heads, head_dim=kv_channels, tied_embeddings=not f.on("untie_embeddings_and_"
                                                                                             "output_weights"),
        qkv_bias=bias or f.on("add_qkv_bias"), out_bias=bias, mlp_bias=bias, qk_norm=f.on("qk_layernorm"),
        norm_kind=NormKind.RMS if norm == "rmsnorm" else NormKind.LAYER,
        mlp_kind=MlpKind.GATED if gated else MlpKind.PLAIN,
        hidden_act="silu" if gated else "relu2" if f.on("squared_relu") else "gelu",
        position=Position.LEARNED if position == "learned_absolute" else Position.ROPE,
        max_position_embeddings=max_pos,
        hidden_dropout=f.float("hidden_dropout") if f.on("hidden_dropout") else 0.1,
        attention_dropout=f.float("attention_dropout") if f.on("attention_dropout") else 0.1,
        source=f"Megatron-LM pretrain_gpt.py flags ({VERSION})")
    if position == "alibi":     # Megatron-DeepSpeed: a per-head bias added to the attention scores
        c.skip("--position-embedding-type", position, "ALiBi: no position parameters (counted as rotary); its bias "
                                                      "is added to the scores inside the attention, not timed apart")
    elif position not in ("learned_absolute", "rope"):
        c.skip("--position-embedding-type", position, "read as rotary (no position parameters)")
    c.set("model", spec, key="--num-layers/--hidden-size/--num-attention-heads", raw=name,
          note=f"{layers} layers, hidden {hidden}, {heads} heads ({groups} query groups, {kv_channels} channels), "
               f"FFN {ffn}{' SwiGLU' if gated else ''}, vocabulary {tokens} padded to {padded} ({how}; multiple of "
               f"{multiple // tp} x tp {tp}, megatron/training/vocab_utils.py)"
               + (f", {experts} experts top-{spec.moe.top_k if spec.moe else 2}" if experts else ""))
    return spec
