"""What the ms-swift, axolotl, torchtune, torchtitan and Megatron exporters share: the one-line
refusal, the model's name, HF optimizer names, the DeepSpeed JSON an HF-Trainer config names,
YAML/TOML text and the torchrun rendezvous words. Parsers (yaml) load inside the functions: this
module is imported only by the export command."""

from __future__ import annotations

from typing import Any

from trainplan.enums import Attention, ExpertsImpl, Method, Optimizer
from trainplan.errors import TrainplanError
from trainplan.export.base import ExportContext

# trainplan optimizer -> transformers OptimizerNames (training_args.py, v5.24), the reverse of
# importers/axolotl.py HF_OPTIMIZERS (ms-swift `optim` and axolotl `optimizer` take these names)
HF_OPTIM: dict[Optimizer, str] = {
    Optimizer.ADAMW: "adamw_torch", Optimizer.ADAMW_FUSED: "adamw_torch_fused",
    Optimizer.ADAMW_8BIT: "adamw_bnb_8bit", Optimizer.PAGED_ADAMW_8BIT: "paged_adamw_8bit",
    Optimizer.ADAFACTOR: "adafactor", Optimizer.SGD: "sgd", Optimizer.LION: "lion_32bit",
}


def refuse(fmt: str, why: str) -> TrainplanError:
    """The one-line error for a job `fmt`'s framework cannot run (raise it)."""
    return TrainplanError(f"--format {fmt}: {why}")


def model_name(job, ctx: ExportContext) -> str:
    """What a config names as the model: the context's path, else the Hugging Face id, else the catalog name."""
    spec = job.setup.model
    return ctx.model_path or spec.hf_id or spec.name


def galore_base_optim(optimizer: Optimizer) -> str:
    """The HF `optim` that LLaMA-Factory's _create_galore_optimizer and ms-swift's galore get_optimizer turn into
    GaLoreAdamW8bit (a bitsandbytes 8-bit name) or GaLoreAdamW (adamw_torch) beside use_galore."""
    return "adamw_bnb_8bit" if optimizer is Optimizer.GALORE_ADAMW_8BIT else "adamw_torch"


def hf_optim(fmt: str, optimizer: Optimizer) -> str:
    name = HF_OPTIM.get(optimizer)
    if name is None:
        raise refuse(fmt, f"--optimizer {optimizer} has no plain transformers `optim` name here (BAdam and GaLore "
                          "run in LLaMA-Factory: use --format llamafactory; GaLore also --format hf; Muon also "
                          "--format swift or axolotl; Adam-mini only there)")
    return name


def no_freeze(fmt: str, job) -> None:
    if job.setup.method is Method.FREEZE:
        raise refuse(fmt, "freeze tuning (the last N layers trained) is LLaMA-Factory's: use --format llamafactory "
                          "or --method lora")


def framework_note(job, fmt: str, frameworks: tuple) -> list[str]:
    """A note when the job was planned under another framework's profile than the format's: the files
    read back (--from) under the format's framework, whose defaults (precision regime, kernels) differ."""
    framework = job.setup.framework
    if framework in frameworks:
        return []
    return [(f"the job was planned with --framework {framework}; these {fmt} files read back as --framework "
            f"{frameworks[0]}, whose profile may change the estimate: plan with --framework {frameworks[0]} to "
            "export exactly what was estimated")]


def stage(job) -> str:
    """The training stage the user gave (sft when none)."""
    options = job.options
    return str(getattr(options, "stage", None) or "sft").strip().lower()


def ds_config_text(job) -> str:
    """The DeepSpeed JSON an HF-Trainer config (ms-swift, axolotl) names: "auto" where transformers'
    integration copies the trainer's values (export/deepspeed.py, auto=True). Without DeepSpeed's own
    `sequence_parallel_size`: ms-swift (sequence_parallel_size) and axolotl (context_parallel_size) split
    the sequence themselves and build their own data-parallel groups."""
    from trainplan.export import deepspeed

    body = deepspeed.config(job, auto=True)
    body.pop("sequence_parallel_size", None)
    return deepspeed.dumps(body)


DS_FILE = "ds_config.json"


def yaml_text(data: dict[str, Any], header: str = "") -> str:
    """A YAML document in the key order given (block style), after `header` comment lines."""
    import yaml

    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120)
    lines = [f"# {line}" if line else "#" for line in header.splitlines()] if header else []
    return "\n".join(lines) + ("\n" if lines else "") + body


def _toml_value(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)          # a TOML basic string is a JSON string for the text we write
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def toml_text(sections: dict[str, dict[str, Any]], header: str = "") -> str:
    """A TOML document of [section] tables ("a.b" names a nested table) of scalars and lists."""
    out = [f"# {line}" if line else "#" for line in header.splitlines()] if header else []
    for name, table in sections.items():
        if not table:
            continue
        out += ["", f"[{name}]"] if out else [f"[{name}]"]
        out += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    return "\n".join(out) + "\n"


def torchrun_words(layout, ctx: ExportContext) -> list[str]:
    """torchrun's rendezvous options (torch/distributed/run.py): --nproc_per_node, and for several
    nodes --nnodes, --node_rank and the static master address and port."""
    words = ["--nproc_per_node", str(layout.gpus_per_node)]
    if layout.nodes > 1:
        words += ["--nnodes", str(layout.nodes), "--node_rank", ctx.node_rank, "--master_addr", ctx.master_addr,
                  "--master_port", str(ctx.master_port)]
    return words


def torchrun_env(layout, ctx: ExportContext) -> list[str]:
    """The environment ms-swift (and llamafactory-cli) turn into torchrun's options
    (swift/cli/main.py get_torchrun_args): NPROC_PER_NODE, NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT."""
    if layout.num_gpus == 1:
        return []
    env = [f"NPROC_PER_NODE={layout.gpus_per_node}"]
    if layout.nodes > 1:
        env += [f"NNODES={layout.nodes}", f"NODE_RANK={ctx.node_rank}", f"MASTER_ADDR={ctx.master_addr}",
                f"MASTER_PORT={ctx.master_port}"]
    return env


def lines(words: list[str]) -> str:
    """A command as one line (the words have no spaces or quotes that need escaping here)."""
    return " ".join(words)


# trainplan attention -> transformers attn_implementation (modeling_utils.py); ms-swift's attn_impl and axolotl's
# attn_implementation take the same names
ATTN = {Attention.FLASH: "flash_attention_2", Attention.SDPA: "sdpa", Attention.EAGER: "eager"}


def attn_implementation(setup) -> str:
    """transformers' attn_implementation of the setup: flash_attention_<FlashAttention version> under flash."""
    if setup.attention is Attention.FLASH:
        return f"flash_attention_{setup.impl.flash_version}"
    return ATTN[setup.attention]


# TrainingArguments' length-grouped sampler by its transformers 5 name (trainer.py _get_train_sampler)
GROUP_BY_LENGTH_NOTE = ("train_sampling_strategy: group_by_length is transformers 5's name; under transformers 4 "
                        "write group_by_length: true instead")


def expert_loop(setup) -> bool:
    """An MoE model whose experts the job runs as transformers' per-expert loop (--experts-implementation eager),
    which a config must then say (transformers 5 defaults to grouped_mm)."""
    return setup.model.moe is not None and setup.impl.experts_impl is ExpertsImpl.LOOP
