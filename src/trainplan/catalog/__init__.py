"""Catalogs: accelerators, rental prices and models, read from `data/*.toml`.

Each file is read once on first use (catalog/store.py: from its JSON snapshot when that is
current); nothing is read at import time.
GPUs, prices and rates are read in catalog/hardware.py (re-exported here); `models.toml` holds Hugging
Face config.json dicts that `trainplan.model.hfconfig` turns into ModelSpecs, lazily, one entry at a time.

Names are matched case-insensitively, with spaces and underscores read as hyphens
("H100 SXM" == "h100-sxm"). Unknown names raise UnknownNameError with "did you mean ...".
"""

from __future__ import annotations

import functools
import json
import os
import re

from trainplan.catalog import store
from trainplan.catalog.hardware import (  # noqa: F401 (re-exported: GPUs, prices and rates)
    ATYPICAL_PRICING,
    _gpu_catalog,
    _offers,
    _price_entries,
    capacity_basis,
    cheapest_price,
    find_prices,
    gpu_in_text,
    gpu_lacking,
    gpu_name_note,
    gpu_offers,
    gpu_rows,
    is_stale,
    iso_date,
    load_gpus,
    load_prices,
    load_rates,
    offer_date,
    price_rows,
    resolve_gpu,
    resolve_provider,
)
from trainplan.catalog.store import DATA_DIR as _DATA_DIR
from trainplan.catalog.store import read as _read_data
from trainplan.errors import TrainplanError, UnknownNameError
from trainplan.frozen import asdict, replace
from trainplan.model.params import count_params
from trainplan.specs import ModelSpec, model_spec_from_dict

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any

    from trainplan.catalog.model_names import NameMatch

DATA_DIR = _DATA_DIR


# --- shared helpers ------------------------------------------------------------------------------



def _key(name: str) -> str:
    """Lookup key: lower case, runs of spaces/underscores -> '-'."""
    key = name.strip().lower()
    if "_" not in key and key.isprintable() and " " not in key:
        return key
    out, in_run = [], False   # re.sub(r"[\s_]+", "-", key); whitespace is what str.isspace says, as \s
    for c in key:
        sep = c == "_" or c.isspace()
        if not sep:
            out.append(c)
        elif not in_run:
            out.append("-")
        in_run = sep
    return "".join(out)


def _unknown(what: str, name: str, index: dict[str, Any], command: str) -> UnknownNameError:
    """'unknown GPU 'a1000'; did you mean a100, a6000? (see `trainplan gpus`)'.

    `index` maps lookup keys to entries; at most one suggestion per entry (difflib ratio >= 0.6).
    """
    import difflib  # only on the error path

    close: dict[Any, str] = {}
    for candidate in difflib.get_close_matches(_key(name), list(index), n=12, cutoff=0.6):
        close.setdefault(index[candidate], candidate)
    hint = f"; did you mean {', '.join(list(close.values())[:3])}?" if close else ""
    return UnknownNameError(f"unknown {what} '{name}'{hint} (see `trainplan {command}`)")


def _matches(text: str | None, *fields: Any) -> bool:
    """Substring filter over the given fields (strings or lists of them), compared as lookup keys."""
    if not text:
        return True
    needle = _key(text)
    for value in fields:
        for item in (value if isinstance(value, (list, tuple)) else (value,)):
            if item and needle in _key(str(item)):
                return True
    return False



# --- models --------------------------------------------------------------------------------------

def _models_path(path: str | os.PathLike[str] | None) -> str:
    return os.fspath(path) if path is not None else os.path.join(DATA_DIR, "models.toml")


@functools.lru_cache(maxsize=None)
def _model_catalog(path: str) -> tuple[tuple[dict[str, Any], ...], dict[str, int]]:
    """(raw `[[model]]` entries, lookup key -> entry index). No ModelSpec is built here; the index
    of the catalog's own file comes from the snapshot while it is current (600 keys, 0.4 ms)."""
    entries = tuple(_read_data(path).get("model", ()))
    if path == os.path.join(DATA_DIR, "models.toml"):
        known = store.derived("model_index", _index_fingerprint())
        if known is not None:
            return entries, known
    return entries, _name_index(entries)


def _name_index(entries: tuple[dict[str, Any], ...]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, entry in enumerate(entries):
        names = (entry["name"], entry.get("display_name"), entry.get("hf_id"), *entry.get("aliases", ()))
        for name in names:
            if name:
                index.setdefault(_key(name), i)
    return index


def _index_fingerprint() -> str:
    """What the name index is derived from: the model catalog and `_key` (this file)."""
    return store.files_fingerprint([os.path.join(DATA_DIR, "models.toml"), os.path.abspath(__file__)])


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What a catalog model's ModelSpec is derived from: its TOML row and the code that converts it.
_SPEC_SOURCES = tuple(os.path.join(_PACKAGE_DIR, *parts) for parts in (
    ("model", "hfconfig", "__init__.py"), ("model", "hfconfig", "_reader.py"), ("model", "hfconfig", "dense.py"),
    ("model", "hfconfig", "classic.py"), ("model", "hfconfig", "moe.py"), ("model", "hfconfig", "recent.py"),
    ("model", "hfconfig", "early.py"), ("model", "hfconfig", "variants.py"),
    ("specs.py",), ("enums.py",)))


def _specs_fingerprint() -> str:
    return store.files_fingerprint([os.path.join(DATA_DIR, "models.toml"), *_SPEC_SOURCES])


def _convert(path: str, i: int) -> ModelSpec:
    """Entry i converted with trainplan.model.hfconfig.spec_from_hf_config (imported on first use).

    Keys listed in the row's `config_null_keys` go back into the config as None (JSON null).
    """
    from trainplan.model.hfconfig import spec_from_hf_config

    entry = _model_catalog(path)[0][i]
    if not isinstance(entry.get("config"), dict):
        raise TrainplanError(f"{path}: model '{entry['name']}' has no [model.config] table")
    config = json.loads(json.dumps(entry["config"]))   # a deep copy (TOML data is JSON data)
    config.update(dict.fromkeys(entry.get("config_null_keys", ())))  # TOML has no null
    return spec_from_hf_config(
        config, name=entry["name"], hf_id=entry.get("hf_id"),
        aliases=tuple(entry.get("aliases", ())), source=entry.get("source", ""),
        measured_params=entry.get("measured_params"))


@functools.lru_cache(maxsize=None)
def _snapshot_specs() -> list | None:
    return store.derived("model_specs", _specs_fingerprint())


@functools.lru_cache(maxsize=None)
def _model_spec(path: str, i: int) -> ModelSpec:
    """Entry i as a ModelSpec: from the snapshot when it was derived from the same catalog and
    converter (catalog/store.py), else converted now."""
    if path == os.path.join(DATA_DIR, "models.toml"):
        specs = _snapshot_specs()
        if specs is not None and i < len(specs):
            return model_spec_from_dict(json.loads(specs[i]))
    return _convert(path, i)


def derived_snapshot_values() -> dict[str, tuple[str, object]]:
    """What the snapshot derives from the catalog: every catalog model's ModelSpec (asdict form), each
    as a JSON string decoded when that model is asked for (a literal of all 84 cost 0.2-0.4 ms of every
    process to build, for the one model an estimate reads)."""
    path = os.path.join(DATA_DIR, "models.toml")
    entries = tuple(_read_data(path).get("model", ()))
    specs = [json.dumps(asdict(_convert(path, i)), sort_keys=True, separators=(",", ":")) for i in range(len(entries))]
    return {"model_specs": (_specs_fingerprint(), specs), "model_index": (_index_fingerprint(), _name_index(entries))}


def load_models(path: str | os.PathLike[str] | None = None) -> dict[str, ModelSpec]:
    """Every model by catalog name (converts all entries; resolve_model converts only one)."""
    p = _models_path(path)
    return {e["name"]: _model_spec(p, i) for i, e in enumerate(_model_catalog(p)[0])}


def _is_config_path(text: str) -> bool:
    candidate = os.path.expanduser(text)
    return os.path.isfile(candidate) or os.path.isfile(os.path.join(candidate, "config.json"))


def hf_hub_cache_dir() -> str:
    """The Hugging Face hub cache folder, as huggingface_hub resolves it (without importing it):
    $HF_HUB_CACHE (legacy $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else
    $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return os.path.expanduser(os.environ[var])
    if os.environ.get("HF_HOME"):
        return os.path.join(os.path.expanduser(os.environ["HF_HOME"]), "hub")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "huggingface", "hub")


def hf_cached_config(repo_id: str, cache_dir: str | None = None) -> str | None:
    """The config.json of `repo_id` ('ORG/NAME') in the local Hugging Face hub cache, or None.

    Layout: `models--ORG--NAME/snapshots/<revision>/config.json`, where `refs/main` names the
    revision; without refs/main (or when it names no snapshot holding a config.json), the most
    recently written snapshot that holds one. The repository folder is matched case-insensitively
    when the exact spelling is absent (Hub ids are). Reads nothing over the network."""
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", repo_id.strip()):
        return None
    root = cache_dir or hf_hub_cache_dir()
    folder_name = "models--" + repo_id.strip().replace("/", "--")
    repo = os.path.join(root, folder_name)
    if not os.path.isdir(repo):
        try:
            names = os.listdir(root)
        except OSError:
            return None
        repo = next((os.path.join(root, n) for n in sorted(names) if n.lower() == folder_name.lower()), "")
        if not repo or not os.path.isdir(repo):
            return None
    snapshots = os.path.join(repo, "snapshots")
    from trainplan.safeio import read_user_text  # regular files only: a FIFO here cannot hang the lookup

    try:
        revision = read_user_text(os.path.join(repo, "refs", "main"), what="HF cache ref", limit_bytes=4096).strip()
    except TrainplanError:
        revision = ""
    if revision and os.path.isfile(os.path.join(snapshots, revision, "config.json")):
        return os.path.join(snapshots, revision, "config.json")
    try:
        candidates = [os.path.join(snapshots, n, "config.json") for n in os.listdir(snapshots)]
    except OSError:
        return None
    present = [c for c in candidates if os.path.isfile(c)]
    return max(present, key=lambda c: (os.path.getmtime(c), c)) if present else None


def _from_hf_cache(repo_id: str) -> ModelSpec | None:
    """`repo_id`'s config.json from the local Hugging Face cache as a ModelSpec named after the id."""
    config = hf_cached_config(repo_id)
    if config is None:
        return None
    from trainplan.model.hfconfig import load_config_path

    repo_id = repo_id.strip()
    return replace(load_config_path(config), name=repo_id, hf_id=repo_id)


def resolve_model(name_or_path: str, path: str | os.PathLike[str] | None = None) -> ModelSpec:
    """Catalog name, display name, HF id or alias (case-insensitive), a path to a config.json
    (or a folder holding one), read with trainplan.model.hfconfig.load_config_path, or a Hugging
    Face id ('ORG/NAME') not in the catalog whose config.json is in the local hub cache
    (hf_cached_config; no network)."""
    if _is_config_path(name_or_path):
        from trainplan.model.hfconfig import load_config_path

        return load_config_path(name_or_path)
    p = _models_path(path)
    index = _model_catalog(p)[1]
    i = index.get(_key(name_or_path))
    if i is None:
        cached = _from_hf_cache(name_or_path)
        if cached is not None:
            return cached
        if os.path.exists(os.path.expanduser(name_or_path)):
            raise TrainplanError(f"'{name_or_path}' is neither a catalog model nor a config.json "
                                 "(or a folder holding one)")
        match = _name_variant(name_or_path, index, p)
        if match is None:
            raise _unknown("model", name_or_path, index, "models")
        i = match.entry
    return _model_spec(p, i)


def _name_variant(name: str, index: dict[str, int], path: str | None = None) -> NameMatch | None:
    from trainplan.catalog.model_names import variant_match, version_dots

    match = variant_match(name, _key(name), index)
    if match is None and version_dots(name) != name:
        match = variant_match(name, _key(version_dots(name)), index)
        if match is not None:
            said = f"the version as '{name.strip()}' writes it (an underscore for its dot)"
            match = replace(match, read_past=(*match.read_past, said))
    return match if match is not None or path is None else _sized_variant(name, index, path)


_SIZE_TOKEN = re.compile(r"-(\d+(?:\.\d+)?)b(?=-|$)")


def _sized_variant(name: str, index: dict[str, int], path: str) -> NameMatch | None:
    """A name that adds the parameter count to a catalog name without one (`Mistral-Nemo-12B` for
    mistral-nemo-2407, as Mistral's announcement names it): the name without that size, when it names one entry
    (exactly or as a variant) whose parameters are within 10% of the size."""
    from trainplan.catalog.model_names import NameMatch

    key = _key(name)
    m = _SIZE_TOKEN.search(key.rpartition("/")[2])
    if m is None or float(m.group(1)) <= 0:
        return None
    base = key.rpartition("/")[2]
    rest = base[:m.start()] + base[m.end():]
    i = index.get(rest)
    match = NameMatch(entry=i, read_past=()) if i is not None else _name_variant(rest, index)
    if match is None:
        return None
    total = count_params(_model_spec(path, match.entry)).total
    size = float(m.group(1)) * 1e9
    if abs(total / size - 1.0) > 0.10:
        return None
    said = f"the size '{m.group(0)[1:]}' the name adds (the entry has {total / 1e9:.2f}B parameters)"
    return replace(match, read_past=(*match.read_past, said))


def model_name_note(name: str, path: str | os.PathLike[str] | None = None) -> str | None:
    """What `resolve_model(name)` read past to find its catalog entry (catalog/model_names.py), or
    None when the name is one of the entry's own (or not a catalog model at all)."""
    p = _models_path(path)
    entries, index = _model_catalog(p)
    if _is_config_path(name) or _key(name) in index or hf_cached_config(name) is not None:
        return None
    match = _name_variant(name, index, p)
    return None if match is None else match.note(name, entries[match.entry]["name"])


# --- rows for `trainplan models` (no printing; gpus and prices: catalog/hardware.py) -------------

def _moe_label(spec: ModelSpec) -> str:
    if spec.moe is None:
        return ""
    shared = f" +{spec.moe.num_shared_experts} shared" if spec.moe.num_shared_experts else ""
    return f"{spec.moe.num_experts}x top-{spec.moe.top_k}{shared}"


def model_rows(filter: str | None = None, path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """One row per catalog model matching `filter` (substring of name, display name, HF id, alias)."""
    p = _models_path(path)
    rows = []
    for i, entry in enumerate(_model_catalog(p)[0]):
        if not _matches(filter, entry["name"], entry.get("display_name"), entry.get("hf_id"),
                        list(entry.get("aliases", ()))):
            continue
        spec = _model_spec(p, i)
        rows.append({"name": spec.name, "hf_id": spec.hf_id or "", "params": count_params(spec).total,
                     "layers": spec.num_layers, "hidden": spec.hidden_size, "heads": spec.num_heads,
                     "kv_heads": spec.num_kv_heads, "vocab": spec.vocab_size,
                     "tied": spec.tied_embeddings, "moe": _moe_label(spec)})
    return rows


def clear_caches() -> None:
    """Forget every file read and entry converted (after the data files were rewritten in-process)."""
    for cached in (store.read, store._snapshot_file, _gpu_catalog, _price_entries, _offers, load_rates, _model_catalog,
                   _model_spec, _snapshot_specs):
        cached.cache_clear()
    from trainplan.catalog import datasets   # read only when a dataset is named

    datasets._catalog.cache_clear()
    datasets.named.cache_clear()
