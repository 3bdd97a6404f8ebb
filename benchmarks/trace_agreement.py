"""The analytic memory model held to the trace: the same setups estimated and traced
(PyTorch fake tensors, one real HF training step on the CPU with CUDA behaviour emulated).

Prints one row per setup (estimate, traced peak, error) and the error distribution.
Usage: python benchmarks/trace_agreement.py [--quick] [--only SUBSTRING] [--json FILE]
Target (issue 3): median |error| <= 2%, none over 5%.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from trainplan.catalog import resolve_gpu
from trainplan.frozen import field, frozen
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup
from trainplan.job.training import Layout
from trainplan.memory import estimate_memory

GIB = 2**30


@frozen
class Case:
    model: str
    options: dict = field(default_factory=dict)
    heavy: bool = False
    note: str = ""       # a known difference between the CPU trace and a CUDA run

    @property
    def label(self) -> str:
        opts = " ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.model} {opts}"


def _grid() -> list[Case]:
    cases: list[Case] = []
    small = ["qwen2.5-0.5b", "gpt2", "llama-3.2-1b"]
    for model in small:
        for precision in ("fp32", "bf16", "bf16-pure"):
            cases.append(Case(model=model, options=dict(method="full", precision=precision, batch_size=2, seq_len=512)))
        cases.append(Case(model=model, options=dict(method="full", precision="bf16-pure", batch_size=4, seq_len=1024,
                                      grad_ckpt="full")))
        cases.append(Case(model=model, options=dict(method="full", precision="bf16", batch_size=1, seq_len=2048,
                                      optimizer="adamw")))
        cases.append(Case(model=model, options=dict(method="lora", precision="bf16", batch_size=4, seq_len=1024,
                                      lora_targets="all-linear", lora_dropout=0.0)))
        cases.append(Case(model=model, options=dict(method="lora", precision="bf16-pure", batch_size=2, seq_len=1024,
                                      lora_dropout=0.05)))
        cases.append(Case(model=model, options=dict(method="freeze", precision="bf16", batch_size=2, seq_len=512,
                                      freeze_layers=2)))
        cases.append(Case(model=model, options=dict(method="full", precision="bf16-pure", batch_size=1, seq_len=512,
                                      attention="eager")))
    for batch, seq in ((1, 256), (8, 256), (1, 4096), (2, 2048)):
        cases.append(Case(model="qwen2.5-0.5b", options=dict(method="full", precision="bf16-pure", batch_size=batch, seq_len=seq,
                                               optimizer="adamw-fused")))
    cases.append(Case(model="qwen2.5-1.5b", options=dict(method="lora", precision="bf16", batch_size=2, seq_len=2048)))
    cases.append(Case(model="qwen2.5-1.5b", options=dict(method="full", precision="bf16-pure", batch_size=1, seq_len=2048,
                                           grad_ckpt="full")))
    cases.append(Case(model="qwen3-0.6b", options=dict(method="full", precision="bf16-pure", batch_size=2, seq_len=1024)))
    cases.append(Case(model="qwen3-0.6b", options=dict(method="lora", precision="bf16", batch_size=2, seq_len=1024)))
    cases.append(Case(model="pythia-410m", options=dict(method="full", precision="bf16", batch_size=4, seq_len=1024)))
    cases.append(Case(model="opt-1.3b", options=dict(method="full", precision="bf16-pure", batch_size=2, seq_len=1024)))
    cases.append(Case(model="qwen2.5-0.5b", options=dict(method="full", precision="fp32", batch_size=2, seq_len=512, optimizer="sgd")))
    cases.append(Case(model="qwen2.5-0.5b", options=dict(method="full", precision="bf16-pure", batch_size=2, seq_len=512,
                                           optimizer="adafactor")))
    cases.append(Case(model="qwen2.5-0.5b", options=dict(method="lora", precision="fp32", batch_size=2, seq_len=1024)))
    cases.append(Case(model="llama-3.2-1b", options=dict(method="full", precision="bf16", batch_size=2, seq_len=512, grad_accum=2)))
    cases.append(Case(model="tests/fixtures/configs/qwen2_moe.json", options=dict(method="full", precision="bf16", batch_size=4,
                                                                    seq_len=512)))
    cases.append(Case(model="gemma-2-2b", options=dict(method="lora", precision="bf16", batch_size=1, seq_len=1024)))
    cases.append(Case(model="phi-3-mini-4k", options=dict(method="full", precision="bf16-pure", batch_size=1, seq_len=1024,
                                            grad_ckpt="full")))
    # 2025-2026 families (issue 19): small real models, the tiny configs of families without one, and
    # the released large ones (heavy)
    cases.append(Case(model="olmo-2-0425-1b", options=dict(method="full", precision="bf16", batch_size=2, seq_len=512)))
    cases.append(Case(model="olmo-2-0425-1b", options=dict(method="lora", precision="bf16", batch_size=2, seq_len=1024,
                                             lora_targets="all-linear", lora_dropout=0.0)))
    cases.append(Case(model="gemma-2b", options=dict(method="lora", precision="bf16", batch_size=1, seq_len=1024)))
    cases.append(Case(model="gemma-2b", options=dict(method="full", precision="bf16-pure", batch_size=1, seq_len=1024,
                                       grad_ckpt="full")))
    for fixture in ("tiny_seed_oss", "tiny_internlm3", "tiny_olmo3", "tiny_glm4_moe", "tiny_llama4"):
        path = f"tests/fixtures/trace/{fixture}.json"
        cases.append(Case(model=path, options=dict(method="full", precision="bf16", batch_size=4, seq_len=1024)))
        cases.append(Case(model=path, options=dict(method="lora", precision="bf16-pure", batch_size=4, seq_len=1024,
                                               lora_dropout=0.0)))
    # gpt-oss under bf16 autocast with long sequences peaks inside a layer's forward (cat(scores, sinks) in fp32,
    # max, softmax): a per-layer forward transient memory/peak.py has no term for yet (-6 % at 4 x 512 here)
    cases.append(Case(model="tests/fixtures/trace/tiny_gpt_oss.json",
                      options=dict(method="full", precision="bf16", batch_size=4, seq_len=256, attention="eager")))
    cases.append(Case(model="tests/fixtures/trace/tiny_gpt_oss.json",
                      options=dict(method="full", precision="bf16-pure", batch_size=4, seq_len=512, attention="eager")))
    cases.append(Case(model="qwen2-7b", options=dict(method="lora", precision="bf16", batch_size=1, seq_len=2048),
                      heavy=True))
    cases.append(Case(model="ministral-8b", options=dict(method="lora", precision="bf16-pure", batch_size=1, seq_len=2048),
                      heavy=True))
    cases.append(Case(model="gpt-oss-20b", options=dict(method="lora", precision="bf16-pure", batch_size=1, seq_len=1024,
                                          attention="eager"), heavy=True))
    cases.append(Case(model="glm-4.5-air", options=dict(method="lora", precision="bf16-pure", batch_size=1, seq_len=1024),
                      heavy=True))
    cases.append(Case(model="llama-4-scout", options=dict(method="lora", precision="bf16-pure", batch_size=1, seq_len=1024),
                      heavy=True))
    cases.append(Case(model="mistral-7b-v0.1", options=dict(method="lora", precision="bf16", batch_size=2, seq_len=2048),
                      heavy=True))
    cases.append(Case(model="deepseek-v2-lite", options=dict(method="lora", precision="bf16-pure", batch_size=1, seq_len=1024),
                      heavy=True))   # q/k head 192 != v head 128: the trace emulates CUDA's mem-efficient kernel
    cases.append(Case(model="deepseek-v2-lite", options=dict(method="lora", precision="bf16-pure", batch_size=1, seq_len=1024,
                                               attention="eager"), heavy=True))
    cases.append(Case(model="qwen3-30b-a3b", options=dict(method="lora", precision="bf16", batch_size=1, seq_len=2048,
                                            grad_ckpt="full"), heavy=True))
    cases.append(Case(model="mixtral-8x7b", options=dict(method="lora", precision="bf16-pure", batch_size=1, seq_len=1024),
                      heavy=True))
    cases.append(Case(model="llama-3.1-8b", options=dict(method="full", precision="bf16-pure", batch_size=1, seq_len=4096,
                                           grad_ckpt="full"), heavy=True))
    cases.append(Case(model="llama-2-7b", options=dict(method="lora", precision="bf16", batch_size=1, seq_len=1024,
                                         lora_targets="q_proj,v_proj"), heavy=True))
    cases.append(Case(model="llama-3.1-8b", options=dict(method="lora", precision="bf16-pure", batch_size=1, seq_len=2048,
                                           grad_ckpt="full"), heavy=True))
    cases.append(Case(model="llama-2-7b", options=dict(method="full", precision="bf16-pure", batch_size=1, seq_len=1024,
                                         grad_ckpt="full"), heavy=True))
    return cases


def agreement_rows(cases: list[Case] | None = None, *, verbose: bool = False) -> list[dict]:
    """Estimate and trace every case: one row each (error = (estimate - trace) / trace)."""
    from trainplan.trace import run_trace

    gpu = resolve_gpu("h200")
    cases = _grid() if cases is None else cases
    rows = []
    for i, case in enumerate(cases, 1):
        setup = build_setup(JobOptions(model=case.model, **case.options))
        est = estimate_memory(setup, Layout(gpu_id=gpu.id), gpu)
        start = time.perf_counter()
        try:
            traced = run_trace(setup)
        except Exception as exc:  # report and go on
            print(f"[{i}/{len(cases)}] {case.label}: trace failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        wall = time.perf_counter() - start
        err = (est.peak_allocated_bytes - traced.peak_allocated_bytes) / traced.peak_allocated_bytes
        rows.append({"case": case.label, "estimate_gib": est.peak_allocated_bytes / GIB,
                     "trace_gib": traced.peak_allocated_bytes / GIB, "error": err,
                     "estimate_phase": est.peak_phase, "trace_phase": traced.peak_phase, "trace_s": wall})
        if case.note:
            rows[-1]["note"] = case.note
        if verbose:
            print(f"[{i:2}/{len(cases)}] {case.label:<95} est {est.peak_allocated_bytes / GIB:8.3f}  "
                  f"trace {traced.peak_allocated_bytes / GIB:8.3f} GiB  {100 * err:+6.1f}%  "
                  f"({est.peak_phase} | {traced.peak_phase}, {wall:.1f} s)", flush=True)
            if case.note:
                print(f"        known difference: {case.note}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the 7-8B setups")
    ap.add_argument("--only", help="run cases whose label contains this")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    cases = [c for c in _grid() if not (args.quick and c.heavy) and (not args.only or args.only in c.label)]
    rows = agreement_rows(cases, verbose=True)
    if not rows:
        return 1
    errors = sorted(abs(r["error"]) for r in rows)
    clean = sorted(abs(r["error"]) for r in rows if not r.get("note"))
    print()
    print(f"setups: {len(rows)}  median |error| {100 * statistics.median(errors):.2f}%  "
          f"p90 {100 * errors[int(0.9 * (len(errors) - 1))]:.2f}%  max {100 * errors[-1]:.2f}%  "
          f"within 2%: {sum(e <= 0.02 for e in errors)}  within 5%: {sum(e <= 0.05 for e in errors)}")
    if len(clean) != len(errors):
        print(f"without the {len(errors) - len(clean)} case(s) with a known CPU/CUDA kernel difference: "
              f"median {100 * statistics.median(clean):.2f}%  max {100 * clean[-1]:.2f}%")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
