"""Write Megatron-LM README's H100 scaling results as spot-benchmark rows (launch scripts read with --from).

    python tools/build_megatron_lm_scaling.py [--out benchmarks/data/megatron_lm_scaling.json]

NVIDIA/Megatron-LM README.md, "Performance Benchmarking" (text at cde92b27ac, 2025-08-14; the table is the
image images/model_table.png, last changed at f2e5db402c, 2024-07-15, Megatron-Core r0.8.0 as the strong-scaling
chart's legend says): GPT models of 1.7B to 462B on H100, each row's attention heads, hidden size, layers,
tensor / pipeline / data-parallel sizes, GPU count, batch size (sequences), per-GPU teraFLOP/s and MFU. The
table is an image: its numbers are transcribed below, row by row (TABLE). The README's text states the rest:
"Vocabulary size: 131,072 tokens", "Sequence length: 4,096 tokens", "Fine-grained overlapping with DP
(`--overlap-grad-reduce`, `--overlap-param-gather`), TP (`--tp-comm-overlap`), and PP (enabled by default)",
and the strong-scaling run: "the standard GPT-3 model (slightly more than 175 billion parameters due to larger
vocabulary size) from 96 H100 GPUs to 4,608 GPUs, using the same batch size of 1,152 sequences throughout ...
a reduction in MFU from 47% to 42%" (its two end points are rows too, at the 177B row's layout).

Each row becomes a `pretrain_gpt.py` script under `srun` with those flags; what the README does not state is
Megatron-LM's default or what the stated flags require, and is said in `about`:
* the block is Megatron's GPT (its defaults: LayerNorm, GELU MLP of 4h, learned positions) with the embedding
  and output layer untied (--untie-embeddings-and-output-weights): the row sizes say so, e.g. 177B = 12 x 96 x
  12288^2 (173.9B) + 2 x 131072 x 12288 (3.2B), and 1.7B = 1.21B + 2 x 0.27B; tied, they would be 175.5B / 1.5B;
* --tp-comm-overlap needs --sequence-parallel, --overlap-param-gather the distributed optimizer: both on;
* bf16 (the MFU column is the teraFLOP/s column over H100's 989 bf16 TFLOP/s: 465.9 / 989 = 47%);
* micro-batch 1 and no virtual pipeline stages (not stated; Megatron's non-interleaved 1F1B), no recompute
  (Megatron's default).
The measured value is the per-GPU teraFLOP/s (Megatron counts model FLOPs with the full-mask attention, as
trainplan's model TFLOP/s does); the two strong-scaling points give MFU only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT_COMMIT = "cde92b27ac"
IMAGE_COMMIT = "f2e5db402c"
# size, attention heads, hidden, layers, TP, PP, DP, GPUs, batch, per-GPU TFLOP/s, MFU (images/model_table.png)
TABLE = (
    ("1.7B", 16, 2048, 24, 1, 1, 48, 48, 192, 408.8, 0.41),
    ("7.1B", 32, 4096, 30, 2, 1, 48, 96, 192, 465.9, 0.47),
    ("16B", 48, 6144, 32, 4, 1, 48, 192, 192, 489.1, 0.49),
    ("32B", 56, 7168, 48, 8, 1, 48, 384, 192, 459.6, 0.46),
    ("70B", 64, 8192, 84, 8, 2, 48, 768, 384, 419.7, 0.42),
    ("119B", 80, 10240, 92, 8, 4, 48, 1536, 768, 420.5, 0.43),
    ("177B", 96, 12288, 96, 8, 6, 48, 2304, 1152, 432.8, 0.44),
    ("314B", 128, 16384, 96, 8, 8, 48, 3072, 1536, 474.4, 0.48),
    ("462B", 144, 18432, 112, 8, 16, 48, 6144, 3072, 459.9, 0.47),
)
# the strong-scaling end points: GPUs, MFU (README text), at the 177B row's model and TP / PP, batch 1152
STRONG = ((96, 0.47), (4608, 0.42))
VOCAB, SEQ = 131072, 4096


def script(heads: int, hidden: int, layers: int, tp: int, pp: int, gpus: int, batch: int) -> str:
    overlap = " \\\n    --sequence-parallel --tp-comm-overlap" if tp > 1 else ""
    return (f"#!/bin/bash\n#SBATCH --nodes={gpus // 8} --ntasks-per-node=8\n"
            "srun python pretrain_gpt.py \\\n"
            f"    --tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp} \\\n"
            f"    --num-layers {layers} --hidden-size {hidden} --num-attention-heads {heads} \\\n"
            f"    --seq-length {SEQ} --max-position-embeddings {SEQ} --vocab-size {VOCAB} \\\n"
            "    --untie-embeddings-and-output-weights \\\n"
            f"    --micro-batch-size 1 --global-batch-size {batch} \\\n"
            "    --bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"
            f"{overlap} \\\n    --train-iters 100 --lr 1.0e-4\n")


def row(size: str, heads: int, hidden: int, layers: int, tp: int, pp: int, gpus: int, batch: int,
        measured: dict, quote: str) -> dict:
    return {"id": f"MLM_h100_{size}_{gpus}gpu",
            "what": (f"GPT {size}, TP {tp} x PP {pp} x DP {gpus // (tp * pp)}, batch {batch} x {SEQ} tokens, "
                     f"{gpus} H100"),
            "source": {"repo": "NVIDIA/Megatron-LM", "path": "README.md (images/model_table.png, images/"
                       "strong_scaling.png)", "commit": TEXT_COMMIT, "image_commit": IMAGE_COMMIT, "quote": quote},
            "hardware": "H100 SXM (H100 clusters)", "num_gpus": gpus, "launch_name": "pretrain_gpt_h100.sh",
            "launch_text": script(heads, hidden, layers, tp, pp, gpus, batch), "extra_flags": [], **measured}


def rows() -> list[dict]:
    out = []
    for size, heads, hidden, layers, tp, pp, dp, gpus, batch, tflops, mfu in TABLE:
        if tp * pp * dp != gpus:
            raise SystemExit(f"{size}: TP x PP x DP = {tp * pp * dp}, the table says {gpus} GPUs")
        quote = (f"| {size} | {heads} | {hidden} | {layers} | {tp} | {pp} | {dp} | {gpus} | {batch} | {tflops} | "
                 f"{round(mfu * 100)}% |")
        out.append(row(size, heads, hidden, layers, tp, pp, gpus, batch, {"measured_tflops_per_gpu": tflops},
                       quote))
    size, heads, hidden, layers, tp, pp = "177B", 96, 12288, 96, 8, 6
    for gpus, mfu in STRONG:
        quote = ("strong scaling of the GPT-3 model 'from 96 H100 GPUs to 4,608 GPUs, using the same batch size of "
                 f"1,152 sequences throughout ... a reduction in MFU from 47% to 42%': {gpus} GPUs, MFU {mfu:.0%}")
        out.append(row(size, heads, hidden, layers, tp, pp, gpus, 1152, {"measured_mfu": mfu}, quote))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "data" / "megatron_lm_scaling.json")
    args = ap.parse_args()
    about = ("Megatron-LM README's H100 scaling results (GPT 1.7B-462B weak scaling table, images/model_table.png "
             f"@{IMAGE_COMMIT}, and the two end points of the GPT-3 strong-scaling run, README text @{TEXT_COMMIT}), "
             "each row as a pretrain_gpt.py script read with `trainplan estimate --from` on H100 SXM. Stated by the "
             "README: vocabulary 131,072, sequence 4,096, the DP / TP overlap flags, the layout and batch of each "
             "row. Not stated, assumed (tools/build_megatron_lm_scaling.py): bf16, untied embeddings (the sizes "
             "imply it), sequence parallel and the distributed optimizer (the overlap flags need them), micro-batch "
             "1, no virtual pipeline stages, no recompute. Measured: per-GPU teraFLOP/s (model FLOPs, full-mask "
             "attention), MFU for the strong-scaling points. A benchmark, never fitted to.")
    data = {"about": about, "rows": rows()}
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(data['rows'])} rows -> {args.out}")


if __name__ == "__main__":
    main()
