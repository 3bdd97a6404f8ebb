"""Checkpoint names that are a catalog model's under another name: a copy, a storage format, a release.

The model catalog matches its own names, display names, Hugging Face ids and aliases exactly (as
lookup keys). Users and published runs also name the same checkpoint in three other ways, none of
which changes a parameter or a tensor shape:

* another organisation's copy of the same repository name: ModelScope's mirrors
  (`LLM-Research/Meta-Llama-3-8B-Instruct`, `ZhipuAI/glm-4-9b-chat`), re-uploads
  (`NousResearch/Llama-2-7b-hf`, `unsloth/...`);
* a storage format appended to the name: pre-quantised uploads (`-bnb-4bit`, `-4bit`, `-GPTQ`,
  `-AWQ`, `-Int4`, `-FP8`, `-GGUF`, `-MLX`), which a QLoRA run loads as it would quantise the original;
* the vendor's release variant (`-Instruct`, `-Chat`, `-it`, `-Base`, `-hf`): the same architecture
  trained further (every such pair in the catalog shares its config.json shapes);
* a context-length variant (`-200K`, `-32k`, `-1M`: Yi-34B-200K, Qwen2.5-7B-Instruct-1M): the same
  shapes trained at longer positions (a larger RoPE base, max_position_embeddings), which change
  neither a parameter count nor what a step at a given --seq-len computes. Where the catalog has the
  long-context release itself (Phi-3-mini-128k), the exact name matches it first.

The same holds the other way: a name without the release tag a catalog name carries (`Mistral-Small-24B`
for Mistral-Small-24B-Base-2501, `GLM-4-32B` for GLM-4-32B-0414, `Qwen3-Coder-30B-A3B` for its -Instruct id): a
release word or a four-digit release date (YYMM or MMDD, as Mistral and Zhipu stamp releases at the end, AI2
inside: `OLMo-2-13B` for OLMo-2-1124-13B) read off the catalog's names, tried last.

`variant_match` reads past these, in that order, and accepts a catalog entry only when exactly one
entry has that remaining repository name; otherwise the name stays unknown (and the caller says so).
At each step a name also matches the one entry it spells another way: a version written with an
underscore (`qwen2_5-7b` for Qwen2.5-7B, as directory names write it) or with a separator between the
family and its version (`Qwen-2.5-7B`, `gemma2-9b` for gemma-2-9b). Nothing else is read into a name:
`opt-13b` and `opt-1.3b` stay two models.
"""

from __future__ import annotations

import re

from trainplan.frozen import frozen

_STORAGE_SUFFIX = re.compile(r"(?:-unsloth)?(?:-bnb)?-[48]bit$|"
                             r"-(?:gptq|awq|gguf|int4|int8|fp8|mlx|exl2)(?:[-.][a-z0-9.-]*)?$")
_RELEASE_SUFFIX = re.compile(r"-(?:instruct|chat|it|base|hf)$")
_CONTEXT_SUFFIX = re.compile(r"-\d+(?:\.\d+)?[km]$")
_RELEASE_TAG = re.compile(r"-(?:instruct|chat|it|base|hf|\d{4})$")
_RELEASE_DATE_INSIDE = re.compile(r"-\d{4}(?=-)")      # olmo-2-1124-13b: AI2 stamps the release inside the name
_VERSION_UNDERSCORE = re.compile(r"(?<=\d)_(?=\d)")
_FAMILY_SEPARATOR = re.compile(r"(?<=[a-z])[-\s](?=\d)")


def version_dots(name: str) -> str:
    """A version written with an underscore as its dot: `qwen2_5-7b` -> `qwen2.5-7b` (before the lookup key
    turns underscores into hyphens)."""
    return _VERSION_UNDERSCORE.sub(".", name)


def spelled(name: str) -> str:
    """The name with its version's spelling made one: `qwen-2.5-7b`, `qwen2.5-7b` -> `qwen2.5-7b`."""
    return _FAMILY_SEPARATOR.sub("", name)


@frozen
class NameMatch:
    """A catalog entry (index into the model entries) and what of the name was read past."""

    entry: int
    read_past: tuple[str, ...]

    def note(self, name: str, catalog_name: str) -> str:
        return f"model '{name.strip()}' read as catalog {catalog_name}: " + "; ".join(self.read_past)


def _basenames(index: dict[str, int]) -> dict[str, set[int]]:
    """Repository name (after the last '/') of every lookup key -> the entries that have it."""
    out: dict[str, set[int]] = {}
    for key, entry in index.items():
        out.setdefault(key.rpartition("/")[2], set()).add(entry)
    return out


def _untagged(basename: str) -> str:
    """A catalog repository name without its trailing release words and dates: mistral-small-24b-base-2501 ->
    mistral-small-24b."""
    while m := _RELEASE_TAG.search(basename):
        basename = basename[:m.start()]
    return _RELEASE_DATE_INSIDE.sub("", basename)


def _untagged_names(names: dict[str, set[int]]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for basename, entries in names.items():
        untagged = _untagged(basename)
        if untagged != basename:
            out.setdefault(untagged, set()).update(entries)
    return out


def variant_match(name: str, key: str, index: dict[str, int]) -> NameMatch | None:
    """The one catalog entry that `name` (lookup key `key`, not in `index`) names without its
    organisation, under another one, with a storage suffix or a release suffix (module docstring);
    None when none or several."""
    org, _, base = key.rpartition("/")
    names = _basenames(index)
    suffixes: list[str] = []

    def found(candidate: str) -> NameMatch | None:
        entries = names.get(candidate, set())
        spelling: list[str] = []
        if not entries:
            entries = set().union(*(e for n, e in names.items() if spelled(n) == spelled(candidate)))
            spelling = [f"the spelling of '{name.strip()}' (the catalog writes the name another way)"]
        if len(entries) != 1:
            return None
        entry = next(iter(entries))
        keys = [k for k, i in index.items() if i == entry]
        orgs = sorted({k.rpartition("/")[0] for k in keys if "/" in k})
        said = name.strip().rpartition("/")[0]
        if org:
            read_past = [] if org in orgs else [f"organisation '{said}' (another copy of that repository name)"]
        else:
            read_past = [] if candidate in keys else [f"no organisation (the repository name of an id of "
                                                      f"{' or '.join(orgs)})"]
        return NameMatch(entry=entry, read_past=(*read_past, *suffixes, *spelling))

    if (match := found(base)) is not None:
        return match
    if m := _STORAGE_SUFFIX.search(base):
        base = base[:m.start()]
        suffixes.append(f"'{m.group(0)[1:]}' (how the weights are stored)")
        if (match := found(base)) is not None:
            return match
    while m := _RELEASE_SUFFIX.search(base) or _CONTEXT_SUFFIX.search(base):
        base = base[:m.start()]
        context = m.re is _CONTEXT_SUFFIX
        suffixes.append(f"'{m.group(0)[1:]}' " + ("(a longer-context release: the same shapes)" if context
                                                  else "(a release of the same architecture)"))
        if (match := found(base)) is not None:
            return match
    untagged = _untagged_names(names).get(base, set())
    if len(untagged) == 1:
        entry = next(iter(untagged))
        tagged = sorted(k.rpartition("/")[2] for k, i in index.items() if i == entry and _untagged(
            k.rpartition("/")[2]) == base)
        return NameMatch(entry=entry, read_past=(*suffixes, f"the release tag of '{tagged[0]}' (the catalog's name "
                                                             "of that release; the same architecture)"))
    return None
