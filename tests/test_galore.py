"""GaLore (galore-adamw, galore-adamw-8bit): states, step time, where it runs, how configs and cases say it.

Hand values follow galore_torch galore_projector.py (basis r' x min(m, n), projected gradient max(m, n) x r',
r' = min(rank, m, n)) and adamw.py (two states zeros_like the projected gradient); Llama-2-7B's decoder
linears are q/k/v/o 4096 x 4096, gate/up 11008 x 4096 and down 4096 x 11008, 32 layers; embeddings and head
32000 x 4096; 65 RMSNorm weights of 4096.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainplan.catalog.hardware import resolve_gpu
from trainplan.cases.accuracy import evaluate
from trainplan.cases.optimizer_text import galore_of
from trainplan.enums import Optimizer
from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.job.setup import build_setup
from trainplan.memory.regime import resolve_regime
from trainplan.memory.state import galore_shape, model_state
from trainplan.timing.galore import galore_step

DATA = Path(__file__).parent / "data"
PLAIN = 2 * 32000 * 4096 + 65 * 4096          # embeddings, head and norms: 262,410,240 parameters


def _setup(**kw):
    return build_setup(JobOptions(model="llama-2-7b", **kw))


def test_projected_shapes_follow_the_smaller_side():
    # m >= n: right basis r x n, projected m x r; m < n: left basis m x r, projected r x n
    assert galore_shape(11008, 4096, 128) == (11008 * 128, 4096 * 128)
    assert galore_shape(4096, 11008, 128) == (11008 * 128, 4096 * 128)
    # a rank above the smaller side keeps all of it (Vh[:rank] has min(m, n) rows)
    assert galore_shape(8, 4096, 128) == (4096 * 8, 8 * 8)


def test_galore_adamw_states_by_hand_pure_bf16():
    setup = _setup(optimizer="galore-adamw", precision="bf16-pure", galore_rank=128)
    # per layer, 2-byte states and basis: q/k/v/o 4 x (2 x 4096*128 x 2 + 4096*128 x 2) = 12,582,912;
    # gate/up 2 x (2 x 11008*128 x 2 + 4096*128 x 2) = 13,369,344; down 6,684,672 -> 32,636,928 a layer
    galore = 32 * (12_582_912 + 13_369_344 + 6_684_672)
    plain = PLAIN * 2 * 2                    # fused AdamW, two 2-byte states
    assert galore == 1_044_381_696 and plain == 1_049_640_960
    assert model_state(setup, resolve_regime(setup)).optimizer == galore + plain


def test_galore_8bit_states_by_hand():
    setup = _setup(optimizer="galore-adamw-8bit", precision="bf16-pure", galore_rank=128)
    # bitsandbytes 8-bit: 1 byte a state element + an fp32 absmax per 256 elements, both states;
    # the basis stays 2-byte. attention weight: projected 524,288 -> 2 x 524,288 + 8 x 2,048 = 1,064,960
    attn = 2 * 524_288 + 8 * 2_048 + 4096 * 128 * 2
    mlp = 2 * 1_409_024 + 8 * 5_504 + 4096 * 128 * 2          # 1,409,024 / 256 = 5,504 blocks
    per_layer = 4 * attn + 3 * mlp
    # plain tensors: embeddings and head 131,072,000 each (512,000 blocks); the 65 norms of 4096 each
    # (16 blocks)
    plain = 2 * (2 * 131_072_000 + 8 * 512_000) + 65 * (2 * 4096 + 8 * 16)
    assert model_state(setup, resolve_regime(setup)).optimizer == 32 * per_layer + plain


def test_mixed_precision_keeps_fp32_states_and_basis():
    # the HF Trainer keeps the model in fp32 under autocast: GaLore's states and basis are fp32 (4 bytes)
    mixed = _setup(optimizer="galore-adamw", precision="bf16", galore_rank=128, framework="hf")
    pure = _setup(optimizer="galore-adamw", precision="bf16-pure", galore_rank=128, framework="hf")
    assert model_state(mixed, resolve_regime(mixed)).optimizer == 2 * model_state(pure, resolve_regime(pure)).optimizer


def test_step_temporaries_are_one_weights_svd():
    # the largest projected weight is 11008 x 4096: the SVD holds its fp32 copy, U 11008 x 4096 and Vh 4096 x 4096
    setup = _setup(optimizer="galore-adamw", precision="bf16-pure")
    svd = 4 * (11008 * 4096 + 11008 * 4096 + 4096 * 4096)
    assert model_state(setup, resolve_regime(setup)).optimizer_temp == svd == 427_819_008


def test_projection_gemm_time_by_hand():
    # pure bf16 on an A100 SXM4 80GB: per projected weight two GEMMs of 2 m n r' FLOPs at 312 TFLOP/s x MAMF
    # 0.869 x sustained 0.94, plus their operands at 0.8 x 2039 GB/s (timing.moe.grouped_gemm_s)
    setup = _setup(optimizer="galore-adamw", precision="bf16-pure", galore_rank=128)
    gpu = resolve_gpu("a100-80gb")
    rate, bw = 312e12 * 0.869 * 0.94, 0.8 * 2039e9
    r = 128

    def weight(m, n):
        big, small = max(m, n), min(m, n)
        project = 2 * big * r * small / rate + 2 * (big * small + small * r + big * r) / bw
        back = 2 * big * small * r / rate + 2 * (big * r + r * small + big * small) / bw
        return project + back

    per_layer = 4 * weight(4096, 4096) + 2 * weight(11008, 4096) + weight(4096, 11008)
    assert galore_step(setup, gpu, resolve_job(JobOptions(model="llama-2-7b")).timing.model).gemm_s \
        == pytest.approx(32 * per_layer, rel=1e-3)


def test_fp32_gradients_project_at_the_fp32_rate():
    # HF mixed precision: fp32 gradients, so the GEMMs run at 19.5 TFLOP/s, not 312 (TF32 off for matmuls)
    gpu = resolve_gpu("a100-80gb")
    model = resolve_job(JobOptions(model="llama-2-7b")).timing.model
    fp32 = galore_step(_setup(optimizer="galore-adamw", precision="bf16", framework="hf"), gpu, model)
    bf16 = galore_step(_setup(optimizer="galore-adamw", precision="bf16-pure", framework="hf"), gpu, model)
    assert fp32.gemm_dtype == "fp32" and bf16.gemm_dtype == "bf16"
    assert fp32.gemm_s > 8 * bf16.gemm_s


def test_layerwise_steps_every_backward():
    one = resolve_job(JobOptions(model="llama-2-7b", optimizer="galore-adamw", precision="bf16-pure",
                                 optimizer_in_backward=True, grad_accum=1, framework="pytorch"))
    four = resolve_job(JobOptions(model="llama-2-7b", optimizer="galore-adamw", precision="bf16-pure",
                                  optimizer_in_backward=True, grad_accum=4, framework="pytorch"))
    from trainplan.timing.estimate import estimate_time

    t1 = estimate_time(one.setup, one.layout, one.gpu, one.workload, one.timing).breakdown.optimizer_s
    t4 = estimate_time(four.setup, four.layout, four.gpu, four.workload, four.timing).breakdown.optimizer_s
    assert t4 == pytest.approx(4 * t1)


@pytest.mark.parametrize("extra, message", [
    ({"num_gpus": 8, "zero": 2}, "flattened shards"),
    ({"num_gpus": 8, "fsdp": "full"}, "flattened shards"),
    ({"method": "lora"}, "use --method full"),
    ({"framework": "megatron"}, "cannot run GaLore"),
    ({"framework": "torchtitan"}, "cannot run GaLore"),
    ({"galore_rank": 0}, "--galore-rank"),
    ({"optimizer_in_backward": True, "num_gpus": 2}, "layer-wise GaLore"),
])
def test_where_galore_cannot_run(extra, message):
    with pytest.raises(TrainplanError, match=message):
        job = resolve_job(JobOptions(model="llama-2-7b", optimizer="galore-adamw", given=("framework",), **extra))
        from trainplan.estimation.estimate import estimate

        estimate(job)


def test_case_text():
    assert galore_of("GaLoreAdamW8bit per-layer (galore_adamw8bit_per_layer, rank 1024, update_proj_gap 500)") \
        == (1024, True)
    assert galore_of("galore_adamw, optim_args rank=64") == (64, False)
    assert galore_of("GaLore") == (None, False)


def test_the_dev2_galore_case_is_predicted():
    # jiaweizzhao/GaLore README: LLaMA-7B, 8-bit GaLore rank 1024 per layer, bf16, batch 16 x 256, one RTX 4090:
    # 22.8 G. Hand estimate: 12.55 GiB weights + 4.77 GiB projected states and bases + 0.49 GiB 8-bit states of
    # the plain tensors + activations and logits
    case = next(c for c in json.loads((DATA / "published_dev2.json").read_text())
                if c["id"] == "galore-readme-llama7b-pretrain-galore8bit-1x4090-mem")
    result = evaluate([case])[0]
    assert result.skipped is None
    assert abs(result.error) < 0.10


def test_a_galore_time_case_reads_its_rank_and_per_layer_step():
    # the same run read as a time case: the time reader applies the optimizer text's rank and per-layer step
    # as the memory reader does (cases.optimizer_text.galore_flags), so its projections are rank 1024, stepped each backward
    from trainplan.cases import map_case

    case = next(c for c in json.loads((DATA / "published_dev2.json").read_text())
                if c["id"] == "galore-readme-llama7b-pretrain-galore8bit-1x4090-mem")
    timed = {**case, "kind": "time", "measured": {"step_time_s": 10.0}}
    setup = map_case(timed).job.setup
    assert setup.optimizer is Optimizer.GALORE_ADAMW_8BIT
    assert (setup.galore_rank, setup.impl.optimizer_in_backward) == (1024, True)


def test_configs_read_galore(tmp_path):
    hf = tmp_path / "args.yaml"
    hf.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nbf16: true\noptim: galore_adamw_8bit_layerwise\n"
                  "optim_args: 'rank=64, update_proj_gap=100'\noptim_target_modules: [attn, mlp]\n")
    lf = tmp_path / "lf.yaml"
    lf.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\nfinetuning_type: full\n"
                  "use_galore: true\ngalore_layerwise: true\noptim: adamw_8bit\ntemplate: llama2\n"
                  "dataset: alpaca_en_demo\n")
    from trainplan.importers import read_config

    got = read_config(str(hf)).values()
    assert (got["optimizer"], got["galore_rank"], got["optimizer_in_backward"]) == ("galore-adamw-8bit", 64, True)
    got = read_config(str(lf)).values()
    # LLaMA-Factory GaloreArguments.galore_rank defaults to 16
    assert (got["optimizer"], got["galore_rank"], got["optimizer_in_backward"]) == ("galore-adamw-8bit", 16, True)
    assert Optimizer(got["optimizer"]) is Optimizer.GALORE_ADAMW_8BIT


def test_ms_swift_reads_and_writes_galore(tmp_path):
    from trainplan.importers import read_config

    script = tmp_path / "sft.sh"
    script.write_text("swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type full --use_galore true "
                      "--galore_rank 64 --torch_dtype bfloat16 --dataset x --max_length 2048\n")
    got = read_config(str(script)).values()
    # swift/optimizers/galore/utils.py get_optimizer: the default optim (adamw_torch_fused) -> GaLoreAdamW
    assert (got["optimizer"], got["galore_rank"]) == ("galore-adamw", 64)
    script.write_text("swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type full --use_galore true "
                      "--optim adamw_8bit --dataset x\n")
    got = read_config(str(script)).values()
    # trainers/arguments.py galore_rank = 128; an 8-bit adamw -> GaLoreAdamW8bit
    assert (got["optimizer"], got["galore_rank"]) == ("galore-adamw-8bit", 128)
    # sft_args.py turns use_galore into `optimizer galore`: written out, it is the same read
    script.write_text("swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type full --use_galore true "
                      "--optimizer galore --dataset x\n")
    imported = read_config(str(script))
    assert imported.values()["optimizer"] == "galore-adamw"
    assert not any(u.key == "optimizer" for u in imported.unread)
    # embeddings projected too (galore_with_embedding) is not what trainplan models: use_galore stays unread
    script.write_text("swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type full --use_galore true "
                      "--galore_with_embedding true --dataset x\n")
    imported = read_config(str(script))
    assert "optimizer" not in imported.values() or imported.values()["optimizer"] != "galore-adamw"
    assert any(u.key == "use_galore" for u in imported.unread)


@pytest.mark.parametrize("fmt, keys", [
    ("swift", {"use_galore": True, "galore_rank": 32, "optim": "adamw_torch"}),
    ("llamafactory", {"use_galore": True, "galore_rank": 32, "optim": "adamw_torch", "galore_target": "all"}),
])
def test_exports_write_galore(tmp_path, fmt, keys):
    import yaml

    from trainplan.cli import main

    out = tmp_path / fmt
    assert main(["export", "--model", "qwen2.5-7b", "--optimizer", "galore-adamw", "--galore-rank", "32",
                 "--framework", fmt, "--format", fmt, "--out", str(out)]) == 0
    data = yaml.safe_load(next(p for p in out.iterdir() if p.suffix == ".yaml").read_text())
    assert {k: data[k] for k in keys} == keys


def test_planner_keeps_galore_to_plain_data_parallel(capsys):
    from trainplan.cli import main

    assert main(["plan", "--model", "llama-2-7b", "--optimizers", "galore-adamw-8bit", "--gpus", "a100-80gb",
                 "--max-gpus", "4", "--precision", "bf16-pure", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    assert plans
    # ZeRO and FSDP shapes are skipped, not errors: every plan is one GPU or DDP
    assert all(p["setup"]["zero"] == 0 and p["setup"]["fsdp"] == "none" for p in plans)
    assert all(p["setup"]["optimizer"] == "galore-adamw-8bit" for p in plans)


def test_advice_offers_layerwise_galore_for_a_7b_on_a_4090():
    # the GaLore README's claim: a 7B full-parameter run in 24 GB with 8-bit GaLore stepped per layer
    from trainplan.estimation.estimate import estimate

    job = resolve_job(JobOptions(model="llama-2-7b", gpu="rtx4090", precision="bf16-pure", grad_ckpt="full"))
    offered = {s.change: s for s in estimate(job).suggestions}
    layerwise = offered["--optimizer galore-adamw-8bit --optimizer-in-backward"]
    assert layerwise.fits
    assert not offered["--optimizer galore-adamw-8bit"].fits      # all 7B gradients at once do not fit in 24 GB
    # under ZeRO the change is not a setup GaLore runs: not offered
    sharded = resolve_job(JobOptions(model="llama-2-7b", gpu="rtx4090", precision="bf16-pure", num_gpus=2, zero=2))
    assert not any("galore" in s.change for s in estimate(sharded).suggestions)


def test_layerwise_galore_takes_no_accumulation_under_the_hf_trainer():
    with pytest.raises(TrainplanError, match="no gradient accumulation"):
        from trainplan.estimation.estimate import estimate

        estimate(resolve_job(JobOptions(model="llama-2-7b", optimizer="galore-adamw", optimizer_in_backward=True,
                                        grad_accum=4, framework="llamafactory", given=("framework",))))


@pytest.mark.parametrize("method, optimizer, read", [
    ("full+galore", "AdamW 8-bit", "GaLore AdamW 8-bit"),     # ms-swift's tuner table names it so
    ("GaLore", "GaLoreAdamW rank 128", "GaLoreAdamW rank 128"),
    ("badam", "AdamW", "BAdam AdamW"),
])
def test_a_method_that_names_the_optimizer(method, optimizer, read):
    from trainplan.cases.method_words import method_not_modelled
    from trainplan.cases.normalize import normalized
    from trainplan.cases.optimizer_text import memory_optimizer

    out, notes = normalized({"method": method, "optimizer": optimizer, "model": {}, "measured": {}})
    assert (out["method"], out["optimizer"]) == ("full", read)
    assert memory_optimizer(out["optimizer"])[0] in (Optimizer.GALORE_ADAMW, Optimizer.GALORE_ADAMW_8BIT,
                                                     Optimizer.BADAM)
    assert method_not_modelled("lisa") is not None        # LISA stays unmodelled
