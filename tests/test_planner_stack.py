"""The planner speaks the stack (issue 14, item 1): --framework limits the layouts, optimizers and
kernels searched to what the framework runs (job/capabilities.CAPABILITIES), a layout flag given fixes
that knob, --optimizers is the allowed set, the best plan of every GPU type that carries the job is
listed, plans under 5% free memory are marked risky, and "what would make it fit" offers pairs of
changes when no single setup change fits."""

import json
import shlex

import pytest

from trainplan.cli import build_parser, main
from trainplan.cli.flags import options_from_args
from trainplan.enums import Framework, Fsdp, Offload, Optimizer, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.estimation import estimate
from trainplan.job.capabilities import CAPABILITIES, capabilities
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.planner.plan import plan
from trainplan.planner.request import resolve_plan
from trainplan.planner.result import RISKY_MARGIN
from trainplan.planner.space import ANY, Fixed, shardings, splits

GPUS_70B = "a100,a800,h800,h100,h20"
# marketplace prices for a800/h20 and one given for h800 (no catalog price of any kind), so that every type is priced
MUST_SHOW = ["plan", "--model", "llama-3.1-70b", "--method", "full", "--framework", "llamafactory", "--samples",
             "50000", "--tokens-per-sample", "2048", "--gpus", GPUS_70B, "--price-kind", "any", "--price", "h800=2.2"]


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def plan_json(capsys, *argv):
    code, out, err = cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def estimate_from_flags(flags: str):
    args = build_parser("estimate").parse_args(["estimate", *shlex.split(flags)])
    return estimate(resolve_job(options_from_args(args)))


# --- the must-show plan -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def must_show():
    import contextlib
    import io

    def run(*extra):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main([*MUST_SHOW, *extra, "--json"]) == 0
        return json.loads(buf.getvalue())

    return run


def test_llamafactory_70b_has_no_tp_pp_nor_8bit_and_every_gpu_type(must_show):
    data = must_show()
    plans = data["plans"]
    assert plans
    assert all(p["sets"]["tp"] == 1 and p["sets"]["pp"] == 1 for p in plans)
    assert all(p["sets"]["optimizer"] == "adamw-fused" for p in plans)      # LLaMA-Factory's (HF's) default only
    assert {"a100-sxm4-80gb", "a800-sxm4-80gb", "h800-sxm", "h100-sxm", "h20"} == {p["sets"]["gpu"] for p in plans}
    assert data["rejected"] == []
    # the rows after the top 10 are the best plan of each GPU type the top 10 leaves out, at its rank
    top = [p for p in plans if not p["gpu_best"]]
    extra = [p for p in plans if p["gpu_best"]]
    assert len(top) == 10 and [p["rank"] for p in top] == list(range(1, 11))
    assert not {p["sets"]["gpu"] for p in extra} & {p["sets"]["gpu"] for p in top}
    assert all(p["rank"] > 10 for p in extra) and len({p["sets"]["gpu"] for p in extra}) == len(extra)
    for p in plans:                      # each row is what `trainplan estimate` gives for its flags
        est = estimate_from_flags(p["flags"])
        assert est.memory.device_bytes == p["memory"]["device_bytes"]
        assert est.cost.total == pytest.approx(p["cost"]["total"])


def test_zero3_fixes_every_row(must_show):
    plans = must_show("--zero", "3")["plans"]
    assert plans and all(p["sets"]["zero"] == 3 and p["sets"]["fsdp"] == "none" for p in plans)
    assert all(" --zero 3 " in p["flags"] for p in plans)
    assert {p["sets"]["gpu"] for p in plans} == {"a100-sxm4-80gb", "a800-sxm4-80gb", "h800-sxm", "h100-sxm", "h20"}


def test_the_best_of_each_gpu_type_is_exact():
    """The per-type best the branch and bound keeps equals the exhaustive walk's."""
    job = JobOptions(model="llama-3.2-1b", method="full", samples=50000, seq_len=1024)
    pr = resolve_plan(job, gpus=("a100-80gb", "h100", "rtx4090", "l40s"), max_gpus=16, top=2)
    pruned, full = plan(pr, details=False), plan(pr, details=False, prune=False)

    def best(result):
        out = {}
        for f in result.found:
            out[f.rentable.gpu.id] = min(out.get(f.rentable.gpu.id, float("inf")), f.cost_value)
        return out

    assert best(pruned) == best(full) and len(best(full)) == 4
    shown: dict = {}
    for p in pruned.plans:
        shown.setdefault(p.found.rentable.gpu.id, p.found.cost_value)   # rows in rank order: the first is the best
    assert shown == best(full)
    assert [p.rank for p in pruned.plans] == sorted(p.rank for p in pruned.plans)


# --- the layout flags fix the knob ----------------------------------------------------------------

@pytest.mark.parametrize("flags, check", [
    ({"fsdp": "full", "framework": "hf"}, lambda s: s["fsdp"] == "full" and s["zero"] == 0),
    ({"offload": "optimizer", "framework": "deepspeed"}, lambda s: s["offload"] == "optimizer" and s["zero"] >= 1),
    ({"offload": "all", "framework": "deepspeed"}, lambda s: s["offload"] == "all" and s["zero"] == 3),
    ({"tp": 2, "framework": "megatron"}, lambda s: s["tp"] == 2),
    ({"pp": 2, "framework": "megatron"}, lambda s: s["pp"] == 2),
    ({"zero": 0, "framework": "hf", "given": ("zero",)}, lambda s: s["zero"] == 0),   # --zero 0 given: no ZeRO
], ids=["fsdp-full", "offload-optimizer", "offload-all", "tp2", "pp2", "zero0-given"])
def test_layout_flag_fixes_the_knob(flags, check):
    job = JobOptions(model="llama-3.2-1b", method="full", samples=20000, **flags)
    result = plan(resolve_plan(job, gpus=("h100",), max_gpus=16, top=5), details=False)
    assert result.found and all(check(p.sets) for p in result.plans)
    assert all(check({"fsdp": str(f.shape.fsdp), "zero": int(f.shape.zero), "offload": str(f.shape.offload),
                      "tp": f.shape.tp, "pp": f.shape.pp}) for f in result.found)


# --- each capability entry's effect on the search ------------------------------------------------

SPEC_70B = resolve_job(JobOptions(model="llama-3.1-70b")).setup.model


@pytest.mark.parametrize("framework", list(CAPABILITIES), ids=str)
def test_capability_entry_limits_the_engines(framework):
    caps = capabilities(framework)
    pairs = {(tp, pp) for n in (8, 16) for tp, pp in splits(SPEC_70B, n, 8, 32, caps=caps)}
    assert any(tp > 1 for tp, _ in pairs) == caps.tp
    assert any(pp > 1 for _, pp in pairs) == caps.pp
    engines = set(shardings(16, 2, 1, 1, caps)) | set(shardings(1, 1, 1, 1, caps))
    zeros = {int(z) for z, _, _ in engines}
    assert zeros == set(caps.zero) | ({0} if caps.zero else set())
    assert any(f != Fsdp.NONE for _, f, _ in engines) == caps.fsdp
    assert {o for _, _, o in engines} - {Offload.NONE} == ({Offload.OPTIMIZER} & set(caps.offload))
    if caps.tp:                                   # what shards the data-parallel copies under tensor parallelism
        with_tp = set(shardings(16, 2, 2, 1, caps))
        assert ((ZeroStage.OPTIMIZER, Fsdp.NONE, Offload.NONE) in with_tp) == caps.mp_zero1
        assert ((ZeroStage.NONE, Fsdp.FULL, Offload.NONE) in with_tp) == caps.mp_fsdp


def test_any_capabilities_keep_the_old_space():
    assert shardings(1, 1, 1, 1, ANY) == ((0, "none", "none"), (2, "none", "optimizer"), (3, "none", "optimizer"))
    assert shardings(16, 2, 2, 2, ANY) == ((0, "none", "none"), (1, "none", "none"))
    assert shardings(16, 2, 1, 1, ANY, Fixed(zero=ZeroStage.PARAMETERS)) == \
        ((3, "none", "none"), (3, "none", "optimizer"))


def test_hf_stack_plans_have_no_tp_pp_and_torchtitan_shards_with_fsdp():
    job = JobOptions(model="llama-3.1-70b", method="full", samples=10000, framework="hf")
    hf = plan(resolve_plan(job, gpus=("h100",), max_gpus=32), details=False)
    assert hf.found and all(f.shape.tp == f.shape.pp == 1 for f in hf.found)
    titan = plan(resolve_plan(JobOptions(model="llama-3.1-70b", method="full", samples=10000, framework="torchtitan",
                                         tp=4), gpus=("h100",), max_gpus=32), details=False)
    assert titan.found and all(f.shape.tp == 4 and f.shape.zero == 0 and
                               (f.shape.fsdp == "full" or f.shape.dp == 1) for f in titan.found)


# --- optimizers: an explicit allowed set ----------------------------------------------------------

def test_optimizers_default_and_allowed_set():
    job = JobOptions(model="llama-3.2-1b", method="full", samples=20000, framework="llamafactory")
    pr = resolve_plan(job, gpus=("h100",), max_gpus=8)
    assert pr.methods[0].optimizers == (Optimizer.ADAMW_FUSED,)
    both = resolve_plan(job, gpus=("h100",), max_gpus=8, optimizers=("adamw", "adamw-8bit"))
    assert both.methods[0].optimizers == (Optimizer.ADAMW, Optimizer.ADAMW_8BIT)
    result = plan(both, details=False)
    assert {f.knobs.optimizer for f in result.found} == {Optimizer.ADAMW, Optimizer.ADAMW_8BIT}
    unsloth = resolve_plan(JobOptions(model="llama-3.2-1b", method="full", framework="unsloth"), gpus=("h100",))
    assert unsloth.methods[0].optimizers == (Optimizer.ADAMW_8BIT,)     # unsloth's own default, not a switch


# --- bad combinations: one line, exit 2 -----------------------------------------------------------

@pytest.mark.parametrize("extra, fragment", [
    (["--framework", "llamafactory", "--tp", "2"], "--framework llamafactory cannot run tensor parallelism (--tp 2)"),
    (["--framework", "swift", "--pp", "2"], "`megatron sft` is --framework megatron"),
    (["--framework", "hf", "--pp", "2"], "cannot run pipeline parallelism"),
    (["--framework", "torchtitan", "--optimizers", "lion"], "cannot run the optimizer lion"),
    (["--framework", "torchtune", "--optimizers", "badam"], "cannot run the optimizer badam"),
    (["--framework", "megatron", "--optimizers", "adamw,adamw-8bit"], "cannot run the optimizer adamw-8bit"),
    (["--framework", "torchtune", "--zero", "3"], "cannot run DeepSpeed ZeRO-3"),
    (["--framework", "megatron", "--fsdp", "full"], "cannot run FSDP"),
    (["--framework", "megatron", "--liger"], "no Liger kernels"),
    (["--framework", "torchtitan", "--loss", "fused"], "no fused loss kernel"),
    (["--framework", "megatron", "--cp", "2"], "does not search context parallelism"),
    (["--optimizer", "adamw", "--optimizers", "adamw,lion"], "not both"),
    (["--framework", "llamafactory", "--zero", "3", "--tp", "1", "--fsdp", "full"], "--zero"),
    (["--framework", "deepspeed", "--zero", "3", "--pp", "2"], "no layout of up to"),
])
def test_bad_combination_is_one_line(capsys, extra, fragment):
    code, _, err = cli(capsys, "plan", "--model", "llama-3.1-8b", "--method", "full", "--gpus", "h100", *extra)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("trainplan: error:") and fragment in err, err


def test_torchtune_runs_lion():
    """torchtune instantiates any optimizer._component_ (bitsandbytes.optim.Lion among them): allowed."""
    pr = resolve_plan(JobOptions(model="llama-3.2-1b", method="full", framework="torchtune"), gpus=("h100",),
                      optimizers=("lion",))
    assert pr.methods[0].optimizers == (Optimizer.LION,)
    assert Framework.TORCHTUNE in CAPABILITIES and Optimizer.LION in capabilities(Framework.TORCHTUNE).optimizers


# --- risky plans -------------------------------------------------------------------------------------

def test_risky_margin_is_free_memory_over_usable():
    job = JobOptions(model="llama-3.1-70b", method="full", samples=50000, framework="llamafactory")
    result = plan(resolve_plan(job, gpus=("h20", "h100"), max_gpus=64, top=40), details=False)
    for p in result.plans:
        f = p.found
        free = (f.rentable.usable_bytes - f.device_bytes) / f.rentable.usable_bytes
        assert f.margin_fraction == pytest.approx(free)
        assert p.risky == (free < RISKY_MARGIN)
        assert p.to_dict()["risky"] == p.risky


# --- what would make it fit: pairs when no single change fits --------------------------------------

def test_pairs_when_no_single_setup_change_fits():
    """Llama-3.1-8B full at 4096 tokens on one 24 GiB RTX 4090: checkpointing alone, LoRA, QLoRA, 8-bit
    Adam or the fused loss each leave it over; checkpointing + QLoRA fits. Each pair's GiB is what
    `trainplan estimate` gives with both flags."""
    base = "--model llama-3.1-8b --method full --gpu rtx4090 --seq-len 4096"
    est = estimate_from_flags(base)
    assert not est.memory.fits
    singles = [s for s in est.suggestions if s.changes == 1 and not s.change.startswith(("--gpu", "--num-gpus"))]
    assert singles and not any(s.fits for s in singles)
    pairs = [s for s in est.suggestions if s.changes == 2]
    assert pairs and all(s.fits for s in pairs)
    assert any("--grad-ckpt full" in s.change and "--method qlora" in s.change for s in pairs)
    for s in pairs:
        both = estimate_from_flags(f"{base} {s.change}")
        assert both.memory.device_bytes == s.device_bytes and both.memory.fits
        assert s.saves_bytes == est.memory.device_bytes - s.device_bytes
        assert ";" in s.cost                                # each change's cost


def test_pairs_with_the_chunked_loss_and_none_when_a_single_fits():
    """TRL offers the chunked loss (SFTConfig loss_type chunked_nll); Megatron offers none."""
    base = "--model llama-3.1-8b --method lora --gpu rtx4090 --seq-len 16384 --framework trl --grad-ckpt none"
    est = estimate_from_flags(base)
    assert not est.memory.fits
    assert any(s.change == "--loss chunked" for s in est.suggestions)
    if not any(s.fits for s in est.suggestions if s.changes == 1 and not s.change.startswith(("--gpu", "--num"))):
        pairs = [s for s in est.suggestions if s.changes == 2]
        for s in pairs:
            assert estimate_from_flags(f"{base} {s.change}").memory.device_bytes == s.device_bytes
    mega = estimate_from_flags("--model llama-3.1-8b --method full --gpu rtx4090 --framework megatron")
    assert not any("--loss" in s.change for s in mega.suggestions)
    assert not any("adamw-8bit" in s.change for s in mega.suggestions)
    fits_alone = estimate_from_flags("--model llama-3.1-8b --method lora --gpu h100 --seq-len 8192 --batch-size 8")
    if any(s.fits and s.changes == 1 for s in fits_alone.suggestions if not s.change.startswith(("--gpu", "--num"))):
        assert not any(s.changes == 2 for s in fits_alone.suggestions)


def test_a_pair_never_combines_two_methods():
    est = estimate_from_flags("--model llama-3.1-8b --method full --gpu rtx4090 --seq-len 4096")
    for s in est.suggestions:
        assert s.change.count("--method") <= 1


def test_fixed_knob_type_errors_are_typed():
    with pytest.raises(TrainplanError):
        resolve_plan(JobOptions(model="llama-3.2-1b", framework="llamafactory", tp=2), gpus=("h100",))


def test_a_config_read_with_from_fixes_its_layout(capsys, tmp_path):
    """A DeepSpeed JSON with stage 3 (read --from) fixes ZeRO-3 as the flag would; --optimizers wins over
    an optimizer the config names, and the JSON says what was searched."""
    ds = tmp_path / "ds_z3.json"
    ds.write_text(json.dumps({"zero_optimization": {"stage": 3}, "bf16": {"enabled": True},
                              "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}}}))
    data = plan_json(capsys, "plan", "--model", "llama-3.2-1b", "--from", str(ds), "--num-gpus", "8", "--gpus", "h100",
                     "--max-gpus", "8", "--samples", "1000", "--optimizers", "adamw,adamw-8bit")
    assert data["plans"] and {p["sets"]["zero"] for p in data["plans"]} == {3}
    assert data["stack"]["fixed"] == {"zero": 3, "fsdp": None, "offload": None, "tp": None, "pp": None}
    assert data["stack"]["framework"] == "deepspeed" and data["stack"]["optimizers"] == ["adamw", "adamw-8bit"]
    assert data["stack"]["risky_margin"] == RISKY_MARGIN == 0.05


def test_plan_text_names_the_stack_and_marks_risky(capsys):
    code, out, _ = cli(capsys, *MUST_SHOW)
    assert code == 0
    assert "--framework llamafactory: DDP, DeepSpeed ZeRO-0..3 with CPU offload" in out
    assert "optimizers searched: adamw-fused" in out and "TP " not in out and "PP " not in out
    rows = [line for line in out.splitlines() if line[:1].isdigit() and "full" in line]
    assert {r.split()[1] for r in rows} == {"a100-sxm4-80gb", "a800-sxm4-80gb", "h800-sxm", "h100-sxm", "h20"}
    for r in rows:                                        # "81.6/85.5": 4.6% free, so marked "!"
        tok = next(t for t in r.split() if "/" in t and t.replace("/", "").replace(".", "").isdigit())
        used, usable = map(float, tok.split("/"))
        free = (usable - used) / usable
        if "!" in r.split()[0]:
            assert free < 0.05 + 0.002                    # one decimal of rounding
        else:
            assert free > 0.05 - 0.002
