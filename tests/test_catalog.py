"""Catalog tests: gpus.toml / prices.toml against the shared reference, lookups, model loading.

Golden values come from tests/data/reference/gpus.csv (shared/reference), cloud_prices.csv and hardware.md (cited per
test); the runtime never reads those files, the tests read them only to check the generated TOML.
"""

from __future__ import annotations

import csv
import datetime
import functools
import json
import sys
import tomllib
import types
from pathlib import Path

import pytest

from trainplan import catalog
from trainplan.errors import TrainplanError, UnknownNameError
from trainplan.specs import GpuSpec, ModelSpec, PriceOffer
from trainplan.units import GB, GIB

REFERENCE = Path(__file__).resolve().parent / "data" / "reference"     # copied from shared/reference


def _csv(name: str) -> list[dict[str, str]]:
    with open(REFERENCE / name, encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# --- GPUs ----------------------------------------------------------------------------------------

def test_every_gpus_csv_row_loads_with_its_label_memory():
    gpus = catalog.load_gpus()
    rows = _csv("gpus.csv")
    # plus the parts tools/build_hw_catalog.py adds from their own public statement (EXTRA_GPU_ROWS)
    assert set(gpus) - {r["gpu_id"] for r in rows} == {
        "h100-sxm-96gb", "gh200", "gb300", "b300",
        # rented and desktop boxes' GPUs (tests/test_catalog_more_gpus.py checks their values)
        "rtx4080", "rtx4080-super", "rtx4070ti", "rtx4060ti-16gb", "rtx3090ti", "rtx3080", "rtx3060", "rtx2080ti",
        "titan-rtx", "rtx5080", "rtx-a4000", "rtx-a5000", "rtx4000-ada", "quadro-rtx-8000", "p100-pcie-16gb", "p40",
        "rtx-pro-6000-blackwell", "mi355x",
        # GPUs published runs name (tests/test_catalog_gpus_wave3.py checks their values)
        "v100-pcie-16gb", "v100-pcie-32gb", "v100s-pcie-32gb", "a800-pcie-80gb", "h800-pcie", "h200-nvl", "rtx4070",
        "rtx4070-super", "rtx4070ti-super", "rtx4060ti-8gb", "rtx3080ti", "rtx3080-12gb", "rtx3070", "rtx3060ti",
        "quadro-rtx-6000", "mi250", "mi210", "b100", "rtx3070ti", "rtx5000-ada", "h20-141gb"}
    for row in rows:
        gpu = gpus[row["gpu_id"]]
        assert gpu.memory_bytes == round(float(row["memory_gb"]) * GB), row["gpu_id"]
        if row["bf16_tflops_dense"]:
            assert gpu.peak_flops("bf16") == pytest.approx(float(row["bf16_tflops_dense"]) * 1e12)
        if row["mem_bw_gbps"]:
            assert gpu.memory_bw_bytes_per_s == pytest.approx(float(row["mem_bw_gbps"]) * 1e9)


@pytest.mark.parametrize("gpu", sorted(catalog.load_gpus().values(), key=lambda g: g.id), ids=lambda g: g.id)
def test_gpu_entry_is_complete(gpu: GpuSpec):
    assert isinstance(gpu, GpuSpec)
    assert gpu.source.strip() and gpu.name and gpu.vendor and gpu.generation and gpu.confidence
    assert gpu.reported_memory_bytes and gpu.reported_memory_bytes < gpu.memory_bytes * 1.08
    assert catalog.resolve_gpu(gpu.id) is gpu


@pytest.mark.parametrize("alias, gpu_id", [
    # PRODUCT.md "GPU ids": short aliases users type
    ("a100", "a100-sxm4-80gb"), ("a100-80gb", "a100-sxm4-80gb"), ("a100-40gb", "a100-sxm4-40gb"),
    ("a800", "a800-sxm4-80gb"), ("h100", "h100-sxm"), ("h800", "h800-sxm"), ("h20", "h20"),
    ("h200", "h200-sxm"), ("4090", "rtx4090"), ("3090", "rtx3090"), ("v100", "v100-sxm2-32gb"),
    ("l40s", "l40s"), ("910b", "ascend-910b"),
    # obvious others, and case / spacing
    ("h100-80gb", "h100-sxm"), ("rtx-4090", "rtx4090"), ("a6000", "rtx-a6000"), ("mi300x", "mi300x"),
    ("b200", "b200"), ("H100", "h100-sxm"), ("RTX 4090", "rtx4090"), (" A100_80GB ", "a100-sxm4-80gb"),
])
def test_alias_resolves(alias: str, gpu_id: str):
    assert catalog.resolve_gpu(alias).id == gpu_id


def test_aliases_are_unique_across_gpus():
    names = [n.lower() for g in catalog.load_gpus().values() for n in (g.id, *g.aliases)]
    assert len(names) == len(set(names))


def test_h100_capacity_is_the_nvidia_smi_total():
    # hardware.md 1.2: nvidia-smi reports 81559 MiB = 79.65 GiB on H100 SXM
    h100 = catalog.resolve_gpu("h100")
    assert h100.capacity_bytes == 81559 * 2**20
    assert h100.capacity_bytes / GIB == pytest.approx(79.65, abs=0.005)
    assert h100.memory_bytes == 80 * 10**9
    assert catalog.capacity_basis(h100) == "reported"


@pytest.mark.parametrize("gpu_id, gib", [
    ("a100-sxm4-40gb", 39.49),  # deviceQuery 42405855232 bytes (upb-pc2 wiki)
    ("h200-sxm", 140.40),       # nvidia-smi 143771 MiB
    ("b200", 179.06),           # nvidia-smi 183359 MiB
])
def test_reported_totals(gpu_id: str, gib: float):
    assert catalog.resolve_gpu(gpu_id).capacity_bytes / GIB == pytest.approx(gib, abs=0.005)


def test_capacity_without_a_reported_total_is_099_of_the_label():
    # capacity_basis in gpus.toml: 0.99 x label read as GiB (ratios 0.987-0.996 from hardware.md 1.2)
    mi300x = catalog.resolve_gpu("mi300x")
    assert catalog.capacity_basis(mi300x) == "derived"
    assert mi300x.capacity_bytes == round(192 * 0.99 * GIB)


@pytest.mark.parametrize("gpu_id, mib", [("l40s", 46068), ("a10", 23028), ("t4", 15360), ("l4", 23034)])
def test_gddr6_ecc_parts_use_their_nvidia_smi_total(gpu_id: str, mib: int):
    # nvidia-smi output quoted in public repos (e.g. 'NVIDIA L40S ... 0MiB / 46068MiB'): ECC keeps
    # 1/16, so 0.99 x label would overstate these by ~5%
    gpu = catalog.resolve_gpu(gpu_id)
    assert catalog.capacity_basis(gpu) == "reported" and gpu.capacity_bytes == mib * 2**20


def test_a100_bf16_peak_and_bandwidths():
    # gpus.csv a100-sxm4-80gb: bf16 dense 312 TFLOP/s, 2039 GB/s HBM2e, NVLink 3 600 GB/s bidir
    a100 = catalog.resolve_gpu("a100")
    assert a100.peak_flops("bf16") == 312e12
    assert a100.peak_flops("fp8") is None          # "no FP8"
    assert a100.memory_bw_bytes_per_s == 2039e9
    assert a100.gpu_gpu_bw_bytes_per_s == 600e9
    assert a100.generation == "ampere"


def test_geforce_uses_fp32_accumulate_rate():
    # gpus.csv rtx4090: BF16 165.2 dense with FP32 accumulate (330.3 is the FP16-accumulate figure)
    assert catalog.resolve_gpu("4090").peak_flops("bf16") == pytest.approx(165.2e12)


@pytest.mark.parametrize("name, suggestion", [("a1000", "a100"), ("h1000", "h100"), ("rtx4095", "rtx4090")])
def test_unknown_gpu_suggests(name: str, suggestion: str):
    with pytest.raises(UnknownNameError) as err:
        catalog.resolve_gpu(name)
    message = str(err.value)
    assert f"unknown GPU '{name}'" in message and "did you mean" in message and suggestion in message
    assert "trainplan gpus" in message and "\n" not in message


def test_unknown_gpu_without_close_match():
    with pytest.raises(UnknownNameError, match="unknown GPU 'zzzz' \\(see"):
        catalog.resolve_gpu("zzzz")


def test_gpus_toml_documents_capacity_basis():
    data = tomllib.loads(Path(catalog.DATA_DIR, "gpus.toml").read_text(encoding="utf-8"))
    basis = data["capacity_basis"]
    assert basis["ratio_of_label"] == 0.99 and basis["source"] and "79.65" in basis["explanation"]


# --- prices --------------------------------------------------------------------------------------

def test_alibaba_seed_price_is_found():
    # shared seed article 003_983e069e5a6f046f: "按27.08 元/小時 × 3 小時 ≈ 81.24 元" for an A100 80G
    offers = catalog.find_prices(gpu="a100", currency="CNY")
    alibaba = [o for o in offers if o.provider == "Alibaba Cloud"]
    assert len(alibaba) == 1
    offer = alibaba[0]
    assert offer.price_per_gpu_hour == 27.08 and offer.currency == "CNY" and offer.pricing == "on-demand"
    assert "003_983e069e5a6f046f" in offer.source
    assert catalog.offer_date(offer) is None       # the article is undated
    assert catalog.resolve_provider("aliyun") == "Alibaba Cloud"


def _by_currency(offers: list[PriceOffer]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for o in offers:
        out.setdefault(o.currency, []).append(o.price_per_gpu_hour)
    return out


@pytest.mark.parametrize("filters", [{}, {"gpu": "h100"}, {"currency": "usd"}, {"provider": "runpod"},
                                     {"spot": True}, {"spot": False, "gpu": "b200"}], ids=str)
def test_prices_sorted_per_gpu_hour(filters):
    offers = catalog.find_prices(**filters)
    assert offers
    for prices in _by_currency(offers).values():
        assert prices == sorted(prices)
    currencies = [o.currency for o in offers]
    assert currencies == sorted(currencies, key=lambda c: (c != "USD", c))   # USD first, not interleaved


def test_find_prices_filters():
    # cloud_prices.csv: CoreWeave HGX H100 spot 19.71/h for 8 GPUs = 2.464 per GPU-hour (2026-09-20)
    spot = catalog.find_prices(gpu="h100-sxm", provider="coreweave", spot=True)
    assert [(o.price_per_gpu_hour, o.gpus_per_instance) for o in spot] == [(2.464, 8)]
    assert all(o.is_spot for o in catalog.find_prices(spot=True))
    assert not any(o.is_spot for o in catalog.find_prices(spot=False))
    assert {o.currency for o in catalog.find_prices(currency="cny")} == {"CNY"}


def test_cheapest_price():
    # cloud_prices.csv: RunPod Community Cloud A100 SXM 80GB 1.39 USD/GPU-h is the cheapest typical one
    best = catalog.cheapest_price("a100")
    assert (best.provider, best.price_per_gpu_hour, best.currency) == ("RunPod", 1.39, "USD")
    assert catalog.cheapest_price("a100", currency="CNY").price_per_gpu_hour == 27.08
    assert catalog.cheapest_price("h100", provider="aws").price_per_gpu_hour == 4.916  # capacity block
    assert catalog.cheapest_price("h100", provider="gcp", spot=True).price_per_gpu_hour == 6.571
    assert catalog.cheapest_price("mi300x") is None
    # Vast.ai's lowest observed A100 80GB listing (0.7348, 2026-05-27) is not a typical price
    assert catalog.cheapest_price("a100", provider="vast").pricing == "cheapest-listing"


def test_every_usable_price_row_is_kept():
    # cloud_prices.csv has 87 rows, every one on a catalog GPU (B300, Hyperstack's 7.40 USD, since the B300
    # entry), + the seed article's offer
    rows = _csv("cloud_prices.csv")
    assert len(rows) == 87
    assert len(catalog.load_prices()) == len(rows) + 1
    assert catalog.cheapest_price("b300").price_per_gpu_hour == 7.4


def test_every_price_names_a_catalog_gpu_and_has_source_and_date():
    gpus = catalog.load_gpus()
    for offer in catalog.load_prices():
        assert offer.gpu_id in gpus, offer
        assert offer.source.strip() and offer.as_of.strip(), offer
        assert offer.price_per_gpu_hour > 0 and offer.gpus_per_instance >= 1
        assert offer.pricing in {"on-demand", "spot", "capacity-block", "marketplace", "cheapest-listing"}


def test_stale_detection():
    today = datetime.date(2026, 12, 1)
    [lambda_8x_a100] = catalog.find_prices(gpu="a100", provider="lambda")          # as_of 2026-09-25
    assert not catalog.is_stale(lambda_8x_a100, today)
    assert catalog.is_stale(lambda_8x_a100, datetime.date(2027, 12, 1))
    assert catalog.is_stale(lambda_8x_a100, today, max_age_days=30)
    vague = [o for o in catalog.load_prices() if o.as_of.startswith(("late 2024", "~2021", "unknown"))]
    assert vague and all(catalog.is_stale(o, today) and catalog.offer_date(o) is None for o in vague)


def test_resolve_provider():
    assert catalog.resolve_provider("AWS") == catalog.resolve_provider("amazon") == "AWS"
    assert catalog.resolve_provider("vast") == "Vast.ai"
    assert catalog.resolve_provider("Matpool") == "矩池云 (Matpool)"
    with pytest.raises(UnknownNameError, match="did you mean lambda"):
        catalog.resolve_provider("lambada")
    with pytest.raises(UnknownNameError, match="unknown currency 'EUR'"):
        catalog.find_prices(currency="EUR")


def test_price_rows():
    rows = catalog.price_rows(gpu="h200", today=datetime.date(2026, 12, 1))
    assert rows and {r["gpu"] for r in rows} == {"h200-sxm"}
    capacity_block = [r for r in rows if r["pricing"] == "capacity-block"]
    assert capacity_block and all(r["stale"] and not r["date_known"] for r in capacity_block)  # "late 2024"
    assert {"provider", "instance", "pricing", "price_per_gpu_hour", "currency", "as_of", "stale"} <= set(rows[0])


def test_gh200_is_the_h100_die_with_96_gb_of_hbm3_at_4_tb_s():
    gh200 = catalog.resolve_gpu("gh200")
    assert gh200.memory_bytes == 96 * GB and gh200.memory_bw_bytes_per_s == 4000e9
    assert gh200.peak_flops("bf16") == 989e12 and gh200.peak_flops("fp8") == 1979e12 and gh200.generation == "hopper"
    assert catalog.resolve_gpu("GH200 480GB") is gh200
    # cloud_prices.csv: Lambda '1x GH200', 'GH200 96GB', 2.29 USD on 2026-09-25 (skipped before the entry existed)
    [offer] = [o for o in catalog.load_prices() if o.gpu_id == "gh200"]
    assert (offer.provider, offer.instance, offer.price_per_gpu_hour, offer.as_of) == ("Lambda", "1x GH200", 2.29,
                                                                                      "2026-09-25")


def test_gpu_rows():
    rows = {r["id"]: r for r in catalog.gpu_rows("h100 sxm5")}
    assert set(rows) == {"h100-sxm", "h100-sxm-96gb"}
    row = rows["h100-sxm"]
    assert rows["h100-sxm-96gb"]["mem_bw_gbps"] == 2400
    assert row["id"] == "h100-sxm" and row["reported_gib"] == 79.65 and row["bf16_tflops"] == 989
    assert row["fp8_tflops"] == 1979 and row["mem_bw_gbps"] == 3350 and row["year"] == 2022
    assert len(catalog.gpu_rows()) == len(catalog.load_gpus())
    assert {r["id"] for r in catalog.gpu_rows("amd")} == {"mi210", "mi250", "mi250x", "mi300x", "mi325x", "mi355x"}


def test_catalog_is_cached():
    assert catalog.resolve_gpu("h100") is catalog.resolve_gpu("H100")
    assert catalog.load_prices() is catalog.load_prices()


# --- models (against a temporary TOML and a fake HF-config parser) ------------------------------

MODELS_TOML = """
[[model]]
name = "tiny-llama"
display_name = "Tiny Llama 1M"
hf_id = "acme/Tiny-Llama-hf"
aliases = ["tiny", "tiny-llama-instruct"]
source = "https://example.invalid/config.json"
verification = "test"
measured_params = 123
[model.config]
model_type = "llama"
hidden_size = 64
num_hidden_layers = 2
num_attention_heads = 4
num_key_value_heads = 2
intermediate_size = 128
vocab_size = 100
tie_word_embeddings = false

[[model]]
name = "tiny-moe"
hf_id = "acme/Tiny-MoE"
source = "https://example.invalid/moe.json"
[model.config]
model_type = "mixtral"
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 4
num_key_value_heads = 4
intermediate_size = 64
vocab_size = 50
tie_word_embeddings = true
num_local_experts = 4
num_experts_per_tok = 2
"""


@pytest.fixture
def fake_hfconfig(monkeypatch, tmp_path):
    """A stand-in for trainplan.model.hfconfig: builds a ModelSpec from the few keys above; counts calls."""
    from trainplan.specs import MoeSpec

    calls: list[str] = []

    def spec_from_hf_config(config, *, name, hf_id=None, aliases=(), source="", measured_params=None):
        calls.append(name)
        moe = None
        if "num_local_experts" in config:
            moe = MoeSpec(num_experts=config["num_local_experts"], top_k=config["num_experts_per_tok"],
                          expert_intermediate_size=config["intermediate_size"])
        return ModelSpec(
            name=name, model_type=config["model_type"], naming="llama", hidden_size=config["hidden_size"],
            num_layers=config["num_hidden_layers"], num_heads=config["num_attention_heads"],
            num_kv_heads=config["num_key_value_heads"],
            head_dim=config["hidden_size"] // config["num_attention_heads"],
            intermediate_size=config["intermediate_size"], vocab_size=config["vocab_size"],
            tied_embeddings=config["tie_word_embeddings"], moe=moe, hf_id=hf_id, aliases=aliases,
            source=source, measured_params=measured_params, hf_config_json=json.dumps(config))

    def load_config_path(path):
        folder = Path(path)
        file = folder / "config.json" if folder.is_dir() else folder
        return spec_from_hf_config(json.loads(file.read_text()), name=folder.stem)

    module = types.ModuleType("trainplan.model.hfconfig")
    module.spec_from_hf_config = spec_from_hf_config
    module.load_config_path = load_config_path
    monkeypatch.setitem(sys.modules, "trainplan.model.hfconfig", module)
    path = tmp_path / "models.toml"
    path.write_text(MODELS_TOML, encoding="utf-8")
    return path, calls


@pytest.mark.parametrize("name", ["tiny-llama", "TINY-LLAMA", "Tiny Llama 1M", "acme/tiny-llama-hf", "tiny",
                                  "Tiny-Llama-Instruct"])
def test_resolve_model_by_any_name(fake_hfconfig, name):
    path, calls = fake_hfconfig
    spec = catalog.resolve_model(name, path=path)
    assert spec.name == "tiny-llama" and spec.hf_id == "acme/Tiny-Llama-hf" and spec.measured_params == 123
    assert spec.aliases == ("tiny", "tiny-llama-instruct") and spec.source.startswith("https://")
    assert calls == ["tiny-llama"]          # converted lazily: only the entry asked for, once


def test_resolve_model_converts_once(fake_hfconfig):
    path, calls = fake_hfconfig
    assert catalog.resolve_model("tiny", path=path) is catalog.resolve_model("acme/Tiny-Llama-hf", path=path)
    assert calls == ["tiny-llama"]


def test_unknown_model_suggests(fake_hfconfig):
    path, _ = fake_hfconfig
    with pytest.raises(UnknownNameError, match="unknown model 'tiny-lama'; did you mean tiny-llama"):
        catalog.resolve_model("tiny-lama", path=path)


def test_resolve_model_from_config_path(fake_hfconfig, tmp_path):
    path, _ = fake_hfconfig
    folder = tmp_path / "my-model"
    folder.mkdir()
    config = tomllib.loads(MODELS_TOML)["model"][0]["config"]
    (folder / "config.json").write_text(json.dumps(config))
    assert catalog.resolve_model(str(folder), path=path).hidden_size == 64
    assert catalog.resolve_model(str(folder / "config.json"), path=path).num_layers == 2
    with pytest.raises(TrainplanError, match="neither a catalog model"):
        catalog.resolve_model(str(tmp_path), path=path)     # a folder without config.json


def test_load_models_and_rows(fake_hfconfig):
    path, _ = fake_hfconfig
    assert set(catalog.load_models(path=path)) == {"tiny-llama", "tiny-moe"}
    rows = {r["name"]: r for r in catalog.model_rows(path=path)}
    assert rows["tiny-moe"]["moe"] == "4x top-2" and rows["tiny-moe"]["tied"] is True
    assert rows["tiny-llama"]["moe"] == "" and rows["tiny-llama"]["kv_heads"] == 2
    assert rows["tiny-llama"]["params"] > 0
    assert [r["name"] for r in catalog.model_rows("acme/tiny-moe", path=path)] == ["tiny-moe"]


# --- the real models.toml ------------------------------------------------------------------------------

def test_real_model_catalog():
    entries = tomllib.loads(Path(catalog.DATA_DIR, "models.toml").read_text(encoding="utf-8"))["model"]
    models = catalog.load_models()
    assert len(models) == len(entries)
    for entry in entries:
        assert entry["source"].strip(), entry["name"]
        assert catalog.resolve_model(entry["name"]) is models[entry["name"]]
        if entry.get("hf_id"):
            assert catalog.resolve_model(entry["hf_id"].upper()).name == entry["name"]


def test_real_model_lookups():
    # PRODUCT.md: HF ids are aliases; Llama-2-7B has 6,738,415,616 parameters (models.toml computed_params)
    assert catalog.resolve_model("meta-llama/Llama-2-7b-hf").name == "llama-2-7b"
    [row] = [r for r in catalog.model_rows("llama-2-7b") if r["name"] == "llama-2-7b"]
    assert row["params"] == 6_738_415_616 and row["layers"] == 32 and row["tied"] is False
    # config_null_keys: DeepSeek-V2-Lite's q_lora_rank is null in config.json (plain q_proj)
    lite = catalog.resolve_model("deepseek-v2-lite")
    assert lite.mla is not None and lite.mla.q_lora_rank is None
    with pytest.raises(UnknownNameError, match="did you mean .*llama-2-7b"):
        catalog.resolve_model("llama-2-8b")


# --- the snapshot (catalog/store.py) --------------------------------------------------------------------

def test_snapshot_is_current():
    """catalog/_snapshot.py equals a snapshot built now from the TOML files and the spec converter
    (`python tools/build_catalog_snapshot.py` rewrites it)."""
    from trainplan.catalog import _snapshot, store

    assert store.build_snapshot(catalog.derived_snapshot_values()) == _snapshot.SNAPSHOT, \
        "catalog/_snapshot.py is stale (a catalog TOML or the spec converter changed): python tools/build_catalog_snapshot.py"


def test_stale_snapshot_falls_back_to_the_toml(monkeypatch):
    from trainplan.catalog import store

    fresh = catalog.resolve_model("llama-2-7b")
    stale = {"format": store.FORMAT,
             "files": {name: {"fingerprint": "0-0", "data": {}} for name in store.CATALOG_FILES},
             "derived": {"model_specs": {"fingerprint": "0-0", "data": []}}}
    monkeypatch.setattr(store, "_snapshot_file", functools.lru_cache(maxsize=None)(lambda: stale))
    catalog.clear_caches()
    try:
        assert catalog.resolve_model("llama-2-7b") == fresh          # converted from models.toml
        assert catalog.resolve_gpu("h100").capacity_bytes > 0        # parsed from gpus.toml
    finally:
        monkeypatch.undo()
        catalog.clear_caches()


# Free-text GPU names (CUDA device names as torch.cuda.get_device_name prints them, and run
# descriptions): the family, then the form word and the memory size, pick the catalog part.
@pytest.mark.parametrize("text, gpu_id", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("H100 80GB PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"), ("H100 SXM 80GB (DGX-H100)", "h100-sxm"), ("8xH100", "h100-sxm"),
    ("H100 96GB HBM2e (Grand Teton, 500W)", "h100-sxm-96gb"), ("8x H100 SXM5 96GB", "h100-sxm-96gb"),
    ("H100 NVL 94GB", "h100-nvl"), ("H100", "h100-sxm"),
    # the memory type decides between parts of one size: torchtitan's "HBM2e based lower TDP SXM H100(95GB)"
    # (docs/performance.md, Dec 2024) is Meta's HBM2e part; a bare "94GB" is the NVL (HBM3)
    ("HBM2e based lower TDP SXM H100(95GB)", "h100-sxm-96gb"), ("H100 (94GB memory)", "h100-nvl"),
    ("H100 94GB HBM2e", "h100-sxm-96gb"), ("H100 PCIe 80GB HBM2e", "h100-pcie"),
    ("A100 40GB", "a100-sxm4-40gb"), ("A100 40GB PCIe", "a100-pcie-40gb"), ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"), ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("8x A100 80G", "a100-sxm4-80gb"), ("2*A100 40G", "a100-sxm4-40gb"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"), ("NVIDIA GeForce RTX 4090 D", "rtx4090d"), ("4090D", "rtx4090d"),
    ("H20", "h20"), ("H200", "h200-sxm"), ("L4", "l4"), ("L40", "l40"), ("L40S", "l40s"), ("A10", "a10"),
    ("A10G", "a10g"), ("Tesla V100-SXM2-16GB", "v100-sxm2-16gb"), ("V100 32GB", "v100-sxm2-32gb"),
    ("NVIDIA RTX A6000", "rtx-a6000"), ("NVIDIA RTX 6000 Ada Generation", "rtx6000-ada"),
    ("AMD Instinct MI300X", "mi300x"), ("GB200 NVL72", "gb200"), ("B200 (DGX-B200)", "b200"),
    ("Ascend 910B", "ascend-910b"), ("Gaudi 2", "gaudi2"),
    # Chinese vendor names, written against the model as Chinese sources do
    ("昇腾910B", "ascend-910b"), ("华为昇腾 910B", "ascend-910b"), ("8卡英伟达A100 80G", "a100-sxm4-80gb"),
    # nvidia-smi's name for the 96 GB superchip counts the Grace side's 480 GB LPDDR5X
    ("NVIDIA GH200 480GB", "gh200"), ("GH200 96GB HBM3", "gh200"), ("NVIDIA GB200", "gb200"),
    ("DGX-GB300", "gb300"), ("DGX-B300", "b300"), ("NVIDIA B300 SXM6 AC", "b300"),
    ("TPU v5e", None), ("", None)])
def test_gpu_named_in_text(text, gpu_id):
    gpu = catalog.gpu_in_text(text)
    assert (gpu.id if gpu else None) == gpu_id


@pytest.mark.parametrize("text, gpu_id", [
    # Chinese counts and nouns written against the model, full-width characters (NFKC)
    ("8卡A100", "a100-sxm4-80gb"), ("单卡4090", "rtx4090"), ("两台8卡H800", "h800-sxm"),
    ("Ａ８００（４０Ｇ）", None), ("Ａ１００（４０Ｇ）", "a100-sxm4-40gb"),
    # a cloud machine type the price catalog lists names its GPU, board and memory included: AWS p4d.24xlarge
    # is 8 x A100 SXM4 40GB (prices.toml), so "A100" beside it is not read as the 80 GB default
    ("AWS p4d.24xlarge", "a100-sxm4-40gb"), ("8x A100 (p4d.24xlarge)", "a100-sxm4-40gb"),
    ("p4de.24xlarge", "a100-sxm4-80gb"), ("P5.48XLARGE", "h100-sxm"),
    ("Azure Standard_ND96asr_A100_v4", "a100-sxm4-40gb"), ("g5.48xlarge", "a10g"),
    # listing descriptions in the same column are not machine types
    ("Secure Cloud pod", None), ("on-demand GPU", None),
    # a data-centre part in the plural; not a name that ends in S itself, nor a desktop number (4080S: SUPER)
    ("8 A100s", "a100-sxm4-80gb"), ("H100s", "h100-sxm"), ("MI300Xs", "mi300x"), ("L40S", "l40s"),
    ("V100S", "v100s-pcie-32gb"), ("RTX 4090s", None), ("RTX 4080S", "rtx4080-super"), ("4070S", "rtx4070-super")])
def test_chinese_wording_and_machine_types(text, gpu_id):
    gpu = catalog.gpu_in_text(text)
    assert (gpu.id if gpu else None) == gpu_id


@pytest.mark.parametrize("text, gpu_id", [
    # a form the family has no member of: the P100 is listed only as the PCIe card (the SXM2 board runs at
    # 300 W with NVLink), so the SXM2 board is a card the catalog lacks, not the PCIe one
    ("Tesla P100-SXM2-16GB", None), ("P100 SXM2", None),
    # a size below every member's: the 8 GB RTX 3060 is a cut-down card beside the listed 12 GB one
    ("RTX 3060 8GB", None),
    # "A6000 Ada", rentals' name for the RTX 6000 Ada, is that card, not the Ampere RTX A6000
    ("A6000 Ada", "rtx6000-ada"), ("RTX A6000 Ada", "rtx6000-ada"), ("RTX A6000", "rtx-a6000"),
    # a member's form is its catalog form_factor where the id has no form word: these are PCIe cards
    ("NVIDIA L40S PCIe", "l40s"), ("A10 PCIe 24GB", "a10"), ("Tesla T4 PCIe", "t4"),
    # a size above every member's keeps the card (resellers' 22 GB 2080 Ti, nvidia-smi's superchip total)
    ("RTX 2080 Ti 22GB", "rtx2080ti"), ("NVIDIA GH200 480GB", "gh200")])
def test_a_form_or_size_the_family_lacks_is_another_card(text, gpu_id):
    gpu = catalog.gpu_in_text(text)
    assert (gpu.id if gpu else None) == gpu_id


@pytest.mark.parametrize("name, gpu_id", [
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"), ("Tesla V100-SXM2-16GB", "v100-sxm2-16gb"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA GeForce RTX 4090 D", "rtx4090d"), ("NVIDIA H100 PCIe", "h100-pcie"),
    # a name that ends in "X <digits>" is a model number, not a count (it was refused as "a GPU count")
    ("NVIDIA GeForce RTX 4090", "rtx4090"), ("NVIDIA GeForce RTX 3090", "rtx3090"), ("NVIDIA GeForce RTX 5090", "rtx5090")])
def test_gpu_flag_takes_the_device_name_nvidia_smi_prints(name, gpu_id):
    assert catalog.resolve_gpu(name).id == gpu_id
    assert catalog.gpu_name_note(name) == f"GPU '{name}' read as catalog {gpu_id} ({catalog.resolve_gpu(gpu_id).name})"
    assert catalog.gpu_name_note(gpu_id) is None


@pytest.mark.parametrize("name", ["8x A100", "A100*8", "A100 x 8", "A100 x8", "2 x H100", "8卡A100", "Tesla P100-SXM2-16GB",
                                  "TPU v5e"])
def test_gpu_flag_refuses_a_count_or_a_card_the_catalog_lacks(name):
    with pytest.raises(UnknownNameError, match="unknown GPU"):
        catalog.resolve_gpu(name)


@pytest.mark.parametrize("name, why", [
    ("8x A100", "a GPU count in the name; give --gpu a100-sxm4-80gb and the count with --num-gpus"),
    ("Tesla P100-SXM2-16GB", "its SXM board is not in the catalog, only p100-pcie-16gb"),
    ("RTX 3060 8GB", "its 8 GB card is not in the catalog, only rtx3060"),
    ("RTX 4090 Ti", "its Ti card is not in the catalog, only rtx4090"),
])
def test_a_refused_gpu_name_says_what_the_catalog_has(name, why):
    with pytest.raises(UnknownNameError) as err:
        catalog.resolve_gpu(name)
    assert why in str(err.value)


def test_blackwell_ultra_peaks_as_published():
    # verda's per-GPU table (dense): GB300 BF16 2.5 / FP8 5 PFLOPS at 8 TB/s; B300 2.25 / 4.5 (glennklockwood's
    # HGX B300 table and torchao's roofline give the same)
    gb300, b300 = catalog.resolve_gpu("gb300"), catalog.resolve_gpu("b300")
    assert (gb300.peak_flops("bf16"), gb300.peak_flops("fp8"), gb300.memory_bw_bytes_per_s) == (2.5e15, 5e15, 8e12)
    assert (b300.peak_flops("bf16"), b300.peak_flops("fp8")) == (2.25e15, 4.5e15)
    assert gb300.nvlink_domain_gpus == 72 and b300.nvlink_domain_gpus == 0


def test_no_two_gpus_share_a_name_without_its_separators():
    # catalog/gpu_text.py compares names with hyphens and spaces removed ("rtx-4090-d" -> "rtx4090d"), one GPU each
    from trainplan.catalog.gpu_text import _compact
    from trainplan.catalog.hardware import _gpu_catalog

    _, index, _ = _gpu_catalog()
    owners: dict[str, set[str]] = {}
    for key, gpu_id in index.items():
        owners.setdefault(_compact(key), set()).add(gpu_id)
    assert {name: ids for name, ids in owners.items() if len(ids) > 1} == {}
