"""The setup flags every command that takes a job shares, and their translation into JobOptions.
No formulas and nothing looked up here: job/resolve.py does that."""

from __future__ import annotations

import argparse

from trainplan.enums import ExpertsImpl, MoeDispatcher
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.options import OPTION_NAMES, JobOptions
from trainplan.job.validate import validate_options

_TOKEN_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def token_count(text: str) -> float:
    """A token count as people write it: 15T, 300B, 2.5e9, 1_000_000 (k, M, B/G, T suffixes)."""
    word = text.strip().replace("_", "").replace(",", "")
    scale = _TOKEN_SUFFIX.get(word[-1:].lower(), 1.0) if word else 1.0
    number = word[:-1] if scale != 1.0 else word
    try:
        value = float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a token count such as 15T, 300B or 2e9, got {text!r}") from None
    return value


def _int_or_auto(text: str) -> int | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
        if value.is_integer():
            return int(value)
    except (ValueError, OverflowError):
        pass
    raise argparse.ArgumentTypeError(f"expected an integer or auto, got {text!r}")


def _tracking(base: type) -> type:
    """`base` (an argparse Action class) that also records its dest in namespace._given: one
    subclass per Action class, made once (a class per action cost ~15 us each, 1 ms a parser)."""
    made = _TRACKING.get(base)
    if made is None:
        def call(self, parser, namespace, values, option_string=None, _base=base):
            given = getattr(namespace, "_given", None)
            if given is None:
                given = set()
                namespace._given = given
            given.add(self.dest)
            _base.__call__(self, parser, namespace, values, option_string)

        made = _TRACKING[base] = type(base.__name__, (base,), {"__call__": call})
    return made


_TRACKING: dict[type, type] = {}


def _track(parser: argparse.ArgumentParser) -> None:
    """Every action records its dest in namespace._given when the flag appears on the command line."""
    for action in parser._actions:
        if action.dest in ("help", "from_configs") or isinstance(action, argparse._HelpAction):
            continue
        if type(action) not in _TRACKING.values():
            action.__class__ = _tracking(type(action))


def add_lang_flag(p: argparse.ArgumentParser) -> None:
    """--lang en|zh (once per parser): the language of the text for people; --json never changes.
    cli.main() reads it before parsing (trainplan.i18n.set_language), so argparse only accepts it."""
    if "--lang" not in p._option_string_actions:
        p.add_argument("--lang", metavar="{en,zh}",
                       help="language of the output for people: en | zh (default: $TRAINPLAN_LANG, the locale, en)")


def add_setup_flags(p: argparse.ArgumentParser) -> None:
    f = p.add_argument_group("read from your own config")
    f.add_argument("--from", dest="from_configs", action="append", default=[], metavar="FILE",
                   help="a LLaMA-Factory, HF TrainingArguments/TRL, DeepSpeed, accelerate, axolotl, ms-swift, "
                        "torchtune or torchtitan config, or a launch command line (repeatable; flags given "
                        "override it)")
    f.add_argument("--explain-from", action="store_true",
                   help="list every setting with where it came from (file key, framework default, flag)")
    g = p.add_argument_group("what to train")
    g.add_argument("--model", help="catalog name, HF id, or path to config.json / its folder "
                                   "(required unless --from names the model)")
    g.add_argument("--method", default="full", help="full | lora | qlora | freeze")
    g.add_argument("--precision", help="bf16 | fp16 | fp32 | bf16-pure | fp16-pure | fp8 (default: framework's)")
    g.add_argument("--fp8-recipe", help="with --precision fp8: te-delayed | te-current | te-blockwise | te-mxfp8 | "
                   "torchao-tensorwise | torchao-rowwise | torchao-rowwise-gw-hp (default: the framework's)")
    g.add_argument("--optimizer", help="adamw | adamw-fused | adamw-8bit | paged-adamw-8bit | adafactor | sgd | lion | "
                   "badam (block-coordinate Adam, one layer at a time; --method full) | galore-adamw | "
                   "galore-adamw-8bit (Adam over low-rank projected gradients; --method full) | muon (orthogonalised "
                   "momentum on 2-D weights, AdamW on the rest; LLaMA-Factory, ms-swift, axolotl, pytorch) | "
                   "adam-mini (one second moment per neuron or head; LLaMA-Factory, pytorch; --method full or freeze) | "
                   "apollo-adamw (Adam on random low-rank projections, to scale the full gradient; --method full)")
    g.add_argument("--galore-rank", type=int, default=128,
                   help="GaLore's projection rank (default 128, HF Trainer's; LLaMA-Factory's galore_rank is 16)")
    g.add_argument("--apollo-rank", type=int, default=128,
                   help="APOLLO's projection rank (default 128, HF Trainer's; LLaMA-Factory's apollo_rank is 16)")
    g.add_argument("--lora-rank", type=int, default=16)
    g.add_argument("--lora-alpha", type=float)
    g.add_argument("--lora-dropout", type=float, default=0.05)
    g.add_argument("--lora-targets", help="comma-separated module names, or all-linear (default: peft's)")
    g.add_argument("--dora", action="store_true")
    g.add_argument("--modules-to-save", help="modules trained in full beside the adapters (peft modules_to_save): "
                   "embed_tokens, lm_head (comma list)")
    g.add_argument("--quant", help="nf4 | fp4 | int8 (qlora)")
    g.add_argument("--double-quant", action="store_true")
    g.add_argument("--freeze-layers", type=int, default=2,
                   help="method freeze: train the last N layers (-N: the first N, as LLaMA-Factory)")
    g.add_argument("--batch-size", type=int, default=1, help="micro-batch per GPU")
    g.add_argument("--grad-accum", type=int, default=1)
    g.add_argument("--seq-len", type=int, default=2048)
    g.add_argument("--grad-ckpt", help="none | full | selective (default: framework's)")
    g.add_argument("--attention", help="flash | sdpa | eager")
    g.add_argument("--experts-implementation", choices=[str(e) for e in ExpertsImpl], default=None,
                   help="how transformers runs an MoE model's routed experts (HF Trainer family): grouped_mm, "
                        "transformers 5's default, or eager, a loop over the experts as transformers 4.x runs them "
                        "(default: grouped_mm)")
    g.add_argument("--flash-version", type=int, choices=(2, 3, 4), default=None,
                   help="the FlashAttention --attention flash runs: 2 (transformers' flash_attention_2, LLaMA-Factory "
                        "fa2), 3 (flash_attention_3 / fa3: Hopper) or 4 (flash_attention_4: Blackwell) "
                        "(default: 2)")
    g.add_argument("--framework", default="hf",
                   help="hf | deepspeed | fsdp | megatron | litgpt | torchtune | llamafactory | swift | unsloth | axolotl | "
                        "trl | torchtitan")
    g.add_argument("--optimizer-in-backward", action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--loss", help="full | chunked | fused")
    g.add_argument("--activation-offload", action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--liger", action=argparse.BooleanOptionalAction, default=None,
                   help="fused RMSNorm/SwiGLU kernels (Liger/Unsloth)")
    g.add_argument("--load-fp32", action=argparse.BooleanOptionalAction, default=None,
                   help="frozen weights loaded in fp32 under mixed precision")
    g.add_argument("--grad-ckpt-every", type=int, help="checkpoint only every n-th layer (torchtitan layer SAC)")
    g.add_argument("--stage", help="sft (default) | pt | dpo | ipo | kto | orpo | simpo | cpo | rm | grpo")
    g.add_argument("--ref-model", action=argparse.BooleanOptionalAction, default=None,
                   help="a reference model (default: dpo, ipo, kto; adapters disabled under LoRA)")
    g.add_argument("--padding-free", action=argparse.BooleanOptionalAction, default=None,
                   help="sequences concatenated without padding (flash-attention varlen)")
    g.add_argument("--padding-mask", action=argparse.BooleanOptionalAction, default=None,
                   help="the batches' attention mask has padding, as a trainer that pads every sample to the "
                        "maximum length gives: SDPA runs its memory-efficient kernel over every block "
                        "(default: when --lengths-file gives mixed lengths, unpacked, more than one per micro-batch)")
    g.add_argument("--loss-upcast", action=argparse.BooleanOptionalAction, default=None,
                   help="the cross-entropy runs on an fp32 copy of the logits, as transformers' ForCausalLMLoss does "
                        "when the model gets labels; --no-loss-upcast: on the 16-bit logits, as a loop computing its "
                        "own loss (default: the framework's; litgpt and a plain PyTorch loop 16-bit)")
    g.add_argument("--launch-blocking", action=argparse.BooleanOptionalAction, default=None,
                   help="the job runs with CUDA_LAUNCH_BLOCKING=1 (a debugging setting some trainers set): every "
                        "kernel launch waits for its kernel and nothing overlaps compute (default: off)")
    g.add_argument("--comm-overlap", action=argparse.BooleanOptionalAction, default=None,
                   help="Megatron's communication overlap, as NeMo's and Megatron-Bridge's recipes set it "
                        "(tp_comm_overlap, overlap_grad_reduce/overlap_param_gather, overlap_p2p_comm): tensor-"
                        "parallel collectives under the GEMMs, the distributed optimizer's all-gather under the "
                        "next forward, pipeline sends under interleaved compute (default: off, Megatron-LM's)")
    g.add_argument("--moe-a2a-overlap", action=argparse.BooleanOptionalAction, default=None,
                   help="Megatron's expert all-to-all overlap (--overlap-moe-expert-parallel-comm, combined 1F1B; "
                        "Megatron-Bridge's moe_a2a_overlap): one micro-batch's dispatch and combine under another "
                        "micro-batch's compute; needs --ep > 1 and, with --pp > 1, --vpp > 1 (default: off)")
    g.add_argument("--moe-dispatcher", choices=[str(d) for d in MoeDispatcher], default=None,
                   help="how an MoE layer's tokens reach their experts: alltoall, a copy per routed expert "
                        "(Megatron's default dispatcher), or deepep, a copy per destination rank and, across "
                        "nodes, per destination node (DeepEP: Megatron's flex dispatcher, NeMo AutoModel); "
                        "needs --ep > 1 (default: alltoall)")
    h = p.add_argument_group("where it runs")
    h.add_argument("--gpu", default="a100-80gb")
    h.add_argument("--num-gpus", type=int, default=1)
    h.add_argument("--nodes", type=int, default=1)
    h.add_argument("--zero", default="0", help="DeepSpeed ZeRO stage 0-3")
    h.add_argument("--fsdp", default="none", help="none | full | hybrid")
    h.add_argument("--offload", default="none", help="none | optimizer | params | all")
    for key in ("tp", "pp", "cp", "ep"):
        h.add_argument(f"--{key}", type=int, default=1)
    h.add_argument("--etp", type=int, help="expert tensor parallel: the routed experts' tensor-parallel size "
                   "(default: --tp, Megatron-Core's default; Megatron-Bridge recipes, ms-swift and torchtitan use 1)")
    h.add_argument("--sequence-parallel", action=argparse.BooleanOptionalAction, default=True,
                   help="Megatron sequence parallelism with --tp > 1 (default on)")
    h.add_argument("--vpp", type=int, default=1, help="virtual pipeline stages (interleaved 1F1B)")
    h.add_argument("--pp-schedule", help="pipeline schedule: gpipe | 1f1b | interleaved-1f1b | zb-h1 | zbv "
                   "(default: the framework's, interleaved with --vpp > 1, else 1f1b)")
    h.add_argument("--uneven-pipeline", action="store_true", help="allow layers not divisible by --pp")
    h.add_argument("--pp-head-as-layer", action=argparse.BooleanOptionalAction, default=None,
                   help="the embedding and the LM head + loss each take a layer's place in the pipeline split "
                        "(Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split): "
                        "the first and the last stage hold one layer fewer; without it the last stage runs the head "
                        "on top of its layers and every micro-batch waits for it (default: off, Megatron's)")
    h.add_argument("--ulysses", type=int, default=1, help="Ulysses sequence parallelism degree (DeepSpeed, ms-swift)")
    h.add_argument("--device-map", help="auto: one copy of the model split layer by layer over the GPUs (accelerate)")
    h.add_argument("--fsdp-version", type=int, help="1 (FullyShardedDataParallel) or 2 (fully_shard)")
    h.add_argument("--reshard-after-forward", action=argparse.BooleanOptionalAction, default=None,
                   help="FSDP: free gathered parameters after forward (--no-: SHARD_GRAD_OP)")
    h.add_argument("--offload-device", help="cpu (default) | nvme: where ZeRO offloads")
    h.add_argument("--cpu-threads-per-rank", type=int,
                   help="CPU threads each rank's offloaded optimizer runs on, as OMP_NUM_THREADS or "
                        "torch.set_num_threads sets them (default: the launcher's; torchrun and accelerate: 1)")
    h.add_argument("--host-cpus", type=int, help="CPU cores per node that run an offloaded optimizer "
                   "(default: the GPU's reference server, stated in the notes)")
    h.add_argument("--host-mem-gb-per-s", type=float, help="host memory bandwidth per node in GB/s for an "
                   "offloaded optimizer (default: the reference server's DRAM)")
    for flag, text in (("--reduce-bucket-size", "ZeRO reduce bucket, elements or auto (h^2)"),
                       ("--prefetch-bucket-size", "ZeRO-3 prefetch bucket, elements or auto (0.9 h^2)"),
                       ("--param-persistence-threshold", "ZeRO-3 tensors kept whole, elements or auto (10 h)")):
        h.add_argument(flag, type=_int_or_auto, help=text)
    h.add_argument("--max-live-parameters", type=int, help="ZeRO-3 stage3_max_live_parameters")
    h.add_argument("--overlap-comm", action=argparse.BooleanOptionalAction, default=None,
                   help="ZeRO overlap_comm (default: on for stage 3)")
    h.add_argument("--headroom", type=float, default=0.10, help="safety margin as a fraction (default 0.10)")
    w = p.add_argument_group("data, time and money")
    w.add_argument("--samples", type=int)
    w.add_argument("--max-steps", type=int, help="run length in optimizer steps (instead of --samples)")
    w.add_argument("--tokens", type=token_count, help="run length in training tokens, e.g. 15T, 300B, 2e9 "
                   "(instead of --samples: samples = tokens / --tokens-per-sample, else --seq-len)")
    w.add_argument("--tokens-per-sample", type=int)
    w.add_argument("--epochs", type=float, default=1.0)
    w.add_argument("--packing", action="store_true")
    w.add_argument("--retry-factor", type=float, default=1.0)
    w.add_argument("--provider", help="price at this provider's offers (catalog or your price files)")
    w.add_argument("--price-per-gpu-hour", type=float, help="one price for every GPU type, in --currency")
    w.add_argument("--price", action="append", default=[], metavar="GPU=AMOUNT",
                   help="the price per GPU-hour of one GPU type, in --currency (repeatable: --price h800=14.5)")
    w.add_argument("--prices", metavar="FILE",
                   help="a user or team price file (TOML; also $TRAINPLAN_PRICES, trainplan-prices.toml in the "
                        "repo, prices.toml in the config dir)")
    w.add_argument("--currency", help="USD, CNY (RMB), EUR, ...: prices are converted with the dated rate table "
                                      "(default: $TRAINPLAN_CURRENCY, the user config, USD)")
    w.add_argument("--price-kind", help="on-demand (default) | spot | marketplace | reserved | any: the kind of "
                                        "price compared")
    w.add_argument("--spot", action="store_true", help="same as --price-kind spot")
    w.add_argument("--interconnect", help="inter-node network: ib-ndr, ib-hdr, roce-200, efa-3200, ethernet-100, ..., "
                                          "or the node's NICs as COUNTxRATEg-KIND (4x100g-roce)")
    w.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile: fused kernels (time), fused norm/SwiGLU saves and a compiled loss (memory)")
    w.add_argument("--compile-loss", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile over the loss too (default: as --compile; torchtitan's compile.components)")
    w.add_argument("--efficiency", type=float, help="override the matmul efficiency (fraction of peak)")
    w.add_argument("--eval-fraction", type=float, default=0.0, help="evaluation tokens / training tokens")
    w.add_argument("--val-size", type=float, help="samples held out for evaluation: a count, or a share of the data "
                                                 "below 1 (LLaMA-Factory val_size); they are not trained on")
    w.add_argument("--eval-steps", type=float, help="evaluate the held-out samples every N optimizer steps (below 1: "
                                                   "that share of the run's steps, as transformers reads eval_steps)")
    w.add_argument("--eval-each-epoch", action="store_true", help="evaluate the held-out samples after each epoch "
                                                                 "(HF eval_strategy epoch)")
    w.add_argument("--checkpoint-saves", type=int, default=0)
    w.add_argument("--disk-gb-per-s", type=float, default=1.0, help="checkpoint write bandwidth (GB/s)")
    w.add_argument("--lengths-file", help="sample lengths in tokens: one per line, or a JSON list")
    w.add_argument("--drop-long-samples", action=argparse.BooleanOptionalAction, default=None,
                   help="samples longer than --seq-len are deleted, not truncated: the lengths trained on are those "
                        "that fit, and only they count towards the steps (default: ms-swift's truncation_strategy "
                        "'delete' under --framework swift; other frameworks truncate)")
    w.add_argument("--group-by-length", action=argparse.BooleanOptionalAction, default=None,
                   help="the HF Trainer's length-grouped sampler (group_by_length; transformers 5: "
                        "train_sampling_strategy group_by_length): unpacked samples of like lengths batched together, "
                        "so less padding (default: off, random batches)")
    w.add_argument("--dataset", help="a public dataset the run trains on (ModelScope or Hugging Face id; several "
                   "comma-separated): its sample lengths and size from the catalog (`trainplan datasets`)")
    w.add_argument("--calibration", action=argparse.BooleanOptionalAction, default=True,
                   help="apply the calibration `trainplan calibrate` fitted (--no-calibration: the raw model)")
    add_lang_flag(p)
    _track(p)


def options_from_args(args: argparse.Namespace, *, model_required: bool = True,
                      counts_chosen: bool = False) -> JobOptions:
    """The JobOptions of the parsed flags (the setup flags a command has; the rest keep their
    defaults), with the --from configs laid under the flags given on the command line.
    `counts_chosen`: the command chooses the GPU count (plan, table), so a sharded config that names
    none is not an error."""
    values = {k: getattr(args, k) for k in OPTION_NAMES if hasattr(args, k)}
    if "price" in values:
        values["price"] = tuple(values["price"] or ())
    configs = getattr(args, "from_configs", None) or []
    given = {k: values[k] for k in getattr(args, "_given", set()) if k in values}
    if not configs:
        if model_required and values.get("model") is None and "model" in values:
            raise TrainplanError("--model is required (or --from a config that names the model)")
        return validate_options(JobOptions(**values, given=tuple(sorted(given))))
    from trainplan.importers.merge import check_gpu_count, from_configs  # parsers load only with --from

    model = values.pop("model", None)
    options = from_configs(configs, JobOptions(model=model or "", **values), given)
    if not counts_chosen:
        check_gpu_count(options)
    if not options.model:
        if model_required:
            raise TrainplanError("--model is required: none of the --from configs names the model")
        options = replace(options, model=None)
    return validate_options(options)
