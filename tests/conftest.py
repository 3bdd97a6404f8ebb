import json

import pytest

from trainplan.specs import GpuSpec, ModelSpec


def llama2_7b() -> ModelSpec:
    # meta-llama/Llama-2-7b-hf config.json (shared/reference/model_configs.json)
    return ModelSpec(name="llama-2-7b", model_type="llama", naming="llama", hidden_size=4096, num_layers=32,
                     num_heads=32, num_kv_heads=32, head_dim=128, intermediate_size=11008, vocab_size=32000,
                     tied_embeddings=False)


def tiny_llama(**kw) -> ModelSpec:
    base = dict(name="tiny", model_type="llama", naming="llama", hidden_size=256, num_layers=4, num_heads=8,
                num_kv_heads=4, head_dim=32, intermediate_size=688, vocab_size=1000, tied_embeddings=False)
    base.update(kw)
    return ModelSpec(**base)


def a100_80() -> GpuSpec:
    return GpuSpec(id="a100-sxm4-80gb", name="A100 80GB", vendor="NVIDIA", memory_bytes=80 * 10**9,
                   reported_memory_bytes=int(79.2 * 2**30), memory_bw_bytes_per_s=2.039e12,
                   peak_flops_per_s={"bf16": 312e12, "fp16": 312e12, "fp32": 19.5e12, "tf32": 156e12})


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory, monkeypatch):
    """A developer's own ledger, calibration.json, config, price files or currency must not change
    what the tests see."""
    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path_factory.mktemp("trainplan-data")))
    monkeypatch.setenv("TRAINPLAN_CONFIG_DIR", str(tmp_path_factory.mktemp("trainplan-config")))
    for name in ("TRAINPLAN_PRICES", "TRAINPLAN_CURRENCY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def llama7b() -> ModelSpec:
    return llama2_7b()


@pytest.fixture
def gpu() -> GpuSpec:
    return a100_80()


def estimate_json(capsys, *argv):
    """`trainplan estimate ARGV --json`, run in process: its parsed output (exit 0 asserted)."""
    from trainplan.cli import main

    assert main(["estimate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def options_from(*sources, **given):
    """The JobOptions `--from SOURCES` gives, with `given` as the flags laid over them."""
    from trainplan.importers.merge import from_configs
    from trainplan.job.options import JobOptions

    return from_configs([str(p) for p in sources], JobOptions(model="", **given), given)
