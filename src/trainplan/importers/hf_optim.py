"""The `optim` of an HF TrainingArguments / TRL config (importers/hf.py reads the rest): transformers v5.24.0
src/transformers/training_args.py OptimizerNames, trainer_optimizer.py (_get_galore_optimizer, _get_apollo_optimizer,
_setup_low_rank_optimizer), and the v4.57 `adafactor` alias."""

from __future__ import annotations

from typing import Any, Callable

from trainplan.importers.base import Collector, as_int

# optim (training_args.py OptimizerNames) -> trainplan optimizer, with a note where it is a judgement
_OPTIM = {"adamw_torch": ("adamw", ""), "adamw_hf": ("adamw", "v4 alias of torch AdamW"),
          "adamw_torch_fused": ("adamw-fused", ""), "adamw_apex_fused": ("adamw-fused", "apex FusedAdam"),
          "adamw_bnb_8bit": ("adamw-8bit", ""), "adamw_8bit": ("adamw-8bit", "alias of adamw_bnb_8bit"),
          "adamw_torch_8bit": ("adamw-8bit", "torchao 8-bit AdamW states"),
          "paged_adamw_8bit": ("paged-adamw-8bit", ""),
          "paged_adamw_32bit": ("adamw", "bitsandbytes paged 32-bit AdamW: fp32 states in paged memory"),
          "adafactor": ("adafactor", ""), "lion_32bit": ("lion", ""), "paged_lion_32bit": ("lion", "paged states"),
          "sgd": ("sgd", "")}
# optim galore_* (trainer_optimizer.py _get_galore_optimizer: GaLoreAdamW / GaLoreAdamW8bit; the _layerwise
# names step each parameter in a post-accumulate-grad hook, _setup_low_rank_optimizer) -> (optimizer, in backward)
_GALORE = {"galore_adamw": ("galore-adamw", False), "galore_adamw_8bit": ("galore-adamw-8bit", False),
           "galore_adamw_layerwise": ("galore-adamw", True), "galore_adamw_8bit_layerwise": ("galore-adamw-8bit", True),
           # optim apollo_adamw[_layerwise] (_get_apollo_optimizer: APOLLOAdamW over the same low-rank setup)
           "apollo_adamw": ("apollo-adamw", False), "apollo_adamw_layerwise": ("apollo-adamw", True)}


class _OptimMixin:
    """`optim` (and `adafactor`, `optim_args` for GaLore) for importers/hf.py's reader: it gives pop, b, c,
    default and path."""

    def _optimizer(self) -> None:
        optim, adafactor = self.pop("optim"), self.pop("adafactor")
        if optim is None and adafactor is not None and self.b(adafactor, "adafactor"):
            self.c.set("optimizer", "adafactor", key="adafactor", raw=adafactor, note="v4.57 alias of optim adafactor")
        elif optim is None:
            self.default("optimizer")
        elif str(optim).lower().removeprefix("optimizernames.") in _OPTIM:
            value, note = _OPTIM[str(optim).lower().removeprefix("optimizernames.")]
            self.c.set("optimizer", value, key="optim", raw=optim, note=note)
        elif low_rank_optim(self.c, optim, self.pop("optim_args"), key="optim", default=self.default):
            pass
        else:
            self.c.skip("optim", optim, "an optimizer trainplan does not model; trainplan's default is kept")


def low_rank_optim(c: Collector, optim: Any, optim_args: Any, *, key: str, default: Callable[[str], Any]) -> bool:
    """An HF `optim` galore_* / apollo_adamw* (True; False for any other name): the optimizer, its rank from
    optim_args ("rank=64, update_proj_gap=100", or a dict as axolotl allows), else `default` (the framework's), and
    the layer-wise step; optim_target_modules is taken as every decoder linear (trainplan models those). The HF
    Trainer's own reader and the formats that pass `optim` and `optim_args` to TrainingArguments (axolotl's
    `optimizer` for non-custom names, core/builders/base.py; ms-swift's `optim`) share it."""
    name = str(optim).lower().removeprefix("optimizernames.")
    if name not in _GALORE:
        return False
    value, layerwise = _GALORE[name]
    c.set("optimizer", value, key=key, raw=optim, note="projected targets taken as every decoder linear "
                                                       "(optim_target_modules)")
    if layerwise:
        c.set("optimizer_in_backward", True, key=key, raw=optim,
              note="_layerwise: each parameter steps in a post-accumulate-grad hook")
    if isinstance(optim_args, dict):
        pairs = {str(k): v for k, v in optim_args.items()}
    else:
        pairs = dict(p.split("=", 1) for p in str(optim_args or "").replace(" ", "").split(",") if "=" in p)
    rank = "apollo_rank" if value == "apollo-adamw" else "galore_rank"
    if "rank" in pairs:
        c.set(rank, as_int(pairs["rank"], "optim_args rank", c.file, minimum=1), key="optim_args", raw=optim_args)
    else:
        default(rank)
    return True
