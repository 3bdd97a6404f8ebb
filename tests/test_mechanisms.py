"""Framework mechanisms (issue 19), each checked against a value derived by hand from the rule the
framework's source defines (cited beside the code)."""

from __future__ import annotations

import pytest

import trainplan
from trainplan.cases.text import embedded_settings, gpu_of, grad_ckpt_of, precision_of
from trainplan.enums import Framework
from trainplan.errors import TrainplanError
from trainplan.job.frameworks import framework_in_text
from trainplan.memory.activations import op_sac_saves
from trainplan.memory.build import layer_contexts
from trainplan.memory.regime import resolve_regime
from trainplan.model.architecture import structure

GIB = 2**30


def est(**kw):
    return trainplan.estimate(calibration=False, **kw)


# --- DeepSpeed ZeRO-3 gradient partitions -------------------------------------------------------------

def test_zero3_holds_every_gradient_partition_from_the_start():
    # stage3.py _setup_for_real_optimizer: grad_partitions_flat_buffer = zeros(sum of partitions), bf16:
    # model states per GPU = (2 weights + 4 master + 8 Adam + 2 gradients) x P / 8 = 16 B/param over 8 GPUs
    e = est(model="llama-2-70b", method="full", num_gpus=8, zero=3, gpu="h100")
    c = e.memory.components_bytes
    states = sum(c.get(k, 0) for k in ("weights", "master_weights", "optimizer", "gradients"))
    assert 15 <= states * 8 / e.params.total <= 19.5
    assert c["gradients"] == c["weights"] and c["master_weights"] * 2 == c["optimizer"]
    assert abs(c["gradients"] * 8 - 2 * e.params.total) < 8 * 1024     # 2 bytes per parameter, partitioned
    offloaded = est(model="llama-2-70b", method="full", num_gpus=8, zero=3, gpu="h100", offload="optimizer")
    assert "gradients" not in offloaded.memory.components_bytes        # on the CPU with the optimizer


# --- freeze tuning from the bottom, BAdam ------------------------------------------------------------

def test_freezing_from_the_bottom_keeps_the_states_and_runs_backward_through_every_layer():
    # LLaMA-Factory freeze_trainable_layers -2: the first two layers train. Llama-2-7B layers are uniform,
    # so the trained parameters (and their gradients, fp32 copies and Adam states) equal the last two's;
    # the backward now runs through all 32 layers: 30 more layers of input-gradient matmuls (2 x tokens x
    # linear weights) and attention backward (2 x the forward 2 h s(s+1) of causal attention)
    kw = dict(model="llama-2-7b", method="freeze", gpu="h100", batch_size=1, seq_len=1024, framework="llamafactory",
              grad_ckpt="none")
    top, bottom = est(freeze_layers=2, **kw), est(freeze_layers=-2, **kw)
    layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096              # q,k,v,o + gate,up,down + 2 norms
    assert top.trainable_params == bottom.trainable_params == 2 * layer
    for key in ("weights", "optimizer"):
        assert bottom.memory.components_bytes[key] == top.memory.components_bytes[key]
    assert bottom.memory.saved_activations_bytes > 10 * top.memory.saved_activations_bytes
    linears = 4 * 4096 * 4096 + 3 * 4096 * 11008
    extra = 30 * (2 * 1024 * linears + 2 * 2 * 1024 * 1025 * 4096)   # causal: s(s+1)/2 query-key pairs
    assert bottom.time.hardware_flops_per_step - top.time.hardware_flops_per_step == pytest.approx(extra, rel=1e-6)
    with pytest.raises(TrainplanError, match="non-zero"):
        est(freeze_layers=0, **kw)


def test_badam_holds_one_layer_in_fp32_with_its_adam_states():
    # badam block_optim.py: one block per decoder layer, `param.clone().float()` of the active block for
    # the base AdamW; LLaMA-Factory keeps the model in bf16 under BAdam. Model states:
    # 2 B x all parameters + (4 master + 8 Adam) B x one layer; the worst block is layer 0 (full backward)
    e = est(model="llama-2-7b", method="full", optimizer="badam", gpu="rtx3090", batch_size=2, seq_len=1024,
            framework="llamafactory")
    layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    c = e.memory.components_bytes
    assert c["weights"] == 2 * 6_738_415_616
    assert (c["master_weights"], c["optimizer"]) == (4 * layer, 8 * layer)
    assert e.trainable_params == layer and e.memory.fits
    with pytest.raises(TrainplanError, match="--method full"):
        est(model="llama-2-7b", method="lora", optimizer="badam")


# --- activation checkpointing policies --------------------------------------------------------------

def test_op_level_selective_checkpointing_saves_every_other_matmul():
    # llama-3.1-8b LoRA (peft default targets q_proj, v_proj), 4 x 4096 tokens, bf16-pure: the block's
    # matmuls in order are q(4096) qA(16) qB(4096) k(1024) v(1024) vA(16) vB(1024) o(4096) gate(14336)
    # up(14336) down(4096); the 1st, 3rd, ... are saved: 4096+4096+1024+1024+14336+4096 = 28672 elements
    # per token, plus the attention output (4096) and logsumexp (4 B x 4 x 32 heads x 4096 per layer)
    job = trainplan.resolve("llama-3.1-8b", method="lora", precision="bf16-pure", grad_ckpt="op", batch_size=4,
                            seq_len=4096)
    ctx = layer_contexts(job.setup, resolve_regime(job.setup))[5]
    layer = structure(job.setup.model).layers[0][0]
    t = 4 * 4096
    assert op_sac_saves(ctx, job.setup.model, layer) == 2 * t * (28672 + 4096) + 4 * 4 * 32 * 4096


def test_every_nth_layer_checkpointing_lies_between_none_and_full():
    # torchtitan layer SAC (ac_freq 2): layers 2, 4, ... keep only their input, the others everything
    kw = dict(model="qwen2.5-0.5b", method="full", precision="bf16-pure", batch_size=4, seq_len=1024, gpu="h100")
    none, full = est(**kw, grad_ckpt="none"), est(**kw, grad_ckpt="full")
    half = est(**kw, grad_ckpt="full", grad_ckpt_every=2)
    act = lambda e: e.memory.components_bytes.get("activations", 0)  # noqa: E731
    assert act(full) < act(half) < act(none)
    assert none.time.step_s < half.time.step_s < full.time.step_s   # half the layers recompute
    layers = 24
    per = (act(none) - act(full)) / layers                            # saved - kept, per layer (uniform)
    assert act(half) == pytest.approx(act(full) + layers / 2 * per, rel=0.02)


# --- preference stages -----------------------------------------------------------------------------------

def test_dpo_runs_pairs_and_holds_a_reference_copy():
    # chosen + rejected together: the activations of twice the sequences; a frozen bf16 copy of the
    # model (2 B/param) for a full fine-tune; under LoRA the reference is the model with adapters off
    kw = dict(model="qwen2.5-0.5b", precision="bf16-pure", batch_size=2, seq_len=512, gpu="h100", samples=64)
    sft, dpo = est(**kw, method="full"), est(**kw, method="full", stage="dpo")
    pairs = est(model="qwen2.5-0.5b", precision="bf16-pure", batch_size=4, seq_len=512, gpu="h100", method="full")
    assert dpo.memory.components_bytes["activations"] == pairs.memory.components_bytes["activations"]
    assert dpo.memory.components_bytes["reference_model"] == 2 * sft.params.total
    assert dpo.time.steps == sft.time.steps == 32                      # 64 pairs / 2 per step
    lora = est(**kw, method="lora", stage="dpo")
    assert "reference_model" not in lora.memory.components_bytes
    assert lora.time.step_s > est(**kw, method="lora").time.step_s     # pairs and a reference forward
    orpo = est(**kw, method="full", stage="orpo")
    assert "reference_model" not in orpo.memory.components_bytes


# --- layouts ---------------------------------------------------------------------------------------------

def test_device_map_auto_splits_one_copy_and_runs_one_gpu_at_a_time():
    one = est(model="qwen2.5-7b", method="lora", gpu="a100")
    two = est(model="qwen2.5-7b", method="lora", gpu="a100", num_gpus=2, device_map="auto")
    assert two.layout.pp == 2 and two.layout.dp == 1
    assert two.memory.components_bytes["weights"] < 0.6 * one.memory.components_bytes["weights"]
    assert two.time.step_s == pytest.approx(one.time.step_s, rel=0.05)   # no speed-up: sequential


def test_ulysses_holds_what_context_parallel_holds():
    kw = dict(model="llama-3.1-8b", method="full", num_gpus=8, zero=3, gpu="h100", seq_len=32768)
    assert est(**kw, ulysses=4).memory.device_bytes == est(**kw, cp=4).memory.device_bytes


def test_max_steps_sets_the_run_length():
    e = est(model="qwen2.5-0.5b", method="lora", gpu="a100", max_steps=120)
    assert e.time.steps == 120 and e.time.total_s == pytest.approx(120 * e.time.step_s)


def test_qlora_leaves_grouped_moe_experts_unquantized():
    # transformers 5 replace_with_bnb_linear converts nn.Linear only: Qwen3MoeExperts' 3-D parameters
    # and the routers stay bf16 (2 B/param); the attention linears are 4-bit
    e = est(model="qwen3-30b-a3b", method="qlora", gpu="h100")
    assert e.memory.components_bytes["weights"] > 2 * 28e9        # the ~28.7B expert parameters alone


def test_fp32_head_gives_fp32_logits_without_autocast():
    # a plain PyTorch loop (no autocast) after prepare_model_for_kbit_training: the fp32 lm_head
    # returns fp32 logits, so the loss works on 4-byte logits (12 B per logit at its backward)
    kw = dict(model="qwen2.5-0.5b", method="qlora", framework="pytorch", batch_size=1, seq_len=1024, gpu="a100")
    fp32 = est(**kw, load_fp32=True).memory
    bf16 = est(**kw).memory
    n = 1024 * 151936
    assert fp32.components_bytes["logits_loss"] == 12 * n and bf16.components_bytes["logits_loss"] == 6 * n


# --- free text --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, framework", [
    ("Qwen finetune.py (HF Trainer + PEFT; DeepSpeed where noted)", Framework.HF),
    ("ms-swift `megatron sft` (Megatron-Core)", Framework.MEGATRON),
    ("ms-swift `swift sft` with DeepSpeed ZeRO-3", Framework.SWIFT),
    ("my-trainer (custom PyTorch trainer), transformers 4.49", Framework.PYTORCH),
    ("EasyContext train.py (accelerate + DeepSpeed ZeRO-3 offload)", Framework.HF),
    ("plain DeepSpeed engine", Framework.DEEPSPEED),
    ("Hugging Face Trainer, bf16", Framework.HF), ("Megatron-DeepSpeed (BLOOM)", Framework.MEGATRON),
    ("DeepSpeed-Chat step 1", Framework.DEEPSPEED), ("torch FSDP2 (fully_shard)", Framework.FSDP),
    ("XTuner 0.1.x, DeepSpeed ZeRO-3", Framework.DEEPSPEED),
    ("Llama weights from Hugging Face, trained with torchtune", Framework.TORCHTUNE),   # the trainer wins
])
def test_framework_named_in_text(text, framework):
    assert framework_in_text(text)[0] is framework
    assert framework_in_text("a control flow graph") is None      # "trl" inside a word is not TRL


def test_settings_written_in_text():
    said, _ = embedded_settings("flags cumulative: packed=True, compile=False, chunked_ce=True, ac=True, "
                                "opt_in_bwd=False, act_offload=True, --precision bf16-true")
    assert said == {"packing": True, "compile": False, "loss": "chunked", "grad_ckpt": "full",
                    "optimizer_in_backward": False, "activation_offload": True, "precision": "bf16-pure"}


@pytest.mark.parametrize("text, liger", [
    ("HF Trainer + Liger kernel", True), ("Liger-Kernel enabled", True), ("swift sft (Liger ON)", True),
    ("--use_liger_kernel true", True), ("without Liger", None), ("no liger kernel", None), ("Liger: off", None),
    ("liger=false", None), ("use_liger_kernel=False (Liger)", False), ("TRL SFTTrainer", None),
])
def test_liger_named_in_text(text, liger):
    said, _ = embedded_settings(text)
    assert said.get("liger") is liger
    assert said.get("loss") == ("fused" if liger else None)


def test_a_time_case_with_liger_runs_its_kernels_and_fused_loss():
    # the time reader applies what the memory reader does (cases.memorycase flags "liger", "loss")
    import copy
    import json
    from pathlib import Path

    from trainplan.cases import map_case
    from trainplan.enums import Loss

    cases = json.loads((Path(__file__).parent / "data" / "published_dev2.json").read_text())
    case = copy.deepcopy(next(c for c in cases if c["id"] == "universal-trainer-llama31-lora-1xh100-time"))
    plain = map_case(case).job.setup
    case["framework"] += ", use_liger_kernel=true"
    liger = map_case(case).job.setup
    assert (plain.impl.liger_kernels, plain.impl.loss) == (False, Loss.FULL)
    assert (liger.impl.liger_kernels, liger.impl.loss) == (True, Loss.FUSED)


@pytest.mark.parametrize("value, ckpt", [(True, "full"), ("not enabled in config", "none"),
                                         ("HF gradient checkpointing (activate: True)", "full"),
                                         ("selective", "selective"), (False, "none"), (None, None),
                                         ("not stated (paper: gradient checkpointing used)", None)])
def test_checkpointing_words(value, ckpt):
    assert grad_ckpt_of(value) == ckpt


def test_precision_from_what_each_part_is_kept_in():
    bf16 = {"weights": "bf16", "compute": "bf16", "master_weights": None, "optimizer_states": "bf16"}
    assert precision_of({"method": "full", "precision": bf16}, Framework.HF, sharded=False)[0] == "bf16-pure"
    assert precision_of({"method": "full", "precision": bf16}, Framework.HF, sharded=True)[0] is None
    fp32 = {"weights": "fp32", "compute": "bf16"}
    assert precision_of({"method": "lora", "precision": fp32}, Framework.HF, sharded=False)[:2] == ("bf16", True)


def test_gpu_named_by_size_only():
    gpu, note = gpu_of({"gpus": {"type": "not stated (80GB class implied)"}})
    assert gpu.memory_bytes == 80 * 10**9 and "assumed" in note


def test_plausibility_flag(capsys):
    from trainplan.cases.accuracy import evaluate
    case = {"id": "x", "kind": "memory", "model": {"name": "Llama-2-7b", "hf_id": "meta-llama/Llama-2-7b-hf"},
            "method": "full", "precision": {"weights": "fp32", "compute": "fp32"}, "micro_batch": 4,
            "seq_len": 2048, "grad_ckpt": False, "gpus": {"type": "A100-80GB", "count": 1},
            "framework": "HF Trainer", "measured": {"peak_mem_gib": 70.0, "what": "nvidia-smi"}}
    [result] = evaluate([case])
    assert any(n.startswith("plausibility: the estimate") and "a100-sxm4-80gb" in n for n in result.notes)


def test_gpu_not_stated_stands_in_and_is_not_judged():
    from trainplan.cases.accuracy import evaluate
    base = {"kind": "memory", "model": {"name": "Llama-2-7b", "hf_id": "meta-llama/Llama-2-7b-hf"},
            "method": "full", "precision": {"weights": "fp32", "compute": "fp32"}, "micro_batch": 4,
            "seq_len": 2048, "grad_ckpt": False, "framework": "HF Trainer",
            "measured": {"peak_mem_gib": 70.0, "what": "nvidia-smi"}}
    stated = {**base, "id": "a", "gpus": {"type": "A100-80GB", "count": 1}}
    unstated = {**base, "id": "b", "gpus": {"type": "not stated", "count": None}}
    sharded = {**base, "id": "c", "gpus": {"type": "not stated", "count": None},
               "framework": "LLaMA-Factory with DeepSpeed (config not given)"}
    a, b, c = evaluate([stated, unstated, sharded])
    assert b.predicted == a.predicted                       # bytes per GPU do not depend on the GPU's model
    assert any("stands in" in n for n in b.notes) and not any(n.startswith("plausibility") for n in b.notes)
    assert c.predicted is None and "sharding is unknown" in c.skipped


@pytest.mark.parametrize("targets, names", [
    ("all (LLaMA-Factory lora_target: all)", ("all-linear",)), ("all-linear", ("all-linear",)),
    ("q_proj, v_proj", ("q_proj", "v_proj")), ("q_proj v_proj", ("q_proj", "v_proj")),
    ("PEFT default for ChatGLM (query_key_value)", ()), ("", ()),
    (["q_proj", "output_proj"], ("q_proj", "o_proj")),     # torchtune lora_attn_modules
])
def test_lora_targets_written_as_text(targets, names):
    from trainplan.cases.common import lora_targets
    assert lora_targets({"lora": {"targets": targets}})[0] == names


@pytest.mark.parametrize("model, targets, names", [
    # Megatron-Core's TransformerLayer modules, as NeMo/Megatron-Bridge LoRA target_modules name them
    ("llama-2-7b", ("linear_qkv",), ["q_proj", "k_proj", "v_proj"]),
    ("llama-2-7b", ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"),
     ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    ("phi-3-mini-4k", ("linear_qkv", "linear_fc1"), ["qkv_proj", "gate_up_proj"]),   # fused in the HF model too
    # "mlp" (litgpt lora_mlp, torchtune apply_lora_to_mlp): every linear of the MLP, gated or not
    ("llama-3.2-1b", ("query", "value", "mlp"), ["q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"]),
    ("microsoft/phi-2", ("mlp",), ["fc1", "fc2"]),
    ("phi-3-mini-4k", ("mlp",), ["gate_up_proj", "down_proj"]),
    # litgpt's query/key/value on a fused q/k/v linear (LoRAQKVLinear): that linear
    ("tiiuae/falcon-7b", ("query", "value"), ["query_key_value"]),
    ("phi-3-mini-4k", ("query", "key", "value", "projection"), ["qkv_proj", "o_proj"]),
])
def test_megatron_module_names_as_lora_targets(model, targets, names):
    from trainplan import catalog
    from trainplan.model.params import resolve_lora_targets
    assert [lin.name for lin, _ in resolve_lora_targets(catalog.resolve_model(model), targets)] == names


@pytest.mark.parametrize("model, targets, names", [
    # the case readers write role aliases as the model's own module names, what peft and the exporters take
    ("microsoft/phi-2", ("query", "value", "mlp"), ("q_proj", "v_proj", "fc1", "fc2")),
    ("llama-3.2-1b", ("q_proj", "v_proj", "o_proj", "mlp"), ("q_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                             "down_proj")),
    ("tiiuae/falcon-7b", ("query", "value"), ("query_key_value",)),
    ("llama-3.2-1b", ("q_proj", "v_proj"), ("q_proj", "v_proj")),         # no alias: as given
])
def test_role_aliases_named_as_the_models_modules(model, targets, names):
    from trainplan import catalog
    from trainplan.model.params import named_targets
    assert named_targets(catalog.resolve_model(model), targets) == names


def test_an_estimate_names_the_modules_a_role_alias_reaches(capsys):
    # `--lora-targets query,value,mlp` on Phi-2 (litgpt's names): the setup, and so every export, names its modules
    from trainplan.cli import main
    assert main(["estimate", "--model", "phi-2", "--method", "lora", "--lora-targets", "query,value,mlp",
                 "--gpu", "a100-80gb", "--seq-len", "512"]) == 0
    assert "targets q_proj,v_proj,fc1,fc2" in capsys.readouterr().out
