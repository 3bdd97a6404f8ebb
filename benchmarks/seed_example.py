"""The seed article's example (Llama-2-7B full fine-tune, FP16, batch 32 x 1024, A100 80GB), as
trainplan sees it under each regime the phrase can mean. Prints the table quoted in README.md.

Usage: python benchmarks/seed_example.py
"""

from __future__ import annotations

import trainplan
from trainplan.units import GIB

STATE = ("weights", "master_weights", "optimizer", "gradients", "quant_constants")
ROWS = [
    ("pure fp16 (fp16 weights, grads and Adam states)", dict(precision="fp16-pure")),
    ("fp16 mixed, HF Trainer (fp32 weights + autocast)", dict(precision="fp16")),
    ("fp16 + fp32 master weights (DeepSpeed style)", dict(precision="fp16", framework="deepspeed")),
]


def main() -> None:
    print("| regime | checkpointing | model state at the peak | autocast copies | saved activations at the peak "
          "| logits + loss | peak allocated | device (nvidia-smi) | fits 80 GB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, opts in ROWS:
        for ckpt in ("none", "full"):
            est = trainplan.estimate("llama-2-7b", method="full", batch_size=32, seq_len=1024, grad_ckpt=ckpt,
                                     gpu="a100-80gb", **opts)
            c = est.memory.components_bytes
            state = sum(c.get(k, 0) for k in STATE)
            print(f"| {label} | {ckpt} | {state / GIB:.1f} GiB | {c.get('autocast_weight_copies', 0) / GIB:.1f} GiB "
                  f"| {c.get('activations', 0) / GIB:.1f} GiB | {c.get('logits_loss', 0) / GIB:.1f} GiB "
                  f"| {est.memory.peak_allocated_bytes / GIB:.1f} GiB | {est.memory.device_bytes / GIB:.1f} GiB "
                  f"| {'yes' if est.memory.fits else 'no'} |")
    print()
    print("Article: 56 GB fixed (14 weights + 14 gradients + 28 optimizer) + 9 GB activations = 65 GB")


if __name__ == "__main__":
    main()
