"""What a published case's trainer fixes in its code or turns on by default when the case does not say:
trainers and recipe libraries without a framework profile of their own, each fact read from the trainer's
source."""

from __future__ import annotations

from typing import Any

from trainplan.cases.common import text
from trainplan.enums import Framework, MoeDispatcher, MoeRouting
from trainplan.job.frameworks import NAMES, framework_in_text, mentions, profile

# Trainers and recipe libraries without a profile of their own (they run on a profiled framework: a plain
# PyTorch loop, HF Trainer, Megatron-Core) whose code fixes a behaviour the step's time depends on, read
# from that code: (the name as a framework text writes it, Implementation fields, where the code says so).
# A field's value may be a function of the case's GPU count.
_MEGATRON_RECIPES = ("NVIDIA-NeMo/Megatron-Bridge v0.2.0 recipes: llama/llama3.py CommOverlapConfig(tp_comm_overlap=True), "
                     "qwen/qwen3_moe.py DistributedDataParallelConfig(overlap_grad_reduce=True, overlap_param_gather="
                     "True), training/comm_overlap.py overlap_p2p_comm with virtual stages; NeMo 2.0's recipes through "
                     "nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py MegatronCommOverlapCallback (tensor, "
                     "pipeline and data parallel overlap): Megatron's communication overlap on")
_BRIDGE_CE = ("NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/gpt_provider.py `cross_entropy_loss_fusion: bool "
              "= True` (its recipes set cross_entropy_fusion_impl 'te', recipes/llama/h100/llama3.py): one fused "
              "vocab-parallel cross-entropy kernel over the logits")
TRAINER_FACTS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("nemo", {"comm_overlap": True}, _MEGATRON_RECIPES),
    ("megatron-bridge", {"comm_overlap": True}, _MEGATRON_RECIPES),
    ("megatron bridge", {"comm_overlap": True}, _MEGATRON_RECIPES),
    ("megatron-bridge", {"fused_ce": True}, _BRIDGE_CE),
    ("megatron bridge", {"fused_ce": True}, _BRIDGE_CE),
    ("automodel", {"fused_kernels": True, "te_attention": True},
     "NVIDIA-NeMo/Automodel cb976544 nemo_automodel/components/models/common/utils.py BackendConfig: attn 'te' and "
     "linear 'te' and rope_fusion whenever Transformer Engine is installed and CUDA available (its own model code, "
     "_transformers/registry.py, runs them): Transformer Engine's Linear, fused RoPE and DotProductAttention"),
    ("llm-foundry", {"fused_ce": True},
     "mosaicml/llm-foundry llmfoundry/models/mpt/modeling_mpt.py ComposerMPTCausalLM: `loss_fn` defaults to "
     "'fused_crossentropy', flash-attn's fused CrossEntropyLoss, when the model config does not name one"),
    ("tinyllama", {"fused_kernels": True, "fused_ce": True},
     "jzhang38/TinyLlama bf12224 lit_gpt/model.py: flash_attn_func, xformers.ops.SwiGLU, "
     "fused_rotary_embedding.apply_rotary_emb_func and lit_gpt/rmsnorm.py FusedRMSNorm (flash-attn's); "
     "pretrain/tinyllama.py: FusedCrossEntropyLoss (flash-attn's): fused norm, activation, rotary and loss kernels"),
    ("flash-attention training", {"fused_ce": True},
     "Dao-AILab/flash-attention training/configs/experiment/pile/base.yaml: `loss_fn: "
     "src.losses.cross_entropy_apex.CrossEntropyLossApex, inplace_backward: True` (apex xentropy, fused)"),
    ("method_comparison", {"loss_upcast": True},
     "huggingface/peft 5d602fdb method_comparison/MetaMathQA/run.py train(): the batch carries labels and the loss is "
     "`model(**batch).loss`, transformers' ForCausalLMLoss (loss/loss_utils.py), which upcasts the logits "
     "(`logits = logits.float()`) before the cross-entropy: the loop's own code computes no loss"),
    ("universal-llm-trainer", {"padding_mask": True},
     "ljm565/universal-llm-trainer 9efd14b src/data_collection/qa_dataset.py `_pad`/`__getitem__`: every "
     "sample is padded to max_length and its attention_mask ends in zeros; src/trainer/trainer.py "
     "`epoch_train` with --gpu_test replaces only the token ids with random ones; src/models/*.py pass "
     "the mask to the model: the batches carry a padding mask"),
    ("universal-llm-trainer", {"launch_blocking": True},
     "ljm565/universal-llm-trainer 9efd14b src/run/train.py `env_setup`: os.environ['CUDA_LAUNCH_BLOCKING'] "
     "= \"1\" before CUDA initialises (torch.multiprocessing.spawn's ranks inherit it): synchronous launches"),
    ("universal-llm-trainer", {"cpu_threads_per_rank": lambda gpus: max(1, 32 // gpus)},
     "ljm565/universal-llm-trainer 9efd14b src/run/train.py: torch.set_num_threads(config.total_cpu_use) on one "
     "GPU, total_cpu_use // ngpus_per_node per spawned rank; total_cpu_use: 32 in every config/*.yaml"),
)


# Trainers whose own code turns on a setting the case may leave unstated (the setting as JobOptions take it).
_BRIDGE_ETP = ("NVIDIA-NeMo/Megatron-Bridge v0.2.0 and v0.3.0 scripts/performance/configs (qwen3, deepseek, gpt_oss "
               "workload base configs): expert_tensor_parallel_size=1 in every MoE recipe")
TRAINER_DEFAULTS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("megatron-bridge", {"etp": 1}, _BRIDGE_ETP),
    ("megatron bridge", {"etp": 1}, _BRIDGE_ETP),
    ("xtuner", {"grad_ckpt": "full"},
     "InternLM/xtuner v0.2.0 xtuner/model/sft.py: SupervisedFinetune(use_activation_checkpointing=True) calls "
     "gradient_checkpointing_enable() on the transformers model"),
)


def trainer_defaults(case: dict) -> tuple[dict[str, Any], list[str]]:
    """Settings the case's trainer turns on by default (TRAINER_DEFAULTS), with notes; the case's own
    statement of a setting wins over these."""
    low = text(case.get("framework"))
    out: dict[str, Any] = {}
    notes: list[str] = []
    for name, fields, source in TRAINER_DEFAULTS:
        if mentions(low, name):
            out.update(fields)
            notes.append(f"{name} default: {source}")
    return out, notes


def _names_other_stack(low: str, name: str) -> bool:
    """Whether `name`, itself a framework's name (job.frameworks.NAMES: "nemo" is Megatron), sits in a longer
    name of another stack the text names ("NeMo AutoModel", PyTorch FSDP2): its trainer's facts do not apply."""
    of_name = dict(NAMES).get(name)
    found = framework_in_text(low)
    return of_name is not None and found is not None and found[0] is not of_name


def trainer_facts(case: dict) -> tuple[dict[str, Any], list[str]]:
    """Implementation fields the case's trainer fixes in its code (TRAINER_FACTS), with notes."""
    low = text(case.get("framework"))
    out: dict[str, Any] = {}
    notes: list[str] = []
    gpus = int((case.get("gpus") or {}).get("count") or 1)
    for name, fields, source in TRAINER_FACTS:
        if mentions(low, name) and not _names_other_stack(low, name):
            out.update({k: v(gpus) if callable(v) else v for k, v in fields.items()})
            notes.append(f"{name}: {source}")
    return out, notes


def _framework_and_layout_text(case: dict) -> str:
    """The case's framework text and its layout's free text (parallel.other), lower-cased, where the settings
    read below are written."""
    return " ".join((text(case.get("framework")), text((case.get("parallel") or {}).get("other"))))


# Names a case gives DeepEP's dispatch by (Megatron --moe-enable-deepep with the flex dispatcher, NeMo
# AutoModel's BackendConfig dispatcher 'deepep' / 'hybridep'), and AutoModel's fake gate
# (BackendConfig fake_balanced_gate: FakeBalancedGate, no noise unless fake_gate_noise is set).
_DEEPEP = ("deepep", "hybridep", "deep-ep", "deep_ep")
_FAKE_GATE = ("fake_balanced_gate", "fake balanced gate", "fakebalancedgate")
# Megatron's expert all-to-all overlap (combined 1F1B) as a case's text names it
_A2A_OVERLAP = ("--overlap-moe-expert-parallel-comm", "overlap_moe_expert_parallel_comm", "moe_a2a_overlap")


def stated_moe_dispatch(case: dict) -> tuple[dict[str, Any], list[str]]:
    """Implementation fields for the MoE dispatch a case's text states (timing.dispatch), with notes:
    DeepEP named in its framework or layout text; AutoModel's FakeBalancedGate (consecutive experts);
    Megatron's expert all-to-all overlap (timing.overlap.moe_a2a_overlap)."""
    low = _framework_and_layout_text(case)
    out: dict[str, Any] = {}
    notes: list[str] = []
    if any(mentions(low, name) for name in _DEEPEP):
        out["moe_dispatcher"] = MoeDispatcher.DEEPEP
        notes.append("DeepEP dispatch stated: a token once per destination rank and node (timing.dispatch)")
        if mentions(low, "automodel") and any(name in low for name in _FAKE_GATE) and "noise" not in low:
            out["moe_routing"] = MoeRouting.CONSECUTIVE
            notes.append("NeMo AutoModel FakeBalancedGate (components/moe/layers.py): token t to experts t k .. "
                         "t k + k - 1 (mod E), consecutive experts on few ranks")
    found = framework_in_text(low)
    if any(name in low for name in _A2A_OVERLAP) and found is not None and found[0] is Framework.MEGATRON:
        out["moe_a2a_overlap"] = True
        notes.append("Megatron expert all-to-all overlap stated (--overlap-moe-expert-parallel-comm)")
    return out, notes


def stated_head_as_layer(case: dict) -> bool:
    """Whether the case's text says the pipeline split counts the embedding and the loss as layers (Megatron's
    account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split, ParallelConfig.head_as_layer)."""
    low = _framework_and_layout_text(case)
    return any(name in low.replace("-", "_") for name in ("account_for_loss_in_pipeline_split",
                                                          "account_for_embedding_in_pipeline_split"))


def drops_long_samples(case: dict, framework: Framework) -> bool:
    """Whether the case's trainer deletes samples longer than its max length rather than truncating them: as its
    text states truncation_strategy, else its framework's (job.frameworks.Profile.drop_long_samples)."""
    import re

    low = " ".join((text(case.get("framework")), text(case.get("seq_len_note"))))
    stated = re.search(r"truncation_strategy\W+(\w+)", low)
    if stated:
        return stated.group(1) == "delete"
    return profile(framework).drop_long_samples
