"""Muon (--optimizer muon): states, step temporaries, step time, where it runs, how configs and cases say it.

Hand values follow Moonlight's examples/toy_train.py Muon as LLaMA-Factory (third_party/muon/muon.py),
ms-swift (swift/optimizers/muon.py) and axolotl (axolotl-contribs-mit muon/muon.py) run it: one
`momentum_buffer = zeros_like(g)` per trainable 2-D weight but the embeddings and head, two AdamW moments
zeros_like(g) for the rest, `zeropower_via_newtonschulz5` with 5 steps in bf16. Llama-2-7B's decoder linears are
q/k/v/o 4096 x 4096, gate/up 11008 x 4096 and down 4096 x 11008, 32 layers; embeddings and head 32000 x 4096;
65 RMSNorm weights of 4096.
"""

from __future__ import annotations

import pytest

from trainplan.catalog.hardware import resolve_gpu
from trainplan.enums import Optimizer
from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.job.setup import build_setup
from trainplan.memory.regime import resolve_regime
from trainplan.memory.state import model_state
from trainplan.timing.muon import muon_step, newton_schulz_flops

DECODER_LINEARS = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)     # 6,476,005,376 parameters
PLAIN = 2 * 32000 * 4096 + 65 * 4096                             # embeddings, head and norms: 262,410,240


def _setup(**kw):
    return build_setup(JobOptions(model="llama-2-7b", optimizer="muon", **{"framework": "llamafactory", **kw}))


def test_states_one_momentum_per_matrix_two_adamw_moments_for_the_rest():
    setup = _setup(precision="bf16-pure")
    # pure bf16: 2-byte states; half of AdamW's 2 x 2 x 6,738,415,616 for the matrices
    assert DECODER_LINEARS == 6_476_005_376 and PLAIN == 262_410_240
    assert model_state(setup, resolve_regime(setup)).optimizer == 2 * DECODER_LINEARS + 2 * 2 * PLAIN \
        == 14_001_651_712


def test_mixed_precision_states_are_fp32():
    # LLaMA-Factory bf16: fp32 trainable weights under autocast, so zeros_like(grad) is fp32
    setup = _setup(precision="bf16")
    assert model_state(setup, resolve_regime(setup)).optimizer == 4 * DECODER_LINEARS + 2 * 4 * PLAIN


def test_step_temporaries_by_hand():
    # the largest matrix 11008 x 4096 (k = 4096): the Nesterov copy in the gradient's dtype, then X, B @ X, a * X
    # and their sum in bf16 with A and B (4096 x 4096); the embedding's AdamW: two 2-byte temporaries of 32000 x 4096
    mn, k = 11008 * 4096, 4096
    muon = 2 * mn + 2 * (4 * mn + 2 * k * k)
    adamw = 2 * 2 * 32000 * 4096
    assert (muon, adamw) == (517_996_544, 524_288_000)
    setup = _setup(precision="bf16-pure")
    assert model_state(setup, resolve_regime(setup)).optimizer_temp == max(muon, adamw)


def test_newton_schulz_flops_by_hand_and_keller_jordans_overhead():
    # per iteration X X^T (2 k^2 K) + A A (2 k^3) + B X (2 k^2 K), five iterations
    assert newton_schulz_flops(4096, 4096) == 30 * 4096 ** 3 == 2_061_584_302_080
    assert newton_schulz_flops(11008, 4096) == newton_schulz_flops(4096, 11008) \
        == 5 * (4 * 4096 ** 2 * 11008 + 2 * 4096 ** 3) == 4_380_866_641_920
    # Keller Jordan, "Muon: An optimizer for hidden layers in neural networks" (2024), FLOP overhead T m / B for an
    # m x m weight trained on B tokens a step (6 m^2 B FLOPs)
    m, tokens = 8192, 1_000_000
    assert newton_schulz_flops(m, m) / (6 * m * m * tokens) == pytest.approx(5 * m / tokens)


def test_step_time_gemms_by_hand_on_a100():
    # bf16 on an A100 SXM4 80GB: each GEMM at 312 TFLOP/s x MAMF 0.869 x sustained 0.94 plus its bf16 operands
    # at 0.8 x 2039 GB/s (timing.moe.grouped_gemm_s), five iterations of X X^T, A A and B X per matrix
    setup = _setup(precision="bf16-pure")
    rate, bw = 312e12 * 0.869 * 0.94, 0.8 * 2039e9

    def gemm(m, n, k):
        return 2 * m * n * k / rate + 2 * (m * k + k * n + m * n) / bw

    def matrix(rows, cols):
        k, big = min(rows, cols), max(rows, cols)
        return 5 * (gemm(k, k, big) + gemm(k, k, k) + gemm(k, big, k))

    per_layer = 4 * matrix(4096, 4096) + 2 * matrix(11008, 4096) + matrix(4096, 11008)
    step = muon_step(setup, resolve_gpu("a100-80gb"), resolve_job(JobOptions(model="llama-2-7b")).timing.model)
    assert step.gemm_s == pytest.approx(32 * per_layer, rel=1e-4)
    assert step.ns_flops == 32 * (4 * 2_061_584_302_080 + 3 * 4_380_866_641_920)
    # AdamW on the 262,410,240 plain parameters: 20 two-byte accesses each
    assert step.adamw_s == pytest.approx(PLAIN * 20 * 2 / bw)


def test_lora_adapters_are_orthogonalised():
    # peft's default Llama targets q_proj and v_proj: A 16 x 4096 and B 4096 x 16 for each of 64 linears, all 2-D
    setup = _setup(method="lora", lora_rank=16, precision="bf16")
    state = model_state(setup, resolve_regime(setup))
    elem = 4        # LLaMA-Factory's adapters are fp32 (peft autocast_adapter_dtype): one 4-byte momentum each
    assert state.optimizer == elem * 64 * 2 * 16 * 4096 == 33_554_432
    assert newton_schulz_flops(16, 4096) == 5 * (4 * 16 * 16 * 4096 + 2 * 16 ** 3)


@pytest.mark.parametrize("extra, message", [
    ({"num_gpus": 8, "zero": 2}, "orthogonalises each weight's 2-D gradient"),
    ({"num_gpus": 8, "fsdp": "full"}, "orthogonalises each weight's 2-D gradient"),
    ({"framework": "hf"}, "cannot run Muon"),
    ({"framework": "torchtitan"}, "cannot run Muon"),
])
def test_where_muon_does_not_run(extra, message):
    from trainplan.estimation.estimate import estimate

    with pytest.raises(TrainplanError, match=message):
        estimate(resolve_job(JobOptions(model="llama-2-7b", optimizer="muon", gpu="a100-80gb",
                                        given=("framework",), **{"framework": "llamafactory", **extra})))


def test_data_parallel_muon_steps_every_matrix_on_every_gpu():
    from trainplan.timing.estimate import estimate_time

    def optimizer_s(n):
        job = resolve_job(JobOptions(model="llama-2-7b", optimizer="muon", gpu="a100-80gb", framework="swift",
                                     num_gpus=n))
        return estimate_time(job.setup, job.layout, job.gpu, job.workload, job.timing).breakdown.optimizer_s

    assert optimizer_s(8) == pytest.approx(optimizer_s(1))


def test_configs_read_muon(tmp_path):
    from trainplan.importers import read_config

    lf = tmp_path / "lf.yaml"
    lf.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\nfinetuning_type: lora\nuse_muon: true\n"
                  "template: llama2\ndataset: alpaca_en_demo\n")
    got = read_config(str(lf)).values()
    assert (got["optimizer"], got["method"]) == ("muon", "lora")
    swift = tmp_path / "train.sh"
    swift.write_text("swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type full --optimizer muon "
                     "--dataset alpaca\n")
    assert read_config(str(swift)).values()["optimizer"] == "muon"
    ax = tmp_path / "axolotl.yaml"
    ax.write_text("base_model: meta-llama/Llama-2-7b-hf\noptimizer: muon\nsequence_len: 2048\nmicro_batch_size: 1\n"
                  "datasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\n")
    assert read_config(str(ax)).values()["optimizer"] == "muon"


@pytest.mark.parametrize("fmt, keys", [("llamafactory", {"use_muon": True}), ("swift", {"optimizer": "muon"}),
                                        ("axolotl", {"optimizer": "muon"})])
def test_exports_write_muon_and_read_it_back(tmp_path, fmt, keys):
    import yaml

    from trainplan.cli import main
    from trainplan.importers import read_config

    out = tmp_path / fmt
    assert main(["export", "--model", "llama-2-7b", "--optimizer", "muon", "--framework", fmt, "--format", fmt,
                 "--out", str(out)]) == 0
    path = next(p for p in out.iterdir() if p.suffix == ".yaml")
    data = yaml.safe_load(path.read_text())
    assert {k: data[k] for k in keys} == keys
    assert read_config(str(path)).values()["optimizer"] == "muon"


def test_a_case_naming_muon_is_timed_with_it():
    from trainplan.cases.optimizer_text import memory_optimizer

    assert memory_optimizer("Muon (Moonlight)")[0] is Optimizer.MUON
    assert memory_optimizer("muon, AdamW for embeddings")[0] is Optimizer.MUON
    from trainplan.cases.common import Skip

    with pytest.raises(Skip, match="muonclip"):          # Kimi K2's QK-clipped Muon: not modelled
        memory_optimizer("MuonClip")
