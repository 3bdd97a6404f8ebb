"""Write InternEvo's 7B scaling table as spot-benchmark cases (the shared/ground_truth case schema).

    python tools/build_internevo_cases.py [--out benchmarks/data/internevo_cases.json]

InternLM/InternEvo doc/en/train_performance.md @3a665e88 ("Throughput Measurement"): tokens per GPU per second
(TGS) of the 7B model on 8 to 1,024 A100-SXM4-80GB GPUs, "Inter-machine bandwidth 4 * 100Gb RoCE", for four
parallel configurations: tensor parallel 1 or 2, and the optimizer states sharded over all data-parallel ranks
(`zero1=-1`, "equivalent to Deepspeed Zero-1") or within one node (`zero1=8` at tp 1, `zero1=4` at tp 2).
"the number of tokens processed per GPU in a single iteration remained consistent": micro_num 4 micro-batches
of micro_bsz 2 (tp 1) or 4 (tp 2) packed 2,048-token samples, `pack_sample_into_one=False` (each sample attends
within itself: the packed dataset's cu_seqlens) and `checkpoint=False`.

What the document does not state, and is said in each case's notes: the 7B model is InternLM-7B (the
document comes from the InternLM repository of 2023; its configs/7B_sft.py sizes are InternLM-7B's: hidden
4096, 32 layers, 32 heads, vocab 103168, MLP ratio 8/3 rounded to 11008), bf16 (the configs' dtype and the
document's FLOPS section), flash attention (the document: "deeply integrates Flash-Attention"), and samples
filling their 2,048 tokens (the TGS counts tokens; a shorter sample only shortens its attention span). The
hybrid `zero1=8` sharding (optimizer states within a node, gradients all-reduced across nodes) is read as
ZeRO-1: the same bytes cross the network per step, so the step is timed the same for both settings, which the
table's two rows at 1,024 GPUs (2,271 against 3,625 TGS at tp 1) say it is not. Nothing is fitted to the rows.
"""

from __future__ import annotations

from case_rows import BF16_PRETRAIN_PRECISION, catalog_model, github_source, run_builder

COMMIT = "3a665e88d3ef58dda85fb20ebe4e0d7e402ce4d3"
PATH = "doc/en/train_performance.md"
GPUS = (8, 16, 32, 64, 128, 256, 512, 1024)
# (tp, zero1, micro_bsz, the row as the document prints it, TGS per GPU count)
TABLE = (
    (1, -1, 2, "(tp=1, zero1=-1)", (4062, 3842, 3752, 3690, 3571, 3209, 2861, 2271)),
    (1, 8, 2, "(tp=1, zero1=8)", (4078, 3939, 3919, 3944, 3928, 3920, 3835, 3625)),
    (2, -1, 4, "(tp=2, zero1=-1)", (3822, 3595, 3475, 3438, 3308, 3094, 2992, 2785)),
    (2, 4, 4, "(tp=2, zero1=4)", (3761, 3658, 3655, 3650, 3651, 3653, 3589, 3486)),
)
MICRO_NUM, SEQ = 4, 2048
ABOUT = ("InternEvo's 7B throughput table (doc/en/train_performance.md @3a665e88), tokens per GPU per second on "
         "8-1,024 A100-SXM4-80GB over 4 x 100Gb RoCE a node, written in the shared/ground_truth case schema "
         "(tools/build_internevo_cases.py, whose docstring says what the document does not state). Nothing is "
         "fitted to them.")


def case(tp: int, zero1: int, micro_bsz: int, row: str, gpus: int, tgs: int) -> dict:
    dp = gpus // tp
    shard = "all data-parallel ranks" if zero1 == -1 else f"{zero1} GPUs (within a node)"
    return {
        "id": f"internevo-7b-tp{tp}-zero1_{'all' if zero1 == -1 else zero1}-{gpus}gpu",
        "kind": "time",
        "model": catalog_model("InternLM-7B", "internlm/internlm-7b", 7),
        "method": "pretrain", "lora": None, "quantization": None,
        "precision": dict(BF16_PRETRAIN_PRECISION),
        "optimizer": "AdamW", "micro_batch": micro_bsz, "grad_accum": MICRO_NUM,
        "global_batch": micro_bsz * MICRO_NUM * dp, "seq_len": SEQ,
        "seq_len_note": f"micro_bsz {micro_bsz} samples of up to {SEQ} tokens packed into one row "
                        "(pack_sample_into_one=False: each attends within itself)",
        "grad_ckpt": False, "attention": "flash-attn (varlen over the packed samples)",
        "gpus": {"type": "NVIDIA A100-SXM4-80GB", "count": gpus},
        "parallel": {"zero_stage": 1, "fsdp": None, "tp": tp, "pp": 1, "dp": dp, "cp": 1, "ep": None, "sp": False,
                     "offload": None, "other": f"InternEvo zero1={zero1}: optimizer states sharded over {shard}"},
        "framework": "InternEvo (Hybrid ZeRO; sequence_parallel=False)",
        "measured": {"tokens_per_s_per_gpu": float(tgs), "what": "TGS (tokens per GPU per second)"},
        "source": github_source("InternLM/InternEvo", COMMIT, PATH, "Throughput Measurement table",
                                f"{row} | " + " | ".join(str(v) for v in TABLE[[r[3] for r in TABLE].index(row)][4])),
        "confidence": "medium",
        "notes": ("Inter-machine bandwidth 4 * 100Gb RoCE (the document's hardware table). The 7B model read as "
                  "InternLM-7B, bf16 and flash attention as the document and its configs state them; samples "
                  "taken as filling their 2,048 tokens. zero1 sharding within a node read as ZeRO-1 over all "
                  "ranks (the same gradient bytes cross the network)."),
    }


def cases() -> list[dict]:
    return [case(tp, zero1, mb, row, gpus, tgs) for tp, zero1, mb, row, values in TABLE
            for gpus, tgs in zip(GPUS, values)]


def main() -> None:
    run_builder(__doc__, "internevo_cases.json", ABOUT, cases)


if __name__ == "__main__":
    main()
