"""What to train (TrainingSetup) apart from how it is spread over GPUs (Layout)."""

from __future__ import annotations

from trainplan.enums import (
    LOW_RANK_OPTIMIZERS,
    Attention,
    ExpertsImpl,
    Fp8Recipe,
    Framework,
    Fsdp,
    GradCkpt,
    Loss,
    MasterWeights,
    Method,
    MoeDispatcher,
    MoeRouting,
    Offload,
    Optimizer,
    Precision,
    Quant,
    ZeroStage,
)
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen
from trainplan.specs import ModelSpec


@frozen
class LoraConfig:
    rank: int = 16
    alpha: float = 32.0
    dropout: float = 0.05
    targets: tuple[str, ...] = ()   # module names, roles, or "all-linear"; () = peft's default for the model
    dora: bool = False
    # peft modules_to_save: fully trained copies of these modules beside the adapters, as canonical roles
    # "embed_tokens" / "lm_head" (trainplan.model.params.saved_modules reads the names users write)
    modules_to_save: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.rank <= 0:
            raise TrainplanError(f"--lora-rank must be positive, got {self.rank}")
        if not 0.0 <= self.dropout < 1.0:
            raise TrainplanError(f"--lora-dropout must be in [0, 1), got {self.dropout}")


@frozen
class QuantConfig:
    kind: Quant = Quant.NF4
    double_quant: bool = False
    blocksize: int = 64            # bitsandbytes 4-bit default block size
    compute_dtype: str = "bf16"


@frozen
class Implementation:
    """How the framework runs the step: every field is a framework-profile default and a flag, but fused_ce
    and fused_kernels, which only a published run's trainer sets (cases.trainers TRAINER_FACTS; users say
    --loss fused, --liger or --compile)."""

    master_weights: MasterWeights = MasterWeights.AUTOCAST
    loss: Loss = Loss.FULL
    optimizer_in_backward: bool = False   # step fused into backward: grads never all live at once
    activation_offload: bool = False      # saved activations moved to CPU (torchtune)
    grad_dtype_fp32_accum: bool = False   # Megatron main_grad: fp32 gradient accumulation buffer
    liger_kernels: bool = False           # fused RMSNorm/SwiGLU/RoPE: fewer saved tensors
    compiled: bool = False                # torch.compile: fused pointwise ops, min-cut saves (and loss)
    loss_compiled: bool | None = None     # torch.compile over the loss (None: as compiled; torchtitan's
                                          # compile.components, or a release that compiled the model only)

    @property
    def compiled_loss(self) -> bool:
        """Whether the cross-entropy runs compiled (memory.logits, timing.loss)."""
        return self.compiled if self.loss_compiled is None else self.loss_compiled
    fp8_recipe: Fp8Recipe | None = None   # precision fp8: None = the framework's (timing.fp8.default_recipe)
    fused_qkv: bool = False               # one q/k/v projection (litgpt): v keeps it alive; LoRA zero-pads
    fused_gelu: bool = False              # the model's GELU is one F.gelu call (litgpt/model.py, tanh or not):
                                          # it saves its input only, not transformers' NewGELU chain
    output_fp32: bool = False             # logits returned in fp32 and held through backward (Fabric bf16-true)
    padding_free: bool = False
    padding_mask: bool = False            # the model gets an attention mask with padding zeros (timing.attention)
    empty_cache_per_step: bool = False    # reserve falls back to allocated between steps
    loss_chunks: int = 8                  # chunks for Loss.CHUNKED (0: one per 128 tokens, litgpt)
    loss_upcast: bool = True              # cross-entropy on fp32 logits (HF, torchtune) or 16-bit (litgpt)
    fused_kernels: bool = False           # hand-fused RMSNorm/SwiGLU/rotary kernels (flash-attn's ops, xformers):
                                          # the fused kernel stack for time (timing.efficiency.kernel_stack)
    te_attention: bool = False            # Transformer Engine's DotProductAttention outside Megatron (NeMo
                                          # AutoModel's BackendConfig attn='te'): cuDNN's fused attention on
                                          # Hopper/Blackwell (timing.attention.attention_kernel)
    fused_ce: bool = False                # one fused cross-entropy kernel on the 16-bit logits (flash-attn's,
                                          # apex xentropy): the loss's traffic (timing.loss), not its memory
    load_fp32: bool = False               # frozen weights loaded in fp32 under mixed precision
    foreach_grad_clip: bool = True        # HF Trainer clips gradients (max_grad_norm=1.0)
    launch_blocking: bool = False         # CUDA_LAUNCH_BLOCKING=1: synchronous launches (timing.launch)
    comm_overlap: bool = False            # Megatron's communication overlap: TP collectives under the GEMMs,
                                          # the parameter all-gather under the next forward, pipeline sends
                                          # under interleaved compute (timing.overlap)
    moe_dispatcher: MoeDispatcher = MoeDispatcher.ALLTOALL   # copies a token's dispatch sends (timing.dispatch)
    moe_routing: MoeRouting = MoeRouting.BALANCED            # which experts a token goes to (timing.dispatch)
    moe_a2a_overlap: bool = False         # Megatron's combined 1F1B (--overlap-moe-expert-parallel-comm): one
                                          # micro-batch's expert all-to-alls under another's compute (timing.overlap)
    cpu_threads_per_rank: int = 0         # OMP_NUM_THREADS / torch.set_num_threads per rank (0: the launcher's)
    experts_impl: ExpertsImpl = ExpertsImpl.GROUPED_MM   # transformers' MoE experts: v5's grouped_mm default, or
                                          # the per-expert loop of 4.x and v5's "eager" (timing.hf_moe)
    flash_version: int = 2                # the FlashAttention a flash choice runs: 2 (transformers'
                                          # flash_attention_2), 3 (flash_attention_3, Hopper) or 4
                                          # (flash_attention_4, Blackwell)


@frozen
class TrainingSetup:
    """One training job on one model, independent of the GPU layout."""

    model: ModelSpec
    method: Method = Method.FULL
    precision: Precision = Precision.BF16
    optimizer: Optimizer = Optimizer.ADAMW
    batch_size: int = 1
    seq_len: int = 2048
    grad_accum: int = 1
    grad_ckpt: GradCkpt = GradCkpt.NONE
    grad_ckpt_every: int = 1              # only every n-th layer checkpointed (torchtitan selective_ac_option n)
    attention: Attention = Attention.SDPA
    lora: LoraConfig | None = None
    quant: QuantConfig | None = None
    freeze_trainable_layers: int = 2     # method=freeze: train the last N layers ...
    freeze_bottom: bool = False          # ... or the first N (LLaMA-Factory: a negative freeze_trainable_layers)
    framework: Framework = Framework.HF
    impl: Implementation = field(default_factory=Implementation)
    sequences_per_sample: int = 1         # 2 for preference pairs (DPO/ORPO/SimPO/RM: chosen + rejected together)
    reference_model: bool = False         # a frozen 16-bit copy of the model on the GPU (DPO/KTO, full fine-tune)
    reference_forward: bool = False       # a no-grad forward of the reference per micro-batch (also adapters off)
    galore_rank: int = 128                # GaLore's projection rank (HF Trainer optim_args "rank" default 128)
    apollo_rank: int = 128                # APOLLO's projection rank (HF Trainer _get_apollo_optimizer default 128)

    def __post_init__(self) -> None:
        for key in ("batch_size", "seq_len", "grad_accum", "grad_ckpt_every", "sequences_per_sample", "galore_rank",
                    "apollo_rank"):
            value = getattr(self, key)
            if not isinstance(value, int) or value <= 0:
                flag = "--" + key.replace("_", "-")
                raise TrainplanError(f"{flag} must be a positive integer, got {value!r}")
        if self.method in (Method.LORA, Method.QLORA):
            if self.lora is None:
                raise TrainplanError(f"method {self.method} needs a LoRA configuration")
            if self.lora.rank > self.model.hidden_size:
                raise TrainplanError(
                    f"--lora-rank {self.lora.rank} is above the hidden size {self.model.hidden_size} "
                    f"of {self.model.name}")
        if self.method is Method.QLORA:
            if self.quant is None:
                raise TrainplanError("method qlora needs a quantization (--quant nf4|fp4|int8)")
            if self.precision is Precision.FP32:
                raise TrainplanError(
                    "QLoRA computes in bf16 or fp16 over 4-bit weights: use --precision bf16 or "
                    "bf16-pure (fp16) instead of fp32")
        if self.optimizer in LOW_RANK_OPTIMIZERS and self.method is not Method.FULL:
            # LLaMA-Factory hparams/finetuning_args.py: "Cannot use LoRA with GaLore, APOLLO or BAdam together"
            raise TrainplanError(f"--optimizer {self.optimizer} projects the gradients of the full weights: "
                                 f"use --method full, not {self.method}")
        if self.optimizer is Optimizer.ADAM_MINI and self.method in (Method.LORA, Method.QLORA):
            # adam_mini.py views a q/k projection's state as heads of dim * dim / n_heads elements (m.view(-1,
            # head_numel)): a LoRA adapter under that name (lora_A of q_proj) is no whole number of heads
            raise TrainplanError("--optimizer adam-mini partitions full q/k weights into heads (adam_mini.py); a "
                                 f"LoRA adapter is no whole number of them: use --method full or freeze, not "
                                 f"{self.method}")
        if self.method is Method.FREEZE and not 0 < self.freeze_trainable_layers <= self.model.num_layers:
            raise TrainplanError(
                f"--freeze-layers must be in 1..{self.model.num_layers}, got {self.freeze_trainable_layers}")

    @property
    def micro_sequences(self) -> int:
        """Sequences one micro-batch runs through the model (a preference pair is two)."""
        return self.batch_size * self.sequences_per_sample

    @property
    def tokens_per_micro_batch(self) -> int:
        return self.micro_sequences * self.seq_len

    @property
    def saved_modules(self) -> tuple[str, ...]:
        """Modules peft trains whole copies of beside the adapters (LoraConfig.modules_to_save)."""
        return self.lora.modules_to_save if self.lora is not None else ()

    def layer_checkpointed(self, index: int) -> bool:
        """Whether decoder layer `index` (0-based) is checkpointed: every layer, or with
        grad_ckpt_every n the n-th, 2n-th, ... (torchtitan's layer SAC: `ac_freq`, counted from 1)."""
        return self.grad_ckpt is not GradCkpt.NONE and (index + 1) % self.grad_ckpt_every == 0


@frozen
class Layout:
    """How one job is spread over GPUs. The planner varies this and holds the setup fixed."""

    gpu_id: str = "a100-sxm4-80gb"
    num_gpus: int = 1
    nodes: int = 1
    zero: ZeroStage = ZeroStage.NONE
    fsdp: Fsdp = Fsdp.NONE
    offload: Offload = Offload.NONE
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    # expert tensor parallel: the TP size of the routed experts. None: as tp, Megatron-Core's default
    # when it is unset (megatron/training/arguments.py `if args.expert_tensor_parallel_size is None:
    # args.expert_tensor_parallel_size = args.tensor_model_parallel_size`; parallel_state.py the same)
    etp: int | None = None
    # cp > 1 as Ulysses sequence parallelism (DeepSpeed / ms-swift / XTuner: all-to-alls that trade the
    # sequence shard for a head shard around attention) rather than ring attention (Megatron, torchtitan)
    ulysses: bool = False

    def __post_init__(self) -> None:
        for key in ("num_gpus", "nodes", "tp", "pp", "cp", "ep", "etp"):
            value = getattr(self, key)
            if key == "etp" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise TrainplanError(f"--{key.replace('_', '-')} must be a positive integer, got {value!r}")
        if self.num_gpus % self.nodes:
            raise TrainplanError(f"--num-gpus {self.num_gpus} is not divisible by --nodes {self.nodes}")
        model_parallel = self.tp * self.pp * self.cp
        if self.num_gpus % model_parallel:
            raise TrainplanError(
                f"tp x pp x cp = {self.tp} x {self.pp} x {self.cp} = {model_parallel} does not divide "
                f"--num-gpus {self.num_gpus}")
        if self.zero is not ZeroStage.NONE and self.fsdp is not Fsdp.NONE:
            raise TrainplanError("choose either --zero or --fsdp, not both")

    @property
    def dp(self) -> int:
        """Data-parallel size: GPUs / (tp x pp x cp)."""
        return self.num_gpus // (self.tp * self.pp * self.cp)

    @property
    def dp_cp(self) -> int:
        """Ranks that hold the same weights and reduce their gradients together: data x context
        parallel (Megatron's data-parallel group with context parallelism, which its distributed
        optimizer shards over; a ring-attention run's ranks, all data-parallel to DeepSpeed)."""
        return self.num_gpus // (self.tp * self.pp)

    @property
    def gpus_per_node(self) -> int:
        return self.num_gpus // self.nodes

    @property
    def expert_tp(self) -> int:
        """Tensor-parallel size of the routed experts (etp, else tp)."""
        return self.tp if self.etp is None else self.etp

    @property
    def expert_dp(self) -> int:
        """Expert data-parallel size: the ranks that hold the same routed experts and reduce their
        gradients together, GPUs / (pp x ep x expert tp) (Megatron-Core parallel_state.py: the expert
        rank generator orders tp-ep-dp-pp with tp = expert tp). With expert tp = tp it is dp x cp / ep."""
        return max(1, self.num_gpus // (self.pp * self.ep * self.expert_tp))


@frozen
class Workload:
    """The data side of a job: how many tokens, how many passes, how often it is retried."""

    samples: int | None = None            # None: no dataset given, time per step only
    tokens: float | None = None           # total training tokens the samples were derived from (--tokens)
    steps: int | None = None              # the run's optimizer steps when given directly (max_steps)
    tokens_per_sample: int | None = None  # mean tokens per sample (default: seq_len)
    epochs: float = 1.0
    packing: bool = False                 # packed sequences: no padding waste
    padding_mask: bool | None = None      # the batches' attention mask has padding (None: from the lengths)
    retry_factor: float = 1.0             # failed attempts, multiplies time and cost
    eval_fraction: float = 0.0            # extra forward-only time for evaluation, as a fraction
    # periodic evaluation (HF Trainer eval_strategy): `eval_samples` samples, forward only, every
    # `eval_every_steps` optimizer steps (< 1: that share of the run's steps, as transformers reads eval_steps)
    # or after each epoch (`eval_each_epoch`); timing.estimate counts the evaluations the run reaches
    eval_samples: int | None = None
    eval_every_steps: float | None = None
    eval_each_epoch: bool = False
    checkpoint_saves: int = 0             # number of checkpoints written
    disk_bw_bytes_per_s: float = 1e9      # checkpoint write bandwidth

    def __post_init__(self) -> None:
        if self.samples is not None and self.samples <= 0:
            raise TrainplanError(f"--samples must be positive, got {self.samples}")
        if self.steps is not None and (isinstance(self.steps, bool) or not isinstance(self.steps, int)
                                       or self.steps <= 0):
            raise TrainplanError(f"--max-steps must be a positive integer, got {self.steps!r}")
        if self.tokens_per_sample is not None and self.tokens_per_sample <= 0:
            raise TrainplanError(f"--tokens-per-sample must be positive, got {self.tokens_per_sample}")
        if self.epochs <= 0:
            raise TrainplanError(f"--epochs must be positive, got {self.epochs}")
        if self.retry_factor < 1.0:
            raise TrainplanError(f"--retry-factor must be at least 1, got {self.retry_factor}")
        if self.eval_every_steps is not None and not self.eval_every_steps > 0:
            raise TrainplanError(f"--eval-steps must be positive, got {self.eval_every_steps}")
        if self.eval_samples is not None and self.eval_samples < 0:
            raise TrainplanError(f"evaluation samples must be >= 0, got {self.eval_samples}")
