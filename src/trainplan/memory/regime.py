"""Bytes per element of each kind of tensor under a precision regime and framework choices.

Sources for the conventions:
- HF Trainer mixed precision: the model stays in fp32 and `torch.autocast` runs matmuls in 16-bit
  (transformers `Trainer.autocast_smart_context_manager`); autocast caches 16-bit copies of
  leaf weights that require grad until the autocast region exits (torch/amp docs, "cache_enabled").
- peft casts LoRA adapters to fp32 under mixed precision (`autocast_adapter_dtype=True`, default
  since peft 0.12), and keeps them in the base dtype otherwise.
- DeepSpeed / Megatron: 16-bit model weights and gradients, fp32 master weights and Adam states
  in the optimizer (ZeRO paper, Rajbhandari et al. 2020, section 3.1: 2+2+12 bytes/param);
  Megatron accumulates gradients in an fp32 `main_grad` buffer (4 bytes/param).
- Pure 16-bit (litgpt `bf16-true`, torchtune): weights, gradients and optimizer states all 16-bit.
"""

from __future__ import annotations

from trainplan.enums import Framework, MasterWeights, Method, Precision
from trainplan.frozen import frozen
from trainplan.job.training import TrainingSetup


@frozen
class Regime:
    autocast: bool                # fp32/16-bit weights cast per op to the compute dtype
    trainable_weight_bytes: int   # per trainable parameter, as stored in the model
    frozen_weight_bytes: int      # per frozen, non-quantized parameter
    adapter_bytes: int            # LoRA A/B weights (and their grads)
    grad_bytes: int               # per gradient element of full/freeze-trained weights
    master_bytes: int             # separate fp32 master copy held by the optimizer (0 if none)
    state_bytes: int              # one element of a (non-8-bit) optimizer state
    residual_bytes: int           # dtype of the residual stream between layers
    compute_bytes: int            # dtype of matmul inputs/outputs (2 for bf16/fp16, 4 for fp32)
    fp8_weight_cache_bytes: int = 0  # Transformer Engine fp8 copies (weight + transpose)
    fp32_adapter_chain: bool = False   # peft's fp32 adapters run in fp32 over a 16-bit model (PEFT_FP32_ADAPTERS)
    copies_upcast: bool = False   # modules_to_save copies cast with the trainable parameters (UPCAST_TRAINABLES)

    @property
    def copy_bytes(self) -> int:
        """dtype of a modules_to_save copy: peft deep-copies the module as loaded (peft/utils/other.py
        ModulesToSaveWrapper; its fp32 autocast of adapters, cast_adapter_dtype, reaches BaseTunerLayer
        modules only), so the frozen weights' dtype (fp32 where prepare_model_for_kbit_training cast the
        embedding and head); the trainable parameters' where the framework casts every trainable one."""
        return self.trainable_weight_bytes if self.copies_upcast else self.frozen_weight_bytes

    @property
    def description(self) -> str:
        parts = []
        if self.autocast:
            parts.append("weights kept in fp32 with autocast to 16-bit per op")
        if self.master_bytes:
            parts.append(f"16-bit weights with an fp32 master copy in the optimizer ({self.master_bytes} B/param)")
        parts.append(f"gradients {self.grad_bytes} B/param, optimizer states {self.state_bytes} B/element")
        return "; ".join(parts)


# Frameworks whose LoRA adapters stay fp32 over a 16-bit model without autocast: peft's
# get_peft_model(autocast_adapter_dtype=True), its default since peft 0.12.0 (peft/mapping_func.py;
# "upcasts LoRA adapter params to fp32 even when the base model is bf16", trl/experimental/bco/
# bco_trainer.py), which Hugging Face Trainer / TRL scripts, plain PyTorch loops, ms-swift (unless
# lora_dtype is set: swift/tuners/peft.py _cast_adapter_dtype_hook) and axolotl (unless
# peft_autocast_adapter_dtype: axolotl/loaders/adapter.py) keep. LLaMA-Factory passes
# autocast_adapter_dtype=cast_trainable_params_to_fp32, False under pure_bf16 (llamafactory/model/
# adapter.py); torchtune, litgpt and Megatron build their own 16-bit adapters; a DeepSpeed engine casts
# every parameter to its 16-bit dtype (deepspeed/runtime/engine.py _configure_distributed_model).
PEFT_FP32_ADAPTERS = frozenset({Framework.HF, Framework.PYTORCH, Framework.TRL, Framework.SWIFT,
                                Framework.AXOLOTL})
# Frameworks that cast every trainable parameter to fp32 under mixed precision, modules_to_save copies
# included: LLaMA-Factory (model/adapter.py init_adapter, cast_trainable_params_to_fp32 unless pure_bf16 /
# BAdam / unquantized ZeRO-3; _setup_lora_tuning: `param.data = param.data.to(torch.float32)` for every
# parameter that requires grad)
UPCAST_TRAINABLES = frozenset({Framework.LLAMAFACTORY})


def resolve_regime(setup: TrainingSetup) -> Regime:
    p = setup.precision
    impl = setup.impl
    peft = setup.method in (Method.LORA, Method.QLORA)
    if p is Precision.FP32:
        return Regime(autocast=False, trainable_weight_bytes=4, frozen_weight_bytes=4, adapter_bytes=4,
                      grad_bytes=4, master_bytes=0, state_bytes=4, residual_bytes=4, compute_bytes=4)
    if p.is_pure:
        # load_fp32 without autocast: peft's prepare_model_for_kbit_training casts the non-quantized
        # weights (embedding, norms, head) to fp32 and no autocast casts them back, so the residual
        # stream leaves the embedding in fp32 (the quantized linears still compute in bnb's 16-bit
        # compute dtype)
        frozen = 4 if impl.load_fp32 else 2
        fp32_adapters = peft and setup.framework in PEFT_FP32_ADAPTERS
        return Regime(autocast=False, trainable_weight_bytes=2, frozen_weight_bytes=frozen,
                      adapter_bytes=4 if fp32_adapters else 2, grad_bytes=2, master_bytes=0, state_bytes=2,
                      residual_bytes=frozen, compute_bytes=2, fp32_adapter_chain=fp32_adapters and frozen == 2)
    fp8_cache = 2 if p is Precision.FP8 else 0
    if impl.master_weights is MasterWeights.OPTIMIZER or p is Precision.FP8:
        grad = 4 if impl.grad_dtype_fp32_accum else 2
        return Regime(autocast=False, trainable_weight_bytes=2, frozen_weight_bytes=2,
                      adapter_bytes=4 if peft else 2, grad_bytes=grad, master_bytes=0 if peft else 4,
                      state_bytes=4, residual_bytes=2, compute_bytes=2, fp8_weight_cache_bytes=fp8_cache)
    # Mixed precision with autocast (HF Trainer, FSDP MixedPrecision off, LLaMA-Factory, swift).
    frozen = 4 if impl.load_fp32 else 2
    upcast = setup.framework in UPCAST_TRAINABLES
    # the residual stream leaves the embedding in its dtype: fp32 for a full fine-tune's fp32 model, an fp32
    # load, or a modules_to_save copy of the embedding that the framework cast to fp32
    fp32_embedding = upcast and "embed_tokens" in setup.saved_modules
    residual = 4 if (setup.method is Method.FULL or fp32_embedding or frozen == 4) else 2
    return Regime(autocast=True, trainable_weight_bytes=4, frozen_weight_bytes=frozen, adapter_bytes=4,
                  grad_bytes=4, master_bytes=0, state_bytes=4, residual_bytes=residual, compute_bytes=2,
                  copies_upcast=upcast)
