"""`--from FILE`: the user's own training config read into trainplan's options.

Formats (one module each): LLaMA-Factory YAML/JSON (llamafactory), HF TrainingArguments and TRL
configs, JSON or YAML (hf), DeepSpeed JSON (deepspeed), axolotl YAML (axolotl), ms-swift YAML/JSON
and `swift sft ...` (swift), torchtune YAML (torchtune), torchtitan TOML (torchtitan), accelerate
config YAML (accelerate), and launch lines (launch: torchrun, deepspeed, accelerate launch,
llamafactory-cli, swift, tune run), given as a file or as the command itself.

`importers.read.read_config(source)` parses and detects the format; `importers.merge` lays configs
under the flags. This package's __init__ imports nothing, so that a plain estimate (which records
its flags' provenance through importers.merge) pays for no parser.
"""


def read_config(source: str):
    """See importers.read.read_config (imported on first use)."""
    from trainplan.importers.read import read_config as read

    return read(source)


def __getattr__(name: str):
    """The rest of importers.read (parse, detect, command_words, READERS, ...), loaded on first use."""
    import importlib

    read = importlib.import_module("trainplan.importers.read")
    try:
        return getattr(read, name)
    except AttributeError:
        raise AttributeError(f"module 'trainplan.importers' has no attribute {name!r}") from None
