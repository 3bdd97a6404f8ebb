"""The planner speaks the user's stack: the layout knobs given on the command line are fixed, and a
knob, optimizer or kernel the framework cannot run is a one-line error, not a plan nobody can launch.

What each framework runs is job/capabilities.CAPABILITIES (with its sources); this module only reads
the options against it.
"""

from __future__ import annotations

from trainplan.enums import Attention, Framework, Fsdp, Loss, Offload, Optimizer, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import fields
from trainplan.job.capabilities import Capabilities
from trainplan.job.options import JobOptions
from trainplan.job.resolve import parse_enum
from trainplan.planner.space import Fixed

_DEFAULTS = {f.name: f.default for f in fields(JobOptions) if f.name in ("zero", "fsdp", "offload", "tp", "pp")}


def _given(options: JobOptions, name: str) -> bool:
    """A knob is the user's when it was given as a flag (even at its default value, `--zero 0`) or a
    config (`--from`) or a Python caller set it off its default."""
    return name in options.given or str(getattr(options, name)).strip().lower() != str(_DEFAULTS[name])


def fixed_layout(options: JobOptions) -> Fixed:
    """The layout knobs every plan keeps: --zero, --fsdp, --offload, --tp, --pp where given."""
    return Fixed(zero=parse_enum(ZeroStage, options.zero, "--zero") if _given(options, "zero") else None,
                 fsdp=parse_enum(Fsdp, options.fsdp, "--fsdp") if _given(options, "fsdp") else None,
                 offload=parse_enum(Offload, options.offload, "--offload") if _given(options, "offload") else None,
                 tp=options.tp if _given(options, "tp") else None,
                 pp=options.pp if _given(options, "pp") else None)


def _refuse(framework: Framework, caps: Capabilities, what: str) -> TrainplanError:
    return TrainplanError(caps.cannot_run(framework, what))


def check_stack(framework: Framework, caps: Capabilities, fixed: Fixed, options: JobOptions,
                optimizers: tuple[Optimizer, ...]) -> None:
    """Raise (one line) when a fixed knob, an optimizer or a kernel is outside what `framework` runs,
    or when a knob is one the planner does not search (context and expert parallelism)."""
    if fixed.zero and fixed.zero not in caps.zero:
        raise _refuse(framework, caps, f"DeepSpeed ZeRO-{int(fixed.zero)} (--zero {int(fixed.zero)})")
    if fixed.fsdp not in (None, Fsdp.NONE) and not caps.fsdp:
        raise _refuse(framework, caps, f"FSDP (--fsdp {fixed.fsdp})")
    if fixed.offload not in (None, Offload.NONE) and fixed.offload not in caps.offload:
        raise _refuse(framework, caps, f"CPU offload of the {'whole state' if fixed.offload == 'all' else fixed.offload}"
                                       f" (--offload {fixed.offload})")
    for knob, able, name in (("tp", caps.tp, "tensor"), ("pp", caps.pp, "pipeline")):
        value = getattr(fixed, knob)
        if value is not None and value > 1 and not able:
            raise _refuse(framework, caps, f"{name} parallelism (--{knob} {value})")
    for knob, able, name in (("cp", caps.cp, "context"), ("ep", caps.ep, "expert")):
        value = getattr(options, knob)
        if value > 1:
            if not able:
                raise _refuse(framework, caps, f"{name} parallelism (--{knob} {value})")
            raise TrainplanError(f"trainplan plan does not search {name} parallelism (--{knob} {value}): "
                                 f"estimate that layout with `trainplan estimate --{knob} {value} ...`")
    bad = [str(o) for o in optimizers if o not in caps.optimizers]
    if bad:
        runs = ", ".join(sorted(str(o) for o in caps.optimizers))
        raise TrainplanError(f"--framework {framework} cannot run the optimizer {', '.join(bad)}: it runs {runs}")
    if options.loss and parse_enum(Loss, options.loss, "--loss") not in caps.losses:
        runs = ", ".join(sorted(str(x) for x in caps.losses))
        raise TrainplanError(f"--framework {framework} has no {options.loss} loss kernel (--loss {options.loss}): "
                             f"it runs {runs}")
    if options.liger and not caps.liger:
        raise TrainplanError(f"--framework {framework} has no Liger kernels (--liger): it uses its own")
    if options.attention and parse_enum(Attention, options.attention, "--attention") not in caps.attentions:
        runs = ", ".join(sorted(str(a) for a in caps.attentions))
        raise TrainplanError(f"--framework {framework} has no {options.attention} attention: it runs {runs}")
