"""Published cases written in other words: does the case reader score them as written?

Each case of the given files (default: both development files and every benchmarks/data/*_cases.json) is
rewritten field by field in ways another writer would put the same facts, and scored again with
`trainplan accuracy`'s evaluate. A rewrite that changes the error, or makes a predicted case unpredicted,
is printed; the summary counts them by kind of rewrite.

    python benchmarks/paraphrase.py [--kinds method,gpu,...] [FILE ...]

The rewrites say the same thing: the GPU's name in another form, the model's name in another case or as its
Hugging Face id, the method with words that say nothing more ("LoRA fine-tuning", "QLoRA (4-bit)"), counts
with the unit their field means ("4 per GPU", "8 steps", "4k"), DeepSpeed's stage, parallel degrees with their
names ("TP=2"), PyTorch dtype names, FSDP in words, LoRA targets as text, GPU counts inside the type, the
framework text in upper or lower case, keys whose value is null left out or written "not stated", a LoRA rank
written with its key ("r=16"), measured numbers with their units or under another key's name, the kind and
checkpointing in words, and blocks in other forms (the model as its name, the parallel block as text, a time metric
as reported_value / reported_unit). Two kinds are expected to change a
few results and are reported apart: `quantstr` (a quantization block written as a bare "nf4" loses its
double_quant) and `optimizer` (an explicit class, `torch.optim.AdamW`, is an implementation a bare "AdamW"
does not name).
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from trainplan.cases.accuracy import evaluate  # noqa: E402

EXPECTED_TO_CHANGE = ("quantstr", "optimizer")


def _copy_with(case: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(case)
    holder = out
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return out


def _get(case: dict, path: tuple):
    for key in path:
        if not isinstance(case, dict):
            return None
        case = case.get(key)
    return case


def gpu(c):
    t = _get(c, ("gpus", "type"))
    if isinstance(t, str) and "not stated" not in t.lower():      # a GPU not named has no other name
        for n in (t.lower(), t.upper(), f"NVIDIA {t}" if not t.lower().startswith("nvidia") else t[7:]):
            yield ("gpu", _copy_with(c, ("gpus", "type"), n))
        n = _get(c, ("gpus", "count"))
        if isinstance(n, int):
            for v in (f"{n}x {t}", f"{t} x {n}", f"{n}×{t}"):
                yield ("gpu", _copy_with(c, ("gpus",), {"type": v, "count": None}))
            if n >= 16 and n % 8 == 0:
                for v in (f"{n // 8} nodes x 8 GPUs", f"{n // 8}x8", f"{n} ({n // 8} nodes)"):
                    yield ("gpu", _copy_with(c, ("gpus", "count"), v))
            yield ("gpu", _copy_with(c, ("gpus",), f"{n}x {t}"))
            for v in (str(n), float(n), f"{n} GPUs"):
                yield ("gpu", _copy_with(c, ("gpus", "count"), v))


def model(c):
    name, hf_id = _get(c, ("model", "name")), _get(c, ("model", "hf_id"))
    if isinstance(name, str):
        for n in (name.lower(), name.upper(), name.replace("-", "_")):
            yield ("model", _copy_with(c, ("model", "name"), n))
        if hf_id:
            yield ("model", _copy_with(c, ("model", "name"), hf_id))


METHODS = {"full": ("Full", "full fine-tuning", "full-parameter", "full parameter SFT", "FFT"),
           "lora": ("LoRA", "lora (PEFT)", "LoRA fine-tuning"),
           "qlora": ("QLoRA", "QLoRA (4-bit)", "qlora nf4"),
           "pretrain": ("pre-training", "Pretraining", "pretraining (from scratch)")}


def method(c):
    for n in METHODS.get(c.get("method"), ()):
        yield ("method", _copy_with(c, ("method",), n))


def counts(c):
    s = c.get("seq_len")
    if isinstance(s, int) and s > 0:
        for v in (str(s), f"{s:,}", f"{s} tokens", *((f"{s // 1024}k", f"{s // 1024}K") if s % 1024 == 0 else ())):
            yield ("counts", _copy_with(c, ("seq_len",), v))
    for key, unit in (("micro_batch", "per GPU"), ("grad_accum", "steps")):
        v = c.get(key)
        if isinstance(v, int) and v > 0:
            for w in (str(v), float(v), f"{v} {unit}"):
                yield ("counts", _copy_with(c, (key,), w))


def layout(c):
    par = c.get("parallel") or {}
    z = par.get("zero_stage")
    if isinstance(z, int) and not isinstance(z, bool):
        for n in (f"ZeRO-{z}", f"stage {z}", f"ZeRO stage {z}", f"zero{z}"):
            yield ("layout", _copy_with(c, ("parallel", "zero_stage"), n))
    for key in ("tp", "pp", "cp", "ep"):
        v = par.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 1:
            for n in (str(v), f"{key.upper()}={v}", f"{key.upper()}{v}"):
                yield ("layout", _copy_with(c, ("parallel", key), n))
    sp = par.get("sp")
    if isinstance(sp, int) and not isinstance(sp, bool) and sp > 1:
        yield ("layout", _copy_with(c, ("parallel", "sp"), f"Ulysses {sp}"))
    if par.get("fsdp") == "FULL_SHARD":
        for n in ("full_shard", "FSDP full shard", "fully sharded"):
            yield ("layout", _copy_with(c, ("parallel", "fsdp"), n))


def dtypes(c):
    for key in ("weights", "compute"):
        if _get(c, ("precision", key)) == "bf16":
            for n in ("bfloat16", "BF16", "torch.bfloat16"):
                yield ("dtype", _copy_with(c, ("precision", key), n))


def texts(c):
    targets = _get(c, ("lora", "targets"))
    if isinstance(targets, list) and targets:
        for n in (",".join(targets), ", ".join(targets), " ".join(targets), str(targets)):
            yield ("lora", _copy_with(c, ("lora", "targets"), n))
    f = c.get("framework")
    if isinstance(f, str):
        for n in (f.lower(), f.upper()):
            yield ("framework", _copy_with(c, ("framework",), n))
    a = c.get("attention")
    alts = {"flash-attention 2": ("FlashAttention-2", "flash_attention_2", "FA2", "flash-attn 2"),
            "torch SDPA": ("sdpa", "SDPA", "scaled_dot_product_attention")}
    for n in alts.get(a, ()):
        yield ("attention", _copy_with(c, ("attention",), n))
    q = c.get("quantization")
    if isinstance(q, dict) and q.get("type") == "bnb-nf4":
        for n in ("nf4", "4-bit NF4 (bitsandbytes)", "bitsandbytes 4bit nf4"):
            yield ("quantization", _copy_with(c, ("quantization", "type"), n))
        yield ("quantstr", _copy_with(c, ("quantization",), "nf4"))
    o = c.get("optimizer")
    if o == "torch.optim.AdamW":
        yield ("optimizer", _copy_with(c, ("optimizer",), "AdamW"))
    if o == "AdamW":
        for n in ("adamw", "Adam W", "ADAMW"):
            yield ("optimizer-spelling", _copy_with(c, ("optimizer",), n))


def nulls(c):
    out = {k: v for k, v in c.items() if v is not None}
    for block in ("model", "parallel", "precision"):
        if isinstance(out.get(block), dict):
            out[block] = {k: v for k, v in out[block].items() if v is not None}
    if out != c:
        yield ("nulls", out)


def unknowns(c):
    # a number not known, written as a writer would ("not stated", "n/a") instead of null
    for key in ("micro_batch", "grad_accum", "global_batch"):
        if key in c and c[key] is None:
            for n in ("not stated", "n/a", "unknown"):
                yield ("unknowns", _copy_with(c, (key,), n))
    rank = _get(c, ("lora", "rank"))
    if isinstance(rank, int):
        for n in (f"r={rank}", f"rank {rank}", f"lora_r: {rank}"):
            yield ("unknowns", _copy_with(c, ("lora", "rank"), n))
        lora = c["lora"]
        if set(lora) <= {"rank", "alpha", "dropout", "targets"} and lora.get("targets") in (None, "all-linear"):
            words = [f"r={rank}"] + [f"{k}={lora[k]}" for k in ("alpha", "dropout") if lora.get(k) is not None]
            yield ("unknowns", _copy_with(c, ("lora",), ", ".join(words + (["all-linear"] if lora.get("targets")
                                                                              else []))))


def _plain(x: float) -> str:
    return f"{x:.15g}"      # every digit the number has (":g" would round to six)


def measured(c):
    # a measured number written with its unit, under a synonym of its key, or in another unit of the same thing
    m = c.get("measured")
    if not isinstance(m, dict):
        return
    step = m.get("step_time_s")
    if isinstance(step, (int, float)) and not isinstance(step, bool):
        for v in (f"{_plain(step)} s", f"{_plain(step)} s/step", f"{_plain(step)} seconds", str(step)):
            yield ("measured", _copy_with(c, ("measured", "step_time_s"), v))
        yield ("measured", _copy_with(c, ("measured", "step_time_s"), f"{_plain(step * 1000)} ms"))
    tps = m.get("tokens_per_s_per_gpu")
    if isinstance(tps, (int, float)) and not isinstance(tps, bool):
        for v in (f"{tps:,}", f"{_plain(tps)} tokens/s/GPU", f"{_plain(tps)} tok/s"):
            yield ("measured", _copy_with(c, ("measured", "tokens_per_s_per_gpu"), v))
        if m.get("tgs") is None:
            moved = {k: v for k, v in m.items() if k != "tokens_per_s_per_gpu"}
            yield ("measured", _copy_with(c, ("measured",), {**moved, "tgs": tps}))
    total = m.get("tokens_per_s_total")
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        for v in (f"{total:,}", f"{_plain(total)} tokens/s"):
            yield ("measured", _copy_with(c, ("measured", "tokens_per_s_total"), v))
    tf = m.get("tflops_per_gpu")
    if isinstance(tf, (int, float)) and not isinstance(tf, bool):
        for v in (f"{_plain(tf)} TFLOPS", f"{_plain(tf)} TFLOP/s"):
            yield ("measured", _copy_with(c, ("measured", "tflops_per_gpu"), v))
    for key in ("mfu", "hfu"):
        f = m.get(key)
        if isinstance(f, float) and 0 < f < 1:
            yield ("measured", _copy_with(c, ("measured", key), f"{_plain(round(f * 100, 6))}%"))
    mem = m.get("peak_mem_gib")
    if isinstance(mem, (int, float)) and not isinstance(mem, bool):
        for v in (f"{_plain(mem)} GiB", str(mem)):
            yield ("measured", _copy_with(c, ("measured", "peak_mem_gib"), v))


KINDS = {"time": ("Time", "throughput", "speed"), "memory": ("Memory", "VRAM", "peak memory")}


def kind(c):
    for n in KINDS.get(c.get("kind"), ()):
        yield ("kind", _copy_with(c, ("kind",), n))


def ckpt(c):
    g = c.get("grad_ckpt")
    words = {True: ("yes", "on", "enabled", "true", "gradient checkpointing"),
             False: ("no", "off", "disabled", "false", "none")}
    if isinstance(g, bool):
        for n in words[g]:
            yield ("ckpt", _copy_with(c, ("grad_ckpt",), n))


_UNITS = {"tokens_per_s_per_gpu": "tokens/s/GPU", "step_time_s": "s/step", "tokens_per_s_total": "tokens/s total",
          "tflops_per_gpu": "TFLOPS/GPU"}


def forms(c):
    # a block in another form: the model as its name, the parallel block as text, a time metric as the
    # reported_value / reported_unit pair or as an object of number and unit
    m = c.get("model")
    if isinstance(m, dict) and m.get("name") and all(m.get(k) is None for k in ("layers", "hidden", "params_b")):
        yield ("forms", _copy_with(c, ("model",), m["name"]))
    par = c.get("parallel")
    if isinstance(par, dict) and par.get("zero_stage") in (2, 3) and not any(
            par.get(k) not in (None, 1) for k in ("tp", "pp", "cp", "ep", "sp")) and not par.get("offload") \
            and not par.get("fsdp"):
        yield ("forms", _copy_with(c, ("parallel",), f"DeepSpeed ZeRO-{par['zero_stage']}"))
    meas = c.get("measured") or {}
    stated = [k for k in _UNITS if isinstance(meas.get(k), (int, float)) and not isinstance(meas.get(k), bool)]
    if c.get("kind") == "time" and len(stated) == 1:
        key = stated[0]
        yield ("forms", _copy_with(c, ("measured",), {"reported_value": meas[key], "reported_unit": _UNITS[key]}))
        yield ("forms", _copy_with(c, ("measured",), {key: {"value": meas[key], "unit": _UNITS[key]}}))


REWRITES = {f.__name__: f for f in (gpu, model, method, counts, layout, dtypes, texts, nulls, unknowns, measured,
                                        kind, ckpt, forms)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--kinds", default=",".join(REWRITES), help="rewrite families: " + ", ".join(REWRITES))
    args = parser.parse_args(argv)
    files = args.files or [ROOT / "tests/data/published_dev.json", ROOT / "tests/data/published_dev2.json",
                           *sorted((ROOT / "benchmarks/data").glob("*_cases.json"))]
    rewrites = [REWRITES[k] for k in args.kinds.split(",")]
    changed: collections.Counter = collections.Counter()
    tried = 0
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        for case in data["cases"] if isinstance(data, dict) else data:
            [base] = evaluate([case])
            for rewrite in rewrites:
                for kind, other in rewrite(case):
                    tried += 1
                    [result] = evaluate([other])
                    same = (base.error is None) == (result.error is None) and (
                        base.error is None or abs(result.error - base.error) < 1e-9)
                    if not same:
                        changed[kind] += 1
                        print(f"{case['id'][:60]:60s} {kind:18s} error {base.error!s:.8} -> {result.error!s:.8}"
                              f"  {(result.skipped or '')[:80]}")
    unexpected = sum(n for k, n in changed.items() if k not in EXPECTED_TO_CHANGE)
    print(f"{tried} rewrites; changed: {dict(changed) or 'none'}; unexpected changes: {unexpected}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
