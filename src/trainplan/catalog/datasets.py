"""Public fine-tuning datasets and the lengths of their samples (catalog/data/datasets.toml).

A run's time depends on how long its samples are: unpacked, every sample is a sequence of its own
length; packed without padding (flash varlen), each sample attends only within itself, so attention
costs sum(L^2) / sum(L) tokens of causal span per token, which is mean + variance / mean for a
dataset whose lengths have that mean and standard deviation. The catalog gives both, per dataset,
from ms-swift's dataset table (tools/build_dataset_catalog.py; counted with the Qwen2.5 tokenizer).

Names match the ModelScope id, the Hugging Face id, an alias, LLaMA-Factory's name for it (its
data/dataset_info.json: `alpaca_gpt4_zh`), or (when exactly one entry has it) the repository name without
its organisation, case-insensitively; a `#N` sample count (ms-swift's `dataset#20000`) and a `:subset` are
read past.
"""

from __future__ import annotations

import functools
import os
import re

from trainplan.catalog.store import DATA_DIR, read
from trainplan.errors import UnknownNameError
from trainplan.frozen import frozen, replace

PATH = os.path.join(DATA_DIR, "datasets.toml")
_SUFFIX = re.compile(r"(?:#\d+)?(?::[\w.\-]+)?$")
_SAMPLED = re.compile(r"#(\d+)")


@frozen
class DatasetStats:
    """One catalog dataset: its size and the token lengths of its samples."""

    id: str
    samples: int
    mean_tokens: float
    std_tokens: float
    min_tokens: int
    max_tokens: int
    source: str
    hf_id: str = ""
    alias_note: str = ""       # how the name given was read, when it was an alias

    def lengths(self, points: int = 256) -> tuple[int, ...]:
        """Sample lengths with this mean and spread, for the time model: `points` quantiles of a log-normal
        (positive, right-skewed, as token counts of text are) of the same mean and standard deviation,
        clipped to [min, max]. An assumption: the catalog gives these four numbers and no more."""
        import math
        from statistics import NormalDist

        s2 = math.log1p((self.std_tokens / self.mean_tokens) ** 2)
        mu = math.log(self.mean_tokens) - s2 / 2
        z = NormalDist()
        return tuple(min(self.max_tokens, max(self.min_tokens, round(math.exp(mu + math.sqrt(s2) * z.inv_cdf(
            (i + 0.5) / points)))) or 1) for i in range(points))

    def use_note(self, *, samples: bool, lengths: bool) -> str:
        """What of the dataset an estimate took (`samples`, `lengths`: not given otherwise)."""
        used = (["its size for --samples"] if samples else []) + (
            ["its lengths (a log-normal of this mean and spread, clipped to min-max: an assumption) for the "
             "padding, packing and attention span"] if lengths else [])
        return ": " + (", ".join(used) if used else "nothing (--samples and the lengths were given)") + " used"

    def describe(self) -> str:
        alias = f" ({self.alias_note})" if self.alias_note else ""
        return (f"dataset {self.id}{alias}: {self.samples:,} samples of {self.mean_tokens:,.1f} +- "
                f"{self.std_tokens:,.1f} tokens (min {self.min_tokens:,}, max {self.max_tokens:,}; other tokenizers "
                f"count the same text differently; {self.source})")


def _key(name: str) -> str:
    return _SUFFIX.sub("", name.strip().strip("'\"")).lower()


@functools.lru_cache(maxsize=1)
def _catalog() -> tuple[tuple[dict, ...], dict[str, tuple[int, str, bool]]]:
    """Entries, and lookup key -> (entry index, alias note, whether the key names the dataset in free text
    too: ids and aliases do; a repository name or a LLaMA-Factory name only when not a plain word)."""
    entries = tuple(read(PATH).get("dataset", ()))
    index: dict[str, tuple[int, str, bool]] = {}
    bases: dict[str, set[int]] = {}
    for i, e in enumerate(entries):
        for name in (e["id"], e.get("hf_id") or ""):
            if name:
                index[name.lower()] = (i, "", True)
                bases.setdefault(name.lower().rpartition("/")[2], set()).add(i)
        for alias, note in zip(e.get("aliases", ()), e.get("alias_notes", ())):
            index[alias.lower()] = (i, note, True)
        for name in e.get("llamafactory_names", ()):
            index.setdefault(name.lower(), (i, f"LLaMA-Factory's name for it, {e['llamafactory_source']}",
                                            not name.isalpha()))
    for base, found in bases.items():
        if len(found) == 1 and base not in index:
            index[base] = (next(iter(found)), "", not base.isalpha())
    return entries, index


def _stats(entry: dict, note: str) -> DatasetStats:
    return DatasetStats(id=entry["id"], samples=entry["samples"], mean_tokens=entry["mean_tokens"],
                        std_tokens=entry["std_tokens"], min_tokens=entry["min_tokens"],
                        max_tokens=entry["max_tokens"], source=entry["source"], hf_id=entry.get("hf_id", ""),
                        alias_note=note)


def find_dataset(name: str) -> DatasetStats | None:
    """The catalog dataset `name` names (module docstring), None when none does. `name#N` (ms-swift's
    sampling of N samples from a dataset) keeps the lengths and takes N samples."""
    entries, index = _catalog()
    key = _key(name)
    found = index.get(key) or (index.get(key.rpartition("/")[2]) if "/" in key else None)
    if not found:
        return None
    stats = _stats(entries[found[0]], found[1])
    if m := _SAMPLED.search(name):
        stats = replace(stats, samples=int(m.group(1)))
    return stats


def dataset_in_word(word: str) -> DatasetStats | None:
    """find_dataset for a word of free text, where a bare repository name of letters only ('instruct',
    'cot', 'sharegpt') is too common a word to name one dataset: an id, an alias, or a repository name
    with a digit or a separator in it."""
    key = _key(word)
    _, index = _catalog()
    if "/" not in key and not index.get(key, (0, "", False))[2]:
        return None
    return find_dataset(word)


def resolve_dataset(name: str) -> DatasetStats:
    """find_dataset, or UnknownNameError with the closest names."""
    found = find_dataset(name)
    if found is not None:
        return found
    import difflib  # error path only

    _, index = _catalog()
    close = difflib.get_close_matches(_key(name), list(index), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownNameError(f"unknown dataset '{name.strip()}'{hint} (see `trainplan datasets`); "
                           "--tokens-per-sample / --lengths-file give the lengths of any dataset")


def mixture(names: list[str]) -> tuple[DatasetStats | None, list[str]]:
    """Several datasets trained together (ms-swift `--dataset a b`, LLaMA-Factory `dataset: a,b`) as one:
    samples added, the mean and the spread pooled over all their samples; and the names not in the
    catalog. None when no name is known."""
    found = [(n, find_dataset(n)) for n in names]
    known = [s for _, s in found if s is not None]
    unknown = [n for n, s in found if s is None]
    if not known:
        return None, unknown
    if len(known) == 1:
        return known[0], unknown
    n = sum(s.samples for s in known)
    mean = sum(s.samples * s.mean_tokens for s in known) / n
    second = sum(s.samples * (s.std_tokens ** 2 + s.mean_tokens ** 2) for s in known) / n
    return DatasetStats(id=" + ".join(s.id for s in known), samples=n, mean_tokens=mean,
                        std_tokens=max(0.0, second - mean * mean) ** 0.5,
                        min_tokens=min(s.min_tokens for s in known), max_tokens=max(s.max_tokens for s in known),
                        source=known[0].source), unknown


def dataset_names(text: str) -> list[str]:
    """The names of a comma-separated --dataset value."""
    return [n.strip() for n in text.split(",") if n.strip()]


@functools.lru_cache(maxsize=32)
def named(text: str) -> DatasetStats:
    """The dataset(s) a comma-separated list names, pooled (mixture); an unknown name is an error. Cached: one
    resolution of a job asks for it for the workload, the timing options and the note."""
    names = dataset_names(text)
    if not names:
        raise UnknownNameError("--dataset names no dataset")
    for name in names:
        resolve_dataset(name)
    found, _ = mixture(names)
    assert found is not None
    return found


def dataset_rows(filter: str | None = None) -> list[dict]:
    """The catalog as rows for `trainplan datasets` (filter: a substring of the id or Hugging Face id)."""
    entries, _ = _catalog()
    want = (filter or "").lower()
    return [{"id": e["id"], "hf_id": e.get("hf_id", ""), "samples": e["samples"], "mean_tokens": e["mean_tokens"],
             "std_tokens": e["std_tokens"], "min_tokens": e["min_tokens"], "max_tokens": e["max_tokens"],
             "aliases": list(e.get("aliases", ())), "llamafactory": list(e.get("llamafactory_names", ())),
             "source": e["source"]}
            for e in entries if want in e["id"].lower() or want in (e.get("hf_id") or "").lower()
            or any(want in a.lower() for a in (*e.get("aliases", ()), *e.get("llamafactory_names", ())))]
