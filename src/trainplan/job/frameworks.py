"""Framework profiles: the same job takes different memory under each framework because each
makes its own choices. A profile is a bundle of defaults; every default is also a flag.

Sources:
- hf: transformers TrainingArguments: `optim` defaults to "adamw_torch_fused" for torch >= 2.8
  (training_args.py), `bf16=True` runs autocast over an fp32 model, loss = ForCausalLMLoss (fp32
  upcast of the full logits), gradient checkpointing off.
- deepspeed: bf16/fp16 optimizer wrappers keep 16-bit weights and grads with fp32 master weights
  and Adam states (DeepSpeed runtime/bf16_optimizer.py, ZeRO paper), FusedAdam.
- fsdp: MixedPrecision(param_dtype=bf16) with sharded fp32 parameters (PyTorch FSDP docs).
- megatron: fp32 `main_grad` accumulation buffers, fp32 master weights in the (distributed)
  optimizer (Megatron-LM core/optimizer), fused Adam (Apex/TE).
- litgpt: `--precision bf16-true` (bf16 weights and AdamW states), lm_head computed in chunks of
  128 tokens with chunked cross-entropy (litgpt/utils.py chunked_cross_entropy, finetune/lora.py);
  Fabric's `_FabricModule.forward` returns the logits cast to the default dtype (fp32,
  precision.convert_output) and the loop holds them through backward; one fused `attn` q/k/v
  linear whose output the value view keeps alive, LoRAQKVLinear.zero_pad's index_copy saving the
  adapters' output (lit_gpt/model.py, lit_gpt/lora.py).
- torchtune: bf16 weights and AdamW states (`dtype: bf16`), CEWithChunkedOutputLoss with 8 chunks,
  activation checkpointing on in the recipes, fused AdamW; `optimizer_in_bwd` and
  `enable_activation_offloading` are recipe flags (README memory table).
- llamafactory: HF Trainer; model loaded in bf16, trainable parameters upcast to fp32,
  gradient checkpointing on unless `disable_gradient_checkpointing` (LLaMA-Factory model/loader).
- swift: HF Trainer; gradient_checkpointing defaults to true (ms-swift arguments).
- unsloth: its own fused cross-entropy and RMSNorm/SwiGLU kernels, "unsloth" gradient
  checkpointing that offloads checkpoints to CPU, notebooks default to adamw_8bit.
- axolotl: HF Trainer underneath; flash attention and gradient checkpointing in most examples.
- trl: HF Trainer underneath (SFTTrainer, DPOTrainer, GRPOTrainer subclass transformers.Trainer);
  SFTConfig/DPOConfig set gradient_checkpointing=True (trl/trainer/sft_config.py).
- torchtitan: FSDP2 fully_shard with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over
  fp32 sharded parameters (torchtitan/distributed/parallel_dims.py, models/llama3/infra/parallelize.py).
"""

from __future__ import annotations

from trainplan.enums import (
    Attention,
    Framework,
    GradCkpt,
    Loss,
    MasterWeights,
    Optimizer,
    Precision,
)
from trainplan.frozen import frozen, replace
from trainplan.job.training import Implementation


@frozen
class Profile:
    framework: Framework
    precision: Precision
    optimizer: Optimizer
    grad_ckpt: GradCkpt
    attention: Attention
    impl: Implementation
    summary: str


def _impl(**kw) -> Implementation:
    return Implementation(**kw)


PROFILES: dict[Framework, Profile] = {
    Framework.HF: Profile(framework=Framework.HF, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                          grad_ckpt=GradCkpt.NONE, attention=Attention.SDPA, impl=_impl(),
                          summary="HF Trainer: fp32 weights + autocast, fused AdamW, full fp32 logits"),
    Framework.DEEPSPEED: Profile(framework=Framework.DEEPSPEED, precision=Precision.BF16,
                                 optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.NONE,
                                 attention=Attention.SDPA,
                                 impl=_impl(master_weights=MasterWeights.OPTIMIZER),
                                 summary="DeepSpeed: bf16 weights/grads, fp32 master + Adam in the optimizer"),
    Framework.FSDP: Profile(framework=Framework.FSDP, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                            grad_ckpt=GradCkpt.NONE, attention=Attention.SDPA,
                            impl=_impl(master_weights=MasterWeights.OPTIMIZER),
                            summary="FSDP mixed precision: sharded fp32 params, bf16 compute copies"),
    Framework.MEGATRON: Profile(framework=Framework.MEGATRON, precision=Precision.BF16,
                                optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.NONE,
                                attention=Attention.FLASH,
                                impl=_impl(master_weights=MasterWeights.OPTIMIZER, grad_dtype_fp32_accum=True),
                                summary="Megatron: bf16 weights, fp32 main_grad, fp32 master + Adam"),
    Framework.LITGPT: Profile(framework=Framework.LITGPT, precision=Precision.BF16_PURE, optimizer=Optimizer.ADAMW,
                              grad_ckpt=GradCkpt.NONE, attention=Attention.SDPA,
                              impl=_impl(master_weights=MasterWeights.NONE, loss=Loss.CHUNKED, loss_chunks=0,
                                        loss_upcast=False, fused_qkv=True, output_fp32=True),
                              summary="litgpt bf16-true: bf16 weights and AdamW states, chunked lm_head + CE"),
    Framework.TORCHTUNE: Profile(framework=Framework.TORCHTUNE, precision=Precision.BF16_PURE,
                                 optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.FULL,
                                 attention=Attention.SDPA,
                                 impl=_impl(master_weights=MasterWeights.NONE, loss=Loss.CHUNKED, loss_chunks=8),
                                 summary="torchtune: bf16 weights and states, chunked CE (8), activation checkpointing"),
    Framework.LLAMAFACTORY: Profile(framework=Framework.LLAMAFACTORY, precision=Precision.BF16,
                                    optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.FULL,
                                    attention=Attention.SDPA, impl=_impl(),
                                    summary="LLaMA-Factory: HF Trainer, bf16 model + fp32 trainable params, checkpointing on"),
    Framework.SWIFT: Profile(framework=Framework.SWIFT, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                             grad_ckpt=GradCkpt.FULL, attention=Attention.SDPA, impl=_impl(),
                             summary="ms-swift: HF Trainer, gradient checkpointing on"),
    Framework.UNSLOTH: Profile(framework=Framework.UNSLOTH, precision=Precision.BF16, optimizer=Optimizer.ADAMW_8BIT,
                               grad_ckpt=GradCkpt.FULL, attention=Attention.FLASH,
                               impl=_impl(loss=Loss.FUSED, liger_kernels=True, activation_offload=True),
                               summary="Unsloth: fused CE and kernels, offloaded checkpoints, 8-bit AdamW"),
    Framework.AXOLOTL: Profile(framework=Framework.AXOLOTL, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                               grad_ckpt=GradCkpt.FULL, attention=Attention.FLASH, impl=_impl(),
                               summary="axolotl: HF Trainer, flash attention, gradient checkpointing"),
    Framework.TRL: Profile(framework=Framework.TRL, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                           grad_ckpt=GradCkpt.FULL, attention=Attention.SDPA, impl=_impl(),
                           summary="TRL: HF Trainer, gradient checkpointing on"),
    Framework.TORCHTITAN: Profile(framework=Framework.TORCHTITAN, precision=Precision.BF16,
                                  optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.NONE, attention=Attention.FLASH,
                                  impl=_impl(master_weights=MasterWeights.OPTIMIZER),
                                  summary="torchtitan: FSDP2 bf16 compute over fp32 sharded params"),
}


def profile(framework: Framework) -> Profile:
    return PROFILES[framework]


def implementation(framework: Framework, **overrides) -> Implementation:
    """The profile's Implementation with the user's explicit flags applied (None = keep)."""
    base = PROFILES[framework].impl
    given = {k: v for k, v in overrides.items() if v is not None}
    return replace(base, **given)
