"""Write PEFT's MetaMathQA method comparison as spot-benchmark cases (the shared/ground_truth case schema).

    python tools/build_peft_method_comparison_cases.py [--out benchmarks/data/peft_method_comparison_cases.json]

huggingface/peft method_comparison/MetaMathQA @5d602fdb: each experiment fine-tunes Llama-3.2-3B on MetaMathQA for
5,000 steps on one GPU and writes its timings to results/<experiment>.json. The results of commit 51c2ff66 ("Update
MetaMAthQA results", 2026-07-20) were all run anew with torch 2.13.0+cu130, transformers 5.13.1 and peft
0.19.2.dev0 on one "NVIDIA L40S" (meta_info.system_info.accelerator). What the run did, from run.py, utils.py, data.py
and default_training_params.json of that tree:

* a plain PyTorch loop (run.py `train`), no Trainer: the model loaded in bfloat16 (`dtype: bfloat16`, use_amp false:
  no autocast, torch AdamW over bf16 parameters keeps bf16 states), peft's autocast_adapter_dtype true (LoRA weights
  in fp32), no gradient checkpointing (use_gc false), no compile, attn_implementation null (transformers' default,
  SDPA), grad_norm_clip 1.0, AdamW lr 1e-4 (1e-5 for the full fine-tune), weight decay 0.1;
* batch_size 4, no gradient accumulation: one optimizer step a batch;
* the training samples: MetaMathQA rows of at most 1,300 characters (data.py CHAR_LIMIT), in the dataset's order, the
  query template "Question: {query} Think step by step.\\nAnswer:" and the response, tokenized and truncated at 768
  tokens; BucketIterator sorts each bucket of 80 samples (batch_size x BUCKET_FACTOR 20) by length and cuts it into
  batches of 4, each padded to its longest (tokenizer.pad, right side), unpacked;
* each step timed alone: time.perf_counter around padding and copying the batch, forward, backward,
  clip_grad_norm_, the optimizer and scheduler steps and loss.item() (a synchronisation); the 250 step times of a
  window summed as its "train time", the window's tokens (each sample's tokens + 1 for its EOS) as "tokens / sec";
  evaluations and the test set run outside these windows. torch.cuda.empty_cache() every 10 steps runs outside them
  too.

Each case's measured step time is the 20 windows' "train time" summed over the 5,000 steps; its sequence length the
run's mean sample: ("train total tokens" - one EOS a sample) / "train samples" = (4,198,051 - 20,000) / 20,000 =
208.9 tokens. The padding of a sorted batch to its longest is not counted (batches of neighbours in length).

Experiments written: the full fine-tune and the LoRA experiments that are LoRA as trainplan models it (q/v or MLP
targets, rsLoRA, DoRA). Not written: methods trainplan has no model of (IA3, prompt and prefix tuning, OFT, BOFT, VeRA,
LoHa, LoKr, ...) and LoRA variants whose layers or optimizer differ (LoRA-FA, MiCA, block-diagonal LoRA). Memory is
not written: the printed peak (accelerator_memory_max) is max_memory_reserved over the whole run, evaluation
generation at batch 50 included, and the longest training batch is not printed. Nothing is fitted to them.
"""

from __future__ import annotations

from case_rows import catalog_model, github_source, run_builder

COMMIT = "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40"
RESULTS_COMMIT = "51c2ff666b142d004c12609c9686cf17ca055751"
REPO = "huggingface/peft"
STEPS, SAMPLES, TOKENS_COUNTED, MICRO_BATCH = 5000, 20000, 4198051, 4
SEQ = round((TOKENS_COUNTED - SAMPLES) / SAMPLES)
ABOUT = ("PEFT's MetaMathQA method comparison (huggingface/peft method_comparison/MetaMathQA, results of 51c2ff66): "
         "Llama-3.2-3B full and LoRA fine-tunes in a plain PyTorch loop on one L40S, 5,000 steps of 4 samples, the "
         "step time each results file prints (tools/build_peft_method_comparison_cases.py, whose docstring says "
         "what the run did and what is left out). Nothing is fitted to them.")

# (experiment, sum of the 20 windows' "train time" in s, LoRA rank, alpha, targets, use_rslora, use_dora):
# results/<experiment>.json at RESULTS_COMMIT (train_info.metrics, run_info.peft_config)
ROWS = (
    ("full-finetuning--llama-3.2-3B-lr_0.00001", 1812.971, None, None, (), False, False),
    ("lora--llama-3.2-3B-rank32", 585.191, 32, 64, ("v_proj", "q_proj"), False, False),
    ("lora--llama-3.2-3B-rank64", 594.485, 64, 128, ("q_proj", "v_proj"), False, False),
    ("lora--llama-3.2-3B-rank64-rslora", 595.871, 64, 64, ("v_proj", "q_proj"), True, False),
    ("lora--llama-3.2-3B-rank10-target-mlp", 665.441, 10, 20, ("up_proj", "gate_proj", "down_proj"), False, False),
    ("lora--llama-3.2-3B-rank32-dora", 706.613, 32, 64, ("q_proj", "v_proj"), False, True),
)


def case(experiment: str, train_time_s: float, rank: int | None, alpha: int | None, targets: tuple[str, ...],
         rslora: bool, dora: bool) -> dict:
    """The experiment's time case."""
    path = f"method_comparison/MetaMathQA/results/{experiment}.json"
    lora = None if rank is None else {"rank": rank, "alpha": alpha, "targets": list(targets), "dropout": 0.0,
                                      "use_rslora": rslora, "use_dora": dora}
    return {
        "id": f"peft-mc-{experiment.removeprefix('lora--').removeprefix('full-finetuning--')}"
              f"{'-full' if rank is None else ''}",
        "kind": "time",
        "model": catalog_model("Llama-3.2-3B", "meta-llama/Llama-3.2-3B", 3.2),
        "method": "full" if rank is None else "lora",
        "lora": lora,
        "quantization": None,
        "precision": {"weights": "bf16" if rank is None else "bf16 (base) / fp32 (LoRA, autocast_adapter_dtype)",
                      "compute": "bf16 (no autocast, use_amp false)", "master_weights": None,
                      "optimizer_states": "bf16 (torch AdamW over bf16 parameters)"},
        "optimizer": "torch.optim.AdamW",
        "micro_batch": MICRO_BATCH, "grad_accum": 1, "global_batch": MICRO_BATCH,
        "seq_len": SEQ,
        "seq_len_note": (f"mean MetaMathQA sample of the run: ({TOKENS_COUNTED:,} train total tokens - {SAMPLES:,} "
                         f"counted EOS) / {SAMPLES:,} samples; truncated at 768 (max_seq_length), each batch of 4 "
                         "length-sorted neighbours padded to its longest (BucketIterator), padding not counted"),
        "grad_ckpt": False,
        "attention": "sdpa (attn_implementation null: transformers' default)",
        "gpus": {"type": "L40S", "count": 1},
        "parallel": {"zero_stage": None, "fsdp": None, "tp": 1, "pp": 1, "dp": 1, "cp": 1, "ep": None, "sp": None,
                     "offload": None, "other": None},
        "framework": "plain PyTorch loop (PEFT method_comparison/MetaMathQA run.py), transformers 5.13.1, "
                     "peft 0.19.2.dev0, torch 2.13.0",
        "measured": {"step_time_s": round(train_time_s / STEPS, 6),
                     "what": f"sum of the 20 windows' 'train time' ({train_time_s} s) / {STEPS:,} steps: each step "
                             "timed alone (batch padding and copy, forward, backward, clip, AdamW, loss.item())"},
        "source": github_source(REPO, RESULTS_COMMIT, path, "train_info.metrics (20 windows of 250 steps)",
                                f"\"train total tokens\": {TOKENS_COUNTED}"),
        "confidence": "high",
        "notes": ("One NVIDIA L40S (meta_info.system_info.accelerator). Settings from run_info.train_config and "
                  "peft_config of the results file; the loop from run.py / utils.py at "
                  f"{COMMIT[:8]}: no gradient accumulation, no gradient checkpointing, no compile, "
                  "torch.cuda.empty_cache() every 10 steps outside the timed steps."),
    }


def cases() -> list[dict]:
    return [case(*row) for row in ROWS]


def main() -> None:
    run_builder(__doc__, "peft_method_comparison_cases.json", ABOUT, cases)


if __name__ == "__main__":
    main()
