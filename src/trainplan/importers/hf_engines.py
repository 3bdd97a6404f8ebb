"""The precision and the engine of an HF TrainingArguments / TRL file (importers/hf.py): the dtype the model
loads in, bf16/fp16 autocast over it, and the DeepSpeed or FSDP engine the Trainer hands the model to.
`_EngineMixin` is mixed into hf._Reader, whose state (c, rest, path, ctx, kind, hf, trl) and helpers (pop, b,
n, default) it uses.

Sources: transformers v5.24.0 and v4.57.1 src/transformers/training_args.py (`_process_fsdp_args`,
`_apply_legacy_fsdp_to_config`), trainer_utils.py (FSDPOption), integrations/deepspeed.py (deepspeed_init,
fill_match); huggingface/trl f2cd577 trl/trainer/utils.py, {sft,dpo,grpo}_trainer.py; accelerate 1.15.0
utils/fsdp_utils.py; peft 0.21.2 mapping_func.py.

Precision: the dtype the model is loaded in decides; TrainingArguments `bf16` adds autocast.
- TRL loads the model in `dtype` (ModelConfig "float32", trl/trainer/utils.py create_model_from_path): fp32
  weights, gradients and AdamW states under bf16 autocast ("bf16"), a LoRA base in fp32 (load_fp32). With
  `dtype: bfloat16` a full fine-tune keeps bf16 weights, gradients and AdamW states ("bf16-pure"); LoRA
  adapters are upcast to fp32 (peft get_peft_model autocast_adapter_dtype=True) over a bf16 base ("bf16");
  QLoRA adapters are cast to bf16 by the trainers ({sft,dpo,grpo}_trainer.py), so "bf16-pure".
- A plain TrainingArguments file does not load the model: fp32 weights are assumed (v4.57 from_pretrained;
  v5 loads the checkpoint's dtype, in which case --precision bf16-pure is the run).
- DeepSpeed casts the module to 16 bits with fp32 master weights in its optimizer; FSDP under accelerate
  upcasts trainable parameters to fp32 when mixed precision is on (fsdp_utils.py fsdp2_prepare_model).
"""

from __future__ import annotations

from typing import Any

from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.importers.base import ReadContext
from trainplan.job.defaults import hf as hf_defaults
from trainplan.job.defaults import trl as trl_defaults

_DTYPES = {"float32": "fp32", "fp32": "fp32", "float": "fp32", "bfloat16": "bf16", "bf16": "bf16",
           "float16": "fp16", "fp16": "fp16", "half": "fp16", "auto": "auto"}
# FSDPOption (trainer_utils.py) -> (trainplan fsdp, reshard_after_forward)
_FSDP = {"full_shard": ("full", True), "shard_grad_op": ("full", False), "hybrid_shard": ("hybrid", True),
         "hybrid_shard_zero2": ("hybrid", False), "no_shard": ("none", False)}


class _EngineMixin:
    """hf._Reader's precision, DeepSpeed and FSDP sections."""

    def _fsdp_items(self) -> list[str] | None:
        """The legacy fsdp options, [] for v5 `fsdp: true`, None when FSDP is off."""
        value = self.rest.get("fsdp")
        if value in (None, False, "", []):
            return None
        if isinstance(value, bool) or isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return [] if self.b(value, "fsdp") else None
        items = value.split() if isinstance(value, str) else value if isinstance(value, list) else None
        if items is None or not all(isinstance(i, str) for i in items):
            raise TrainplanError(f"{self.path}: fsdp must be true/false or options like \"full_shard auto_wrap\", "
                                 f"got {value!r}")
        for item in items:   # training_args.py _apply_legacy_fsdp_to_config: "Unknown `fsdp` option"
            if item not in _FSDP and item not in ("offload", "auto_wrap"):
                raise TrainplanError(f"{self.path}: fsdp option {item!r} is not one of "
                                     f"{', '.join([*_FSDP, 'offload', 'auto_wrap'])}")
        return items

    def _dtype(self) -> tuple[str | None, str, Any]:
        """(fp32|bf16|fp16|auto or None, the key, its raw value) of the dtype the model loads in."""
        mik = self.rest.get("model_init_kwargs") or {}
        for key, prefix in (("dtype", ""), ("torch_dtype", ""), ("dtype", "model_init_kwargs."),
                            ("torch_dtype", "model_init_kwargs.")):
            raw = mik.get(key) if prefix else self.pop(key)
            if raw is None or str(raw).lower() in ("none", "null"):
                continue
            name = str(raw).lower().removeprefix("torch.")
            if name not in _DTYPES:
                raise TrainplanError(f"{self.path}: {prefix}{key} must be auto, bfloat16, float16 or float32, "
                                     f"got {raw!r}")
            return _DTYPES[name], prefix + key, raw
        return None, "dtype", None

    def _precision(self, method: str, engine: str | None) -> None:
        c = self.c
        fp16, bf16 = self.pop("fp16"), self.pop("bf16")
        keys = [k for k, v in (("fp16", fp16), ("bf16", bf16)) if v is not None]
        fp16_on = fp16 is not None and self.b(fp16, "fp16")
        # TRL base_config.py __post_init__: bf16 None -> not fp16; TrainingArguments: False
        bf16_on = self.b(bf16, "bf16") if bf16 is not None else bool(self.kind) and not fp16_on
        if bf16_on and fp16_on:
            raise TrainplanError(f"{self.path}: bf16 and fp16 cannot both be true")
        amp = "bf16" if bf16_on else "fp16" if fp16_on else None
        wd, dkey, draw = self._dtype()
        notes = []
        if wd is None:
            wd = "fp32"
            if not self.kind:
                notes.append("the script loads the model: fp32 weights assumed (transformers v5 from_pretrained "
                             "loads the checkpoint's dtype, bf16 for most: then --precision bf16-pure)")
        elif engine != "deepspeed":
            keys.append(dkey)
            if wd == "auto":
                wd = "bf16"
                notes.append(f"{dkey} auto loads the checkpoint's dtype, assumed bf16")
        if engine == "deepspeed":
            value = amp or "fp32"
            notes.append("the DeepSpeed engine casts the model to 16 bits, fp32 master weights in its optimizer")
        elif amp and (engine == "fsdp" or wd == "fp32"):
            value = amp
            notes.append(f"{amp} autocast over fp32 trainable weights"
                         + (" (accelerate fsdp2_prepare_model upcasts them)" if wd != "fp32" else ""))
        elif method == "lora" and wd in ("bf16", "fp16"):
            value = amp or wd
            notes.append(f"{wd} base weights, LoRA adapters upcast to fp32 (peft autocast_adapter_dtype=True)")
        elif wd in ("bf16", "fp16"):
            value = f"{wd}-pure"
            notes.append(f"{wd} weights, gradients and AdamW states: no fp32 copy"
                         + ("; TRL casts the QLoRA adapters to bf16" if method == "qlora" else ""))
        elif method == "qlora":
            c.skip("bf16", bf16, "QLoRA computing in fp32 (bf16 and fp16 off, dtype float32) is not modelled")
            return
        else:
            value = "fp32"
        if method == "qlora" and wd == "fp32" and engine != "deepspeed":
            notes.append("TRL casts the QLoRA adapters to bf16: counted as fp32 here")
        note = "; ".join(notes)
        if not keys:
            d = self.trl.get("precision") or self.hf["precision"]
            version = trl_defaults.VERSION if self.kind else hf_defaults.VERSION
            c.default("precision", value, key=d.key, note=f"{d.key} not set: {d.source} ({version})"
                      + (f"; {note}" if note else ""), version=version)
        elif len(keys) == 1:
            c.set("precision", value, key=keys[0], raw={"fp16": fp16, "bf16": bf16}.get(keys[0], draw), note=note)
        else:
            c.derived("precision", value, key="+".join(keys), note=note)
        if method in ("lora", "qlora") and engine != "deepspeed":
            if draw is None and self.kind:
                self.default("load_fp32")
            else:
                c.set("load_fp32", wd == "fp32", key=dkey, raw=draw, note="the frozen base keeps its load dtype")

    def _distributed(self, engine: str | None) -> None:
        ds, config, items = self.pop("deepspeed"), self.pop("fsdp_config"), self._fsdp_items()
        self.pop("fsdp")
        if engine == "deepspeed":
            self._deepspeed(ds)
            if items is not None:
                self.c.skip("fsdp", True, "FSDP together with DeepSpeed: the DeepSpeed config is used")
        elif items is not None:
            self._fsdp(items, config or {})
        self.c.ignore((engine != "fsdp" and config is not None)
                      + sum(self.pop(k) is not None
                            for k in ("fsdp_min_num_params", "fsdp_transformer_layer_cls_to_wrap")))

    def _deepspeed(self, ds: Any) -> None:
        from trainplan.importers import deepspeed

        c = self.c
        if isinstance(ds, dict):
            sub = ReadContext(base_dir=self.ctx.base_dir, load=self.ctx.load, included=True) if self.ctx else \
                ReadContext(included=True)
            got = deepspeed.read(ds, self.path, sub)
            got = replace(got, settings=tuple(replace(s, key=f"deepspeed.{s.key}") for s in got.settings),
                          unread=tuple(replace(u, key=f"deepspeed.{u.key}") for u in got.unread))
        elif isinstance(ds, str):
            got = self.ctx.include(ds) if self.ctx is not None else None
            if got is None:
                c.skip("deepspeed", ds,
                       "the DeepSpeed config file was not found: its ZeRO stage and offload are unknown")
                return
            c.includes.extend((got.file, *got.includes))
        else:
            raise TrainplanError(f"{self.path}: deepspeed must be a path or a mapping, got {ds!r}")
        mine = {s.field: s for s in c.settings}
        c.settings.extend(got.settings)    # after this file's: the DeepSpeed values are the engine's
        c.unread.extend(got.unread)
        c.ignored += got.ignored
        half = {"bf16": "bf16", "bf16-pure": "bf16", "fp16": "fp16", "fp16-pure": "fp16"}
        for s in got.settings:   # integrations/deepspeed.py fill_match: a mismatch stops the Trainer at start-up
            ours = mine.get(s.field) if s.field in ("batch_size", "grad_accum", "precision") else None
            if ours is None:
                continue
            a, b = (half.get(ours.value), half.get(s.value)) if s.field == "precision" else (ours.value, s.value)
            if a != b:
                c.skip(s.key, s.raw if s.raw is not None else s.value, f"differs from TrainingArguments {ours.key}="
                       f"{ours.value!r}: transformers stops with a DeepSpeed config mismatch (integrations/"
                       "deepspeed.py fill_match); the DeepSpeed value is used")

    def _fsdp(self, items: list[str], config: Any) -> None:
        c = self.c
        if isinstance(config, str):
            config = self._json_file(config, "fsdp_config")
        config = {k.removeprefix("fsdp_"): v for k, v in config.items()}   # training_args.py _process_fsdp_args
        strategies = [i for i in items if i in _FSDP]
        if "version" in config:
            if config["version"] not in (1, 2, "1", "2"):
                raise TrainplanError(f"{self.path}: fsdp_config.version must be 1 or 2, got {config['version']!r}")
            c.set("fsdp_version", int(config["version"]), key="fsdp_config.version", raw=config["version"])
        elif any(s not in ("full_shard", "shard_grad_op") for s in strategies):
            c.derived("fsdp_version", 1, key="fsdp", note=f"{strategies[0]} exists only in FSDP1 (v5 refuses it "
                      "with version 2; v4.57 always ran FSDP1)")
        else:
            self.default("fsdp_version")
            if items:
                c.settings[-1] = replace(c.settings[-1], note=c.settings[-1].note + "; v5 translates the legacy "
                                         "fsdp string for FSDP2 (v4.57 ran it as FSDP1)")
        mode, reshard = _FSDP[strategies[0]] if strategies else ("full", True)
        if "reshard_after_forward" in config:
            raw = config["reshard_after_forward"]
            if isinstance(raw, str) and raw.lower() in _FSDP:     # FSDP1: a sharding strategy name
                mode, reshard = _FSDP[raw.lower()]
            else:
                reshard = self.b(raw, "fsdp_config.reshard_after_forward")
            c.set("reshard_after_forward", reshard, key="fsdp_config.reshard_after_forward", raw=raw)
        elif strategies:
            c.set("reshard_after_forward", reshard, key="fsdp", raw=" ".join(items),
                  note=f"{strategies[0]} -> reshard_after_forward={reshard} (_apply_legacy_fsdp_to_config)")
        else:
            self.default("reshard_after_forward")
        c.set("fsdp", mode, key="fsdp", raw=" ".join(items) if items else True,
              note={"none": "FSDP NO_SHARD is plain data parallelism",
                    "hybrid": "shard inside a node, replicate across nodes"}.get(mode, ""))
        if "offload" in items or self.b(config.get("cpu_offload", False), "fsdp_config.cpu_offload"):
            c.set("offload", "all", key="fsdp" if "offload" in items else "fsdp_config.cpu_offload", raw=True,
                  note="FSDP CPU offload moves parameters, gradients and the optimizer step together")
        if config.get("offload_params"):
            c.skip("fsdp_config.offload_params", config["offload_params"], "accelerate's spelling: transformers "
                   "reads fsdp_config.cpu_offload (training_args.py _process_fsdp_args), so nothing is offloaded")
        if self.b(config.get("activation_checkpointing", False), "fsdp_config.activation_checkpointing"):
            c.set("grad_ckpt", "full", key="fsdp_config.activation_checkpointing", raw=True,
                  note="FSDP's checkpoint wrapper around every decoder layer")
        if str(config.get("auto_wrap_policy", "TRANSFORMER_BASED_WRAP")).upper() != "TRANSFORMER_BASED_WRAP":
            c.skip("fsdp_config.auto_wrap_policy", config["auto_wrap_policy"],
                   "trainplan models one FSDP unit per decoder layer (TRANSFORMER_BASED_WRAP)")
        used = {"version", "reshard_after_forward", "cpu_offload", "offload_params", "activation_checkpointing",
                "auto_wrap_policy"}
        c.ignore(sum(k not in used for k in config))

    def _json_file(self, name: str, key: str) -> dict:
        path = self.ctx.resolve_path(name) if self.ctx is not None else None
        if path is None:
            raise TrainplanError(f"{self.path}: {key} file {name!r} not found")
        from trainplan.safeio import CONFIG_LIMIT_BYTES, parse_json, read_user_text

        data = parse_json(read_user_text(path, what=key, limit_bytes=CONFIG_LIMIT_BYTES), what=key, path=path)
        if not isinstance(data, dict):
            raise TrainplanError(f"{path}: {key} must be a JSON mapping")
        self.c.includes.append(path)
        return data
