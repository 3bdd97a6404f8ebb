"""Framework profiles: the same job takes different memory under each framework because each
makes its own choices. A profile is a bundle of defaults; every default is also a flag. What each
framework can run (layouts, optimizers, loss kernels) is job/capabilities.py CAPABILITIES, each entry
with its sources: the planner searches only that, and a plan flag outside it is an error.

Sources:
- hf: transformers TrainingArguments: `optim` defaults to "adamw_torch_fused" for torch >= 2.8
  (training_args.py), `bf16=True` runs autocast over an fp32 model, loss = ForCausalLMLoss (fp32
  upcast of the full logits), gradient checkpointing off.
- deepspeed: bf16/fp16 optimizer wrappers keep 16-bit weights and grads with fp32 master weights
  and Adam states (DeepSpeed runtime/bf16_optimizer.py, ZeRO paper), FusedAdam.
- fsdp: MixedPrecision(param_dtype=bf16) with sharded fp32 parameters (PyTorch FSDP docs).
- megatron: fp32 `main_grad` accumulation buffers, fp32 master weights in the (distributed)
  optimizer (Megatron-LM core/optimizer), fused Adam (Apex/TE).
- litgpt: `--precision bf16-true` (bf16 weights and AdamW states), lm_head computed in chunks of
  128 tokens with chunked cross-entropy (litgpt/utils.py chunked_cross_entropy, finetune/lora.py);
  Fabric's `_FabricModule.forward` returns the logits cast to the default dtype (fp32,
  precision.convert_output) and the loop holds them through backward; one fused `attn` q/k/v
  linear whose output the value view keeps alive, LoRAQKVLinear.zero_pad's index_copy saving the
  adapters' output (lit_gpt/model.py, lit_gpt/lora.py).
- torchtune: bf16 weights and AdamW states (`dtype: bf16`), CEWithChunkedOutputLoss with 8 chunks,
  activation checkpointing on in the recipes, fused AdamW; `optimizer_in_bwd` and
  `enable_activation_offloading` are recipe flags (README memory table).
- llamafactory: HF Trainer; model loaded in bf16, trainable parameters upcast to fp32,
  gradient checkpointing on unless `disable_gradient_checkpointing` (LLaMA-Factory model/loader).
- swift: HF Trainer; gradient_checkpointing defaults to true (ms-swift arguments). A full fine-tune
  trains the model in the dtype it loads in (torch_dtype None: the config's, bf16 for current
  checkpoints; pipelines/train/tuner.py only sets requires_grad), so bf16 weights and AdamW states
  without an fp32 copy unless DeepSpeed or FSDP adds one (ms-swift 3602360); LoRA adapters are fp32
  (peft get_peft_model autocast_adapter_dtype=True).
- unsloth: its own fused cross-entropy and RMSNorm/SwiGLU kernels, "unsloth" gradient
  checkpointing that offloads checkpoints to CPU, notebooks default to adamw_8bit.
- axolotl: HF Trainer underneath; flash attention and gradient checkpointing in most examples. A full
  fine-tune loads in cfg.torch_dtype (bf16 when bf16 is on) and is not upcast (no fp32 copy, AdamW
  states in bf16) unless DeepSpeed or FSDP1 makes one; axolotl's own fsdp2_prepare_model does not
  upcast (axolotl 067b021 utils/config resolve_dtype, monkeypatch/accelerate/fsdp2.py).
- trl: HF Trainer underneath (SFTTrainer, DPOTrainer, GRPOTrainer subclass transformers.Trainer);
  SFTConfig/DPOConfig set gradient_checkpointing=True (trl/trainer/sft_config.py).
- pytorch: a plain PyTorch loop over a Hugging Face model (the custom trainers many teams write): the
  model trains in the dtype it was loaded in (no autocast, no fp32 copy: torch AdamW keeps its states
  in the parameters' dtype), and the loss is `nn.CrossEntropyLoss` on the model's logits as they come
  out (16-bit under a 16-bit model: the model is called without labels, so transformers'
  ForCausalLMLoss and its fp32 upcast do not run).
- torchtitan (v0.2.2): the model built in training.dtype (fp32 by default); FSDP2 fully_shard with
  MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over the fp32 sharded parameters
  (apply_fsdp), autocast over fp32 parameters on one GPU or DDP (maybe_enable_amp); the loss upcasts
  the full logits (components/loss.py). The engine regime (memory/engine.py) turns the fp32 model
  into 16-bit compute copies with the fp32 master when FSDP shards it.
"""

from __future__ import annotations

from trainplan.enums import (
    Attention,
    Framework,
    GradCkpt,
    Loss,
    MasterWeights,
    Optimizer,
    Precision,
)
from trainplan.frozen import frozen, replace
from trainplan.job.training import Implementation


@frozen
class Profile:
    framework: Framework
    precision: Precision
    optimizer: Optimizer
    grad_ckpt: GradCkpt
    attention: Attention
    impl: Implementation
    summary: str
    full_precision: Precision | None = None   # full/freeze fine-tunes when they differ (model trained in its load dtype)
    pp_head_as_layer: bool = False    # its pipeline split weighs the embedding and the output as a layer each
    drop_long_samples: bool = False   # a sample over the max length is deleted, not truncated


def _impl(**kw) -> Implementation:
    return Implementation(**kw)


PROFILES: dict[Framework, Profile] = {
    Framework.HF: Profile(framework=Framework.HF, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                          grad_ckpt=GradCkpt.NONE, attention=Attention.SDPA, impl=_impl(),
                          summary="HF Trainer: fp32 weights + autocast, fused AdamW, full fp32 logits"),
    Framework.DEEPSPEED: Profile(framework=Framework.DEEPSPEED, precision=Precision.BF16,
                                 optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.NONE,
                                 attention=Attention.SDPA,
                                 impl=_impl(master_weights=MasterWeights.OPTIMIZER),
                                 summary="DeepSpeed: bf16 weights/grads, fp32 master + Adam in the optimizer"),
    Framework.FSDP: Profile(framework=Framework.FSDP, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                            grad_ckpt=GradCkpt.NONE, attention=Attention.SDPA,
                            impl=_impl(master_weights=MasterWeights.OPTIMIZER),
                            summary="FSDP mixed precision: sharded fp32 params, bf16 compute copies"),
    Framework.MEGATRON: Profile(framework=Framework.MEGATRON, precision=Precision.BF16,
                                optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.NONE,
                                attention=Attention.FLASH,
                                impl=_impl(master_weights=MasterWeights.OPTIMIZER, grad_dtype_fp32_accum=True),
                                summary="Megatron: bf16 weights, fp32 main_grad, fp32 master + Adam"),
    Framework.LITGPT: Profile(framework=Framework.LITGPT, precision=Precision.BF16_PURE, optimizer=Optimizer.ADAMW,
                              grad_ckpt=GradCkpt.NONE, attention=Attention.SDPA,
                              impl=_impl(master_weights=MasterWeights.NONE, loss=Loss.CHUNKED, loss_chunks=0,
                                        loss_upcast=False, fused_qkv=True, fused_gelu=True,
                                        output_fp32=True),
                              summary="litgpt bf16-true: bf16 weights and AdamW states, chunked lm_head + CE"),
    Framework.TORCHTUNE: Profile(framework=Framework.TORCHTUNE, precision=Precision.BF16_PURE,
                                 optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.FULL,
                                 attention=Attention.SDPA,
                                 impl=_impl(master_weights=MasterWeights.NONE, loss=Loss.CHUNKED, loss_chunks=8),
                                 summary="torchtune: bf16 weights and states, chunked CE (8), activation checkpointing"),
    Framework.LLAMAFACTORY: Profile(framework=Framework.LLAMAFACTORY, precision=Precision.BF16,
                                    optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.FULL,
                                    attention=Attention.SDPA, impl=_impl(),
                                    summary="LLaMA-Factory: HF Trainer, bf16 model + fp32 trainable params, checkpointing on"),
    Framework.SWIFT: Profile(framework=Framework.SWIFT, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                             grad_ckpt=GradCkpt.FULL, attention=Attention.SDPA, impl=_impl(),
                             summary="ms-swift: HF Trainer, gradient checkpointing on; full fine-tunes in bf16",
                             full_precision=Precision.BF16_PURE,
                             # truncation_strategy: 'delete' (1.x SftArguments; 3.x template_args.py None, then
                             # 'delete' for training)
                             drop_long_samples=True),
    Framework.UNSLOTH: Profile(framework=Framework.UNSLOTH, precision=Precision.BF16, optimizer=Optimizer.ADAMW_8BIT,
                               grad_ckpt=GradCkpt.FULL, attention=Attention.FLASH,
                               impl=_impl(loss=Loss.FUSED, liger_kernels=True, activation_offload=True),
                               summary="Unsloth: fused CE and kernels, offloaded checkpoints, 8-bit AdamW"),
    Framework.AXOLOTL: Profile(framework=Framework.AXOLOTL, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                               grad_ckpt=GradCkpt.FULL, attention=Attention.FLASH, impl=_impl(),
                               summary="axolotl: HF Trainer, flash attention, gradient checkpointing; full fine-tunes "
                                       "in bf16", full_precision=Precision.BF16_PURE),
    Framework.TRL: Profile(framework=Framework.TRL, precision=Precision.BF16, optimizer=Optimizer.ADAMW_FUSED,
                           grad_ckpt=GradCkpt.FULL, attention=Attention.SDPA, impl=_impl(),
                           summary="TRL: HF Trainer, gradient checkpointing on"),
    Framework.PYTORCH: Profile(framework=Framework.PYTORCH, precision=Precision.BF16_PURE, optimizer=Optimizer.ADAMW,
                               grad_ckpt=GradCkpt.NONE, attention=Attention.SDPA,
                               impl=_impl(master_weights=MasterWeights.NONE, loss_upcast=False),
                               summary="PyTorch loop: the model's own dtype, torch AdamW, cross-entropy on its logits"),
    Framework.TORCHTITAN: Profile(framework=Framework.TORCHTITAN, precision=Precision.BF16,
                                  optimizer=Optimizer.ADAMW_FUSED, grad_ckpt=GradCkpt.NONE, attention=Attention.FLASH,
                                  impl=_impl(),
                                  summary="torchtitan: fp32 params, bf16 compute (FSDP2 MixedPrecisionPolicy or autocast)",
                                  # distributed/pipeline_parallel.py generate_llm_fqn_per_model_part: input_weight=1,
                                  # output_weight=1 (Megatron-Core's account_for_*_in_pipeline_split default False)
                                  pp_head_as_layer=True),
}


# The names a framework goes by in free text (a run's description, a README, a case's `framework`
# field), most specific first: the training frameworks, then the HF Trainer family, then the engines
# they run (DeepSpeed, FSDP), whose memory regime the layout applies anyway (memory/engine.py):
# "HF Trainer + PEFT; DeepSpeed where noted" is the HF Trainer, "ms-swift `megatron sft`" is
# Megatron, "custom PyTorch trainer, transformers 4.49" a plain loop over a transformers model.
NAMES: tuple[tuple[str, Framework], ...] = (
    ("torchtune", Framework.TORCHTUNE), ("tune run", Framework.TORCHTUNE),
    ("torchtitan", Framework.TORCHTITAN),
    ("llama-factory", Framework.LLAMAFACTORY), ("llamafactory", Framework.LLAMAFACTORY),
    ("llama factory", Framework.LLAMAFACTORY), ("llamafactory-cli", Framework.LLAMAFACTORY),
    # LLaMA-Factory's name until v0.1.8 ("LLaMA-Factory v0.1.8, formerly named as LLaMa-Efficient-Tuning", code-index
    # file 45217075453; hiyouga/LLaMA-Efficient-Tuning), and Qihoo 360's fork that adds sequence parallelism
    ("llama-efficient-tuning", Framework.LLAMAFACTORY), ("360-llama-factory", Framework.LLAMAFACTORY),
    ("axolotl", Framework.AXOLOTL), ("unsloth", Framework.UNSLOTH),
    # XTuner (0.x) trains a transformers model under DeepSpeed (mmengine DeepSpeedStrategy, xtuner/model/sft.py
    # SupervisedFinetune building AutoModelForCausalLM), with its sequence parallel as Ulysses all-to-alls
    ("xtuner", Framework.DEEPSPEED),
    ("lit-gpt", Framework.LITGPT), ("litgpt", Framework.LITGPT),
    ("megatron sft", Framework.MEGATRON), ("megatron-swift", Framework.MEGATRON),
    ("megatron-deepspeed", Framework.MEGATRON), ("deepspeed-chat", Framework.DEEPSPEED),
    ("megatron-lm", Framework.MEGATRON), ("megatron-core", Framework.MEGATRON), ("megatron bridge", Framework.MEGATRON),
    ("megatron-bridge", Framework.MEGATRON),
    # Megatron-LM's derivatives: alibaba/Pai-Megatron-Patch ("train ... LLMs by using MegatronLM framework", its
    # README), FlagOpen/FlagScale ("a Large Language Model (LLM) toolkit based on the Megatron-LM project", its README)
    ("pai-megatron-patch", Framework.MEGATRON), ("flagscale", Framework.MEGATRON),
    # NeMo AutoModel is NeMo's PyTorch-native backend, not Megatron: FSDP2 (torch fully_shard,
    # nemo_automodel/components/distributed/parallelizer.py) with MixedPrecisionPolicy(param_dtype=bfloat16,
    # reduce_dtype=float32) (components/distributed/config.py), torch.distributed.pipelining schedules
    # (distributed/pipelining/autopipeline.py), its own model code: torchtitan's regime (NVIDIA-NeMo/Automodel
    # @cb976544)
    ("nemo automodel", Framework.TORCHTITAN), ("nemo-automodel", Framework.TORCHTITAN),
    ("nemo_automodel", Framework.TORCHTITAN), ("automodel", Framework.TORCHTITAN),
    ("nemo", Framework.MEGATRON),
    ("ms-swift", Framework.SWIFT), ("swift sft", Framework.SWIFT), ("swift", Framework.SWIFT),
    ("trl", Framework.TRL), ("sfttrainer", Framework.TRL), ("dpotrainer", Framework.TRL),
    ("grpotrainer", Framework.TRL),
    ("custom pytorch", Framework.PYTORCH), ("plain pytorch", Framework.PYTORCH),
    ("pytorch training loop", Framework.PYTORCH), ("pytorch loop", Framework.PYTORCH),
    # trainers built on the transformers Trainer: lm-sys/FastChat fastchat/train/train.py and train_lora.py
    # (`Trainer(model=model, tokenizer=tokenizer, args=training_args, ...)`), tloen/alpaca-lora finetune.py
    # (`transformers.Trainer` over a peft model), yangjianxin1/Firefly component/trainer.py (a
    # `transformers.Trainer` subclass)
    ("fastchat", Framework.HF), ("alpaca-lora", Framework.HF), ("firefly", Framework.HF),
    # OptimalScale/LMFlow src/lmflow/pipeline/finetuner.py (transformers `Trainer` or its PeftTrainer, @01058298)
    ("lmflow", Framework.HF),
    # artidoro/qlora qlora.py (`Seq2SeqTrainer` over a peft model, @00e5ad2a), ymcui/Chinese-LLaMA-Alpaca and
    # Chinese-LLaMA-Alpaca-2 scripts/training/run_clm_sft_with_peft.py (`Trainer(model=model, args=training_args,
    # ...)`, @04f1ccac and @0189e8be)
    ("artidoro/qlora", Framework.HF), ("qlora.py", Framework.HF), ("chinese-llama-alpaca", Framework.HF),
    ("chinese-llama-alpaca-2", Framework.HF),
    # tatsu-lab/stanford_alpaca train.py (`Trainer(model=model, tokenizer=tokenizer, args=training_args, ...)`,
    # @15b51ae3); huggingface/alignment-handbook scripts/run_sft.py (`from trl import SFTTrainer`, @060eb208)
    ("stanford_alpaca", Framework.HF), ("stanford alpaca", Framework.HF),
    ("alignment-handbook", Framework.TRL), ("alignment handbook", Framework.TRL),
    # OpenRLHF trains transformers models under its DeepSpeed strategy (openrlhf/utils/deepspeed/deepspeed.py);
    # GPT-NeoX "is based on NVIDIA's Megatron Language Model and has been augmented with techniques from
    # DeepSpeed" (its README); nanoGPT's train.py is a plain PyTorch loop under DistributedDataParallel
    # GaLore's torchrun_main.py (jiaweizzhao/GaLore): a plain loop, DistributedDataParallel unless --single_gpu
    ("openrlhf", Framework.DEEPSPEED), ("gpt-neox", Framework.MEGATRON), ("nanogpt", Framework.PYTORCH),
    ("torchrun_main.py", Framework.PYTORCH),
    ("pytorch ddp", Framework.PYTORCH), ("distributeddataparallel", Framework.PYTORCH),
    ("hf trainer", Framework.HF), ("huggingface trainer", Framework.HF), ("hugging face trainer", Framework.HF),
    ("transformers trainer", Framework.HF),
    ("seq2seqtrainer", Framework.HF), ("transformers", Framework.HF), ("peft", Framework.HF),
    ("accelerate", Framework.HF),
    # mosaicml/llm-foundry: its README titles it "LLM Foundry", its package is llmfoundry/ (scripts/train/train.py
    # imports llmfoundry and trains under Composer's FSDP)
    ("llm-foundry", Framework.FSDP), ("llm foundry", Framework.FSDP), ("llmfoundry", Framework.FSDP),
    ("composer", Framework.FSDP),
    ("megatron", Framework.MEGATRON), ("deepspeed", Framework.DEEPSPEED),
    ("fsdp", Framework.FSDP), ("fsdp2", Framework.FSDP), ("fully_shard", Framework.FSDP),
    ("hugging face", Framework.HF),
)


def mentions(low: str, name: str) -> bool:
    """`name` in the lower-case text `low` as a whole word (a hyphen joins words)."""
    import re  # only for free text (case files, records)

    return re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", low) is not None


def framework_in_text(text: str) -> tuple[Framework, str] | None:
    """(framework, the name found) for the first of NAMES in `text` (whole words), else None."""
    low = text.lower()
    for name, framework in NAMES:
        if mentions(low, name):
            return framework, name
    return None


# The trainers that run a transformers model (its own modeling code: attention, MoE block, masks):
# HF Trainer and those built on it, DeepSpeed or a plain PyTorch loop over a transformers model.
RUNS_TRANSFORMERS = frozenset({Framework.HF, Framework.DEEPSPEED, Framework.LLAMAFACTORY, Framework.SWIFT,
                               Framework.AXOLOTL, Framework.UNSLOTH, Framework.TRL, Framework.PYTORCH})


def profile(framework: Framework) -> Profile:
    return PROFILES[framework]


def implementation(framework: Framework, **overrides) -> Implementation:
    """The profile's Implementation with the user's explicit flags applied (None = keep)."""
    base = PROFILES[framework].impl
    given = {k: v for k, v in overrides.items() if v is not None}
    return replace(base, **given)


def default_expert_tp(framework: Framework, ep: int) -> int | None:
    """The routed experts' tensor-parallel size a framework runs when the job does not say (None: tp,
    Megatron-Core's default: megatron/training/arguments.py sets expert_tensor_parallel_size to
    tensor_model_parallel_size when it is None). torchtitan: 1 with expert parallelism
    (torchtitan/config/job_config.py Parallelism.expert_tensor_parallel_degree = 1, "no effect ... when
    ep = 1", where the experts follow tp). ms-swift's `megatron sft` sets 1 itself
    (swift/megatron/arguments/megatron_args.py expert_tensor_parallel_size: int = 1; its reader says so)."""
    if framework is Framework.TORCHTITAN and ep > 1:
        return 1
    return None
