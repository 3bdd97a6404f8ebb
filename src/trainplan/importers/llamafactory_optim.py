"""LLaMA-Factory's optimizer keys read into settings (importers/llamafactory.py calls `_optimizer`): HF `optim`,
and the optimizers LLaMA-Factory builds itself (train/trainer_utils.py create_custom_optimizer: GaLore, APOLLO,
LoRA+, BAdam, Adam-mini, Muon, tried in that order)."""

from __future__ import annotations

from trainplan.importers.base import Collector, as_bool, as_int
from trainplan.importers.llamafactory_args import _SRC, _default

# HF OptimizerNames (transformers 5.8.0 training_args.py) -> trainplan optimizers
_OPTIM = {"adamw_torch": "adamw", "adamw_torch_fused": "adamw-fused", "adamw_8bit": "adamw-8bit",
          "adamw_bnb_8bit": "adamw-8bit", "adamw_torch_8bit": "adamw-8bit", "paged_adamw_8bit": "paged-adamw-8bit",
          "adafactor": "adafactor", "sgd": "sgd", "lion_32bit": "lion"}
# optimizer families LLaMA-Factory builds itself (train/trainer_utils.py create_custom_optimizer)
_CUSTOM_OPTIM = ("use_galore", "use_apollo", "use_badam", "use_adam_mini", "use_muon")


# LLaMA-Factory train/trainer_utils.py _create_galore_optimizer: optim adamw_torch -> GaLoreAdamW, the bitsandbytes
# 8-bit ones -> GaLoreAdamW8bit (adafactor -> GaLoreAdafactor, not modelled); galore_target "all" ->
# find_all_linear_modules (every linear but the head); galore_layerwise: one optimizer per parameter stepped
# in a post-accumulate-grad hook (gradient accumulation refused)
_GALORE_OPTIM = {"adamw_torch": "galore-adamw", "adamw_bnb_8bit": "galore-adamw-8bit",
                 "adamw_8bit": "galore-adamw-8bit", "paged_adamw_8bit": "galore-adamw-8bit"}


def _galore(c: Collector, get) -> bool:
    """use_galore: the GaLore optimizer for `optim`, its rank and layer-wise step (False: not modelled)."""
    optim = get("optim")
    name = str(optim if optim is not None else "adamw_torch").lower()
    if name not in _GALORE_OPTIM:
        return False
    c.set("optimizer", _GALORE_OPTIM[name], key="use_galore", raw=True,
          note=f"{_SRC}train/trainer_utils.py _create_galore_optimizer with optim {name}"
               + ("" if optim is not None else "; optim unset: HF's default adamw_torch_fused is not among the optims "
                  "that function maps (adamw_torch, the bitsandbytes 8-bit ones): set optim: adamw_torch"))
    _low_rank(c, get, "galore", ("update_interval", "scale", "proj_type"))
    return True


def _apollo(c: Collector, get) -> bool:
    """use_apollo: APOLLOAdamW (train/trainer_utils.py _create_apollo_optimizer takes only optim adamw_torch: any other
    raises NotImplementedError "Unknown optim", so False, not modelled), its rank and layer-wise step."""
    optim = get("optim")
    if str(optim).lower() != "adamw_torch":
        return False
    c.set("optimizer", "apollo-adamw", key="use_apollo", raw=True,
          note=f"{_SRC}train/trainer_utils.py _create_apollo_optimizer (APOLLOAdamW, random projection)")
    _low_rank(c, get, "apollo", ("update_interval", "scale", "proj", "proj_type", "scale_type", "scale_front"))
    return True


def _low_rank(c: Collector, get, prefix: str, read_only: tuple[str, ...]) -> None:
    """GaloreArguments' and ApolloArguments' shared keys (`prefix`_target, _rank, _layerwise): the rank (else the
    framework default), the layer-wise step; targets other than "all" noted as not modelled; the keys that change
    neither memory nor time (`read_only`) read."""
    target = get(f"{prefix}_target")
    if target is not None and str(target).lower() != "all":
        c.skip(f"{prefix}_target", target, f"trainplan projects every decoder linear (as {prefix}_target all)")
    rank = get(f"{prefix}_rank")
    if rank is None:
        _default(c, f"{prefix}_rank")
    else:
        c.set(f"{prefix}_rank", as_int(rank, f"{prefix}_rank", c.file, minimum=1), key=f"{prefix}_rank", raw=rank)
    layerwise = get(f"{prefix}_layerwise")
    if layerwise is not None and as_bool(layerwise, f"{prefix}_layerwise", c.file):
        c.set("optimizer_in_backward", True, key=f"{prefix}_layerwise", raw=layerwise,
              note="one optimizer per parameter, stepped in a post-accumulate-grad hook")
    for key in read_only:
        get(f"{prefix}_{key}")


def _optimizer(c: Collector, get) -> None:
    custom = [k for k in _CUSTOM_OPTIM if as_bool(get(k, False), k, c.file)]
    mode = get("badam_mode")
    if custom == ["use_badam"] and str(mode or "layer").lower() == "layer":
        c.set("optimizer", "badam", key="use_badam", raw=True,
              note="layer-wise BAdam (train/trainer_utils.py _create_badam_optimizer: BlockOptimizer over "
                   "the HF optimizer; badam_mode " + ("layer" if mode else "default layer") + ")")
        get("optim")
        return
    if custom == ["use_galore"] and _galore(c, get):
        return
    if custom == ["use_apollo"] and _apollo(c, get):
        return
    # create_custom_optimizer tries GaLore, APOLLO, LoRA+, BAdam, Adam-mini, Muon in that order; `optim` is then
    # unused. _create_muon_optimizer gives Muon every trainable 2-D weight but "embed"/"lm_head";
    # _create_adam_mini_optimizer passes the model's named parameters and head counts to adam_mini.Adam_mini
    named = {"use_muon": ("muon", "_create_muon_optimizer (third_party/muon/muon.py, Moonlight's Muon: AdamW "
                                  "on the embeddings, head and vectors)"),
             "use_adam_mini": ("adam-mini", "_create_adam_mini_optimizer (pip adam-mini)")}
    if len(custom) == 1 and custom[0] in named and get("loraplus_lr_ratio") is None:
        value, where = named[custom[0]]
        c.set("optimizer", value, key=custom[0], raw=True, note=f"{_SRC}train/trainer_utils.py {where}")
        get("optim")
        return
    if custom:
        c.skip(custom[0], True, f"LLaMA-Factory's {custom[0][4:]} optimizer ({_SRC}train/trainer_utils.py "
               "create_custom_optimizer) is not modelled; the optimizer is left to trainplan")
        get("optim")
        return
    optim = get("optim")
    if optim is None:
        _default(c, "optimizer")
    elif str(optim).lower() in _OPTIM:
        c.set("optimizer", _OPTIM[str(optim).lower()], key="optim", raw=optim)
    else:
        c.skip("optim", optim, "an HF optimizer trainplan does not model; its default is kept")
