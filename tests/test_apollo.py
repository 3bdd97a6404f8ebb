"""APOLLO (--optimizer apollo-adamw): states, temporaries, step time, where it runs, how configs and cases say it.

Hand values follow apollo_torch's APOLLOAdamW (apollo.py, random_projector.py): each decoder linear's gradient is
projected as GaLore's is (the right side, r x n, when m >= n), onto a seeded random matrix kept in the gradient's
dtype; Adam's two states zeros_like the projected gradient. Llama-2-7B: per layer q/k/v/o 4096 x 4096, gate/up
11008 x 4096, down 4096 x 11008; embeddings and head 32000 x 4096; 65 norm vectors of 4096.
"""

from __future__ import annotations

import pytest

from trainplan.catalog.hardware import resolve_gpu
from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.job.setup import build_setup
from trainplan.memory.regime import resolve_regime
from trainplan.memory.state import model_state
from trainplan.timing.apollo import apollo_step

PLAIN = 2 * 32000 * 4096 + 65 * 4096          # 262,410,240


def _setup(**kw):
    return build_setup(JobOptions(model="llama-2-7b", optimizer="apollo-adamw", **{"framework": "hf", **kw}))


def test_states_by_hand_pure_bf16_rank_16():
    # a 4096 x 4096 weight: projected 4096 x 16 with two 2-byte states, the 16 x 4096 random matrix in 2 bytes:
    # 2 x 2 x 65,536 + 2 x 65,536 = 393,216; 11008 x 4096 (either side): 11008 x 16 projected, 16 x 4096 matrix:
    # 4 x 176,128 + 2 x 65,536 = 835,584
    per_layer = 4 * 393_216 + 3 * 835_584
    setup = _setup(precision="bf16-pure", apollo_rank=16)
    state = model_state(setup, resolve_regime(setup))
    assert state.optimizer == 32 * per_layer + 2 * 2 * PLAIN == 130_547_712 + 1_049_640_960
    # scaled_grad and scaled_grad / limiter of the largest projected weight (11008 x 4096) against the embedding's
    # sqrt and division: 2 x 2 x 45,088,768 = 180,355,072 < 2 x 2 x 131,072,000
    assert state.optimizer_temp == 2 * 2 * 131_072_000


def test_projection_gemm_time_by_hand():
    # pure bf16 on an A100 SXM4 80GB: one GEMM a weight, 2 x big x r x small FLOPs at 312 TFLOP/s x 0.869 x 0.94,
    # its operands (G and P read, R written) at 0.8 x 2039 GB/s
    rate, bw, r = 312e12 * 0.869 * 0.94, 0.8 * 2039e9, 16

    def weight(m, n):
        big, small = max(m, n), min(m, n)
        return 2 * big * r * small / rate + 2 * (big * small + small * r + big * r) / bw

    per_layer = 4 * weight(4096, 4096) + 3 * weight(11008, 4096)
    step = apollo_step(_setup(precision="bf16-pure", apollo_rank=16), resolve_gpu("a100-80gb"),
                       resolve_job(JobOptions(model="llama-2-7b")).timing.model)
    assert step.gemm_s == pytest.approx(32 * per_layer, rel=1e-4)
    assert step.gemm_dtype == "bf16"
    assert step.plain_s == pytest.approx(PLAIN * 22 * 2 / bw)


@pytest.mark.parametrize("extra, message", [
    ({"num_gpus": 8, "zero": 2}, "projects each weight's 2-D gradient"),
    ({"method": "lora"}, "use --method full"),
    ({"framework": "torchtitan"}, "cannot run APOLLO"),
    ({"optimizer_in_backward": True, "num_gpus": 2}, "layer-wise APOLLO"),
    ({"optimizer_in_backward": True, "grad_accum": 4}, "layer-wise APOLLO"),
    ({"apollo_rank": 0}, "--apollo-rank"),
])
def test_where_apollo_cannot_run(extra, message):
    from trainplan.estimation.estimate import estimate

    with pytest.raises(TrainplanError, match=message):
        estimate(resolve_job(JobOptions(model="llama-2-7b", optimizer="apollo-adamw", gpu="a100-80gb",
                                        given=("framework",), **{"framework": "hf", **extra})))


def test_configs_read_apollo(tmp_path):
    from trainplan.importers import read_config

    hf = tmp_path / "args.yaml"
    hf.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nbf16: true\noptim: apollo_adamw_layerwise\n"
                  "optim_args: 'rank=256, proj=random'\noptim_target_modules: all-linear\n")
    got = read_config(str(hf)).values()
    assert (got["optimizer"], got["apollo_rank"], got["optimizer_in_backward"]) == ("apollo-adamw", 256, True)
    lf = tmp_path / "lf.yaml"
    lf.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\nfinetuning_type: full\nuse_apollo: true\n"
                  "optim: adamw_torch\ntemplate: llama2\ndataset: alpaca_en_demo\n")
    got = read_config(str(lf)).values()
    # LLaMA-Factory ApolloArguments.apollo_rank defaults to 16
    assert (got["optimizer"], got["apollo_rank"]) == ("apollo-adamw", 16)
    # any optim but adamw_torch makes _create_apollo_optimizer raise "Unknown optim": not modelled
    lf.write_text(lf.read_text().replace("optim: adamw_torch\n", ""))
    imported = read_config(str(lf))
    assert imported.values().get("optimizer") != "apollo-adamw"
    assert "use_apollo" in {u.key for u in imported.unread}


@pytest.mark.parametrize("fmt, keys", [
    ("hf", {"optim": "apollo_adamw", "optim_args": "rank=32", "optim_target_modules": "all-linear"}),
    ("llamafactory", {"use_apollo": True, "apollo_rank": 32, "apollo_target": "all", "optim": "adamw_torch"}),
])
def test_exports_write_apollo_and_read_it_back(tmp_path, fmt, keys):
    import json

    import yaml

    from trainplan.cli import main
    from trainplan.importers import read_config

    out = tmp_path / fmt
    assert main(["export", "--model", "llama-2-7b", "--optimizer", "apollo-adamw", "--apollo-rank", "32",
                 "--framework", fmt, "--format", fmt, "--out", str(out)]) == 0
    path = next(p for p in out.iterdir() if p.suffix in (".yaml", ".json"))
    data = json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())
    assert {k: data[k] for k in keys} == keys
    assert (read_config(str(path)).values()["optimizer"], read_config(str(path)).values()["apollo_rank"]) \
        == ("apollo-adamw", 32)


def test_case_text():
    from trainplan.cases.optimizer_text import galore_flags, memory_optimizer
    from trainplan.enums import Optimizer

    assert memory_optimizer("APOLLO (rank 256)")[0] is Optimizer.APOLLO_ADAMW
    notes: list[str] = []
    assert galore_flags("APOLLO rank 256 layerwise", notes, apollo=True) \
        == {"apollo_rank": 256, "optimizer_in_backward": True}


def test_formats_that_pass_optim_to_the_hf_trainer_read_galore_and_apollo(tmp_path):
    # axolotl passes a non-custom `optimizer` and its `optim_args` (a dict allowed) to TrainingArguments
    # (core/builders/base.py); ms-swift's `optim` goes to the HF Trainer under `swift sft`; the rank the HF Trainer
    # pops when optim_args names none is 128 (trainer_optimizer.py)
    from trainplan.importers import read_config

    ax = tmp_path / "axolotl.yaml"
    ax.write_text("base_model: meta-llama/Llama-2-7b-hf\noptimizer: galore_adamw_8bit\noptim_args:\n  rank: 64\n"
                  "optim_target_modules: all_linear\nsequence_len: 2048\nmicro_batch_size: 1\n"
                  "datasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\n")
    got = read_config(str(ax)).values()
    assert (got["optimizer"], got["galore_rank"]) == ("galore-adamw-8bit", 64)
    sw = tmp_path / "train.sh"
    sw.write_text("swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type full --optim apollo_adamw_layerwise "
                  "--optim_target_modules all-linear --dataset alpaca\n")
    got = read_config(str(sw)).values()
    assert (got["optimizer"], got["apollo_rank"], got["optimizer_in_backward"]) == ("apollo-adamw", 128, True)
