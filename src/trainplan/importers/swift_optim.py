"""ms-swift's optimizer keys (importers/swift_args.py calls these): its own GaLore (`use_galore`, swift/optimizers/
galore/utils.py) and Muon (`optimizer muon`, swift/optimizers/muon.py) plugins, else HF `optim` as the HF Trainer under
`swift sft` builds it."""

from __future__ import annotations

from trainplan.importers.axolotl import default, hf_optimizer
from trainplan.importers.base import Collector, as_int
from trainplan.importers.hf_optim import low_rank_optim
from trainplan.job.defaults import defaults as job_defaults
from trainplan.job.defaults import hf as hf_defaults
from trainplan.job.defaults import swift as defaults

_DEFAULTS = {d.field: d for d in defaults.DEFAULTS}
# what ms-swift's arguments read as off (unset, false, zero, empty)
_OFF = (None, False, "false", "False", 0, "0", [], "", "None")


def swift_optim(c: Collector, args: dict, muon: bool) -> None:
    """The optimizer but ms-swift's own GaLore: its Muon plugin, else HF `optim` (GaLore and APOLLO names too: the
    HF Trainer under `swift sft` builds them from optim, optim_args and optim_target_modules), else the default."""
    if muon:
        # swift/optimizers/mapping.py optimizers_map['muon'] -> muon.py MuonOptimizerCallback: Moonlight's
        # examples/toy_train.py Muon over every trainable >= 2-D weight but the embedding and head; `optim` unused
        c.set("optimizer", "muon", key="optimizer", raw=args["optimizer"],
              note="swift/optimizers/muon.py MuonOptimizerCallback (Moonlight's Muon, AdamW on embeddings, head "
                   "and vectors)")
        if "ns_steps" in str(args.get("optim_args") or ""):
            c.skip("optim_args", args["optim_args"], "Muon is timed at its default 5 Newton-Schulz steps")
    elif args.get("optim") is not None and not low_rank_optim(
            c, args["optim"], args.get("optim_args"), key="optim",
            default=lambda name: default(c, name, job_defaults("hf"), hf_defaults.VERSION)):
        hf_optimizer(c, args["optim"], "optim")
    elif args.get("optim") is None:
        default(c, "optimizer", _DEFAULTS, defaults.VERSION)


# ms-swift swift/optimizers/galore/utils.py get_optimizer: optim adamw_hf / adamw_torch / adamw_torch_fused ->
# GaLoreAdamW, an 8-bit adamw -> GaLoreAdamW8bit; swift/pipelines/train/tuner.py: galore_target_modules None ->
# find_all_linears (every linear but the head); the rank's default in job/defaults/swift.py
def swift_galore(c: Collector, args: dict) -> bool:
    """use_galore as trainplan models it: the optimizer and rank read (True); False (use_galore left to
    _UNMODELLED) for embeddings projected, Q-GaLore or an optim GaLore has no AdamW for."""
    if args.get("use_galore") in _OFF or any(args.get(k) not in _OFF for k in ("galore_with_embedding",
                                                                                "galore_quantization")):
        return False
    optim = str(args.get("optim") or "adamw_torch_fused").lower()
    if optim in ("adamw_hf", "adamw_torch", "adamw_torch_fused"):
        value = "galore-adamw"
    elif "adamw" in optim and "8bit" in optim:
        value = "galore-adamw-8bit"
    else:
        return False
    c.set("optimizer", value, key="use_galore", raw=args["use_galore"],
          note=f"swift/optimizers/galore/utils.py get_optimizer with optim {optim}")
    if args.get("galore_rank") is not None:
        c.set("galore_rank", as_int(args["galore_rank"], "galore_rank", c.file, minimum=1), key="galore_rank",
              raw=args["galore_rank"])
    else:
        default(c, "galore_rank", _DEFAULTS, defaults.VERSION)
    if args.get("galore_target_modules") not in _OFF:
        c.skip("galore_target_modules", args["galore_target_modules"], "trainplan projects every decoder linear")
    return True
