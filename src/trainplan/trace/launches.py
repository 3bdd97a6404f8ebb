"""Count the ATen operations a transformers decoder layer runs per micro-batch (timing.launch's table).

A TorchDispatchMode sees every ATen call of a real HF Llama forward and backward on the CPU; views,
aliases and allocations launch no kernel and are not counted, everything else is taken as one
launch. Per layer = a 2-layer model minus a 1-layer one (embeddings, LM head and the mask build
cancel). The batch has padding in its attention mask (the case universal-llm-trainer's batches
are in), SDPA attention, bf16 weights; LoRA on every linear (rank 8, dropout 0.05, peft). Loaded
lazily: torch, transformers and peft come with the `trace` extra.
"""

from __future__ import annotations

from trainplan.frozen import frozen

# ATen calls that launch no kernel: views, aliases, metadata and uninitialised allocations
_NO_KERNEL = frozenset({
    "view", "_unsafe_view", "detach", "alias", "t", "transpose", "expand", "unsqueeze", "squeeze", "slice",
    "select", "permute", "reshape", "as_strided", "split", "chunk", "unbind", "split_with_sizes",
    "lift_fresh", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "is_same_size",
    "_has_compatible_shallow_copy_type", "size", "stride", "sym_size", "sym_stride", "sym_numel", "dim",
})


@frozen
class CountedLaunches:
    """Per decoder layer: forward, backward, and the recomputation full checkpointing adds."""

    forward: int
    backward: int
    recompute: int


def _pass_counts(layers: int, lora: bool, ckpt: bool) -> tuple[int, int]:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from transformers import LlamaConfig, LlamaForCausalLM

    class _Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not func.is_view and func.overloadpacket.__name__ not in _NO_KERNEL:
                self.n += 1
            return func(*args, **(kwargs or {}))

    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                      num_hidden_layers=layers, vocab_size=128, attn_implementation="sdpa")
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    if lora:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=[
            "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
    if ckpt:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    model.train()
    ids = torch.randint(0, 128, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[:, -3:] = 0
    with _Count() as fwd:
        loss = model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float().mean()
    with _Count() as bwd:
        loss.backward()
    return fwd.n, bwd.n


def count_layer_launches(lora: bool) -> CountedLaunches:
    """One decoder layer's launches per micro-batch, full fine-tune or LoRA on every linear."""
    f1, b1 = _pass_counts(1, lora, ckpt=False)
    f2, b2 = _pass_counts(2, lora, ckpt=False)
    _, c1 = _pass_counts(1, lora, ckpt=True)
    _, c2 = _pass_counts(2, lora, ckpt=True)
    return CountedLaunches(forward=f2 - f1, backward=b2 - b1, recompute=(c2 - c1) - (b2 - b1))
