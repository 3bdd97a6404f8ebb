"""Each framework default trainplan states (trainplan/job/defaults/<framework>.py) equals the one in
the framework's own source, so that no default is stated from memory.

The frameworks are not imported (heavy dependencies, their own transformers/torch pins): the pinned
PyPI release of each (tools/framework_sources.py PINS) is fetched once into a cache and its files
are read with `ast` (dataclass and pydantic fields, argparse options, `.get(key, default)` calls,
function parameters) or as JSON (the DeepSpeed/FSDP presets that ms-swift and axolotl ship).
Without network access and without a filled cache these tests fail (they do not skip).

What is compared with what:
- A Default's own value in the framework's form: its `raw` when the module passes one (raw=None
  included: the framework's default is then None), else its `value`.
- A plain `key` is looked up as a field of the framework's argument classes (_PLAIN); a key that is
  not one (a rule such as "None -> 2 x rank", a compound key "bf16/fp16", a setting without a key)
  has its own checks in _SPECS, each with the reason, testing the parts that are in the source
  (the component fields, the expression that applies the rule).
Normalisations (`_same`): enum members read as their values (LLaMA-Factory AttentionFunction.AUTO ->
"auto"); "true"/"false" strings (argparse options) equal the booleans; ints equal floats (16 ==
16.0) but booleans are not numbers; a class-body name bound under `if` takes its last binding
(transformers' `default_optim`: "adamw_torch_fused" when torch >= 2.8).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from trainplan.frozen import fields as record_fields
from trainplan.job.defaults import FRAMEWORKS, Default
from trainplan.job.defaults import module as defaults_module

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.frameworks


def _load_sources():
    path = ROOT / "tools" / "framework_sources.py"
    spec = importlib.util.spec_from_file_location("framework_sources", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["framework_sources"] = mod
    spec.loader.exec_module(mod)
    return mod


FS = _load_sources()
_UNAVAILABLE: dict[str, str] = {}

# which pinned source a defaults module is read against
_TREE = {"llamafactory": "llamafactory", "hf": "transformers", "trl": "trl", "axolotl": "axolotl", "swift": "swift",
         "torchtune": "torchtune", "torchtitan": "torchtitan", "accelerate": "accelerate", "deepspeed": "deepspeed"}


def source(framework: str):
    """The framework's pinned release as a SourceTree; a failed download fails the test in one line."""
    name = _TREE[framework]
    if name not in _UNAVAILABLE:
        try:
            return FS.tree(name)
        except FS.SourceUnavailable as exc:
            _UNAVAILABLE[name] = str(exc)
    pytest.fail(_UNAVAILABLE[name], pytrace=False)


# ---------------------------------------------------------------------------------------------
# comparing values

def _as_bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    return None


def _same(found: Any, expected: Any) -> bool:
    if isinstance(found, bool) or isinstance(expected, bool):
        a, b = _as_bool(found), _as_bool(expected)
        return a is not None and a == b
    if isinstance(found, (int, float)) and isinstance(expected, (int, float)):
        return found == expected
    if isinstance(found, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(found) == len(expected) and all(_same(a, b) for a, b in zip(found, expected))
    if isinstance(found, dict) and isinstance(expected, dict):
        return found.keys() == expected.keys() and all(_same(found[k], expected[k]) for k in found)
    if found is None or expected is None:
        return found is None and expected is None
    return type(found) is type(expected) and found == expected


# ---------------------------------------------------------------------------------------------
# where a default lives in the source: each spec's find() returns [Found(value, "path:line")]

@dataclass(frozen=True)
class Attr:
    """A field of one of the classes (dotted keys descend into nested sections); every class that
    has the field must agree."""

    classes: tuple[str, ...]
    key: str

    def find(self, tree) -> list:
        out = []
        for qualname in self.classes:
            info = FS.field_of(tree.cls(qualname), self.key)
            if info is not None:
                out.append(FS.Found(info.value, f"{qualname.rsplit('.', 1)[-1]}.{self.key} {info.where}"))
        return out

    def __str__(self) -> str:
        return f"field {self.key} of {' / '.join(c.rsplit('.', 1)[-1] for c in self.classes)}"


def attr(cls: str, key: str) -> Attr:
    return Attr((cls,), key)


@dataclass(frozen=True)
class Get:
    """`<receiver>.get(key, default)` calls in the modules (a function of them, or the whole file)."""

    modules: tuple[str, ...]
    key: str
    scope: str | None = None
    receiver: str | None = None

    def find(self, tree) -> list:
        return [f for m in self.modules for f in FS.get_defaults(tree.need(m), self.key, self.scope, self.receiver)]

    def __str__(self) -> str:
        return f"{self.receiver or ''}.get({self.key!r}, ...) in {', '.join(self.modules)}"


def env(module: str, var: str, scope: str) -> Get:
    return Get((module,), var, scope, "os.environ")


@dataclass(frozen=True)
class Arg:
    """An argparse option's default."""

    module: str
    option: str

    def find(self, tree) -> list:
        return [f for f, _ in FS.argparse_option(tree.need(self.module), self.option)]

    def __str__(self) -> str:
        return f"argparse {self.option} in {self.module}"


@dataclass(frozen=True)
class HelpSays:
    """An argparse option's help text says this (a default stated in prose: True when it does)."""

    module: str
    option: str
    text: str

    def find(self, tree) -> list:
        return [FS.Found(self.text in h, f.where) for f, h in FS.argparse_option(tree.need(self.module), self.option)]

    def __str__(self) -> str:
        return f"help of {self.option} in {self.module} says {self.text!r}"


@dataclass(frozen=True)
class Entry:
    """`{key: value}` in dict literals of a function."""

    module: str
    key: str
    scope: str

    def find(self, tree) -> list:
        return FS.dict_entries(tree.need(self.module), self.key, self.scope)

    def __str__(self) -> str:
        return f"{{{self.key!r}: ...}} in {self.module} {self.scope}"


@dataclass(frozen=True)
class Assigned:
    """Assignments to a target (its source text) in a function."""

    module: str
    target: str
    scope: str

    def find(self, tree) -> list:
        return FS.assignments(tree.need(self.module), self.target, self.scope)

    def __str__(self) -> str:
        return f"{self.target} = ... in {self.module} {self.scope}"


@dataclass(frozen=True)
class Param:
    """A function parameter's default, in each of the (module, function) pairs."""

    functions: tuple[tuple[str, str], ...]
    param: str

    def find(self, tree) -> list:
        out = []
        for m, fn in self.functions:
            found = FS.parameter_default(tree.need(m), fn, self.param)
            if found is not None:
                out.append(found)
        return out

    def __str__(self) -> str:
        return f"parameter {self.param} of {', '.join(fn for _, fn in self.functions)}"


@dataclass(frozen=True)
class Expr:
    """The function holds this expression (a rule, in the framework's own words): True when it does."""

    module: str
    scope: str
    text: str

    def find(self, tree) -> list:
        mod = tree.need(self.module)
        want = ast.unparse(ast.parse(self.text, mode="eval").body)
        node = mod.function(self.scope)
        return [FS.Found(True, mod.where(n)) for n in ast.walk(node)
                if isinstance(n, ast.expr) and ast.unparse(n) == want]

    def __str__(self) -> str:
        return f"`{self.text}` in {self.module} {self.scope}"


@dataclass(frozen=True)
class Calls:
    """The function calls `callee` (True when it does)."""

    module: str
    scope: str
    callee: str

    def find(self, tree) -> list:
        mod = tree.need(self.module)
        return [FS.Found(True, w) for w in FS.calls_to(mod, self.scope, self.callee)]

    def __str__(self) -> str:
        return f"a call to {self.callee} in {self.module} {self.scope}"


@dataclass(frozen=True)
class DsKey:
    """A DeepSpeed config key: `zero_optimization[.offload_param|.offload_optimizer].x` (the pydantic
    models in runtime/zero/, aliases included), `bf16.x`/`fp16.x` (runtime/precision_config.py),
    else a top-level key from runtime/constants.py (NAME = "key", NAME_DEFAULT = value)."""

    key: str

    def find(self, tree) -> list:
        parts = self.key.split(".")
        zero, off = "deepspeed.runtime.zero.config.", "deepspeed.runtime.zero.offload_config."
        sections = {("zero_optimization", "offload_param"): off + "DeepSpeedZeroOffloadParamConfig",
                    ("zero_optimization", "offload_optimizer"): off + "DeepSpeedZeroOffloadOptimizerConfig",
                    ("zero_optimization",): zero + "DeepSpeedZeroConfig",
                    ("bf16",): "deepspeed.runtime.precision_config.DeepSpeedBF16Config",
                    ("bfloat16",): "deepspeed.runtime.precision_config.DeepSpeedBF16Config",
                    ("fp16",): "deepspeed.runtime.precision_config.DeepSpeedFP16Config"}
        for n in (2, 1):
            if tuple(parts[:n]) in sections and len(parts) == n + 1:
                return Attr((sections[tuple(parts[:n])],), parts[n]).find(tree)
        if len(parts) == 1:
            consts = tree.need("deepspeed.runtime.constants")
            for name, bindings in consts.names.items():
                if isinstance(bindings[-1][0], ast.Constant) and bindings[-1][0].value == self.key \
                        and f"{name}_DEFAULT" in consts.names:
                    node = consts.names[f"{name}_DEFAULT"][-1][0]
                    return [FS.Found(FS.safe_evaluate(node, FS.Scope(consts)), consts.where(node))]
        return []

    def __str__(self) -> str:
        return f"DeepSpeed key {self.key}"


# The Default's own value is checked, plus these parts.
@dataclass(frozen=True)
class Also:
    checks: tuple[tuple[Any, Any], ...]


# The key is not a plain field (a rule, a compound key, no key at all): these parts instead.
@dataclass(frozen=True)
class Instead:
    reason: str
    checks: tuple[tuple[Any, Any], ...]


# The key is not in the pinned release (newer than it): assert it is absent, so a new pin is rechecked.
@dataclass(frozen=True)
class Absent:
    reason: str
    spec: Any


# in a part's expected value: the Default's own value (its raw, else its value); in a spec's strings,
# "{raw}" / "{value!r}" are filled from the Default, so the parts follow the module's values too
OWN = type("OWN", (), {"__repr__": lambda self: "OWN"})()


def _bind(spec: Any, d: Default) -> Any:
    if isinstance(spec, Any_):
        return Any_(_bind(spec.spec, d))
    changes = {}
    for f in dataclasses.fields(spec):
        v = getattr(spec, f.name)
        if isinstance(v, str) and ("{raw" in v or "{value" in v):
            changes[f.name] = v.format(raw=d.raw, value=d.value)
    return dataclasses.replace(spec, **changes) if changes else spec


def also(*checks) -> Also:
    return Also(tuple(checks))


def instead(reason: str, *checks) -> Instead:
    return Instead(reason, tuple(checks))


# "all" (the default): every place found agrees; "any": one of them (the others are other branches)
@dataclass(frozen=True)
class Any_:
    spec: Any

    def find(self, tree) -> list:
        return self.spec.find(tree)

    def __str__(self) -> str:
        return f"{self.spec} (one of its branches)"


# ---------------------------------------------------------------------------------------------
# the framework's argument classes: where a plain key is looked up, per defaults table

_LF = "llamafactory.hparams."
_TA = "transformers.training_args.TrainingArguments"
_TRL = "trl.trainer."
_AX = "axolotl.utils.schemas.config.AxolotlInputConfig"
_SWIFT = "swift.arguments.sft_args.SftArguments"
_MEG = "swift.megatron.arguments.sft_args.MegatronSftArguments"
_JOB = "torchtitan.config.job_config.JobConfig"
_RECIPES = tuple(f"recipes.{r}" for r in ("full_finetune_distributed", "full_finetune_single_device",
                                          "lora_finetune_distributed", "lora_finetune_single_device"))
_LAUNCH = "accelerate.commands.launch"
_PLUGINS = "accelerate.utils.dataclasses"


def _classes(*qualnames):
    return lambda key: Attr(qualnames, key)


_PLAIN = {
    ("llamafactory", "DEFAULTS"): _classes(_LF + "finetuning_args.FinetuningArguments", _LF + "model_args.ModelArguments",
                                           _LF + "data_args.DataArguments", _LF + "training_args.TrainingArguments"),
    ("hf", "DEFAULTS"): _classes(_TA),
    ("trl", "DEFAULTS"): _classes(_TRL + "model_config.ModelConfig", _TRL + "sft_config.SFTConfig"),
    ("trl", "DPO_DEFAULTS"): _classes(_TRL + "model_config.ModelConfig", _TRL + "dpo_config.DPOConfig"),
    ("trl", "GRPO_DEFAULTS"): _classes(_TRL + "model_config.ModelConfig", _TRL + "grpo_config.GRPOConfig"),
    ("axolotl", "DEFAULTS"): _classes(_AX),
    ("swift", "DEFAULTS"): _classes(_SWIFT),
    ("swift", "MEGATRON_DEFAULTS"): _classes(_MEG),
    ("torchtitan", "DEFAULTS"): _classes(_JOB),
    ("torchtune", "DEFAULTS"): lambda key: Get(_RECIPES, key, receiver="cfg"),
    ("accelerate", "DEFAULTS"): lambda key: Arg(_LAUNCH, "--" + key.rsplit(".", 1)[-1]),
    ("deepspeed", "DEFAULTS"): DsKey,
}

_TT_BUILDERS = (("torchtune.models.llama3_1._model_builders", "lora_llama3_1_8b"),
                ("torchtune.models.qwen2_5._model_builders", "lora_qwen2_5_7b_instruct"))

# (framework, table, field) -> Also / Instead / Absent
_SPECS: dict[tuple[str, str, str], Any] = {
    # LLaMA-Factory
    ("llamafactory", "DEFAULTS", "lora_alpha"): also(
        (Expr(_LF + "finetuning_args", "FinetuningArguments.__post_init__", "self.lora_alpha or self.lora_rank * 2"),
         True)),
    ("llamafactory", "DEFAULTS", "packing"): also(
        (Expr(_LF + "parser", "get_train_args",
              "data_args.packing if data_args.packing is not None else finetuning_args.stage == 'pt'"), True)),
    ("llamafactory", "DEFAULTS", "grad_ckpt"): also(
        (Expr("llamafactory.model.model_utils.checkpointing", "prepare_model_for_training",
              "not model_args.disable_gradient_checkpointing"), True)),
    ("llamafactory", "DEFAULTS", "attention"): also(
        (Expr("llamafactory.model.model_utils.attention", "configure_attn_implementation",
              "model_args.flash_attn == AttentionFunction.AUTO"), True)),
    # transformers TrainingArguments
    ("hf", "DEFAULTS", "precision"): instead(
        "compound key: neither bf16 nor fp16 is set", (attr(_TA, "bf16"), OWN), (attr(_TA, "fp16"), OWN)),
    ("hf", "DEFAULTS", "attention"): instead(
        "attn_implementation is a from_pretrained argument, not a TrainingArguments field: None -> sdpa at load",
        (Expr("transformers.modeling_utils", "PreTrainedModel.get_correct_attn_implementation",
              "{value!r} if requested_attention is None else requested_attention"), True)),
    ("hf", "DEFAULTS", "fsdp_version"): instead(
        "a key of the fsdp_config dict, filled in TrainingArguments._process_fsdp_args",
        (Get(("transformers.training_args",), "version", "TrainingArguments._process_fsdp_args", "self.fsdp_config"),
         OWN)),
    ("hf", "DEFAULTS", "reshard_after_forward"): instead(
        "a key of the fsdp_config dict: True in the FSDP2 branch (FSDP1's is 'full_shard')",
        (Any_(Get(("transformers.training_args",), "reshard_after_forward", "TrainingArguments._process_fsdp_args",
                  "self.fsdp_config")), OWN)),
    ("hf", "DEFAULTS", "grad_ckpt"): also((attr(_TA, "gradient_checkpointing"), None)),
    ("hf", "DEFAULTS", "galore_rank"): instead(
        "optim_args is a free-form string: the rank GaLore takes when it names none is popped with a default",
        (Expr("transformers.trainer_optimizer", "_get_galore_optimizer",
              "int(ctx.optim_args.pop('rank', {value!r}))"), True)),
    ("hf", "DEFAULTS", "apollo_rank"): instead(
        "optim_args is a free-form string: the rank APOLLO takes when it names none is popped with a default",
        (Expr("transformers.trainer_optimizer", "_get_apollo_optimizer",
              "int(ctx.optim_args.pop('rank', {value!r}))"), True)),
    # TRL
    ("trl", "DEFAULTS", "precision"): also(
        (Expr(_TRL + "base_config", "_BaseConfig.__post_init__", "not self.fp16 if self.bf16 is None else self.bf16"),
         True)),
    ("trl", "DEFAULTS", "loss"): also(
        (Expr(_TRL + "sft_config", "SFTConfig.__post_init__", "'nll' if self.use_liger_kernel else 'chunked_nll'"),
         True)),
    ("trl", "DEFAULTS", "load_fp32"): also(
        (Get((_TRL + "utils",), "dtype", "create_model_from_path", "kwargs"), "float32")),
    # axolotl
    ("axolotl", "DEFAULTS", "quant"): instead(
        "the BitsAndBytesConfig axolotl builds for adapter: qlora (a dict in the loader, not a schema field)",
        (Entry("axolotl.loaders.model", "bnb_4bit_quant_type", "ModelLoader._set_quantization_config"), OWN)),
    ("axolotl", "DEFAULTS", "double_quant"): instead(
        "the BitsAndBytesConfig axolotl builds for adapter: qlora (a dict in the loader, not a schema field)",
        (Entry("axolotl.loaders.model", "bnb_4bit_use_double_quant", "ModelLoader._set_quantization_config"), OWN)),
    ("axolotl", "DEFAULTS", "fsdp_version"): also(
        (Any_(Assigned("axolotl.utils.schemas.validation", 'data["fsdp_version"]',
                       "check_fsdp_version_in_fsdp_config")), 1)),
    ("axolotl", "DEFAULTS", "reshard_after_forward"): instead(
        "a rule: fsdp_config.reshard_after_forward is unset (None) and accelerate's plugin default applies",
        (attr("axolotl.utils.schemas.fsdp.FSDPConfig", "reshard_after_forward"), OWN)),
    # ms-swift
    ("swift", "DEFAULTS", "stage"): instead(
        "`swift rlhf` only: a field of RLHFArguments", (attr("swift.arguments.rlhf_args.RLHFArguments", "rlhf_type"),
                                                        OWN)),
    ("swift", "DEFAULTS", "grad_accum"): also(
        (Expr("swift.trainers.arguments", "TrainArgumentsMixin.__post_init__",
              "max(1, math.ceil(16 / self.per_device_train_batch_size / world_size))"), True)),
    ("swift", "MEGATRON_DEFAULTS", "grad_ckpt"): also((attr(_MEG, "recompute_modules"), ["core_attn"])),
    # torchtune
    ("torchtune", "DEFAULTS", "precision"): instead(
        "the dtype key is read by training.get_dtype: None -> float32",
        (Param((("torchtune.training.precision", "get_dtype"),), "dtype"), OWN),
        (Expr("torchtune.training.precision", "get_dtype", "dtype is None"), True)),
    ("torchtune", "DEFAULTS", "packing"): instead(
        "a dataset builder's parameter", (Param((("torchtune.datasets._alpaca", "alpaca_dataset"),), "packed"), OWN)),
    ("torchtune", "DEFAULTS", "lora_rank"): instead(
        "a model builder's parameter", (Param(_TT_BUILDERS, "lora_rank"), OWN)),
    ("torchtune", "DEFAULTS", "lora_alpha"): instead(
        "a model builder's parameter", (Param(_TT_BUILDERS, "lora_alpha"), OWN)),
    ("torchtune", "DEFAULTS", "lora_dropout"): instead(
        "a model builder's parameter", (Param(_TT_BUILDERS, "lora_dropout"), OWN)),
    ("torchtune", "DEFAULTS", "fsdp_version"): instead(
        "no key: the distributed recipes shard with FSDP2's fully_shard",
        (Calls("torchtune.training._distributed", "shard_model", "{raw}"), True)),
    ("torchtune", "DEFAULTS", "cp"): Absent(
        "context_parallel_dim came after torchtune 0.6.1, the last PyPI release (bd2a0fc recipes/"
        "full_finetune_distributed.py: cfg.get('context_parallel_dim', 1))", Get(_RECIPES, "context_parallel_dim",
                                                                                  receiver="cfg")),
    # torchtitan
    ("torchtitan", "DEFAULTS", "precision"): also(
        (attr(_JOB, "training.dtype"), "float32"), (attr(_JOB, "training.mixed_precision_reduce"), "float32")),
    ("torchtitan", "DEFAULTS", "loss"): instead(
        "no key: the loss torchtitan builds, on fp32 logits",
        (Calls("torchtitan.components.loss", "{raw}", "float"), True)),
    ("torchtitan", "DEFAULTS", "optimizer"): also((attr(_JOB, "optimizer.implementation"), "fused")),
    ("torchtitan", "DEFAULTS", "fsdp_version"): instead(
        "no key: apply_fsdp shards with FSDP2's fully_shard",
        (Calls("torchtitan.models.llama3.infra.parallelize", "apply_fsdp", "{raw}"), True)),
    ("torchtitan", "DEFAULTS", "reshard_after_forward"): also(
        (Expr("torchtitan.models.llama3.infra.parallelize", "apply_fsdp", "not pp_enabled"), True)),
    # accelerate
    ("accelerate", "DEFAULTS", "fsdp_version"): also(
        (env(_PLUGINS, "FSDP_VERSION", "FullyShardedDataParallelPlugin.__post_init__"), "1")),
    ("accelerate", "DEFAULTS", "zero"): instead(
        "the YAML key becomes ACCELERATE_DEEPSPEED_ZERO_STAGE; DeepSpeedPlugin's default when it is unset",
        (env(_PLUGINS, "ACCELERATE_DEEPSPEED_ZERO_STAGE", "DeepSpeedPlugin.__post_init__"), OWN)),
    ("accelerate", "DEFAULTS", "grad_accum"): instead(
        "a rule: the launch option is None (documented as 1); DeepSpeedPlugin then takes 'auto', which the "
        "Accelerator/Trainer fill from their own gradient_accumulation_steps (1)",
        (Arg(_LAUNCH, "--gradient_accumulation_steps"), None),
        (HelpSays(_LAUNCH, "--gradient_accumulation_steps", "default to `{raw}`"), True),
        (env(_PLUGINS, "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "DeepSpeedPlugin.__post_init__"), "auto")),
}


# ---------------------------------------------------------------------------------------------
# the cases: every Default of every table of every defaults module

def _tables(mod) -> dict[str, tuple[Default, ...]]:
    return {name: value for name, value in vars(mod).items()
            if isinstance(value, tuple) and value and all(isinstance(d, Default) for d in value)}


def _explicit_raw(mod) -> dict[str, list[bool]]:
    """Per table, whether each Default(...) passes raw= (raw=None then says the framework's default is None)."""
    out = {}
    for node in ast.parse(inspect.getsource(mod)).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Tuple):
            out[target.id] = [any(k.arg == "raw" for k in call.keywords) for call in value.elts
                              if isinstance(call, ast.Call) and ast.unparse(call.func) == "Default"]
    return out


@dataclass(frozen=True)
class Case:
    framework: str
    table: str
    default: Default
    expected: Any

    @property
    def id(self) -> str:
        return f"{self.framework}-{self.table}-{self.default.field}"


def _cases() -> list[Case]:
    out = []
    for fw in FRAMEWORKS:
        mod = defaults_module(fw)
        raw_given = _explicit_raw(mod)
        for table, entries in _tables(mod).items():
            given = raw_given.get(table)
            assert given is not None and len(given) == len(entries), f"{fw}.{table}: not a literal tuple of Default(...)"
            for d, has_raw in zip(entries, given):
                out.append(Case(fw, table, d, d.raw if has_raw else d.value))
    return out


CASES = _cases()


def _check(tree, spec, expected, what: str) -> None:
    pick_any = isinstance(spec, Any_)
    try:
        found = spec.find(tree)
    except KeyError as exc:             # a module, class or function the spec names is not in the release
        pytest.fail(f"{what}: {spec}: {exc.args[0]}", pytrace=False)
    assert found, f"{what}: {spec} not found in {tree.label}"
    matches = [f for f in found if _same(f.value, expected)]
    ok = bool(matches) if pick_any else len(matches) == len(found)
    assert ok, (f"{what}: trainplan says {expected!r}, {tree.label} says "
                + "; ".join(f"{f.value!r} at {f.where}" for f in found if not _same(f.value, expected)))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_default_matches_the_framework_source(case: Case):
    tree = source(case.framework)
    d = case.default
    spec = _SPECS.get((case.framework, case.table, d.field))
    what = f"{case.framework}.{case.table} {d.field} (key {d.key!r}, {d.source})"
    if isinstance(spec, Absent):
        found = spec.spec.find(tree)
        assert not found, (f"{what}: marked as newer than {tree.label} ({spec.reason}), but the release has it: "
                           f"{found}; compare it and drop the mark")
        return
    if isinstance(spec, Instead):
        checks = spec.checks
    else:
        plain = _PLAIN.get((case.framework, case.table))
        assert plain is not None, f"{what}: no argument classes known for {case.framework}.{case.table}"
        checks = ((plain(d.key), case.expected),) + (spec.checks if isinstance(spec, Also) else ())
    for sub, expected in checks:
        _check(tree, _bind(sub, d), case.expected if expected is OWN else expected, what)


_PATH = re.compile(r"(?:(\w+) )?(?<![\w/.])((?:[\w.-]+/)+[\w.-]+\.(?:py|json|toml))")
_PACKAGE_TREES = {"transformers": "transformers", "accelerate": "accelerate", "trl": "trl", "deepspeed": "deepspeed"}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_sources_name_files_of_the_release(framework):
    """Every file a Default's `source` names is in the pinned release: `src/x/y.py` (repository path),
    `model_utils/misc.py` (relative to a file named before it), `accelerate utils/dataclasses.py`
    (a file of another pinned package)."""
    cases = [c for c in CASES if c.framework == framework]
    trees = [source(framework)] if cases else []
    missing = []
    for c in cases:
        dirs: list[str] = []
        for word, path in _PATH.findall(c.default.source):
            bare = path.removeprefix("src/")
            candidates = {path, bare} | {f"{d}/{path}" for d in dirs}
            looked_in = list(trees)
            if word in _PACKAGE_TREES:
                candidates.add(f"{word}/{path}")
                looked_in.append(FS.tree(_PACKAGE_TREES[word]) if word != _TREE[framework] else trees[0])
            if not any((base / cand).is_file() for t in looked_in for base in (t.archive, *t.roots)
                       for cand in candidates):
                missing.append(f"{c.id}: {path}")
            dirs.append(bare.rsplit("/", 1)[0])
    assert not missing, "files not in the release:\n" + "\n".join(missing)


def test_every_spec_names_a_default():
    """A spec left behind after its Default was renamed or removed would test nothing."""
    known = {(c.framework, c.table, c.default.field) for c in CASES}
    assert not set(_SPECS) - known


# ---------------------------------------------------------------------------------------------
# the presets trainplan copies (ms-swift swift/config/*.json, axolotl deepspeed_configs/*.json)

def _leaves(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict) and v:
            yield from _leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def _at(data: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            raise KeyError(path)
        data = data[part]
    return data


def _compare_preset(ours: dict, theirs: dict, label: str) -> list[str]:
    problems = []
    for path, value in _leaves(ours):
        try:
            other = _at(theirs, path)
        except KeyError:
            problems.append(f"{label}: {path} = {value!r} is not in the file")
            continue
        if not _same(other, value):
            problems.append(f"{label}: {path} = {value!r}, the file says {other!r}")
    return problems


def test_swift_presets_match_the_shipped_files():
    from trainplan.job.defaults import swift

    tree = source("swift")
    problems = []
    for name, ours in {**swift.DEEPSPEED_PRESETS, **swift.FSDP_PRESETS}.items():
        problems += _compare_preset(ours, tree.json(f"swift/config/{name}.json"), f"swift/config/{name}.json")
    assert not problems, "\n".join(problems)


def test_axolotl_deepspeed_configs_match_the_shipped_files():
    from trainplan.job.defaults import axolotl

    tree = source("axolotl")
    problems = []
    for name, ours in axolotl.DEEPSPEED_CONFIGS.items():
        problems += _compare_preset(ours, tree.json(f"deepspeed_configs/{name}"), f"deepspeed_configs/{name}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# DeepSpeed's zero_optimization defaults that trainplan's memory model assumes (memory/sharding.py)

_ZERO = "deepspeed.runtime.zero.config.DeepSpeedZeroConfig"
_OFF = "deepspeed.runtime.zero.offload_config."
_ZERO_FIELDS = {   # ZeroConfig field -> (DeepSpeed class, key)
    "reduce_bucket_size": (_ZERO, "reduce_bucket_size"),
    "allgather_bucket_size": (_ZERO, "allgather_bucket_size"),
    "prefetch_bucket_size": (_ZERO, "stage3_prefetch_bucket_size"),
    "max_live_parameters": (_ZERO, "stage3_max_live_parameters"),
    "max_reuse_distance": (_ZERO, "stage3_max_reuse_distance"),
    "param_persistence_threshold": (_ZERO, "stage3_param_persistence_threshold"),
    "sub_group_size": (_ZERO, "sub_group_size"),
    "overlap_comm": (_ZERO, "overlap_comm"),
    "contiguous_gradients": (_ZERO, "contiguous_gradients"),
    "nvme_param_buffers": (_OFF + "DeepSpeedZeroOffloadParamConfig", "buffer_count"),
    "nvme_param_buffer_size": (_OFF + "DeepSpeedZeroOffloadParamConfig", "buffer_size"),
    "nvme_optimizer_buffers": (_OFF + "DeepSpeedZeroOffloadOptimizerConfig", "buffer_count"),
}
_ZERO_NOT_DEFAULTS = {"offload_device": "where trainplan offloads when offloading is asked for; DeepSpeed's "
                                        "own default is 'none' (no offload)"}


def test_zero_config_defaults_match_deepspeed():
    from trainplan.memory.sharding import ZeroConfig

    tree = source("deepspeed")
    names = {f.name: f.default for f in record_fields(ZeroConfig)}
    assert set(names) == set(_ZERO_FIELDS) | set(_ZERO_NOT_DEFAULTS), "a ZeroConfig field with no DeepSpeed key here"
    problems = []
    for name, (cls, key) in _ZERO_FIELDS.items():
        info = FS.field_of(tree.cls(cls), key)
        if info is None:
            problems.append(f"ZeroConfig.{name}: {key} not in {cls} ({tree.label})")
        elif not _same(info.value, names[name]):
            problems.append(f"ZeroConfig.{name} = {names[name]!r}, {tree.label} {key} = {info.value!r} at {info.where}")
    assert not problems, "\n".join(problems)
    # the rule behind overlap_comm None: True for stage 3 only
    assert Expr("deepspeed.runtime.zero.config", "DeepSpeedZeroConfig.overlap_comm_valid",
                "self.stage == ZeroStageEnum.weights").find(tree)


# What trainplan's DeepSpeed reader (importers/deepspeed.py) assumes for a key a ds_config leaves out,
# as its docstring and its `.get(key, default)` calls state them; deepspeed.py's DEFAULTS (none yet)
# are looked up the same way (DsKey).
_DS_READER = {
    "zero_optimization.stage": 0,
    "zero_optimization.reduce_bucket_size": 5e8,
    "zero_optimization.stage3_prefetch_bucket_size": 5e7,
    "zero_optimization.stage3_max_live_parameters": 1e9,
    "zero_optimization.stage3_param_persistence_threshold": 1e5,
    "zero_optimization.overlap_comm": None,
    "zero_optimization.mics_shard_size": -1,
    "zero_optimization.offload_optimizer.device": "none",
    "zero_optimization.offload_param.device": "none",
    "zero_optimization.offload_optimizer.ratio": 1.0,
    "bf16.enabled": False,
    "fp16.enabled": False,
    "gradient_accumulation_steps": None,
    "train_micro_batch_size_per_gpu": None,
}


@pytest.mark.parametrize("key", list(_DS_READER))
def test_deepspeed_reader_assumes_deepspeed_defaults(key):
    tree = source("deepspeed")
    _check(tree, DsKey(key), _DS_READER[key], f"importers/deepspeed.py {key}")


def test_deepspeed_tensor_parallel_default():
    tree = source("deepspeed")
    _check(tree, attr("deepspeed.runtime.tensor_parallel.config.TPTrainingConfig", "autotp_size"), 0,
           "importers/deepspeed.py tensor_parallel.autotp_size")
