"""Every figure README.md quotes, computed now, and the golden estimate reports of its setups.

    python tools/readme_figures.py            # print the README blocks
    python tools/readme_figures.py --write    # rewrite README.md's blocks and tests/golden/reports/
    python tools/readme_figures.py --check    # exit 1 if README.md or the golden reports differ

README.md holds each generated block between `<!-- figures:NAME -->` and `<!-- /figures -->`;
tests/test_readme_figures.py checks that every block equals what this script computes today and
that the golden reports equal the estimates of today's code. Prices are dated as of FIGURES_DATE
(stale-price notes depend on the date), so the figures do not change with the calendar.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import functools
import importlib.util
import json
import re
import statistics
import sys
from pathlib import Path

import trainplan
from trainplan import catalog
from trainplan.cases import load_cases
from trainplan.cases.accuracy import evaluate, summarize
from trainplan.model.hfconfig import SUPPORTED_MODEL_TYPES
from trainplan.report.table_formats import render
from trainplan.report.table_text import to_markdown
from trainplan.units import GIB, fmt_duration

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DATA = ROOT / "tests" / "data"
REPORTS = ROOT / "tests" / "golden" / "reports"
FIGURES_DATE = datetime.date(2026, 12, 1)
BLOCK = re.compile(r"(<!-- figures:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /figures -->)", re.DOTALL)

SEED = dict(model="llama-2-7b", method="full", batch_size=32, seq_len=1024, gpu="a100-80gb")
SEED_ROWS = [
    ("pure fp16 (fp16 weights, grads and Adam states)", dict(precision="fp16-pure")),
    ("fp16 mixed, HF Trainer (fp32 weights + autocast)", dict(precision="fp16")),
    ("fp16 + fp32 master weights (DeepSpeed style)", dict(precision="fp16", framework="deepspeed")),
]
SEED_CHAIN = dict(SEED, precision="fp16-pure", grad_ckpt="full", samples=10000, tokens_per_sample=1024, epochs=3,
                  price_per_gpu_hour=27.08, currency="CNY", retry_factor=3)
STATE = ("weights", "master_weights", "optimizer", "gradients", "quant_constants")
# Golden reports: the README's setups, estimated in full (tests/golden/reports/NAME.json).
REPORT_SETUPS = {
    **{f"seed-{opts['precision']}{'-deepspeed' if 'framework' in opts else ''}-{ckpt}": dict(SEED, grad_ckpt=ckpt, **opts)
       for _, opts in SEED_ROWS for ckpt in ("none", "full")},
    "seed-chain": SEED_CHAIN,
    "llama-2-7b-full-a100": dict(model="llama-2-7b", method="full", gpu="a100-80gb"),
    "llama-3.1-70b-lora-h100": dict(model="llama-3.1-70b", method="lora", gpu="h100"),
    "llama-2-70b-full-zero3-8xh100": dict(model="llama-2-70b", method="full", num_gpus=8, zero=3, gpu="h100"),
}
TABLE_MODELS = ("llama-2-7b", "llama-2-13b", "llama-2-70b")


def _bench(relpath: str):
    """A benchmarks/ script as a module (they are scripts, not a package)."""
    path = ROOT / "benchmarks" / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _estimate(opts: dict):
    return trainplan.estimate(today=FIGURES_DATE, calibration=False, **opts)


def _pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


# --- blocks -----------------------------------------------------------------------------------------------

def seed_table() -> str:
    lines = ["| regime | checkpointing | model state at the peak | autocast copies | saved activations at the peak "
             "| logits + loss | peak allocated | device (nvidia-smi) | fits 80 GB |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, opts in SEED_ROWS:
        for ckpt in ("none", "full"):
            est = _estimate(dict(SEED, grad_ckpt=ckpt, **opts))
            c = est.memory.components_bytes
            state = sum(c.get(k, 0) for k in STATE)
            lines.append(f"| {label} | {ckpt} | {state / GIB:.1f} GiB | {c.get('autocast_weight_copies', 0) / GIB:.1f} GiB "
                         f"| {c.get('activations', 0) / GIB:.1f} GiB | {c.get('logits_loss', 0) / GIB:.1f} GiB "
                         f"| {est.memory.peak_allocated_bytes / GIB:.1f} GiB | {est.memory.device_bytes / GIB:.1f} GiB "
                         f"| {'yes' if est.memory.fits else 'no'} |")
    return "\n".join(lines)


def seed_findings() -> str:
    """The prose numbers under the seed table: activations, logits, what fits."""
    none = _estimate(dict(SEED, grad_ckpt="none", precision="fp16-pure"))
    full = _estimate(dict(SEED, grad_ckpt="full", precision="fp16-pure"))
    mixed = [_estimate(dict(SEED, grad_ckpt="full", **opts)) for _, opts in SEED_ROWS[1:]]
    formula_gb = 32 * 1024 * 4096 * 32 * 2 / 1e9       # the article's b x s x h x L x 2 bytes
    acts = none.memory.components_bytes["activations"]
    return "\n".join([
        f"- activations without checkpointing: {acts / GIB:.1f} GiB at batch 32 x 1024, "
        f"{acts / 9e9:.0f}x the article's 9 GB (`b x s x h x L x 2` = {formula_gb:.1f} GB)",
        f"- logits + loss at the start of backward: {none.memory.components_bytes.get('logits_loss', 0) / GIB:.1f} GiB",
        f"- what fits one 80 GB GPU: pure fp16 with checkpointing, {full.memory.device_bytes / GIB:.1f} GiB on the "
        f"device; the mixed-precision setups with checkpointing need "
        f"{min(m.memory.device_bytes for m in mixed) / GIB:.1f}-{max(m.memory.device_bytes for m in mixed) / GIB:.1f} GiB"])


def seed_chain() -> str:
    est = _estimate(SEED_CHAIN)
    t, c = est.time, est.cost
    no_ckpt = _estimate(dict(SEED_CHAIN, grad_ckpt="none"))
    st = t.step
    needed = t.flops_per_step / 1.5 / 1e12          # model FLOP/s the article's 1.5 s per step implies
    peak = st.efficiency.peak_flops_per_s / 1e12
    article_s = 939 * 1.5
    rows = [
        ("steps", "10,000 / 32 x 3 = 939", f"{t.steps:,}", "same: ceil(samples / global batch) x epochs"),
        ("FLOPs per step", "(not computed)", f"{t.flops_per_step:.3g} model FLOPs ({t.hardware_flops_per_step:.3g} "
         "with the recompute)".replace("e+", "e"), "3 x forward, counted from every matmul; recompute adds one forward"),
        ("time per step", '"about 1.5 s from experience"', f"{t.step_s:.1f} s ({no_ckpt.time.step_s:.1f} s without "
         "checkpointing, which does not fit)", f"1.5 s would need {needed:.0f} TFLOP/s: {needed / peak:.1f}x the "
         f"A100's {peak:.0f} TFLOP/s dense peak; trainplan runs the matmuls at {t.efficiency:.0%} of peak "
         f"(MFU {t.mfu:.0%} with recompute)"),
        ("training time", f"939 x 1.5 s = {article_s / 60:.0f} min", f"{t.train_s / 60:.0f} min", "from the step time"),
        ("retry factor", "2-3, take 3", f"{t.retry_factor:g} (`--retry-factor`, default 1)", "the same link, made explicit"),
        ("GPU-hours", "3", f"{t.gpu_hours_with_retries:.2f}", ""),
        ("cost", "27.08 CNY/h x 3 h = 81.24 CNY", f"{c.total:.2f} {c.currency}",
         f"the same price; the article's GPU-hours are {t.gpu_hours_with_retries / 3:.1f}x short"),
    ]
    lines = ["| link | article | trainplan | why |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {x} | {y} |" for a, b, x, y in rows]
    return "\n".join(lines)


def resource_table() -> str:
    result = trainplan.table(TABLE_MODELS, methods=("full", "lora", "qlora"), today=FIGURES_DATE, calibration=False)
    return to_markdown(result).strip()


def trace_agreement() -> str:
    """benchmarks/trace_agreement.py's summary (53 traced steps: about a minute)."""
    bench = _bench("trace_agreement.py")
    errors = sorted(abs(r["error"]) for r in bench.agreement_rows())
    n = len(errors)
    return (f"median |error| {100 * statistics.median(errors):.2f}%, p90 {100 * errors[int(0.9 * (n - 1))]:.2f}%, "
            f"max {100 * errors[-1]:.2f}%, {sum(e <= 0.02 for e in errors)} of {n} within 2%")


def gpu_reestimate() -> str:
    bench = _bench("gpu/reestimate.py")
    with open(ROOT / "benchmarks" / "data" / "gpu_h200.csv", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("status") == "ok"]
    errs = bench.errors(rows)
    parts = []
    for view, label in (("peak_allocated_bytes", "allocated"), ("peak_reserved_bytes", "reserved"),
                        ("device_bytes", "device")):
        e = errs[view]
        parts.append(f"{label} {_pct(statistics.median(abs(x) for x in e))} (max {_pct(max(abs(x) for x in e))}, "
                     f"bias {100 * statistics.median(e):+.1f}%)")
    return f"{len(rows)} setups: median |error| " + "; ".join(parts)


def time_benchmark() -> str:
    bench = _bench("time_accuracy.py")
    rows, _ = bench.run(DATA / "published_dev.json")
    s = bench.summary([r[5] for r in rows])
    llama2 = {r[0]: r[5] for r in rows if r[0].startswith("modelcard-llama2-")}
    sizes = ", ".join(f"{cid.split('-')[2].upper()} {100 * e:+.0f}%" for cid, e in sorted(llama2.items(),
                      key=lambda kv: float(kv[0].split("-")[2].rstrip("b"))))
    return (f"{s['n']} scored, median |error| {_pct(s['median_abs'])}, p90 {_pct(s['p90_abs'])}; "
            f"Llama 2's GPU-hours: {sizes}")


def _accuracy_table(path: Path) -> str:
    s = summarize(evaluate(load_cases(path, strict=False)))
    lines = ["| kind | group | cases | predicted | median raw | median calibrated | p90 raw | p90 calibrated | "
             "within 10% |",
             "|---|---|---|---|---|---|---|---|---|"]
    for kind in ("memory", "time"):
        block = s["by_kind"][kind]
        groups = [("all", block)] + sorted(s["by_source"][kind].items())
        for label, g in groups:
            raw, cal = g["raw"], g["calibrated"]
            lines.append(f"| {kind} | {label} | {g['cases']} | {g['predicted']} | {_pct(raw['median_abs'])} | "
                         f"{_pct(cal['median_abs'])} | {_pct(raw['p90_abs'])} | {_pct(cal['p90_abs'])} | "
                         f"{_pct(raw['within_10pct'], 0)} |")
    return "\n".join(lines)


def accuracy_dev() -> str:
    return _accuracy_table(DATA / "published_dev.json")


def accuracy_dev2() -> str:
    return _accuracy_table(DATA / "published_dev2.json")


MONEY_PLAN = dict(method="full", gpus=("a100", "a800", "h800", "h100", "h20"), currency="CNY", samples=10000,
                  prices=str(ROOT / "tests" / "fixtures" / "prices" / "team.toml"), top=3)


def money_plan() -> str:
    """`trainplan plan` in CNY with the team price file: the prices compared, then the top plans."""
    result = trainplan.plan("llama-3.1-70b", today=FIGURES_DATE, calibration=False, details=False, **MONEY_PLAN)
    prices = result.prices()
    rows = [{"GPU": p["gpu"], "CNY per GPU-hour": f"{p['price_per_gpu_hour']:.4g}", "kind": p["kind"],
             "from": (f"{p['provider']} {p['instance']}".strip() or p["origin"]).replace(str(ROOT) + "/", ""),
             "converted from": "" if p["original"] is None else
             f"{p['original']['price_per_gpu_hour']:g} {p['original']['currency']}"}
            for p in prices["per_gpu"]]
    [rate] = prices["rates"]
    plans = [{"#": p.rank, "GPU": p.found.rentable.gpu.id, "GPUs": p.found.shape.num_gpus,
              "layout": p.found.shape.engine(), "time": fmt_duration(p.found.time_s),
              "cost (CNY)": f"{p.found.cost_value:,.0f}"} for p in result.plans]
    return (render("markdown", rows, list(rows[0])).strip()
            + f"\n\nRate: {rate['per_usd']:g} CNY per USD ({rate['basis']}, {rate['as_of']}), from the file."
            + " Cheapest plans:\n\n" + render("markdown", plans, list(plans[0])).strip())


FROM_CONFIG = "tests/fixtures/configs/llamafactory/examples/train_full/qwen3_full_sft_ds3.yaml"


def from_config() -> str:
    """`trainplan estimate --from` a LLaMA-Factory YAML (naming a DeepSpeed ZeRO-3 JSON) on 8 H100:
    each setting with where it came from, then the answer."""
    from trainplan.job.sources import sources

    est = _estimate({"configs": (str(ROOT / FROM_CONFIG),), "gpu": "h100", "num_gpus": 8})
    rows = []
    for src in sources(est.job):
        where = src.get("key", "")
        if src.get("file"):
            where += f" ({Path(src['file']).name})"
        value = ",".join(map(str, src["value"])) if isinstance(src["value"], list) else src["value"]
        rows.append({"setting": src["field"], "value": value, "from": f"{src['origin']}: {where}".rstrip(": ")})
    mem = est.memory
    return (render("markdown", rows, ["setting", "value", "from"]).strip()
            + f"\n\nPer GPU: {mem.device_bytes / GIB:.1f} GiB on the device ({'fits' if mem.fits else 'does not fit'} "
            f"in {mem.usable_bytes / GIB:.1f} GiB usable); a step {est.time.step_s:.2f} s.")


def catalog_counts() -> str:
    return (f"{len(catalog.model_rows())} models in the catalog, {len(catalog.load_gpus())} GPUs, "
            f"{len(catalog.load_prices())} dated prices; `--model path/to/config.json` reads "
            f"{len(SUPPORTED_MODEL_TYPES)} model types")


BLOCKS = {"seed-table": seed_table, "seed-findings": seed_findings, "seed-chain": seed_chain,
          "resource-table": resource_table, "trace-agreement": trace_agreement, "gpu-reestimate": gpu_reestimate,
          "time-benchmark": time_benchmark, "accuracy-dev": accuracy_dev, "accuracy-dev2": accuracy_dev2,
          "catalog": catalog_counts, "money-plan": money_plan, "from-config": from_config}


def blocks(names: list[str] | None = None) -> dict[str, str]:
    return {name: BLOCKS[name]() for name in (names or BLOCKS)}


# --- README and reports --------------------------------------------------------------------------------------

def readme_blocks(text: str | None = None) -> dict[str, str]:
    """The blocks README.md holds now (name -> body without the final newline)."""
    text = README.read_text(encoding="utf-8") if text is None else text
    return {m.group("name"): m.group("body").rstrip("\n") for m in BLOCK.finditer(text)}


def write_readme(values: dict[str, str]) -> None:
    text = README.read_text(encoding="utf-8")
    text = BLOCK.sub(lambda m: m.group(1) + values.get(m.group("name"), m.group("body").rstrip("\n")) + "\n"
                     + m.group(4), text)
    README.write_text(text, encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _reports() -> str:
    return json.dumps({name: _estimate(opts).to_dict() for name, opts in REPORT_SETUPS.items()}, default=str)


def reports() -> dict[str, dict]:
    """The golden estimate reports (JSON of `trainplan estimate --json`), prices as of FIGURES_DATE."""
    return json.loads(_reports())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite README.md's blocks and the golden reports")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md or the golden reports differ")
    args = ap.parse_args(argv)
    values = blocks()
    golden = reports()
    if args.write:
        write_readme(values)
        REPORTS.mkdir(parents=True, exist_ok=True)
        for name, report in golden.items():
            (REPORTS / f"{name}.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {README} and {len(golden)} reports in {REPORTS}")
        return 0
    if args.check:
        current = readme_blocks()
        stale = [n for n, v in values.items() if current.get(n) != v]
        stale += [f"report {n}" for n, r in golden.items()
                  if not (REPORTS / f"{n}.json").is_file()
                  or json.loads((REPORTS / f"{n}.json").read_text(encoding="utf-8")) != r]
        for name in stale:
            print(f"stale: {name}")
        return 1 if stale else 0
    for name, value in values.items():
        print(f"<!-- figures:{name} -->\n{value}\n<!-- /figures -->\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
