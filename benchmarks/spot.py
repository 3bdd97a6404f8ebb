"""Published throughput runs outside both development sets, each read the way a user would give it:

* benchmarks/data/torchtitan_benchmarks.json: torchtitan's own benchmark files and torchao's float8 table, each
  row's job written as a torchtitan TOML; measured tokens/s per GPU;
* benchmarks/data/swift_benchmarks.json: ms-swift's documented figures, each row's launch script as the
  repository has it; measured seconds per step;
* benchmarks/data/megatron_lm_benchmarks.json: Megatron-LM README's GPT-3 175B iteration time, with the launch
  script of the same commit (srun under #SBATCH) read by `--from`; measured seconds per step;
* benchmarks/data/megatron_lm_scaling.json: Megatron-LM README's H100 scaling table (GPT 1.7B-462B) and its
  strong-scaling end points, each row a pretrain_gpt.py script (tools/build_megatron_lm_scaling.py); measured
  per-GPU teraFLOP/s (MFU for the strong-scaling points);
* benchmarks/data/bigscience_benchmarks.json: BigScience's training runs, their Slurm batch scripts (Megatron-DeepSpeed
  under srun and torch.distributed.run / launch) read unchanged with `--from`: tr1-13B on 512 V100 32GB, BLOOM 176B
  (tr11-176B-ml) and the 7 layouts of BLOOM's reshaping log (the same script with TP, PP, micro-batch and nodes as
  each heading says); measured seconds per iteration from the runs' logs;
* benchmarks/data/xtuner_cases.json: XTuner's speed benchmark (and the LLaMA-Factory runs it compares with),
  written as published cases (the shared/ground_truth schema) and scored the way `trainplan accuracy` scores
  them (raw, no calibration); measured tokens/s per GPU;
* benchmarks/data/xtuner_2024_cases.json: the same benchmark as XTuner's documentation now prints it
  (docs/zh_cn/acceleration/benchmark.rst @7575f2c9), re-measured with use_varlen_attn = False, scored the same way;
* benchmarks/data/nemo_cases.json: NeMo 24.07's performance summary (FP8 pre-training, SFT and LoRA on
  DGX-H100), written and scored the same way;
* benchmarks/data/mbridge_2608_cases.json and mbridge_2604_2606_cases.json: Megatron-Bridge's current
  performance summary (26.08) and its archived 26.04-26.06.01 containers (tools/build_mbridge_cases.py),
  newer than the dev set's, scored the same way;
* benchmarks/data/nemo_long_sequence_cases.json: NeMo's long-sequence tables (context parallel pre-training
  at 4K-1M tokens on DGX-B200 and DGX-H100, tools/build_nemo_long_sequence_cases.py), TFLOPS per GPU;
* benchmarks/data/internevo_cases.json: InternEvo's 7B scaling table (8-1,024 A100s over 4 x 100Gb RoCE a node,
  tools/build_internevo_cases.py), tokens/s per GPU;
* benchmarks/data/xtuner_megatron_moe_cases.json: XTuner's Megatron MoE benchmark (Qwen3-235B-A22B on 256 H800,
  tools/build_xtuner_megatron_moe_cases.py), seconds per iteration;
* benchmarks/data/fms_fsdp_cases.json: fms-fsdp's training throughput table (Llama 2 7B-70B, PyTorch FSDP and
  torch.compile on 128 A100 and 96 H100, tools/build_fms_fsdp_cases.py), tokens/s per GPU;
* benchmarks/data/tinyllama_cases.json: TinyLlama's pre-training throughput (1.1B on 16 A100-40G, FSDP with
  flash-attention's fused kernels, tools/build_tinyllama_cases.py), tokens/s per GPU;
* benchmarks/data/model_card_cases.json: model-card GPU-hours with the layout their reports state (DeepSeek-V3:
  2.664M H800-hours for 14.8T tokens, DualPipe, EP 64), GPU-hours;
* benchmarks/data/automodel_cases.json: NeMo AutoModel's performance summary (MoE and dense pre-training and
  LoRA with PyTorch FSDP2, EP, PP and CP on DGX-H100, tools/build_automodel_cases.py), tokens/s per GPU;
* benchmarks/data/moe_modelzoo_cases.json: the Megatron MoE Model Zoo's Qwen3-235B-A22B results (256 H100, DeepEP or
  alltoall dispatch, tools/build_moe_modelzoo_cases.py), seconds per step;
* benchmarks/data/swift_v1_benchmark_cases.json: ms-swift 1.x's training benchmark (LoRA, QLoRA and full
  fine-tuning on one A100 over cls-fudan-news-zh samples, tools/build_swift_v1_benchmark_cases.py), seconds per step;
* benchmarks/data/colossalai_cases.json: Colossal-AI's LLaMA-2 7B Gemini benchmark (32 A800, written by hand from the
  README and the scripts of one commit), tokens/s over all GPUs;
* benchmarks/data/olmo_core_cases.json: OLMo-core's throughput table (OLMo 1B/7B/13B and Llama 8B pre-training with
  its official scripts: PyTorch FSDP2, torch.compile, torchao float8 on request, on H100,
  tools/build_olmo_core_cases.py), tokens/s per device;
* benchmarks/data/litgpt_config_hub_cases.json: LitGPT's config-hub fine-tuning table (LoRA, QLoRA and full fine-tunes
  of 1-9B models on Alpaca2k on A10G, each row's settings from its config file, tools/build_litgpt_config_hub_cases.py),
  the run's wall time with its validations, and its peak memory;
* benchmarks/data/peft_method_comparison_cases.json: PEFT's MetaMathQA method comparison (Llama-3.2-3B full, LoRA,
  rsLoRA and DoRA fine-tunes in a plain PyTorch loop on one L40S, tools/build_peft_method_comparison_cases.py),
  seconds per step.

Every row runs `trainplan estimate --from FILE --gpu G --num-gpus N --nodes M` (M: the row's `nodes`, else N / 8) on the
GPU its hardware text names (trainplan's GPU-name rule) and is scored against what the source printed.

    python benchmarks/spot.py [--gpu-text]

Prints each row's prediction and error (as throughput: measured step time / predicted - 1 for the
step-time rows), the median and p90 |error| by file and over all rows; for the rows that print their
peak memory (torchtitan's files and torchao's table: max reserved, GiB), that error too. `--gpu-text` shows
which catalog GPU each hardware text picked. Nothing here is fitted: the rows stand in for published runs the
model was not built on.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = tuple(ROOT / "benchmarks" / "data" / name
             for name in ("torchtitan_benchmarks.json", "swift_benchmarks.json", "megatron_lm_benchmarks.json",
                          "megatron_lm_scaling.json", "bigscience_benchmarks.json"))
CASES = tuple(ROOT / "benchmarks" / "data" / name
              for name in ("xtuner_cases.json", "xtuner_2024_cases.json", "nemo_cases.json", "mbridge_2608_cases.json",
                           "mbridge_2604_2606_cases.json", "nemo_long_sequence_cases.json", "internevo_cases.json",
                           "xtuner_megatron_moe_cases.json", "fms_fsdp_cases.json",
                           "tinyllama_cases.json", "model_card_cases.json", "automodel_cases.json",
                           "moe_modelzoo_cases.json", "swift_v1_benchmark_cases.json", "colossalai_cases.json",
                           "olmo_core_cases.json", "litgpt_config_hub_cases.json",
                           "peft_method_comparison_cases.json"))
# how each compared metric (trainplan.cases PREDICTED_KEYS) is printed
UNITS = {"tokens_per_s_per_gpu": "tok/s", "tflops_per_gpu": "TFLOP/s", "step_s": "s/step", "mfu": "MFU",
         "gpu_hours": "GPU-h", "run_s": "s/run"}


def launch_file(row: dict, folder: Path) -> Path:
    """The row's job as a file `--from` reads: a torchtitan TOML, or the launch script as published."""
    if "torchtitan_toml" in row:
        from trainplan.export.pieces import toml_text

        path = folder / f"{row['id']}.toml"
        path.write_text(toml_text(row["torchtitan_toml"]))
        return path
    path = folder / row["id"] / row["launch_name"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(row["launch_text"])
    return path


def predict(row: dict, folder: Path) -> tuple[dict | None, str]:
    """(the estimate's --json output, the catalog GPU id), or (None, why not)."""
    from trainplan import catalog

    gpu = catalog.gpu_in_text(row["hardware"])
    n = row["num_gpus"]
    cmd = [sys.executable, "-m", "trainplan", "estimate", "--from", str(launch_file(row, folder)), "--gpu", gpu.id,
           "--num-gpus", str(n), "--nodes", str(row.get("nodes") or max(1, n // 8)), *row["extra_flags"], "--json"]
    if row.get("interconnect"):
        cmd += ["--interconnect", row["interconnect"]]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        return None, (done.stderr or done.stdout).strip().splitlines()[-1]
    return json.loads(done.stdout), gpu.id


def throughput_error(row: dict, time: dict) -> tuple[float, str]:
    """(predicted throughput / measured - 1, what was compared) for either kind of row."""
    if "measured_tokens_per_s_per_gpu" in row:
        measured = row["measured_tokens_per_s_per_gpu"]
        predicted = time["tokens_per_s_per_gpu"]
        return predicted / measured - 1, f"measured {measured:>8} tok/s predicted {predicted:9.1f}"
    if "measured_tflops_per_gpu" in row:
        measured = row["measured_tflops_per_gpu"]
        predicted = time["tflops_per_gpu"]
        return predicted / measured - 1, f"measured {measured:>8} TFLOP/s predicted {predicted:9.1f}"
    if "measured_mfu" in row:
        measured = row["measured_mfu"]
        predicted = time["mfu"]
        return predicted / measured - 1, f"measured {measured:>8.1%} MFU predicted {predicted:9.1%}"
    measured = row["measured_step_s"]
    predicted = time["step_s"]
    return measured / predicted - 1, f"measured {measured:>8} s/step predicted {predicted:9.2f}"


def memory_error(row: dict, estimate: dict) -> tuple[float, str] | None:
    """(predicted peak reserved / measured - 1, what was compared) for a row that prints its memory."""
    measured = row.get("measured_memory_gib")
    if not measured:
        return None
    predicted = estimate["memory"]["peak_reserved_bytes"] / 2**30
    return predicted / measured - 1, f"memory {measured:>6} GiB predicted {predicted:6.1f}"


def summary(errors: list[float]) -> str:
    errors = sorted(errors)
    p90 = errors[max(0, int(round(0.9 * len(errors))) - 1)]
    return f"median |error| {100 * statistics.median(errors):.1f}%, p90 {100 * p90:.1f}%"


def _value(x: float) -> str:
    """A predicted value with one decimal, or four significant digits below 10 (a 0.18 s step is not 0.2)."""
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.4g}"


def main(argv: list[str]) -> int:
    every: list[float] = []
    memory: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for data in DATA:
            rows = json.loads(data.read_text())["rows"]
            errors, memory_errors = [], []
            for row in rows:
                estimate, info = predict(row, Path(tmp))
                if estimate is None:
                    print(f"{row['id']:22s} not predicted: {info}")
                    continue
                err, compared = throughput_error(row, estimate["time"])
                errors.append(abs(err))
                gpu = f"  {info}" if "--gpu-text" in argv else ""
                line = f"{row['id']:22s} {compared} error {100 * err:+6.1f}%"
                if (mem := memory_error(row, estimate)) is not None:
                    memory_errors.append(abs(mem[0]))
                    line += f"   {mem[1]} error {100 * mem[0]:+6.1f}%"
                print(line + gpu)
            if errors:
                print(f"{data.name}: {len(errors)}/{len(rows)} predicted; {summary(errors)}")
            if memory_errors:
                print(f"{data.name} memory (peak reserved): {len(memory_errors)} rows; {summary(memory_errors)}")
            print()
            every += errors
            memory += memory_errors
    for path in CASES:
        from trainplan.cases.accuracy import evaluate

        cases = json.loads(path.read_text())["cases"]
        errors, memory_errors = [], []
        for result in evaluate(cases):
            if result.error is None:
                print(f"{result.id:40s} not predicted: {result.skipped}")
                continue
            if result.kind == "memory":      # GiB per GPU, the view the source measured (cases.memory_view)
                memory_errors.append(abs(result.error))
                print(f"{result.id:40s} measured {result.measured_value / 2**30:8.2f} GiB predicted "
                      f"{result.predicted[result.metric] / 2**30:9.2f} error {100 * result.error:+6.1f}%")
                continue
            errors.append(abs(result.error))
            unit = UNITS.get(result.metric, result.metric)
            print(f"{result.id:40s} measured {result.measured_value:>8} {unit} predicted "
                  f"{_value(result.predicted[result.metric]):>9} error {100 * result.error:+6.1f}%")
        time_cases = sum(c["kind"] == "time" for c in cases)
        if errors:
            print(f"{path.name}: {len(errors)}/{time_cases} predicted; {summary(errors)}")
        if memory_errors:
            print(f"{path.name} memory: {len(memory_errors)}/{len(cases) - time_cases} predicted; "
                  f"{summary(memory_errors)}")
        print()
        every += errors
        memory += memory_errors
    if every:
        print(f"all rows: {len(every)} predicted; {summary(every)}")
    if memory:
        print(f"memory, the rows that print it: {len(memory)}; {summary(memory)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
