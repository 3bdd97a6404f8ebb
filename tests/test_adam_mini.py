"""Adam-mini (--optimizer adam-mini): states, temporaries, step traffic, where it runs, how configs and cases say it.

Hand values follow pip adam-mini's adam_mini.py as LLaMA-Factory builds it (train/trainer_utils.py
_create_adam_mini_optimizer): `m = zeros_like(p)` per element, one `vmean` per output row of a matrix (per head for
q and k, counted as rows here: a few KB), Adam's two states for vectors. Llama-2-7B: per layer q/k/v/o 4096 x 4096,
gate/up 11008 x 4096, down 4096 x 11008 and two 4096 norms; embeddings and head 32000 x 4096; a final 4096 norm.
"""

from __future__ import annotations

import pytest

from trainplan.enums import Optimizer
from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.job.setup import build_setup
from trainplan.memory.regime import resolve_regime
from trainplan.memory.state import model_state
from trainplan.timing.traffic import optimizer_bytes_per_param


def _setup(**kw):
    return build_setup(JobOptions(model="llama-2-7b", optimizer="adam-mini", **{"framework": "llamafactory", **kw}))


def test_states_by_hand():
    matrices = 4 * 4096 * 4096 + 3 * 4096 * 11008           # 202,375,168 a layer
    rows = 4 * 4096 + 2 * 11008 + 4096                       # one vmean a row: 42,496
    norms = 2 * 2 * 4096                                     # two vectors, m and v each
    head_and_embeddings = 2 * (32000 * 4096 + 32000)
    elements = 32 * (matrices + rows + norms) + head_and_embeddings + 2 * 4096
    assert elements == 6_740_105_728
    setup = _setup(precision="bf16")          # LLaMA-Factory: fp32 trainable weights, so fp32 states
    state = model_state(setup, resolve_regime(setup))
    assert state.optimizer == 4 * elements == 26_960_422_912
    # update = m * stepsize and -update for the largest tensor (the 32000 x 4096 embedding)
    assert state.optimizer_temp == 2 * 4 * 32000 * 4096 == 1_048_576_000


def test_step_traffic_per_parameter_by_hand():
    # fp32 weights and gradients: grad * grad (8) and its mean (4), m.lerp_ (12), m * stepsize, mul_, negation
    # (8 each), p.add_ (12): 4 g + 11 p = 60 bytes, plus the clipping read of the gradient (4)
    assert optimizer_bytes_per_param(_setup(precision="bf16")) == 64


@pytest.mark.parametrize("kw, message", [
    ({"method": "lora"}, "no whole number of them"),
    ({"method": "qlora", "quant": "nf4"}, "no whole number of them"),
    ({"framework": "swift"}, "cannot run Adam-mini"),
    ({"framework": "hf"}, "cannot run Adam-mini"),
])
def test_where_adam_mini_does_not_run(kw, message):
    from trainplan.estimation.estimate import estimate
    from trainplan.job.resolve import resolve_job

    with pytest.raises(TrainplanError, match=message):
        estimate(resolve_job(JobOptions(model="llama-2-7b", optimizer="adam-mini", gpu="a100-80gb",
                                        given=("framework",), **{"framework": "llamafactory", **kw})))


def test_freeze_and_zero3_run():
    from trainplan.estimation.estimate import estimate
    from trainplan.job.resolve import resolve_job

    for kw in ({"method": "freeze", "freeze_layers": 2}, {"zero": 3, "num_gpus": 8}):
        estimate(resolve_job(JobOptions(model="llama-2-7b", optimizer="adam-mini", gpu="a100-80gb",
                                        framework="llamafactory", **kw)))


def test_llamafactory_reads_and_writes_adam_mini(tmp_path):
    import yaml

    from trainplan.cli import main
    from trainplan.importers import read_config

    lf = tmp_path / "lf.yaml"
    lf.write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\nfinetuning_type: full\n"
                  "use_adam_mini: true\ntemplate: llama2\ndataset: alpaca_en_demo\n")
    assert read_config(str(lf)).values()["optimizer"] == "adam-mini"
    out = tmp_path / "out"
    assert main(["export", "--model", "llama-2-7b", "--optimizer", "adam-mini", "--framework", "llamafactory",
                 "--format", "llamafactory", "--out", str(out)]) == 0
    path = next(p for p in out.iterdir() if p.suffix == ".yaml")
    assert yaml.safe_load(path.read_text())["use_adam_mini"] is True
    assert read_config(str(path)).values()["optimizer"] == "adam-mini"


def test_case_text():
    from trainplan.cases.optimizer_text import memory_optimizer

    for text in ("Adam-mini", "adam_mini (LLaMA-Factory use_adam_mini)", "AdamMini"):
        assert memory_optimizer(text)[0] is Optimizer.ADAM_MINI
