"""A catalog GPU named in free text: a CUDA device name ("NVIDIA H100 PCIe", "NVIDIA GeForce RTX 4090 D"),
a README's or a case's wording ("8x A100 80GB PCIe", "H100 SXM5 80GB (DGX-H100)").

One home for the rule, read by the probe (the local device's CUDA name) and the case reader:

1. The text is cut into words (spaces, hyphens, underscores, slashes, brackets, commas); vendor
   words (NVIDIA, GeForce, Tesla, AMD, Instinct) are dropped; a data-centre part in the plural ("8 A100s")
   is read as that part (a desktop number's S is SUPER: "4080S" is the catalog's 4080 SUPER by its alias;
   L40S and V100S are names themselves).
2. Every catalog name (id, alias) of every GPU, with its hyphens removed, is compared with each run
   of consecutive words joined together ("rtx" "4090" "d" -> "rtx4090d"). The longest name found
   picks the family: the GPU's id without its form and memory words (h100-sxm, h100-pcie and
   h100-nvl are the family h100; a100-sxm4-40gb ... a100-pcie-80gb the family a100).
3. Within the family, the text's form word (PCIe, NVL, SXM), memory size ("40GB", "80G") and memory
   type (HBM3, HBM2e, GDDR6X: the catalog's memory_type) choose the member; a text that names none
   gets the SXM part of the size the bare family name is an alias of (H100 -> h100-sxm, A100 ->
   a100-sxm4-80gb, as `trainplan gpus` lists them). "HBM2e ... SXM H100 (95GB)" is Meta's 96 GB
   HBM2e part, "H100 94GB" the NVL.

So "H100 PCIe" is the PCIe card (not the SXM part that a substring match on "h100" gives), "A100
40GB PCIe" the PCIe 40 GB card, and "4090 D" the China-market RTX 4090 D.

4. A name followed by a SKU word it does not include ("RTX 4090 Ti", "RTX 5080 SUPER")
   names another card, one the catalog lacks: None, not the card the shorter name is ("RTX 3090 Ti" is
   found whole).
5. So does a form the family has no member of ("P100 SXM2" where the catalog lists only the PCIe card:
   another board, clocks and power) or a memory size below every member's ("RTX 3060 8GB" beside the
   12 GB card): None. A member's form is its id's form word, else its catalog form_factor (an L40S is
   a PCIe card). A size above every member's stays that card: nvidia-smi names the superchip by its
   total memory ("GH200 480GB"), and resellers' 22 GB RTX 2080 Ti are the same die with more memory.
"""

from __future__ import annotations

import re
import unicodedata

from trainplan.specs import GpuSpec

_SPLIT = re.compile(r"[\s\-_/(),;:+*×]+")
_COUNT = re.compile(r"^\d+x(?=[a-z])")      # "8xh100" -> "h100"
_VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla", "amd", "instinct", "intel", "habana", "huawei"})
_FORM_WORDS = {"pcie": "pcie", "nvl": "nvl"}
_MEMORY = re.compile(r"^(\d+)g(?:b|ib)?$")
_ID_QUALIFIER = re.compile(r"^(sxm\d*|pcie|nvl|\d+gb)$")
_MEMORY_TYPES = frozenset({"hbm3e", "hbm3", "hbm2e", "hbm2", "gddr7", "gddr6x", "gddr6"})
_SKU_WORDS = {"ti": "Ti", "super": "SUPER", "ada": "Ada"}   # NVIDIA's names for another card on the same number


def _compact(name: str) -> str:
    return "".join(part for part in _SPLIT.split(name.lower()) if part)


# vendor and brand names as Chinese sources write them, often without a space before the model
# ("英伟达A100", "昇腾910B"): read as the English words
_CHINESE_NAMES = {"英伟达": " nvidia ", "华为": " huawei ", "昇腾": " ascend "}
# any other CJK character separates words: Chinese writes counts and nouns against the model ("8卡A100",
# "单卡4090"); full-width letters, digits and brackets ("Ａ８００（８０Ｇ）") are first read as ASCII (NFKC)
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff]+")


def _words(text: str) -> list[str]:
    for name, english in _CHINESE_NAMES.items():
        text = text.replace(name, english)
    text = _CJK.sub(" ", unicodedata.normalize("NFKC", text))
    words = (_COUNT.sub("", w) for w in _SPLIT.split(text.lower()))
    return [w for w in words if w and w not in _VENDOR_WORDS]


def family(gpu_id: str) -> str:
    """The id without its form and memory words: h100-pcie -> h100, a100-sxm4-40gb -> a100."""
    return "-".join(seg for seg in gpu_id.split("-") if not _ID_QUALIFIER.match(seg)) or gpu_id


def _form_of(gpu: GpuSpec) -> str:
    """pcie, nvl or sxm: the id's form word, else the catalog's form_factor (SXM, OAM and modules: sxm)."""
    segs = gpu.id.split("-")
    if "pcie" in segs or "nvl" in segs:
        return "pcie" if "pcie" in segs else "nvl"
    return "pcie" if gpu.form_factor.lower().startswith("pcie") else "sxm"


def _text_form(words: list[str]) -> str | None:
    for w in words:
        if w in _FORM_WORDS:
            return _FORM_WORDS[w]
        if w.startswith("sxm"):
            return "sxm"
    return None


def _text_memory_gb(words: list[str]) -> int | None:
    for w in words:
        m = _MEMORY.match(w)
        if m:
            return int(m.group(1))
    return None


def gpu_in_text(text: str, gpus: dict[str, GpuSpec], index: dict[str, str]) -> GpuSpec | None:
    """The catalog GPU `text` names (see the module docstring), or None. `gpus` maps ids to specs and
    `index` lookup keys (ids, aliases) to ids, as the catalog holds them."""
    return read(text, gpus, index)[0]


def lacking(text: str, gpus: dict[str, GpuSpec], index: dict[str, str]) -> str | None:
    """Why `text`, which names a catalog family, is a card the catalog lacks (rules 4 and 5), with the
    family's members: "its SXM board is not in the catalog, only p100-pcie-16gb"; None when the
    text names a catalog card or no family at all."""
    return read(text, gpus, index)[1]


# NVIDIA's desktop and workstation lines: their dies are the GeForce ones (the RTX PRO 6000 Blackwell is the
# RTX 5090's GB202, sm120), never the data-centre parts' (sm90 Hopper, sm100 Blackwell)
_DESKTOP_LINES = ("geforce", "titan", "quadro", "rtx ")


def desktop_die(gpu: GpuSpec) -> bool:
    """A GeForce, TITAN, Quadro or RTX workstation card: a desktop die, so none of the kernels written for
    the data-centre dies (FlashAttention-3 on sm90, FA4 and cuDNN's Blackwell kernels on sm100)."""
    return gpu.name.lower().startswith(_DESKTOP_LINES)


def _plurals_read(words: list[str], gpus: dict[str, GpuSpec], names: dict[str, str]) -> list[str]:
    """A data-centre part written in the plural ("8 A100s", "H100s") is that part. Not a desktop card's number:
    an S there is NVIDIA's SUPER ("4080S"), and not a word that is itself a catalog name (L40S, V100S).
    `names`: compacted catalog name -> GPU id."""
    out = []
    for w in words:
        gpu_id = names.get(w[:-1]) if w.endswith("s") and w not in names else None
        out.append(w[:-1] if gpu_id is not None and not desktop_die(gpus[gpu_id]) else w)
    return out


def read(text: str, gpus: dict[str, GpuSpec], index: dict[str, str]) -> tuple[GpuSpec | None, str | None]:
    """(the catalog GPU `text` names, None) or (None, why it names a card the catalog lacks, or None)."""
    names = {_compact(key): gpu_id for key, gpu_id in index.items()}   # compacted once, for both passes
    words = _plurals_read(_words(text), gpus, names)
    if not words:
        return None, None
    runs: dict[str, int] = {}           # joined run of words -> the index of the word after its first run
    for i in range(len(words)):
        for j in range(i + 1, len(words) + 1):
            runs.setdefault("".join(words[i:j]), j)
    best: dict[str, int] = {}           # gpu id -> longest catalog name of it found in the text
    after: dict[str, int] = {}          # gpu id -> the index of the word after that name
    for name, gpu_id in names.items():
        if name in runs and len(name) > best.get(gpu_id, 0):
            best[gpu_id], after[gpu_id] = len(name), runs[name]
    if not best:
        return None, None
    top = max(best.values())
    found = max((g for g, n in best.items() if n == top), key=lambda g: (best[g], g))
    fam = family(found)
    members = [g for g in gpus if family(g) == fam]
    only = f"is not in the catalog, only {', '.join(members)}"
    if after[found] < len(words) and words[after[found]] in _SKU_WORDS:
        # "RTX 3070 Ti": a card the catalog lacks (rule 4)
        return None, f"its {_SKU_WORDS[words[after[found]]]} card {only}"
    default = index.get(fam)
    form, memory_gb = _text_form(words), _text_memory_gb(words)
    memory_type = next((w for w in words if w in _MEMORY_TYPES), None)

    sizes = {g: round(gpus[g].memory_bytes / 1e9) for g in members}
    if form is not None and all(_form_of(gpus[g]) != form for g in members):
        return None, f"its {'PCIe' if form == 'pcie' else form.upper()} board {only}"     # "P100 SXM2" (rule 5)
    if memory_gb is not None and all(memory_gb < size - 1 for size in sizes.values()):
        return None, f"its {memory_gb} GB card {only}"            # "RTX 3060 8GB": a smaller card (rule 5)

    def score(gpu_id: str) -> tuple:
        gpu_form = _form_of(gpus[gpu_id])
        if form is None:
            form_score = 0 if gpu_form == "sxm" else -1
        else:
            form_score = 2 if gpu_form == form else -2
        mem_score = 0 if memory_gb is None else (1 if abs(sizes[gpu_id] - memory_gb) <= 1 else -1)
        kind = gpus[gpu_id].memory_type.lower()
        type_score = 0 if memory_type is None or not kind else (1 if kind == memory_type else -1)
        return form_score + mem_score + type_score, best.get(gpu_id, 0), gpu_id == default, gpu_id

    return gpus[max(members, key=score)], None
