"""What the JSON API takes: the setup flags as typed, frozen request records (query parameters for
GET, a JSON body for POST), turned into the keywords of trainplan.api. Nothing is computed here.

Every field is optional and None means "not given": only the fields a request names reach the
library, so its defaults and its record of where each value came from (`setup.sources`) are the
CLI's. Values are checked by the library (job/validate.py): a bad one is its one-line
TrainplanError, answered 400. The records only bound what a web request may ask the server to do
(a plan over at most MAX_GPUS GPUs, at most MAX_NAMES models in a table) and keep out what a web
client must never name: files on the server (`--prices`, `--lengths-file`, `--from` and a model
given as a path are refused; configs and config.json come as uploads instead).
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from trainplan.errors import TrainplanError

MAX_GPUS = 4096            # planner and table searches per request
MAX_NAMES = 24             # models, sizes, methods, precisions or GPU types in one list
MAX_TEXT = 200             # one name or choice
MAX_GLOBAL_BATCH = 1 << 16
MAX_TOP = 200

_MODEL_NAME = re.compile(r"[A-Za-z0-9][\w.+-]*(/[\w.+-]+)?")


def _text():
    return Field(default=None, max_length=MAX_TEXT)


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Setup(_Record):
    """The setup flags (PRODUCT.md): what to train, where it runs, data, time and money."""

    model: str | None = Field(default=None, max_length=MAX_TEXT, examples=["llama-2-7b"],
                              description="catalog name or Hugging Face id (a config.json: POST model_config)")
    method: str | None = Field(default=None, max_length=MAX_TEXT, examples=["full", "lora", "qlora", "freeze"])
    precision: str | None = Field(default=None, max_length=MAX_TEXT, examples=["bf16", "fp16-pure"])
    optimizer: str | None = Field(default=None, max_length=MAX_TEXT, examples=["adamw", "adamw-8bit"])
    galore_rank: int | None = Field(default=None, description="GaLore's projection rank (optimizer galore-*)")
    apollo_rank: int | None = Field(default=None, description="APOLLO's projection rank (optimizer apollo-adamw)")
    lora_rank: int | None = None
    lora_alpha: float | None = None
    lora_dropout: float | None = None
    lora_targets: str | None = Field(default=None, max_length=MAX_TEXT * 4, description="comma list or all-linear")
    dora: bool | None = None
    modules_to_save: str | None = Field(default=None, max_length=MAX_TEXT, description="embed_tokens,lm_head")
    quant: str | None = _text()
    double_quant: bool | None = None
    freeze_layers: int | None = None
    batch_size: int | None = Field(default=None, description="micro-batch per GPU")
    grad_accum: int | None = None
    seq_len: int | None = None
    grad_ckpt: str | None = _text()
    attention: str | None = _text()
    framework: str | None = _text()
    stage: str | None = _text()
    loss: str | None = _text()
    liger: bool | None = None
    experts_implementation: str | None = Field(default=None, description="grouped_mm (transformers 5) or eager "
                                                "(the per-expert loop of transformers 4.x)")
    flash_version: int | None = Field(default=None, ge=2, le=4,
                                      description="FlashAttention 2, 3 (Hopper) or 4 (Blackwell) under attention flash")
    compile: bool | None = None
    gpu: str | None = Field(default=None, max_length=MAX_TEXT, examples=["a100-80gb", "h100"])
    num_gpus: int | None = None
    nodes: int | None = None
    zero: int | None = Field(default=None, description="DeepSpeed ZeRO stage 0-3")
    fsdp: str | None = _text()
    offload: str | None = _text()
    tp: int | None = None
    pp: int | None = None
    cp: int | None = None
    ep: int | None = None
    vpp: int | None = None
    pp_schedule: str | None = _text()
    fp8_recipe: str | None = _text()
    host_cpus: int | None = None
    tokens: float | None = None
    host_mem_gb_per_s: float | None = None
    sequence_parallel: bool | None = None
    headroom: float | None = None
    samples: int | None = None
    max_steps: int | None = None
    tokens_per_sample: int | None = None
    dataset: str | None = _text()
    group_by_length: bool | None = Field(default=None, description="HF length-grouped sampler (unpacked samples)")
    epochs: float | None = None
    packing: bool | None = None
    retry_factor: float | None = None
    provider: str | None = _text()
    price_per_gpu_hour: float | None = None
    price: list[str] | None = Field(default=None, max_length=MAX_NAMES, description="GPU=AMOUNT, repeatable")
    currency: str | None = _text()
    price_kind: str | None = _text()
    spot: bool | None = None
    interconnect: str | None = _text()
    efficiency: float | None = None
    calibration: bool | None = None


class PlanSetup(Setup):
    methods: str | None = Field(default=None, max_length=MAX_TEXT * 2, description="comma list (default: method)")
    gpus: str | None = Field(default=None, max_length=MAX_TEXT * 4, description="comma list of GPU types (default all)")
    max_gpus: int = Field(default=64, ge=1, le=MAX_GPUS)
    gpus_per_node: int = Field(default=8, ge=1, le=64)
    global_batch: int = Field(default=32, ge=1, le=MAX_GLOBAL_BATCH)
    budget: float | None = Field(default=None, gt=0)
    deadline_hours: float | None = Field(default=None, gt=0)
    sort: Literal["cost", "time"] = "cost"
    top: int = Field(default=10, ge=1, le=MAX_TOP)


class TableSetup(Setup):
    models: str | None = Field(default=None, max_length=MAX_TEXT * 4, description="comma list (rows)")
    sizes: str | None = Field(default=None, max_length=MAX_TEXT, description="comma list, e.g. 7b,13b")
    methods: str | None = Field(default=None, max_length=MAX_TEXT * 2, description="comma list (default full,lora,qlora)")
    precisions: str | None = Field(default=None, max_length=MAX_TEXT * 2)
    gpus: str | None = Field(default=None, max_length=MAX_TEXT * 4, description="comma list, or all")
    max_gpus: int = Field(default=64, ge=1, le=MAX_GPUS)
    gpus_per_node: int = Field(default=8, ge=1, le=64)
    quants: str | None = Field(default=None, max_length=MAX_TEXT,
                               description="comma list of QLoRA's quantized bases as columns, e.g. nf4,int8 "
                                           "(default: quant, else nf4)")
    global_batch: int = Field(default=32, ge=1, le=MAX_GLOBAL_BATCH,
                              description="sequences per optimizer step in every cell (micro-batch x accumulation "
                                          "x data parallel)")
    tiers: bool = Field(default=False, description="one job (the first cell) on each GPU type")
    format: Literal["json", "csv", "xlsx", "html", "markdown"] = "json"
    paper: Literal["a4", "letter"] = Field(default="a4", description="printed page of html and xlsx (landscape)")
    lang: str | None = Field(default=None, max_length=16, examples=["en", "zh"],
                             description="language of the downloads and of the JSON's display text (default en); "
                                         "the JSON's cells stay in English, as `trainplan table --json`")


class Upload(_Record):
    """A file sent inline in a JSON body: its name (the basename is kept) and its text."""

    name: str = Field(min_length=1, max_length=MAX_TEXT)
    text: str = Field(max_length=4 * 1024 * 1024)


class Uploads(_Record):
    """What a POST body adds to the query fields: a model's config.json and training configs."""

    config_json: dict[str, Any] | None = Field(default=None, description="the model's config.json, as JSON "
                                               "(instead of model)")
    configs: list[Upload] = Field(default=[], max_length=8,
                                  description="training configs read like --from (LLaMA-Factory, DeepSpeed, ...)")


class SetupBody(Setup, Uploads):
    pass


class PlanBody(PlanSetup, Uploads):
    pass


class FitBody(SetupBody):
    pass


class Measured(_Record):
    peak_allocated_gib: float | None = None
    peak_reserved_gib: float | None = None
    device_gib: float | None = None
    step_s: float | None = None
    tokens_per_s: float | None = None


class RunBody(_Record):
    """One measured run to record (POST /api/runs, only with a ledger configured)."""

    setup: Setup
    measured: Measured
    source: str = Field(default="web", max_length=MAX_TEXT)
    notes: str = Field(default="", max_length=4000)


class ExportQuery(Setup):
    formats: str | None = Field(default=None, max_length=MAX_TEXT,
                                description="comma list of export formats (default: the framework's own)")


class ExportBody(ExportQuery, Uploads):
    """The same with uploads: the job of the uploaded configs (as --from), the fields given over them."""


PLANNER_FIELDS = frozenset(PlanSetup.model_fields) - frozenset(Setup.model_fields)
TABLE_FIELDS = frozenset(TableSetup.model_fields) - frozenset(Setup.model_fields)


def check_model_name(model: str | None) -> None:
    """A catalog name or an HF id, never a path on the server (uploads carry config.json)."""
    if model is None:
        return
    if not _MODEL_NAME.fullmatch(model) or os.path.lexists(os.path.expanduser(model)):
        raise TrainplanError(f"model {model!r}: give a catalog name or a Hugging Face id (ORG/NAME); "
                             "a config.json is uploaded, not named by its path on the server")


def setup_keywords(record: BaseModel, *, leave: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The given setup fields as trainplan.api keywords (model apart, None left out)."""
    values = {k: v for k, v in record.model_dump(exclude_none=True).items()
              if k in Setup.model_fields and k not in leave and k != "model"}
    if "price" in values:
        values["price"] = tuple(values["price"])
    return values


def names(text: str | None) -> tuple[str, ...]:
    """'a, b,,c' -> ('a', 'b', 'c'), at most MAX_NAMES."""
    out = tuple(v.strip() for v in (text or "").split(",") if v.strip())
    if len(out) > MAX_NAMES:
        raise TrainplanError(f"at most {MAX_NAMES} names in one list, got {len(out)}")
    return out
