"""Chinese for the notes of the time and memory models (trainplan.i18n.translate with the zh catalog).

Each test builds one estimate, picks the note it is about by its English start, and asserts the whole
Chinese text, written out here with the numbers of that setup (derived by hand in the comments): an
English note whose wording changes no longer matches its catalog template and fails here, instead of
printing in English inside `--lang zh` output."""

from __future__ import annotations

import datetime
import re

import pytest

import trainplan
from trainplan.i18n import translate

TODAY = datetime.date(2026, 1, 15)
CJK = re.compile(r"[\u4e00-\u9fff]")


def _notes(model: str, **options) -> tuple[str, ...]:
    return trainplan.estimate(model, calibration=False, today=TODAY, **options).notes


def _note(notes: tuple[str, ...], start: str) -> str:
    found = [n for n in notes if n.startswith(start)]
    assert len(found) == 1, f"one note starting {start!r} expected, got {found} in {notes}"
    return found[0]


def _zh(note: str) -> str:
    return translate(note, lang="zh")


MEGATRON_70B = dict(method="full", gpu="h100", num_gpus=64, nodes=8, framework="megatron", tp=8, pp=4,
                    grad_accum=16)


def test_gpipe_bubble_and_tensor_parallel_notes():
    notes = _notes("llama-3-70b", pp_schedule="gpipe", **MEGATRON_70B)
    # GPipe: idle / busy = (p - 1) / m = 3 / 16 = 0.1875; share of the step 0.1875 / 1.1875 = 15.8%
    assert _zh(_note(notes, "pipeline bubble")) == "流水线气泡占步长时间的 15.8%（gpipe，p=4，m=16，v=1）"
    assert _zh(_note(notes, "tensor parallel 8: efficiency")) == (
        "张量并行 8：效率按完整隐藏维度取值（假设启用序列并行；每 GPU 上更窄的矩阵乘可能更慢）")
    assert _zh(_note(notes, "tensor parallel 8: Q/K/V")) == (
        "张量并行 8：Q/K/V/gate/up 列并行，O/down 行并行，嵌入层与输出头按词表并行，归一化层复制；"
        "激活值启用序列并行（每个保存的张量 / tp）")


def test_default_schedule_bubble_and_zero_bubble_notes():
    # 1F1B, the framework's default: (p - 1) / m = 3 / 16 again, 15.8% of the step
    notes = _notes("llama-3-70b", **MEGATRON_70B)
    assert _zh(_note(notes, "pipeline bubble")) == "流水线气泡占步长时间的 15.8%（1f1b（框架默认），p=4，m=16，v=1）"
    zbv = _notes("llama-3-70b", pp_schedule="zbv", **MEGATRON_70B)
    assert _zh(_note(zbv, "pipeline schedule zbv")) == (
        "流水线调度 zbv：不计气泡（Qi et al. 2024 的分析中气泡为零；p=4，m=16）")


def test_expert_parallel_notes():
    notes = _notes("qwen3-30b-a3b", method="full", gpu="h100", num_gpus=8, framework="megatron", ep=8)
    # Qwen3-30B-A3B: 128 routed experts / ep 8 = 16 per GPU
    assert _zh(_note(notes, "expert parallel 8:")) == "专家并行 8：每个 GPU 16 个专家；假设路由的 token 均匀分布"
    over = _note(notes, "expert parallel over ")
    assert _zh(over) == "专家并行经由 " + over.removeprefix("expert parallel over ")
    assert _zh(_note(notes, "routed experts:")).startswith("路由专家：每个 GPU 16 个，")


def test_context_parallel_note():
    notes = _notes("llama-3-8b", method="full", gpu="h100", num_gpus=8, framework="megatron", tp=2, cp=2,
                   seq_len=32768)
    # 32768 tokens / cp 2 = 16384 per GPU
    assert _zh(_note(notes, "context parallel 2:")) == "上下文并行 2：每个 GPU 处理每条序列的 16384 个 token"


def test_deepspeed_zero3_optimizer_offload_notes():
    notes = _notes("llama-3-8b", method="full", gpu="h100", num_gpus=8, framework="deepspeed", zero=3,
                   offload="optimizer", host_cpus=96, host_mem_gb_per_s=200)
    # 8,030,261,248 params / 8 ranks = 1.004e9 per rank. Each micro-batch the 16-bit gradient partition
    # goes down and back up: 2 x 2 B x 1.004e9 = 4.02 GB; at the step the fp32 gradient down
    # (4 B x 1.004e9 = 4.02 GB) and the updated 16-bit partition up (2.01 GB): 6.02 GB
    assert _zh(_note(notes, "DeepSpeed ZeRO-3 offload:")) == (
        "DeepSpeed ZeRO-3 卸载：每个微批经 PCIe 传输 4.02 GB（梯度缓冲区；与计算重叠），优化器步时 6.02 GB")
    # the host: 96 cores and 200 GB/s as given (one rank per GPU, 8 on the DGX H100 host)
    assert _zh(_note(notes, "CPU optimizer:")) == (
        "CPU 优化器：DeepSpeedCPUAdam（对 fp32 的 p、g、m、v 做一次融合遍历，28 B）+ 转换为 16 位副本（6 B）；"
        "8 个进程 x 1B 参数，运行于 DGX H100 / DGX H200（用户给定值）（96 核，DRAM 200 GB/s x 75%），96 个线程")
    assert _zh(_note(notes, "ZeRO-3 offload:")) == (
        "ZeRO-3 卸载：master_weights, optimizer, fp32_gradients 放在 CPU 内存；优化器步在 CPU 上运行")


def test_zero2_reduce_bucket_note():
    notes = _notes("llama-3-8b", method="full", gpu="h100", num_gpus=8, framework="deepspeed", zero=2)
    # DeepSpeed defaults: reduce_bucket_size 5e8, overlap_comm off below ZeRO-3: one bucket
    assert _zh(_note(notes, "ZeRO-2:")) == (
        "ZeRO-2：反向中有 1 个规约桶，每个 5e+08 个元素；fp32 梯度分区在 step() 中构建")


def test_fp8_recipe_on_hopper_note():
    # te-mxfp8 on an H100 is refused (job/validate.py); the planner's note for it is still translated
    from trainplan.i18n import translate

    assert translate("te-mxfp8 needs Blackwell tensor cores; h100-sxm is timed with its bytes anyway",
                     lang="zh") == "te-mxfp8 需要 Blackwell 张量核心；h100-sxm 仍按该配方的字节数计时"
    notes = _notes("llama-3-8b", method="full", gpu="b200", num_gpus=8, framework="megatron",
                   precision="fp8", fp8_recipe="te-mxfp8")
    fp8 = _zh(_note(notes, "FP8 (te-mxfp8)"))
    assert fp8.startswith("FP8（te-mxfp8）：解码层线性层（fprop, dgrad, wgrad）按 FP8 峰值的 ")
    assert fp8.endswith(" ms（权重每步只转换一次）")


def test_workload_notes():
    # --tokens 15T of 2,048-token samples: 15e12 / 2048 = 7,324,218,750 samples
    tokens = _notes("llama-3-8b", method="lora", gpu="h100", tokens=15e12)
    assert _zh(_note(tokens, "--tokens")) == "--tokens 15.00T：7,324,218,750 个样本，每个 2,048 token"
    steps = _notes("llama-3-8b", method="lora", gpu="h100", max_steps=500, samples=10000)
    assert _zh(_note(steps, "steps =")) == "步数 = 500（给定了 max_steps）；训练长度不采用 --samples 10000"
    # packing 512-token samples into 2048-token sequences: 2048 / 512 = 4.00 per sequence
    packed = _notes("llama-3-8b", method="lora", gpu="h100", packing=True, tokens_per_sample=512, samples=1000)
    assert _zh(_note(packed, "packed:")) == "打包：每条 2048 token 的序列装 4.00 个 512 token 的样本"
    pairs = _notes("llama-3-8b", method="lora", gpu="h100", stage="dpo")
    assert _zh(_note(pairs, "preference pairs")) == "偏好对：每个样本 2 条序列（chosen、rejected）"
    assert _zh(_note(pairs, "a reference forward")) == "每个微批多一次参考模型前向（无梯度）：关闭适配器的同一模型"


def test_device_map_and_consumer_gpu_notes():
    notes = _notes("llama-3-8b", method="lora", gpu="h100", num_gpus=2, device_map="auto")
    # 2 GPUs in sequence: the step is 2 x one stage's compute
    assert _zh(_note(notes, "device_map=auto")) == (
        "device_map=auto：2 个 GPU 各放一段连续的层并依次运行（accelerate 大模型推理钩子），因此每步耗时为单个阶段计算的 2 倍")
    geforce = _notes("llama-3-8b", method="lora", gpu="rtx4090", num_gpus=4, framework="deepspeed", zero=2)
    assert _zh(_note(geforce, "GPU to GPU inside a node")) == (
        "假设节点内 GPU 之间经 PCIe 点对点（P2P）通信；GeForce 驱动可能禁用 P2P，此时 NCCL 经主机内存中转（更慢）")


def test_matmul_efficiency_note_with_override():
    notes = _notes("llama-3-8b", method="lora", gpu="h100", efficiency=0.5)
    zh = _zh(_note(notes, "matmul efficiency"))
    assert zh.startswith("矩阵乘效率为 bf16 峰值的 50.0%（eager 内核，用户指定）；注意力内核 ")
    assert "（占 16 位峰值；" in zh


@pytest.mark.parametrize("options", [
    dict(model="llama-3-70b", pp_schedule="zb-h1", **MEGATRON_70B),
    dict(model="qwen3-30b-a3b", method="full", gpu="h100", num_gpus=8, framework="deepspeed", zero=3, ep=8),
    dict(model="llama-3-8b", method="full", gpu="a100-80gb", num_gpus=8, framework="fsdp", fsdp="full", offload="all"),
    dict(model="llama-3-8b", method="qlora", gpu="a100-80gb", quant="nf4", double_quant=True),
], ids=["megatron-zb-h1", "moe-zero3", "fsdp-offload", "qlora"])
def test_time_model_notes_have_chinese(options):
    """Every note of these setups comes out with Chinese in it (none left wholly in English)."""
    options = dict(options)
    for note in _notes(options.pop("model"), **options):
        assert CJK.search(_zh(note)), f"no Chinese for: {note}"


def test_expert_parallel_across_nodes_note():
    # EP 16 on two nodes of 8: half of each all-to-all goes to the other node, one NIC a GPU
    notes = _notes("qwen3-30b-a3b", method="full", gpu="h100", num_gpus=16, nodes=2, framework="megatron", ep=16)
    over = _note(notes, "expert parallel over ")
    assert over.endswith("; 8/16 of each all-to-all leaves the node through each GPU's own NIC")
    assert _zh(over).endswith("；每次 all-to-all 的 8/16 经各 GPU 自己的网卡离开节点")


def test_pipeline_head_stage_and_deepep_notes():
    # Qwen3-235B-A22B over 4 stages of (23, 23, 24, 24) layers (--uneven-pipeline): the last rank runs the head
    notes = _notes("qwen3-235b-a22b", method="full", gpu="h100", num_gpus=64, nodes=8, framework="megatron", tp=2,
                   ep=8, etp=1, pp=4, zero=1, seq_len=4096, grad_accum=64, uneven_pipeline=True,
                   moe_dispatcher="deepep")
    head = _note(notes, "pipeline stages unequal")
    zh = _zh(head)
    assert zh.startswith("流水线各阶段负载不均：4 个 rank 中最后一个还要运行 LM head 和损失") and "每个微批都要等它" in zh
    deepep = _note(notes, "DeepEP dispatch")
    assert _zh(deepep).startswith("DeepEP 分发：每个 token 发往 ") and CJK.search(_zh(deepep))


def test_a_note_built_of_notes_is_chinese_throughout():
    # the deleted-samples note carries the sequence note inside it: each part from its own template
    note = ("samples longer than 1024 tokens deleted, not truncated (truncation_strategy 'delete'): 67% of them "
            "trained on; dynamic padding: 450 real tokens padded to 450 per sequence on average (100% useful)")
    assert _zh(note) == ("长于 1024 个 token 的样本被删除而不是截断（truncation_strategy 'delete'）：只训练其中的 67%；"
                         "动态填充：每条序列平均 450 个真实 token 填充到 450 个（有效占 100%）")


def test_a_ridge_above_the_fitted_gpus_is_said_in_both_languages():
    # L40S: 362.05 TFLOP/s bf16 / 864 GB/s = 419 FLOP per byte, above H100 SXM's 989 / 3.35 = 295; the sustained
    # fraction's line through (153, 0.94) and (295, 0.76) gives 0.76 - 0.18 / 142 x 124 = 0.603 there
    notes = _notes("llama-3.1-8b", method="lora", gpu="l40s")
    note = _note(notes, "l40s's ridge point")
    assert note == ("l40s's ridge point, 419 FLOP per byte of memory bandwidth, is above the 153-295 of the GPUs the "
                    "sustained fraction was fitted on (A100, H100): its 60% is extrapolated, the least certain factor "
                    "of this estimate")
    assert _zh(note) == ("l40s 的屋脊点为每字节显存带宽 419 FLOP，高于拟合持续比例时所用 GPU（A100、H100）的 153-295："
                         "其 60% 是外推值，是本次估算中最不确定的因素")
    # H100 SXM is an anchor itself: nothing to say
    assert not [n for n in _notes("llama-3.1-8b", method="lora", gpu="h100") if "ridge point" in n]


def test_the_host_bound_note_in_both_languages():
    # Qwen2.5-0.5B, LoRA on q_proj and v_proj (HF's default targets for it), no checkpointing: 24 layers x (43 + 74
    # launches + 2/7 of LoRA's all-linear excess 63 + 59) = 24 x 151.86 = 3,645 launches x 10 us = 36.4 ms a
    # micro-batch of 128 tokens, more than its kernels run on an H100
    notes = _notes("qwen2.5-0.5b", method="lora", gpu="h100", batch_size=1, seq_len=128)
    note = _note(notes, "host-bound")
    assert note.startswith("host-bound: the host enqueues a micro-batch's kernels in 36.4 ms (10 us an eager op)")
    assert _zh(note).startswith("受主机限制：主机把一个微批次的内核排入队列要 36.4 ms（eager 模式每个算子 10 us）")
    assert CJK.search(_zh(note)) and "GPU waits" not in _zh(note)
