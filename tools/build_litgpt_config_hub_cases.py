"""Write LitGPT's config-hub fine-tuning table as spot-benchmark cases (the shared/ground_truth case schema).

    python tools/build_litgpt_config_hub_cases.py [--out benchmarks/data/litgpt_config_hub_cases.json]

Lightning-AI/litgpt config_hub/finetune/README.md @26857050 ("Config files" table): each provided config
(LoRA, QLoRA, full) run on the Alpaca2k dataset on AWS A10G machines ("All experiments were conducted using
bfloat-16 precision on the Alpaca2k dataset"), with its training runtime and peak memory. Each row is the
commit that last wrote it (`git blame`), and each row's settings are that commit's config file
config_hub/finetune/<config>:

* precision bf16-true (bf16 weights and AdamW states), `quantize: bnb.nf4` for QLoRA (Fabric's
  BitsandbytesPrecision, 4-bit NF4 base, no double quantization), lora_r / lora_alpha and the lora_query /
  lora_key / lora_value / lora_projection / lora_mlp / lora_head switches (litgpt/lora.py: lora_mlp adapts every
  MLP linear, lora_head the output head);
* devices, global_batch_size, micro_batch_size, epochs, max_steps, max_seq_length 512, eval.interval and
  eval.max_iters;
* the optimizer: torch.optim.AdamW, bitsandbytes PagedAdamW under BitsandbytesPrecision (finetune/lora.py at
  5895df10: `optimizer_cls = bnb.optim.PagedAdamW`).

What the run did, from the code of the same commit (litgpt/finetune/lora.py and full.py `fit`):

* Alpaca2k (litgpt/data/alpaca_2k.py: mhenrichsen/alpaca_2k_test, 2,000 Alpaca samples, val_split_fraction 0.05):
  1,900 training and 100 validation samples, each its own length, a micro-batch padded to its longest sample and
  truncated to max_seq_length (litgpt/data/base.py `_sft_collate_fn`); no packing;
* micro-batches: epochs x ceil(1,900 / devices / micro_batch_size) a rank, one optimizer step every
  global_batch_size / (devices x micro_batch_size) of them, up to max_steps; the table's "Training runtime" is
  the run's `Training time` (time.perf_counter around `fit`), which also holds a 2-batch validation sanity check
  at the start and, every eval.interval optimizer steps, a validation of min(eval.max_iters, its loader's
  batches) micro-batches (forward only) and one generated sample of up to 100 tokens;
* full fine-tunes on more than one device run FSDP (FSDPStrategy, auto_wrap_policy and
  activation_checkpointing_policy {Block}, full shard); one device runs the plain model, without activation
  checkpointing, as every LoRA / QLoRA config does.

Each case's measured block is the runtime with the run's optimizer steps and evaluated samples
(`train_time_min`, `steps`, `eval_samples`); the generated samples (a few seconds each) and checkpoint saves
of LoRA weights (megabytes) are not in it, and the notes say so.

Rows not written, each for a reason the row itself gives:
* OOM rows (no runtime);
* the "4xA10G" repeat of a single-device config (devices: 1, the same runtime within 0.7%; "All runs are
  single-GPU experiments" unless the config says otherwise): the 1xA10G row is the run;
* full fine-tunes whose peak memory is below what their model's bf16 weights, gradients and two AdamW states
  take alone on one device under the code of that commit (llama-3.2-1b, llama-3.2-3b and phi-3 full on 1xA10G:
  8.70 GB < 11.99 GB, 16.51 GB < 28.85 GB, 17.01 GB < 30.57 GB): the row cannot be the configuration it
  names.

What the document does not state, and each case's notes say: the sample lengths (the catalog's Alpaca length
distribution, counted with the Qwen2.5 tokenizer and ms-swift's template, stands in for the model's own tokenizer
and litgpt's Alpaca prompt) and the machine's PCIe topology (AWS g5: A10G on PCIe, no NVLink). litgpt keeps a
separate lm_head copy for tied-embedding models (scripts/convert_hf_checkpoint.py copies wte into lm_head); the
catalog's tied models are read as tied. Nothing is fitted to the rows.
"""

from __future__ import annotations

import math

from case_rows import github_source, run_builder

COMMIT = "26857050fe3ff627cd714fe92f5838f51a3d5efa"
REPO, PATH = "Lightning-AI/litgpt", "config_hub/finetune/README.md"
TRAIN_SAMPLES, VAL_SAMPLES, SEQ = 1900, 100, 512
ABOUT = ("LitGPT's config-hub fine-tuning table (config_hub/finetune/README.md @26857050): LoRA, QLoRA and full "
         "fine-tunes of 1-9B models on Alpaca2k on A10G, training runtime and peak memory, each row's settings from "
         "its config file at the commit that wrote the row (tools/build_litgpt_config_hub_cases.py, whose docstring "
         "says what the document does not state). Nothing is fitted to them.")

# model -> (name, hf_id, params_b, layers, hidden, heads, kv_heads, intermediate, padded vocab): litgpt/config.py at
# 00af8b0d (Config.from_name: n_layer, n_embd, n_head, n_query_groups, intermediate_size, padded_vocab_size)
MODELS = {
    "falcon-7b": ("Falcon-7B", "tiiuae/falcon-7b", 7.2, 32, 4544, 71, 1, 18176, 65024),
    "gemma-2b": ("Gemma-2B", "google/gemma-2b", 2.5, 18, 2048, 8, 1, 16384, 256000),
    "gemma-7b": ("Gemma-7B", "google/gemma-7b", 8.5, 28, 3072, 16, 16, 24576, 256000),
    "gemma-2-2b": ("Gemma-2-2B", "google/gemma-2-2b", 2.6, 26, 2304, 8, 4, 9216, 256000),
    "gemma-2-9b": ("Gemma-2-9B", "google/gemma-2-9b", 9.2, 42, 3584, 16, 8, 14336, 256000),
    "llama-2-7b": ("Llama-2-7B", "meta-llama/Llama-2-7b-hf", 6.7, 32, 4096, 32, 32, 11008, 32000),
    "llama-3-8b": ("Llama-3-8B", "meta-llama/Meta-Llama-3-8B", 8.0, 32, 4096, 32, 8, 14336, 128256),
    "llama-3.1-8b": ("Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B", 8.0, 32, 4096, 32, 8, 14336, 128256),
    "llama-3.2-1b": ("Llama-3.2-1B", "meta-llama/Llama-3.2-1B", 1.2, 16, 2048, 32, 8, 8192, 128256),
    "llama-3.2-3b": ("Llama-3.2-3B", "meta-llama/Llama-3.2-3B", 3.2, 28, 3072, 24, 8, 8192, 128256),
    "mistral-7b-v0.2": ("Mistral-7B-v0.2", "unsloth/Mistral-7B-v0.2", 7.2, 32, 4096, 32, 8, 14336, 32000),
    "mistral-7b": ("Mistral-7B-v0.1", "mistralai/Mistral-7B-v0.1", 7.2, 32, 4096, 32, 8, 14336, 32000),
    "phi-2": ("Phi-2", "microsoft/phi-2", 2.8, 32, 2560, 32, 32, 10240, 51200),
    "phi-3": ("Phi-3-mini-4k-instruct", "microsoft/Phi-3-mini-4k-instruct", 3.8, 32, 3072, 32, 32, 8192, 32064),
    "stablelm-base-alpha-3b": ("stablelm-base-alpha-3b", "stabilityai/stablelm-base-alpha-3b", 3.6, 16, 4096, 32,
                               32, 16384, 50688),
    "tiny-llama": ("TinyLlama-1.1B", "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", 1.1, 22, 2048, 32, 4,
                   5632, 32000),
}
QV = ("query", "value")
ALL = ("query", "key", "value", "projection", "mlp", "head")
# (config as the table names it, model, commit that wrote the row, table's machine, runtime min, peak GB,
#  config settings: devices, lora_r, lora_alpha, targets, quantize, global batch, micro batch, epochs,
#  max_steps, eval interval, eval max_iters)
ROWS = (
    ("falcon-7b/lora.yaml", "falcon-7b", "5895df10", "1xA10G", 24.84, 16.69, 1, 32, 16, QV, None, 8, 1, 4, None, 100, 100),
    ("falcon-7b/qlora.yaml", "falcon-7b", "5895df10", "1xA10G", 50.85, 9.44, 1, 32, 16, QV, "bnb.nf4", 8, 1, 4, None, 100, 100),
    ("gemma-2b/full.yaml", "gemma-2b", "5895df10", "4xA10G", 14.06, 17.43, 4, None, None, (), None, 16, 1, 1, 50, 25, 100),
    ("gemma-2b/lora.yaml", "gemma-2b", "5895df10", "1xA10G", 9.41, 12.62, 1, 8, 16, ALL, None, 6, 2, 2, None, 25, 100),
    ("gemma-2b/qlora.yaml", "gemma-2b", "5895df10", "1xA10G", 12.91, 11.58, 1, 16, 16, ALL, "bnb.nf4", 6, 2, 2, None, 25, 100),
    ("gemma-7b/qlora.yaml", "gemma-7b", "e5493986", "1xA10G", 43.58, 17.18, 1, 16, 16, ALL, "bnb.nf4", 6, 1, 2, None, 25, 100),
    ("gemma2-2b/lora.yaml", "gemma-2-2b", "2b195c7f", "1xA10G", 11.96, 14.31, 1, 8, 16, ALL, None, 6, 2, 2, None, 25, 100),
    ("gemma2b/qlora.yaml", "gemma-2-2b", "00af8b0d", "1xA10G", 16.06, 13.52, 1, 16, 16, ALL, "bnb.nf4", 6, 2, 2, None, 25, 100),
    ("gemma2-9b/qlora.yaml", "gemma-2-9b", "2b195c7f", "1xA10G", 50.01, 20.92, 1, 16, 16, ALL, "bnb.nf4", 6, 1, 2, None, 25, 100),
    ("llama-2-7b/lora.yaml", "llama-2-7b", "5895df10", "1xA10G", 32.82, 19.77, 1, 32, 16, QV, None, 8, 2, 4, None, 100, 100),
    ("llama-2-7b/qlora.yaml", "llama-2-7b", "5895df10", "1xA10G", 45.67, 13.68, 1, 32, 16, QV, "bnb.nf4", 8, 2, 4, None, 100, 100),
    ("llama-3-8b/lora.yaml", "llama-3-8b", "5895df10", "1xA10G", 14.79, 19.73, 1, 32, 16, QV, None, 8, 1, 2, None, 100, 100),
    ("llama-3-8b/qlora.yaml", "llama-3-8b", "5895df10", "1xA10G", 22.24, 17.41, 1, 32, 16, QV, "bnb.nf4", 8, 2, 2, None, 100, 100),
    ("llama-3.1-8b/lora.yaml", "llama-3.1-8b", "fd71063c", "1xA10G", 13.36, 19.73, 1, 32, 16, QV, None, 8, 1, 2, None, 100, 100),
    ("llama-3.1-8b/qlora.yaml", "llama-3.1-8b", "fd71063c", "1xA10G", 21.81, 17.41, 1, 32, 16, QV, "bnb.nf4", 8, 2, 2, None, 100, 100),
    ("llama-3.2-1b/lora.yaml", "llama-3.2-1b", "00af8b0d", "1xA10G", 4.17, 4.49, 1, 32, 16, QV, None, 8, 1, 2, None, 100, 100),
    ("llama-3.2-1b/qlora.yaml", "llama-3.2-1b", "00af8b0d", "1xA10G", 6.20, 5.53, 1, 32, 16, QV, "bnb.nf4", 8, 2, 2, None, 100, 100),
    ("llama-3.2-3b/lora.yaml", "llama-3.2-3b", "00af8b0d", "1xA10G", 8.31, 9.67, 1, 32, 16, QV, None, 8, 1, 2, None, 100, 100),
    ("llama-3.2-3b/qlora.yaml", "llama-3.2-3b", "00af8b0d", "1xA10G", 14.89, 10.30, 1, 32, 16, QV, "bnb.nf4", 8, 2, 2, None, 100, 100),
    ("mistral-7b-v0.2/lora.yaml", "mistral-7b-v0.2", "5895df10", "1xA10G", 31.00, 20.66, 1, 32, 16, QV, None, 8, 2, 4, None, 100, 100),
    ("mistral-7b-v0.2/qlora.yaml", "mistral-7b-v0.2", "5895df10", "1xA10G", 44.75, 14.29, 1, 32, 16, QV, "bnb.nf4", 8, 2, 4, None, 100, 100),
    ("mistral-7b/lora.yaml", "mistral-7b", "5895df10", "1xA10G", 31.01, 20.66, 1, 32, 16, QV, None, 8, 2, 4, None, 100, 100),
    ("mistral-7b/qlora.yaml", "mistral-7b", "5895df10", "1xA10G", 44.75, 14.29, 1, 32, 16, QV, "bnb.nf4", 8, 2, 4, None, 100, 100),
    ("phi-2/full.yaml", "phi-2", "5895df10", "4xA10G", 11.87, 14.44, 2, None, None, (), None, 8, 4, 1, 100, 25, 100),
    ("phi-2/lora.yaml", "phi-2", "5895df10", "1xA10G", 3.78, 13.98, 1, 8, 16, ALL, None, 8, 4, 1, None, 100, 100),
    ("phi-2/qlora.yaml", "phi-2", "5895df10", "1xA10G", 4.51, 14.27, 1, 8, 16, ALL, "bnb.nf4", 8, 4, 1, None, 100, 100),
    ("phi-3/lora.yaml", "phi-3", "f247be87", "1xA10G", 6.46, 19.75, 1, 8, 16, ALL, None, 8, 4, 1, None, 100, 100),
    ("phi-3/qlora.yaml", "phi-3", "f247be87", "1xA10G", 7.47, 19.13, 1, 8, 16, ALL, "bnb.nf4", 8, 4, 1, None, 100, 100),
    ("stablelm-base-alpha-3b/full.yaml", "stablelm-base-alpha-3b", "5895df10", "4xA10G", 70.13, 21.23, 2, None, None,
     (), None, 8, 1, 1, None, 25, 100),
    ("stablelm-base-alpha-3b/lora.yaml", "stablelm-base-alpha-3b", "5895df10", "1xA10G", 13.07, 8.58, 1, 32, 16, QV,
     None, 8, 1, 4, None, 100, 100),
    ("stablelm-base-alpha-3b/qlora.yaml", "stablelm-base-alpha-3b", "5895df10", "1xA10G", 25.86, 5.24, 1, 32, 16, QV,
     "bnb.nf4", 8, 1, 4, None, 100, 100),
    ("tiny-llama/full.yaml", "tiny-llama", "5895df10", "1xA10G", 2.58, 14.10, 1, None, None, (), None, 32, 4, 1, None, 25, 100),
    ("tiny-llama/lora.yaml", "tiny-llama", "5895df10", "1xA10G", 8.09, 13.50, 1, 32, 16, ALL, None, 8, 8, 3, None, 100, 100),
    ("tiny-llama/qlora.yaml", "tiny-llama", "5895df10", "1xA10G", 8.70, 16.24, 1, 32, 16, ALL, "bnb.nf4", 8, 8, 3, None, 100, 100),
)


def run_length(devices: int, global_batch: int, micro: int, epochs: int, max_steps: int | None,
               interval: int, max_iters: int) -> tuple[float, int, int]:
    """(optimizer steps, validations, samples evaluated over all ranks) of litgpt's `fit` (module docstring)."""
    accum = global_batch // (devices * micro)
    micro_steps = epochs * math.ceil(TRAIN_SAMPLES / devices / micro)
    steps = micro_steps / accum if max_steps is None else min(max_steps, micro_steps / accum)
    validations = int(steps // interval)
    val_batches = min(max_iters, math.ceil(VAL_SAMPLES / devices / micro))
    sanity = min(2, val_batches)
    return steps, validations, (validations * val_batches + sanity) * micro * devices


def case(config: str, model: str, commit: str, machine: str, runtime_min: float, peak_gb: float, devices: int,
         rank: int | None, alpha: int | None, targets: tuple[str, ...], quantize: str | None, global_batch: int,
         micro: int, epochs: int, max_steps: int | None, interval: int, max_iters: int) -> list[dict]:
    """The row's time case and its memory case."""
    name, hf_id, params_b, layers, hidden, heads, kv, inter, vocab = MODELS[model]
    method = "full" if rank is None else ("qlora" if quantize else "lora")
    steps, validations, eval_samples = run_length(devices, global_batch, micro, epochs, max_steps, interval,
                                                  max_iters)
    fsdp = "FSDP full shard (Fabric FSDPStrategy, auto_wrap_policy {Block})" if devices > 1 else None
    base = {
        "id": f"litgpt-config-hub-{config.replace('/', '-').removesuffix('.yaml')}-{devices}xa10g",
        "model": {"name": name, "hf_id": hf_id, "params_b": params_b, "layers": layers, "hidden": hidden,
                  "heads": heads, "kv_heads": kv, "intermediate": inter, "vocab": vocab, "tied_embeddings": None,
                  "moe": None, "arch_source": "litgpt/config.py (Lightning-AI/litgpt@00af8b0d); vocab = "
                                              "padded_vocab_size"},
        "method": method,
        "lora": None if rank is None else {"rank": rank, "alpha": alpha, "targets": list(targets)},
        "quantization": None if not quantize else {"type": "bnb-nf4", "double_quant": False, "compute_dtype": "bf16"},
        "precision": {"weights": "nf4 (base) / bf16 (LoRA)" if quantize else "bf16", "compute": "bf16",
                      "master_weights": None, "optimizer_states": "bf16 (params bf16-true)"},
        "optimizer": "bnb.optim.PagedAdamW" if quantize else "torch.optim.AdamW",
        "micro_batch": micro, "grad_accum": global_batch // (devices * micro), "global_batch": global_batch,
        "seq_len": SEQ,
        "seq_len_note": ("max_seq_length 512: Alpaca2k's 1,900 training samples (alpaca samples, "
                         "mhenrichsen/alpaca_2k_test) each its own length, a micro-batch padded to its longest "
                         "and truncated to 512, unpacked"),
        "grad_ckpt": "full (FSDP activation_checkpointing_policy {Block})" if devices > 1 else False,
        "attention": "torch SDPA (litgpt default)",
        "gpus": {"type": "A10G", "count": devices},
        "parallel": {"zero_stage": None, "fsdp": fsdp, "tp": 1, "pp": 1, "dp": devices, "cp": 1, "ep": None,
                     "sp": None, "offload": None, "other": None},
        "framework": f"litgpt (Lightning Fabric) commit {commit}, --precision bf16-true, packing=false",
        "source": github_source(REPO, COMMIT, PATH, f"Config files table, row written at {commit}",
                                f"| {config} | {model} | {epochs} | 512 | {micro} | {machine} | "
                                f"{runtime_min:.2f} min | ... | {peak_gb:.2f} GB |"),
        "confidence": "medium",
        "notes": (f"Settings from config_hub/finetune/{config} at {commit}: devices {devices}, global batch "
                  f"{global_batch}, {epochs} epoch(s){f', max_steps {max_steps}' if max_steps else ''}, "
                  f"{validations} validation(s) of up to {max_iters} micro-batches every {interval} steps plus a "
                  f"2-batch sanity check ({eval_samples} samples, forward only). Not in the measured block's "
                  "model: one generated sample of up to 100 tokens a validation; checkpoint saves. Sample lengths: "
                  "the catalog's Alpaca distribution (Qwen2.5 tokenizer, ms-swift template) for the model's own "
                  "tokenizer and litgpt's Alpaca prompt." + (" The table's machine has 4 A10G; the config runs "
                                                              f"{devices}." if machine == "4xA10G" else "")),
    }
    time = {"train_time_min": runtime_min, "steps": round(steps, 2), "eval_samples": eval_samples,
            "what": "Training runtime (litgpt's `Training time`: fit() with its validations) over the run's optimizer "
                    "steps"}
    memory = {"peak_mem_gib": round(peak_gb * 1e9 / 2**30, 3), "reported_value": peak_gb, "reported_unit": "GB",
              "unit_basis": "1e9 bytes", "scope": "per_gpu",
              "what": "Peak memory: torch.cuda.max_memory_allocated()/1e9 (finetune/*.py prints 'Memory used'), "
                      "validations and generation included"}
    def one(kind: str, measured: dict) -> dict:
        out = {"id": f"{base['id']}-{kind}", "kind": kind}
        for key, value in base.items():
            if key != "id":
                out[key] = value
            if key == "framework":      # the schema's order: measured after framework
                out["measured"] = measured
        return out

    return [one("time", time), one("memory", memory)]


def cases() -> list[dict]:
    return [c for row in ROWS for c in case(*row)]


def main() -> None:
    run_builder(__doc__, "litgpt_config_hub_cases.json", ABOUT, cases)


if __name__ == "__main__":
    main()
