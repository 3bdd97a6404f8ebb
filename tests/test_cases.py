"""Mapping ground-truth cases to setups (trainplan.cases): the facts each case states become flags."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainplan.cases import (
    CASE_FIELDS,
    Skip,
    load_cases,
    map_case,
    predict,
    validate_cases,
)
from trainplan.cases.common import case_model
from trainplan.cases.memorycase import (
    ALLOCATED,
    DEVICE,
    RESERVED,
    map_memory_case,
    memory_view,
)
from trainplan.cases.text import date_in_text, gpu_of
from trainplan.enums import (
    Framework,
    GradCkpt,
    Loss,
    MasterWeights,
    Method,
    MlpKind,
    Optimizer,
    Position,
    Precision,
)
from trainplan.errors import TrainplanError
from trainplan.job.training import TrainingSetup
from trainplan.timing.estimate import step_time
from trainplan.timing.flops import flops_per_token

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "tests" / "data" / "published_dev.json"

TORCHTUNE_LORA = {
    "id": "torchtune-3b-flags-08-lora-mem", "kind": "memory",
    "model": {"name": "Llama-3.2-3B", "hf_id": "meta-llama/Llama-3.2-3B"}, "method": "lora",
    "lora": {"rank": 64, "alpha": 128, "targets": ["q_proj", "v_proj", "output_proj", "mlp"]},
    "precision": {"weights": "bf16"}, "optimizer": "torch.optim.AdamW", "micro_batch": 2, "grad_accum": 1,
    "seq_len": 4096, "grad_ckpt": True, "attention": "torch SDPA", "gpus": {"type": "A100", "count": 1},
    "parallel": {"offload": "activation offloading to CPU"},
    "framework": "torchtune (commit 1814feb1); flags cumulative: packed=True, compile=True, chunked_ce=True, "
                 "ac=True, opt_in_bwd=False, act_offload=True, opt=torch.optim.AdamW",
    "measured": {"peak_mem_gib": 8.5, "what": "peak memory ACTIVE (torch.cuda.memory_stats active_bytes.all.peak)"},
    "source": {"repo": "pytorch/torchtune"}, "confidence": "high"}

QWEN_QLORA = {
    "id": "qwen1-readme-7b-q-lora-len2048-mem", "kind": "memory",
    "model": {"name": "Qwen-7B(-Chat)", "hf_id": "Qwen/Qwen-7B-Chat"}, "method": "qlora",
    "lora": {"rank": 64, "alpha": 16, "targets": ["c_attn", "c_proj", "w1", "w2"]},
    "quantization": {"type": "GPTQ int4 (Qwen-*-Chat-Int4 checkpoints)"},
    "precision": {"weights": "int4 GPTQ base", "compute": "bf16"}, "optimizer": "adamw_torch",
    "micro_batch": 1, "grad_accum": 8, "seq_len": 2048, "grad_ckpt": True, "attention": "flash-attention 2",
    "gpus": {"type": "A100-SXM4-80G", "count": 1}, "parallel": {},
    "framework": "Qwen finetune.py (HF Trainer + PEFT; DeepSpeed where noted)",
    "measured": {"peak_mem_gib": 13.9, "what": "reported GPU memory (method not stated)"},
    "source": {"repo": "QwenLM/Qwen"}, "notes": ""}


def with_(case: dict, **changes) -> dict:
    out = copy.deepcopy(case)
    out.update(changes)
    return out


@pytest.mark.parametrize("what, view", [
    ("torch.cuda.max_memory_allocated()/1e9", ALLOCATED),
    ("peak memory ACTIVE (torch.cuda.memory_stats active_bytes.all.peak)", ALLOCATED),
    ("not stated in README (PEFT example scripts print TorchTracemalloc peak)", ALLOCATED),
    ("torch.cuda.max_memory_reserved", RESERVED),
    ("nvidia-smi", DEVICE),
    ("torchtune log_memory_stats peak (README does not say allocated vs reserved vs active)", ALLOCATED),
    ("reported GPU memory (method not stated)", DEVICE),
    (None, DEVICE),
])
def test_memory_view_follows_what_was_measured(what, view):
    assert memory_view(what)[0] == view


def test_torchtune_flags_become_flags():
    m = map_case(TORCHTUNE_LORA)
    s = m.job.setup
    assert s.framework is Framework.TORCHTUNE and s.precision is Precision.BF16_PURE
    assert s.impl.activation_offload and not s.impl.optimizer_in_backward and s.impl.loss is Loss.CHUNKED
    assert s.impl.compiled                           # compile=True: compiled layers and loss
    assert set(s.lora.targets) == {"q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert s.lora.dropout == 0.0 and m.metric == ALLOCATED
    off = with_(TORCHTUNE_LORA, framework=TORCHTUNE_LORA["framework"].replace("compile=True", "compile=False")
                .replace("chunked_ce=True", "chunked_ce=False").replace("opt_in_bwd=False", "opt_in_bwd=True"))
    s = map_case(off).job.setup
    assert s.impl.loss is Loss.FULL and s.impl.loss_upcast and s.impl.optimizer_in_backward


def test_unpacked_torchtune_is_skipped_with_reason():
    case = with_(TORCHTUNE_LORA, framework=TORCHTUNE_LORA["framework"].replace("packed=True", "packed=False"))
    with pytest.raises(Skip, match="unpacked"):
        map_case(case)


def test_qwen_gptq_qlora_keeps_bf16_embeddings_and_bnb_qlora_does_not():
    m = map_case(QWEN_QLORA)
    assert m.job.setup.method is Method.QLORA and not m.job.setup.impl.load_fp32
    assert m.job.setup.lora.targets == ("all-linear",) and m.metric == DEVICE
    bnb = with_(QWEN_QLORA, quantization={"type": "bnb-nf4"})
    assert map_case(bnb).job.setup.impl.load_fp32       # peft prepare_model_for_kbit_training


def test_qwen_full_parameter_uses_the_scripts_deepspeed_config():
    notes = "Full-parameter rows: repo script finetune_ds.sh defaults to DeepSpeed ds_config_zero3.json"
    full = with_(QWEN_QLORA, method="full", lora=None, quantization=None, precision={"weights": "bf16"}, notes=notes)
    one = map_memory_case(full).options
    assert one.framework == "deepspeed" and int(one.zero) == 0      # ZeRO on one GPU shards nothing
    two = map_memory_case(with_(full, gpus={"type": "A100-SXM4-80G", "count": 2})).options
    assert int(two.zero) == 3 and two.num_gpus == 2
    plain = map_memory_case(with_(full, notes="")).options
    assert plain.precision == "bf16-pure"           # bf16 model, no master copy, no DeepSpeed


@pytest.mark.parametrize("field, value, reason", [
    ("model", {"name": "T0_3B", "hf_id": "bigscience/T0_3B"}, "encoder-decoder"),
    ("model", {"name": "mystery-9b", "hf_id": "acme/mystery-9b"}, "no architecture numbers"),
    ("lora", {"rank": 64, "alpha": 16, "targets": ["c_attn"], "modules_to_save": ["wte", "score"]},
     "modules-to-save 'score'"),       # the embedding and head copies are modelled, a classifier is not
    ("gpus", {"type": "abacus", "count": 1}, "GPU"),
])
def test_unmappable_cases_say_why(field, value, reason):
    with pytest.raises(Skip, match=reason):
        map_case(with_(QWEN_QLORA, **{field: value}))


def test_models_from_catalog_tables_and_numbers():
    assert case_model({"model": {"name": "x", "hf_id": "meta-llama/Llama-2-7b-hf"}})[0].name == "llama-2-7b"
    qwen, how = case_model({"model": {"name": "Qwen-1_8B", "hf_id": "Qwen/Qwen-1_8B-Chat"}})
    # the catalog's Qwen-1 (QwenLM/Qwen-1_8B config.json: intermediate_size 11008, each MLP branch 11008 // 2),
    # with modeling_qwen.py's fused c_attn
    assert qwen.hidden_size == 2048 and qwen.intermediate_size == 5504 and how == "catalog"
    assert qwen.name == "qwen-1.8b" and qwen.naming == "qwen"
    # a table's row name with its variants in an aside, and no hf_id: the name without the aside
    named, how = case_model({"model": {"name": "Qwen-7B(-Chat)", "hf_id": None}})
    assert named.name == "qwen-7b" and how == "model name read without its aside ('Qwen-7B(-Chat)' -> 'Qwen-7B'); catalog"
    with pytest.raises(Skip, match="not in the catalog"):
        case_model({"model": {"name": "(our fine-tune)", "hf_id": None}})
    bloomz, _ = case_model({"model": {"name": "bloomz-7b1", "hf_id": "bigscience/bloomz-7b1"}})
    assert bloomz.vocab_size == 250880 and bloomz.name == "bloomz-7b1"
    phi, how = case_model({"model": {"name": "phi-1_5", "hf_id": "microsoft/phi-1_5", "layers": 24, "hidden": 2048,
                                     "heads": 32, "kv_heads": 32, "intermediate": 8192, "vocab": 51200}})
    assert phi.parallel_attn_mlp and phi.norms_per_layer == 1 and phi.naming == "llama" and "litgpt" in how
    synth, how = case_model({"model": {"name": "new-8b", "hf_id": "acme/new-8b", "layers": 32, "hidden": 4096,
                                       "heads": 32, "kv_heads": 8, "intermediate": 14336, "vocab": 128256}})
    assert synth.num_kv_heads == 8 and "synthesized" in how


def test_a_gpt2_config_builds_gpt2s_block_not_llamas():
    # flash-attention's GPT3-1.3B: configs/model/gpt2.yaml builds a transformers GPT2Config (n_embd 2048,
    # n_head 16, n_layer 24 from the experiment yaml): LayerNorm, learned positions, GELU MLP of n_inner,
    # tied head. Its linears per layer: c_attn 3h^2 + c_proj h^2 + c_fc 4h^2 + mlp c_proj 4h^2 = 12 h^2 =
    # 50,331,648 weights; forward FLOPs per token 2 x 24 x 50,331,648 = 2,415,919,104 (a llama block of
    # the same sizes has a gated 3-matrix MLP: 16 h^2, 3,221,225,472)
    model = {"name": "GPT3-1.3B", "hf_id": None, "layers": 24, "hidden": 2048, "heads": 16, "kv_heads": 16,
             "intermediate": 8192, "vocab": 50264, "tied_embeddings": None,
             "arch_source": "flash-attention training/configs/experiment/pile/gpt3xl-flash.yaml (+ gpt2model yaml)"}
    gpt, how = case_model({"model": model})
    assert gpt.model_type == "gpt2" and gpt.mlp_kind is MlpKind.PLAIN and gpt.position is Position.LEARNED
    assert gpt.tied_embeddings and "GPT2Config" in how
    setup = TrainingSetup(model=gpt, method=Method.FULL, batch_size=1, seq_len=2048, precision=Precision.BF16)
    assert flops_per_token(setup).linear_fwd == 2 * 24 * 12 * 2048 ** 2 == 2_415_919_104
    llama, how = case_model({"model": {**model, "arch_source": None}})
    assert llama.mlp_kind is not MlpKind.PLAIN and "synthesized" in how


@pytest.mark.parametrize("text, gpu_id", [("A100-SXM4-40GB", "a100-sxm4-40gb"), ("A100 (memory size not stated)",
                                           "a100-sxm4-80gb"), ("RTX 4090 (24GB)", "rtx4090"),
                                          ("RTX A6000 (48GB)", "rtx-a6000"), ("H100 80GB", "h100-sxm"),
                                          ("H200 141GB", "h200-sxm"), ("L40S", "l40s")])
def test_gpu_words(text, gpu_id):
    assert gpu_of({"gpus": {"type": text}})[0].id == gpu_id


def test_case_without_measurement_is_still_predicted():
    case = with_(QWEN_QLORA)
    del case["measured"]
    m = map_case(case)
    values = predict(m)
    assert m.measured is None and values["device_bytes"] > values["peak_allocated_bytes"] > 0
    assert values["step_s"] > 0 and values["gpu_hours"] is None


def test_validation_rejects_unknown_fields_and_duplicates():
    with pytest.raises(TrainplanError, match="unknown field"):
        validate_cases([with_(QWEN_QLORA, throughput=1)])
    with pytest.raises(TrainplanError, match="twice"):
        validate_cases([QWEN_QLORA, QWEN_QLORA])
    with pytest.raises(TrainplanError, match="kind"):
        validate_cases([with_(QWEN_QLORA, kind="energy")])
    assert set(QWEN_QLORA) <= CASE_FIELDS


def test_load_cases_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TrainplanError, match="malformed JSON"):
        load_cases(bad)
    with pytest.raises(TrainplanError):
        load_cases(tmp_path / "missing.json")
    with pytest.raises(TrainplanError, match="expected a JSON list of cases"):
        bad.write_text('{"about": "no cases here"}')
        load_cases(bad)


def test_case_file_may_describe_itself_beside_its_cases(tmp_path):
    # benchmarks/data/*_cases.json: {"about": ..., "cases": [...]}; the description is not a case
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"about": "where these came from", "cases": [QWEN_QLORA]}))
    assert [c["id"] for c in load_cases(path, strict=False)] == [QWEN_QLORA["id"]]


def test_dev_set_maps_and_every_memory_case_names_its_view():
    cases = load_cases(DEV)
    mapped = {c["id"]: map_case(c) for c in cases if _maps(c)}
    memory = [c for c in cases if c["kind"] == "memory"]
    time_cases = [c for c in cases if c["kind"] == "time"]
    assert sum(c["id"] in mapped for c in memory) >= 0.8 * len(memory)
    assert sum(c["id"] in mapped for c in time_cases) >= 0.7 * len(time_cases)
    for c in memory:
        if c["id"] in mapped:
            assert any("view" in n for n in mapped[c["id"]].notes)


def _maps(case: dict) -> bool:
    try:
        map_case(case)
        return True
    except Skip:
        return False


def test_time_benchmark_uses_the_shared_mapping():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "time_accuracy.py"), str(DEV)],
                         capture_output=True, text=True, check=True).stdout
    assert "n=60  median |error|   7.2%  p90  19.9%" in out


MPT_TIME = {
    "id": "mpt-bench-7b-seq2048-8xa100_80gb-amp_bf16", "kind": "time",
    "model": {"name": "MPT-7B", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": None, "intermediate": 16384,
              "vocab": 50432},
    "method": "pretrain", "precision": {"compute": "amp_bf16"}, "optimizer": "DecoupledAdamW", "micro_batch": 8,
    "seq_len": 2048, "grad_ckpt": False, "attention": "flash", "gpus": {"type": "A100 80GB", "count": 8},
    "parallel": {"fsdp": "FULL_SHARD"}, "framework": "MosaicML llm-foundry + Composer",
    "measured": {"tokens_per_s_per_gpu": 4641, "tflops_per_gpu": 200.0, "mfu": 0.6423},
    "source": {"repo": "mosaicml/llm-foundry"}}


def test_time_case_predicts_the_metric_it_reports():
    m = map_case(MPT_TIME)
    assert m.metric == "tokens_per_s_per_gpu" and m.measured == 4641
    only_mfu = with_(MPT_TIME, measured={"mfu": 0.6423})
    m = map_case(only_mfu)
    assert m.metric == "mfu" and 0.3 < predict(m)["mfu"] < 0.9
    hours = with_(MPT_TIME, measured={"gpu_hours": 100.0, "tokens_total": 8 * 4641 * 3600 * 12.5})
    m = map_case(hours)
    assert m.metric == "gpu_hours" and m.job.layout.num_gpus == 8          # the case's own layout, not a model card
    assert predict(m)["gpu_hours"] == pytest.approx(100.0, rel=0.3)


def test_time_case_step_is_what_its_own_figures_cover():
    """A case giving step time and tokens/s per GPU says what its step covers (their product). Equal
    to the optimizer step (here 8 GPUs x 8 x 2048 tokens x 2 accumulation = 32768 per GPU): the step
    time is compared; one micro-batch (16384 per GPU): the throughput is, with a note."""
    optimizer_step = with_(MPT_TIME, grad_accum=2, measured={"step_time_s": 8.0, "tokens_per_s_per_gpu": 4096})
    m = map_case(optimizer_step)
    assert m.metric == "step_s" and m.measured == 8.0
    micro_step = with_(MPT_TIME, grad_accum=2, measured={"step_time_s": 4.0, "tokens_per_s_per_gpu": 4096})
    m = map_case(micro_step)
    assert m.metric == "tokens_per_s_per_gpu" and m.measured == 4096
    assert any("16384 tokens per GPU, the optimizer step 32768" in n for n in m.notes)


def test_time_case_accumulation_from_the_global_batch():
    """No grad_accum given: global batch / (micro-batch x data parallel) = 256 / (1 x 64 / (4 x 8)) = 128."""
    case = with_(MPT_TIME, micro_batch=1, global_batch=256, gpus={"type": "H100 SXM 80GB", "count": 64},
                 parallel={"tp": 4, "pp": 8, "dp": 2})
    assert map_case(case).job.setup.grad_accum == 128


def test_megatron_runs_the_micro_batches_its_global_batch_gives():
    """Megatron takes no accumulation setting: global batch // (micro-batch x data parallel) micro-batches
    run (megatron/core/num_microbatches_calculator.py). 512 // (4 x 64 / (1 x 4)) = 512 // 64 = 8, not
    the 2 a table states; other frameworks keep the stated figure."""
    megatron = with_(MPT_TIME, micro_batch=4, global_batch=512, grad_accum=2, framework="Megatron-LM",
                     gpus={"type": "H100 SXM 80GB", "count": 64}, parallel={"tp": 1, "pp": 4, "dp": 16})
    assert map_case(megatron).job.setup.grad_accum == 8
    hf = with_(megatron, framework="HF Trainer", parallel={"zero_stage": 2, "dp": 16})
    assert map_case(hf).job.setup.grad_accum == 2


TITAN_405B = {
    "id": "titan-405b-3d", "kind": "time",
    "model": {"name": "Llama 3.1 405B", "hf_id": "meta-llama/Llama-3.1-405B"}, "method": "pretrain",
    "precision": {"weights": "fp32 (FSDP mixed precision)", "compute": "bf16 + Float8 (torchao)"},
    "optimizer": "AdamW", "micro_batch": 32, "global_batch": 256, "seq_len": 8192,
    "grad_ckpt": "full", "attention": "SDPA", "gpus": {"type": "H100", "count": 512},
    "parallel": {"fsdp": "FSDP2", "dp": 8, "tp": 8, "pp": 8, "other": "schedule 1F1B"},
    "framework": "torchtitan 9dec370 (2024/12/26), torch.compile", "measured": {"tokens_per_s_per_gpu": 100},
    "source": {"repo": "example/torchtitan-style"}, "confidence": "high"}


@pytest.mark.parametrize("framework_text, other, micro, accum, stages", [
    # 2024-12-26: experimental.pipeline_parallel_microbatches defaulted to the pipeline degree, 8:
    # the local batch 32 runs as 8 microbatches of 4; a looped schedule has 2 stages per rank
    ("torchtitan 9dec370 (2024/12/26)", "schedule 1F1B", 4, 8, 1),
    ("torchtitan 9dec370 (2024/12/26)", "Interleaved 1F1B", 4, 8, 2),
    # 2025-02 (after 90567fc, 2025-01-07): the number of stages, 8 x 2 = 16 microbatches of 2
    ("torchtitan, Feb 2025", "Interleaved1F1B", 2, 16, 2),
    # undated or a release (v0.1.0 on): pipeline_parallel_microbatch_size 1, 32 microbatches of 1
    ("torchtitan v0.2.2", "schedule 1F1B", 1, 32, 1)])
def test_torchtitan_pipeline_splits_its_local_batch(framework_text, other, micro, accum, stages):
    case = with_(TITAN_405B, framework=framework_text, parallel={**TITAN_405B["parallel"], "other": other})
    job = map_case(case).job
    assert (job.setup.batch_size, job.setup.grad_accum, job.timing.pp_interleave) == (micro, accum, stages)
    # the bubble the schedule leaves: 1F1B (p - 1) / m of the compute, interleaved (p - 1) / (v m)
    b = predict_time(job).breakdown
    assert b.bubble_s / b.compute_s == pytest.approx(7 / (stages * accum))


def test_torchtitan_case_reads_float8_and_its_selective_checkpointing():
    job = map_case(with_(TITAN_405B, grad_ckpt="Selective activation checkpointing")).job
    assert job.setup.precision is Precision.FP8 and job.setup.impl.fp8_recipe is None   # the framework's default
    assert job.setup.grad_ckpt is GradCkpt.OP        # torchtitan's shipped llama3 configs: selective_ac_option "op"
    every = map_case(with_(TITAN_405B, grad_ckpt="selective, every 2 layers (selective_ac_option=2)")).job
    # torchtitan's layer SAC checkpoints every 2nd block whole (_apply_layer_sac), as `--from` reads it
    assert every.setup.grad_ckpt is GradCkpt.FULL and every.setup.grad_ckpt_every == 2
    megatron = map_case(with_(TITAN_405B, framework="Megatron-LM", grad_ckpt="selective")).job
    assert megatron.setup.grad_ckpt is GradCkpt.SELECTIVE


@pytest.mark.parametrize("value, date", [
    ("torchtitan 9dec370 (2024/12/26), torch 1963fc8 (2024/12/23)", "2024-12-26"), ("at the end of 2024", "2024-12"),
    ("Dec 2024", "2024-12"), ("2025-04-07", "2025-04-07"), ("v0.2.2", None), (None, None)])
def test_date_in_text(value, date):
    assert date_in_text(value) == date


def predict_time(job):
    return step_time(job.setup, job.layout, job.gpu, workload=job.workload, options=job.timing)


def test_unstated_checkpointing_is_the_frameworks_default():
    # not stated: the framework's own default (torchtune's recipes checkpoint, HF Trainer does not), and a
    # trainer's code default (XTuner's SupervisedFinetune(use_activation_checkpointing=True), over DeepSpeed)
    base = with_(MPT_TIME, grad_ckpt="not stated in the table", gpus={"type": "A100 80GB", "count": 8}, parallel={})
    assert map_case(with_(base, framework="torchtune")).job.setup.grad_ckpt is GradCkpt.FULL
    assert map_case(with_(base, framework="HF Trainer")).job.setup.grad_ckpt is GradCkpt.NONE
    xtuner = map_case(with_(base, framework="XTuner + DeepSpeed ZeRO-3, packed to max length", parallel={"zero_stage": 3}))
    assert xtuner.job.setup.framework is Framework.DEEPSPEED and xtuner.job.setup.grad_ckpt is GradCkpt.FULL
    assert any("use_activation_checkpointing=True" in n for n in xtuner.notes)
    stated = map_case(with_(base, framework="XTuner", grad_ckpt=False, parallel={"zero_stage": 3}))
    assert stated.job.setup.grad_ckpt is GradCkpt.NONE
    memory = map_case(with_(TORCHTUNE_LORA, framework="XTuner", grad_ckpt="not stated", parallel={}))
    assert memory.job.setup.grad_ckpt is GradCkpt.FULL


@pytest.mark.parametrize(("framework", "expected"), [
    # Unsloth: its fused cross-entropy (fast_cross_entropy_loss) and offloaded checkpoints
    ("Unsloth", {"loss": Loss.FUSED, "activation_offload": True, "liger_kernels": True}),
    # litgpt --precision bf16-true: chunked lm_head + cross-entropy on 16-bit logits, one fused qkv linear
    ("litgpt", {"loss": Loss.CHUNKED, "loss_upcast": False, "fused_qkv": True, "fused_gelu": True}),
    # a plain PyTorch loop: no fp32 master copy, cross-entropy on the model's own logits
    ("plain PyTorch loop", {"master_weights": MasterWeights.NONE, "loss_upcast": False}),
    # DeepSpeed: bf16 weights, the fp32 master copy in its optimizer
    ("DeepSpeed", {"master_weights": MasterWeights.OPTIMIZER}),
    # torchtune: chunked cross-entropy in 8 chunks, no master copy
    ("torchtune", {"loss": Loss.CHUNKED, "loss_chunks": 8, "master_weights": MasterWeights.NONE}),
])
def test_a_time_case_runs_its_frameworks_implementation(framework, expected):
    # the time reader starts from the framework's profile as the memory reader does: a case names the trainer,
    # the trainer fixes its loss kernel and master copy
    base = with_(MPT_TIME, method="full", gpus={"type": "A100 80GB", "count": 1}, parallel={}, framework=framework)
    time_impl = map_case(base).job.setup.impl
    memory_impl = map_case(with_(base, kind="memory", measured={"peak_mem_gib": 40.0, "what": "max_memory_allocated"})
                           ).job.setup.impl
    for field, value in expected.items():
        assert getattr(time_impl, field) == value, field
        assert getattr(memory_impl, field) == value, field


@pytest.mark.parametrize(("framework", "field"), [
    ("MosaicML llm-foundry + Composer", "fused_ce"),      # flash-attn's fused CrossEntropyLoss (modeling_mpt.py)
    ("TinyLlama pretrain (lit_gpt)", "fused_kernels"),    # flash-attn's fused RMSNorm, rotary, xformers SwiGLU
    ("NeMo AutoModel", "te_attention"),                   # Transformer Engine attention (BackendConfig attn 'te')
    ("plain PyTorch loop (PEFT method_comparison/MetaMathQA run.py)", "loss_upcast"),   # labels: ForCausalLMLoss
])
def test_a_memory_case_keeps_what_its_trainer_fixes(framework, field):
    # a fact no flag sets reaches the memory reader's setup too, instead of the case being skipped as malformed
    base = with_(TORCHTUNE_LORA, framework=framework, gpus={"type": "A100 80GB", "count": 1}, parallel={})
    memory = map_case(base)
    time = map_case(with_(base, kind="time", measured={"step_time_s": 1.0}))
    assert getattr(memory.job.setup.impl, field) is True
    assert getattr(time.job.setup.impl, field) is True


@pytest.mark.parametrize(("flag", "loss"), [("chunked_ce=True", Loss.CHUNKED), ("chunked_ce=False", Loss.FULL)])
def test_a_stated_loss_reaches_both_readers(flag, loss):
    # torchtune's flag list states its loss (torchtune's default is chunked): the time reader reads it as the
    # memory reader does
    text = TORCHTUNE_LORA["framework"].replace("chunked_ce=True", flag)
    memory = map_case(with_(TORCHTUNE_LORA, framework=text))
    time = map_case(with_(TORCHTUNE_LORA, framework=text, kind="time", measured={"tokens_per_s_per_gpu": 1000.0}))
    assert memory.job.setup.impl.loss is loss and time.job.setup.impl.loss is loss


def test_a_plain_loop_computing_its_own_loss_keeps_16_bit_logits():
    # universal-llm-trainer's models call the transformers model without labels and run nn.CrossEntropyLoss on
    # its 16-bit logits (src/models/llama3.py forward): the plain-loop profile's loss_upcast False stands
    base = with_(TORCHTUNE_LORA, framework="universal-llm-trainer (custom PyTorch trainer)",
                 gpus={"type": "A100 80GB", "count": 1}, parallel={})
    assert map_case(base).job.setup.impl.loss_upcast is False


CARD = {"id": "card", "kind": "time", "model": {"name": "Llama-2-70B", "hf_id": "meta-llama/Llama-2-70b-hf"},
        "method": "pretrain", "precision": {"compute": "bf16"}, "optimizer": "AdamW", "micro_batch": None,
        "seq_len": 4096, "grad_ckpt": None, "attention": None, "gpus": {"type": "A100-80GB", "count": None},
        "parallel": {}, "framework": "in-house", "measured": {"gpu_hours": 1.72e6, "tokens_total": 2e12},
        "source": {"repo": "example/card"}, "confidence": "medium"}


def test_model_card_uses_what_the_card_states():
    # nothing stated: 2048 GPUs, tp 8 (hidden 8192), 16M tokens = 4096 sequences of 4096 -> dp 256, accum 16
    job = map_case(CARD).job
    assert (job.layout.num_gpus, job.layout.tp, job.layout.pp, job.setup.grad_accum) == (2048, 8, 1, 16)
    # stated: 512 GPUs, tp 2, pp 4, global batch 1024 sequences -> dp 512 / 8 = 64, accum 1024 / 64 = 16
    stated = map_case(with_(CARD, gpus={"type": "A100-80GB", "count": 512}, global_batch=1024,
                            parallel={"tp": 2, "pp": 4})).job
    assert (stated.layout.num_gpus, stated.layout.tp, stated.layout.pp, stated.setup.grad_accum) == (512, 2, 4, 16)
    # an MoE model: experts over one node's 8 GPUs unless the card says otherwise
    moe = with_(CARD, model={"name": "Mixtral-8x7B", "hf_id": "mistralai/Mixtral-8x7B-v0.1"})
    assert map_case(moe).job.layout.ep == 8
    assert map_case(with_(moe, parallel={"ep": 4})).job.layout.ep == 4


def test_a_card_layout_that_does_not_fit_grows_tensor_then_pipeline():
    from trainplan.frozen import replace
    from trainplan.memory import estimate_memory
    from trainplan.memory.parallel import ParallelConfig

    def fits(job):
        return estimate_memory(job.setup, job.layout, job.gpu, parallel=ParallelConfig(uneven_pipeline=True)).fits

    # Llama 3.1 8B at 8,192 tokens on 80 GB H100s: tp 1 (the default, one sequence a rank) does not fit, tp 2 does
    small = with_(CARD, model={"name": "Llama-3.1-8B", "hf_id": "meta-llama/Llama-3.1-8B"}, seq_len=8192,
                  gpus={"type": "H100-80GB", "count": None})
    job = map_case(small).job
    assert (job.layout.tp, job.layout.pp) == (2, 1) and fits(job)
    assert not fits(map_case(with_(small, parallel={"tp": 1})).job)      # stated: kept as stated
    # Llama 3.1 405B: tensor 8 first, then pipeline; 1F1B keeps about one micro-batch of every layer's selective
    # activations on the first stage at any depth, so it fits only with full recomputation (at the smallest depth)
    big = map_case(with_(small, model={"name": "Llama-3.1-405B", "hf_id": "meta-llama/Llama-3.1-405B"})).job
    assert big.layout.tp == 8 and big.setup.grad_ckpt is GradCkpt.FULL and fits(big)
    shallower = map_case(with_(small, model={"name": "Llama-3.1-405B", "hf_id": "meta-llama/Llama-3.1-405B"},
                               parallel={"tp": 8, "pp": big.layout.pp // 2})).job
    assert not fits(replace(shallower, setup=replace(shallower.setup, grad_ckpt=GradCkpt.FULL)))
    assert any("grown until it fits the GPU, with full recomputation" in n for n in map_case(
        with_(small, model={"name": "Llama-3.1-405B", "hf_id": "meta-llama/Llama-3.1-405B"})).notes)


def test_data_parallel_is_what_model_parallelism_leaves():
    # no dp stated: 64 GPUs / (tp 4 x pp 4) = 4 data-parallel ranks; Megatron runs 128 // (1 x 4) = 32
    # micro-batches (before: 128 // 64 = 2, the GPU count taken for the data-parallel size)
    case = with_(MPT_TIME, micro_batch=1, global_batch=128, framework="NeMo 24.07",
                 gpus={"type": "H100 SXM", "count": 64}, parallel={"tp": 4, "pp": 4, "cp": 1})
    assert map_case(case).job.setup.grad_accum == 32
    # Ulysses sequence parallel shares each sequence between its ranks as well: 8 / 4 = 2 ranks, 16 // 2 = 8
    ulysses = with_(MPT_TIME, micro_batch=1, global_batch=16, grad_accum=None, framework="DeepSpeed",
                    gpus={"type": "A100 80GB", "count": 8}, parallel={"zero_stage": 3, "sp": 4})
    assert map_case(ulysses).job.setup.grad_accum == 8


def test_megatron_distributed_optimizer_and_fused_adam():
    # "distributed optimizer" named: ZeRO-1 over data parallel (megatron/core/optimizer/distrib_optimizer.py);
    # Megatron's Adam is Transformer Engine's (else Apex's) FusedAdam, never torch's foreach AdamW
    case = with_(MPT_TIME, micro_batch=1, global_batch=128, framework="Megatron-LM",
                 optimizer="Adam (distributed optimizer)", gpus={"type": "H100 SXM", "count": 64},
                 parallel={"tp": 4, "pp": 4})
    job = map_case(case).job
    assert job.layout.zero == 1 and job.setup.optimizer is Optimizer.ADAMW_FUSED
    plain = map_case(with_(case, optimizer="Adam")).job
    assert plain.layout.zero == 0 and plain.setup.optimizer is Optimizer.ADAMW_FUSED
    hf = map_case(with_(case, framework="HF Trainer", optimizer="AdamW (torch)", parallel={})).job
    assert hf.setup.optimizer is Optimizer.ADAMW
    fsdp = map_case(with_(case, parallel={"fsdp": "Megatron-FSDP size 8"}, gpus={"type": "H100 SXM", "count": 8})).job
    assert fsdp.layout.zero == 0                    # FSDP named: it shards the optimizer itself


def test_time_case_reads_ulysses_sequence_parallel():
    """A run's `sp` (DeepSpeed / XTuner / ms-swift sequence parallel) is Ulysses over that many GPUs: each
    holds 1/sp of every sequence and trades it for a head shard around attention (the same reading as the
    memory cases'); `cp` stays ring attention."""
    case = with_(MPT_TIME, framework="XTuner (DeepSpeed ZeRO-3)", seq_len=32768, micro_batch=1,
                 parallel={"zero_stage": 3, "sp": 8})
    m = map_case(case)
    assert (m.job.layout.cp, m.job.layout.ulysses) == (8, True)
    ring = map_case(with_(MPT_TIME, seq_len=32768, micro_batch=1, parallel={"fsdp": "FULL_SHARD", "cp": 8}))
    assert (ring.job.layout.cp, ring.job.layout.ulysses) == (8, False)
