"""Time estimates against published measurements (ground-truth schema, `kind == "time"`).

    python benchmarks/time_accuracy.py [cases.json] [--all] [--csv] [--fit]

Maps each time case to a TrainingSetup / Layout / GpuSpec / Workload as best it can, predicts the
metric the source reports (step time, tokens/s/GPU, GPU-hours) and prints: id, metric, predicted,
measured, error %, then median and p90 |error| overall and per source. Cases that cannot be mapped
are listed with the reason. `--all` also scores low-confidence cases (skipped by default because
their key settings are missing, per the ground-truth README). Nothing here is tuned per case.

`--fit` re-derives the constants of trainplan.efficiency.EfficiencyModel: a Nelder-Mead search
minimising the sum of squared log errors over the fit set (FIT_SET below: MosaicML bf16 rows,
torchtune 3B flag rows, Qwen LoRA rows) and prints them with the errors on every case.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from trainplan import catalog
from trainplan.enums import (Attention, Fsdp, Framework, GradCkpt, MasterWeights, Method, MlpKind, NormKind,
                             Offload, Optimizer, Position, Precision, Quant, ZeroStage)
from trainplan.efficiency import DEFAULT_MODEL, EfficiencyModel, KernelStack
from trainplan.errors import TrainplanError
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing import TimeEstimate, TimingOptions, estimate_time
from trainplan.training import Implementation, Layout, LoraConfig, QuantConfig, TrainingSetup, Workload

DEFAULT_CASES = Path(__file__).resolve().parents[2] / "shared" / "ground_truth" / "published_dev.json"
GPUS_PER_NODE = 8

# Qwen (1st generation) is not in the model catalog. Sizes from the Hugging Face config.json of
# Qwen/Qwen-{1_8B,7B,14B,72B}: hidden, layers, heads, intermediate_size / 2 (modeling_qwen.py
# splits it between w1 and w2), vocab; untied embeddings, qkv bias, SwiGLU, RMSNorm, RoPE.
QWEN1 = {"1.8b": (2048, 24, 16, 5504, 151936), "7b": (4096, 32, 32, 11008, 151936),
         "14b": (5120, 40, 40, 13696, 152064), "72b": (8192, 80, 64, 24576, 152064)}


class Skip(Exception):
    """This case cannot be mapped; the message says why."""


@dataclass(frozen=True)
class Mapped:
    setup: TrainingSetup
    layout: Layout
    gpu: GpuSpec
    workload: Workload
    options: TimingOptions
    metric: str
    measured: float
    note: str = ""


# --- model, GPU, framework ------------------------------------------------------------------------

def _model(case: dict) -> ModelSpec:
    m = case["model"]
    cid = case["id"]
    if cid.startswith("qwen1-"):
        size = cid.split("-")[2]
        h, layers, heads, inter, vocab = QWEN1[size]
        return ModelSpec(name=m["name"], model_type="qwen", naming="llama", hidden_size=h, num_layers=layers,
                         num_heads=heads, num_kv_heads=heads, head_dim=h // heads, intermediate_size=inter,
                         vocab_size=vocab, tied_embeddings=False, qkv_bias=True)
    if m.get("hf_id"):
        try:
            return catalog.resolve_model(m["hf_id"])
        except TrainplanError:
            pass
    if m.get("layers") and m.get("hidden"):
        mpt = "MPT" in m["name"]
        return ModelSpec(name=m["name"], model_type="mpt" if mpt else "llama", naming="neox" if mpt else "llama",
                         hidden_size=m["hidden"], num_layers=m["layers"], num_heads=m["heads"],
                         num_kv_heads=m["kv_heads"] or m["heads"], head_dim=m["hidden"] // m["heads"],
                         intermediate_size=m["intermediate"], vocab_size=m["vocab"],
                         tied_embeddings=bool(m.get("tied_embeddings")) or mpt,
                         mlp_kind=MlpKind.PLAIN if mpt else MlpKind.GATED,
                         norm_kind=NormKind.LAYER if mpt else NormKind.RMS,
                         position=Position.ALIBI if mpt else Position.ROPE)
    raise Skip(f"model {m['name']}: no architecture in the case and not in the catalog")


def _gpu(case: dict) -> GpuSpec:
    text = case["gpus"]["type"].lower()
    for key, gid in (("4090", "rtx4090"), ("a6000", "rtx-a6000"), ("h100", "h100-sxm"), ("h800", "h800-sxm"),
                     ("40gb", "a100-sxm4-40gb"), ("a100", "a100-sxm4-80gb")):
        if key in text:
            return catalog.resolve_gpu(gid)
    raise Skip(f"GPU {case['gpus']['type']!r} not mapped")


def _framework(case: dict) -> tuple[Framework, bool | None]:
    fw = (case.get("framework") or "").lower()
    if "torchtune" in fw:
        compiled = "compile enabled" in fw or "compile=true" in fw
        return Framework.TORCHTUNE, compiled
    if "llm-foundry" in fw or "composer" in fw:
        return Framework.FSDP, None
    if "meta internal" in fw:
        return Framework.MEGATRON, None
    if "hf trainer" in fw or "finetune.py" in fw:
        return Framework.HF, None
    raise Skip(f"framework {case.get('framework')!r} not mapped")


def _optimizer(text: str | None) -> Optimizer:
    t = (text or "").lower()
    if "paged" in t and "8bit" in t:
        return Optimizer.PAGED_ADAMW_8BIT
    if "8-bit" in t or "8bit" in t:
        return Optimizer.ADAMW_8BIT
    if "fused" in t or t.strip() == "adamw":
        return Optimizer.ADAMW_FUSED          # Megatron/Meta: fused Adam
    return Optimizer.ADAMW                    # torch AdamW (foreach), Composer DecoupledAdamW


def _grad_ckpt(value) -> GradCkpt:
    if value is True:
        return GradCkpt.FULL
    if isinstance(value, str) and "selective" in value.lower():
        return GradCkpt.SELECTIVE
    return GradCkpt.NONE


_TORCHTUNE_NAMES = {"q_proj": ("q_proj",), "k_proj": ("k_proj",), "v_proj": ("v_proj",),
                    "output_proj": ("o_proj",), "mlp": ("gate_proj", "up_proj", "down_proj")}


def _lora(case: dict) -> LoraConfig | None:
    lora = case.get("lora")
    if case["method"] not in ("lora", "qlora"):
        return None
    if not lora:
        raise Skip("LoRA settings not given")
    targets = tuple(lora.get("targets") or ())
    if case["id"].startswith("qwen1-"):
        targets = ("all-linear",)              # c_attn, c_proj, w1, w2 (+ mlp.c_proj): every linear
        dropout = 0.05                         # Qwen finetune.py LoraArguments default
    else:
        targets = tuple(dict.fromkeys(n for t in targets for n in _TORCHTUNE_NAMES.get(t, (t,))))
        dropout = 0.0                          # torchtune LoRA recipes default lora_dropout 0.0
    return LoraConfig(rank=lora["rank"], alpha=float(lora.get("alpha") or 2 * lora["rank"]),
                      dropout=dropout, targets=targets)


# --- the case -------------------------------------------------------------------------------------

def map_case(case: dict) -> Mapped:
    cid = case["id"]
    framework, compiled = _framework(case)
    if framework is Framework.TORCHTUNE and "packed=false" in (case.get("framework") or "").lower():
        raise Skip("unpacked dataset: real sample lengths are not given (seq_len is only the maximum)")
    spec = _model(case)
    gpu = _gpu(case)
    method = Method.FULL if case["method"] == "pretrain" else Method(case["method"])
    prec_text = json.dumps(case.get("precision") or {}).lower()
    precision = Precision.BF16
    impl = Implementation()
    if framework is Framework.TORCHTUNE:
        precision = Precision.BF16_PURE
        impl = Implementation(master_weights=MasterWeights.NONE,
                              optimizer_in_backward="opt_in_bwd=true" in case["framework"].lower())
    elif framework in (Framework.FSDP, Framework.MEGATRON):
        impl = Implementation(master_weights=MasterWeights.OPTIMIZER,
                              grad_dtype_fp32_accum=framework is Framework.MEGATRON or "default" in prec_text)
        if "fp8" in cid:
            precision = Precision.FP8
    quant = None
    options = TimingOptions(compiled=compiled)
    if method is Method.QLORA:
        qtext = json.dumps(case.get("quantization") or {}).lower()
        quant = QuantConfig(kind=Quant.NF4)
        if "gptq" in qtext:
            options = replace(options, quant_kernel="gptq")
    micro = case.get("micro_batch")
    seq = case.get("seq_len")
    if not seq:
        raise Skip("sequence length not given")
    par = case.get("parallel") or {}
    count = case["gpus"].get("count")
    measured = case["measured"]
    workload = Workload(tokens_per_sample=seq, packing=True)
    note = ""
    if measured.get("gpu_hours"):
        return _model_card(case, spec, gpu, method, precision, impl, options)
    if not micro or not count:
        raise Skip("micro-batch or GPU count not given")
    setup = TrainingSetup(model=spec, method=method, precision=precision, optimizer=_optimizer(case.get("optimizer")),
                          batch_size=micro, seq_len=seq, grad_accum=case.get("grad_accum") or 1,
                          grad_ckpt=_grad_ckpt(case.get("grad_ckpt")),
                          attention=Attention.SDPA if "sdpa" in (case.get("attention") or "").lower() else Attention.FLASH,
                          lora=_lora(case), quant=quant, framework=framework, impl=impl)
    fsdp_text = (par.get("fsdp") or "").upper()
    zero = ZeroStage(par.get("zero_stage") or 0)
    fsdp = Fsdp.NONE
    if "SHARD_GRAD_OP" in fsdp_text:
        zero = ZeroStage.GRADIENTS           # FSDP SHARD_GRAD_OP = ZeRO-2 semantics
    elif "FULL_SHARD" in fsdp_text:
        fsdp = Fsdp.FULL
    offload_text = (par.get("offload") or "").lower()
    offload = Offload.ALL if "fsdp_cpu_offload" in offload_text else Offload.NONE
    nodes = max(1, count // GPUS_PER_NODE) if count > GPUS_PER_NODE else 1
    layout = Layout(gpu_id=gpu.id, num_gpus=count, nodes=nodes, zero=zero, fsdp=fsdp, offload=offload,
                    tp=par.get("tp") or 1, pp=par.get("pp") or 1, cp=par.get("cp") or 1)
    if framework is Framework.FSDP and gpu.generation == "ampere" and nodes > 1:
        options = replace(options, interconnect="roce-200")   # llm-foundry README: 1600 Gbps RoCE per node
    if measured.get("step_time_s"):
        return Mapped(setup, layout, gpu, workload, options, "step_time_s", measured["step_time_s"], note)
    tps = measured.get("tokens_per_s_per_gpu")
    if tps:
        return Mapped(setup, layout, gpu, workload, options, "tokens_per_s_per_gpu", tps, note)
    reported = measured.get("tokens_per_s_reported")
    if reported:
        est = estimate_time(setup, layout, gpu, workload, options)
        per_token = est.flops_per_step / est.tokens_per_step
        if reported * per_token > est.step.peak_flops_per_s:
            note = "reported tokens/s read as the sum over GPUs (per GPU it would exceed the dense peak)"
            return Mapped(setup, layout, gpu, workload, options, "tokens_per_s_per_gpu", reported / count, note)
        return Mapped(setup, layout, gpu, workload, options, "tokens_per_s_per_gpu", reported, note)
    raise Skip("no time metric this benchmark predicts")


CARD_GPUS = 2048   # Llama 1 paper (Touvron et al. 2023a, section 2.4): 2048 A100-80GB for LLaMA-65B
CARD_BATCH_TOKENS = 16 * 2**20   # Llama 3 paper (Dubey et al. 2024, section 3.4.1): 16M-token batches


def _model_card(case, spec, gpu, method, precision, impl, options) -> Mapped:
    """Model-card GPU-hours: pre-training of `tokens_total` tokens at the card's sequence length.

    The cards give no layout. Assumed (stated, not fitted): Megatron-class stack with selective
    recomputation, one sequence per micro-batch, 2048 GPUs on 8-GPU nodes (Meta's LLaMA-65B
    cluster), the card's global batch (else Llama 3's 16M tokens), tensor parallelism 8 inside the
    node for models of hidden size >= 8192 and otherwise just enough to give every data-parallel
    rank one sequence, the distributed optimizer (ZeRO-1) across data parallel, gradient
    accumulation for the rest. Inter-node: 200 Gb/s per GPU for A100 (Llama 2 paper: RSC
    InfiniBand and production RoCE, '200 Gbps end-points'), 400 Gb/s NDR for H100.
    """
    m = case["measured"]
    seq = case["seq_len"]
    batch_tokens = m.get("global_batch_tokens") or CARD_BATCH_TOKENS
    sequences = 2 ** round(math.log2(batch_tokens / seq))       # "4M tokens" = 2^22 = 1024 x 4096
    tp = 8 if spec.hidden_size >= 8192 else max(1, CARD_GPUS // sequences)
    dp = CARD_GPUS // tp
    grad_accum = max(1, sequences // dp)
    setup = TrainingSetup(model=spec, method=method, precision=precision, optimizer=Optimizer.ADAMW_FUSED,
                          batch_size=1, seq_len=seq, grad_accum=grad_accum, grad_ckpt=GradCkpt.SELECTIVE,
                          attention=Attention.FLASH, framework=Framework.MEGATRON, impl=impl)
    layout = Layout(gpu_id=gpu.id, num_gpus=CARD_GPUS, nodes=CARD_GPUS // GPUS_PER_NODE,
                    zero=ZeroStage.OPTIMIZER, tp=tp)
    interconnect = "ib-ndr" if gpu.generation == "hopper" else "roce-200"
    samples = int(m["tokens_total"] // seq)
    workload = Workload(samples=samples, tokens_per_sample=seq, packing=True)
    return Mapped(setup, layout, gpu, workload, replace(options, interconnect=interconnect), "gpu_hours",
                  m["gpu_hours"], f"{CARD_GPUS} GPUs, tp {tp}, grad-accum {grad_accum} assumed")


def predict(mapped: Mapped) -> tuple[float, TimeEstimate]:
    est = estimate_time(mapped.setup, mapped.layout, mapped.gpu, mapped.workload, mapped.options)
    value = {"step_time_s": est.step_s, "tokens_per_s_per_gpu": est.tokens_per_s_per_gpu,
             "gpu_hours": est.gpu_hours}[mapped.metric]
    return value, est


def _source(case: dict) -> str:
    return (case.get("source") or {}).get("repo") or "unknown"


def run(path: Path, include_low: bool = False) -> tuple[list[tuple], list[tuple[str, str]]]:
    cases = [c for c in json.loads(path.read_text()) if c.get("kind") == "time"]
    rows, skipped = [], []
    for case in cases:
        if case.get("confidence") == "low" and not include_low:
            skipped.append((case["id"], "confidence low: key settings missing (ground-truth README); --all scores it"))
            continue
        try:
            mapped = map_case(case)
            value, est = predict(mapped)
        except (Skip, TrainplanError) as exc:
            skipped.append((case["id"], str(exc)))
            continue
        err = value / mapped.measured - 1.0
        rows.append((case["id"], _source(case), mapped.metric, value, mapped.measured, err, est.mfu, mapped.note))
    return rows, skipped


def _summary(errors: list[float]) -> str:
    if not errors:
        return "n=0"
    ab = sorted(abs(e) for e in errors)
    p90 = ab[min(len(ab) - 1, math.ceil(0.9 * len(ab)) - 1)]
    return f"n={len(ab):2d}  median |error| {statistics.median(ab):6.1%}  p90 {p90:6.1%}  " \
           f"mean error {statistics.fmean(errors):+6.1%}"


# --- fitting the efficiency constants -------------------------------------------------------------

FIT_FIELDS = ("sustained_lo", "sustained_hi", "kappa_fused", "kappa_eager", "t0_tokens",
              "attention_lo", "attention_hi")


def in_fit_set(case_id: str) -> bool:
    """MosaicML bf16 pre-training rows, torchtune 3B flag rows, Qwen LoRA (not QLoRA) rows."""
    if case_id.startswith("mpt-bench-"):
        return "fp8" not in case_id
    if case_id.startswith("torchtune-3b-flags-"):
        return True
    return case_id.startswith("qwen1-") and "-lora-" in case_id and "q-lora" not in case_id


def _model_from(x: list[float]) -> EfficiencyModel:
    v = dict(zip(FIT_FIELDS, x))
    return replace(DEFAULT_MODEL, sustained_lo=v["sustained_lo"], sustained_hi=v["sustained_hi"],
                   kappa={KernelStack.FUSED: v["kappa_fused"], KernelStack.EAGER: v["kappa_eager"]},
                   t0_tokens=v["t0_tokens"], attention_lo=v["attention_lo"], attention_hi=v["attention_hi"])


def _loss(x: list[float], mapped: list[Mapped]) -> float:
    if min(x) <= 0 or x[0] > 1.2 or x[1] > 1.2 or x[5] > 1 or x[6] > 1:
        return 1e9
    model = _model_from(x)
    total = 0.0
    for mp in mapped:
        value, _ = predict(replace(mp, options=replace(mp.options, model=model)))
        total += math.log(value / mp.measured) ** 2
    return total


def nelder_mead(f, x0: list[float], step: float = 0.15, iters: int = 1500) -> list[float]:
    """Plain Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5)."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] * (1 + step) if j == i else x0[j] for j in range(n)] for i in range(n)]
    scores = [f(p) for p in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=scores.__getitem__)
        simplex, scores = [simplex[i] for i in order], [scores[i] for i in order]
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        refl = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(refl)
        if fr < scores[0]:
            exp = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(exp)
            simplex[-1], scores[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < scores[-2]:
            simplex[-1], scores[-1] = refl, fr
        else:
            con = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            fc = f(con)
            if fc < scores[-1]:
                simplex[-1], scores[-1] = con, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (p[j] - b) for j, b in enumerate(best)] for p in simplex[1:]]
                scores = [scores[0]] + [f(p) for p in simplex[1:]]
    return simplex[min(range(n + 1), key=scores.__getitem__)]


def fit(path: Path) -> EfficiencyModel:
    mapped = []
    for case in json.loads(path.read_text()):
        if case.get("kind") == "time" and in_fit_set(case["id"]):
            try:
                mapped.append(map_case(case))
            except Skip:
                continue
    m = DEFAULT_MODEL
    x0 = [m.sustained_lo, m.sustained_hi, m.kappa[KernelStack.FUSED], m.kappa[KernelStack.EAGER],
          m.t0_tokens, m.attention_lo, m.attention_hi]
    best = nelder_mead(lambda x: _loss(x, mapped), x0)
    print(f"fit on {len(mapped)} cases; sum of squared log errors {_loss(x0, mapped):.4f} -> {_loss(best, mapped):.4f}")
    for name, before, after in zip(FIT_FIELDS, x0, best):
        print(f"  {name:14s} {before:10.4g} -> {after:10.4g}")
    return _model_from(best)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    path = Path(args[0]) if args else DEFAULT_CASES
    if "--fit" in argv:
        fit(path)
        return 0
    rows, skipped = run(path, include_low="--all" in argv)
    if "--csv" in argv:
        print("id,source,metric,predicted,measured,error")
        for r in rows:
            print(f"{r[0]},{r[1]},{r[2]},{r[3]:.6g},{r[4]:.6g},{r[5]:.4f}")
        return 0
    print(f"{'id':56s} {'metric':22s} {'predicted':>11s} {'measured':>11s} {'error':>8s} {'mfu':>6s}")
    for cid, _src, metric, pred, meas, err, mfu, note in rows:
        print(f"{cid[:56]:56s} {metric:22s} {pred:11.4g} {meas:11.4g} {err:+8.1%} {mfu:6.1%}"
              + (f"  ({note})" if note else ""))
    print()
    print(f"{'all':22s}", _summary([r[5] for r in rows]))
    for src in sorted({r[1] for r in rows}):
        print(f"{src[:22]:22s}", _summary([r[5] for r in rows if r[1] == src]))
    if skipped:
        print(f"\nskipped {len(skipped)}:")
        for cid, why in skipped:
            print(f"  {cid}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
