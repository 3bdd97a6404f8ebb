"""What the per-layer inventory (activations.py, mlp_saves.py) needs to know about one decoder
layer's training mode."""

from __future__ import annotations

from trainplan.enums import Attention
from trainplan.frozen import frozen
from trainplan.model.architecture import Role


@frozen
class LayerContext:
    """What the inventory needs to know about one layer's training mode."""

    tokens: int                       # b * s
    batch: int
    seq: int
    residual_bytes: int
    compute_bytes: int
    autocast: bool
    attention: Attention
    weights_trained: bool             # full fine-tune or a layer trained by freeze tuning
    lora_roles: frozenset[Role] = frozenset()
    lora_names: frozenset[str] = frozenset()   # lora_key of each adapted linear
    lora_rank: int = 0
    lora_dropout: float = 0.0
    dora: bool = False                # peft DoRA: the magnitude's products keep both outputs (linear_saves)
    dora_rerun: bool = False          # DoRA reruns the base linear on the dropped input (memory.dora.reruns_base)
    dora_dequant: bool = False        # DoRA over quantized weights dequantizes W every forward (QLoRA)
    input_requires_grad: bool = True  # False below every trainable parameter (frozen embedding output)
    trained_weight_bytes: int = 2
    frozen_weight_bytes: int = 2
    adapter_bytes: int = 2
    fp32_adapter_chain: bool = False   # the adapter chain runs in fp32 over a 16-bit input (memory.regime)
    liger: bool = False
    compiled: bool = False            # torch.compile: pointwise chains fused, recomputed in backward
    quant_saves_input: bool = False   # bitsandbytes 4-bit base weights: MatMul4Bit saves its input
    fused_qkv: bool = False           # the model's own single q/k/v projection (litgpt)
    fused_gelu: bool = False          # the model's own GELU is one F.gelu call, tanh or not (litgpt): saves its input
    padding_mask: bool = False        # the batch's attention mask has padding: SDPA gets a 4-D mask (memory.attention.masked)
