"""The cross-entropy's memory traffic (trainplan.timing.loss): bytes per logit by how the loss runs, and the
time and note they give. Every expected value is counted by hand from the kernels the module docstring names."""

from __future__ import annotations

import pytest

import trainplan
from trainplan import catalog
from trainplan.cases.trainers import trainer_facts
from trainplan.enums import Loss, Precision
from trainplan.frozen import replace
from trainplan.job.training import Implementation, TrainingSetup
from trainplan.timing.loss import loss_bytes_per_logit, loss_bytes_per_token

QWEN_05B = catalog.resolve_model("qwen2.5-0.5b")       # vocabulary 151,936
GEMMA2_2B = catalog.resolve_model("gemma-2-2b")         # final_logit_softcapping 30


def _setup(model=QWEN_05B, precision=Precision.BF16, **impl) -> TrainingSetup:
    return TrainingSetup(model=model, batch_size=1, seq_len=1024, precision=precision,
                         impl=replace(Implementation(), **impl))


@pytest.mark.parametrize("precision, impl, compiled, expected", [
    # HF Trainer: .float() 2 + 4; log_softmax 3 reads + 1 write of 4; nll grad 4; log_softmax backward 3 x 4 + 4;
    # the cast back 4 + 2: 6 + 16 + 4 + 16 + 6 = 48
    (Precision.BF16, {}, False, 48.0),
    # litgpt's 16-bit loss: the same 9 passes over 2-byte logits, no cast
    (Precision.BF16, {"loss_upcast": False}, False, 18.0),
    # fp32 logits: nothing to cast, 9 passes of 4
    (Precision.FP32, {}, False, 36.0),
    # chunked: the same kernels on each chunk
    (Precision.BF16, {"loss": Loss.CHUNKED}, False, 48.0),
    # compiled: two reads forward, one read + one write backward of the fp32 copy (16), and the copy (12)
    (Precision.BF16, {}, True, 28.0),
    # Liger's fused linear cross-entropy, flash-attn's fused kernel: read, read + write of 2 bytes
    (Precision.BF16, {"loss": Loss.FUSED}, False, 6.0),
    (Precision.BF16, {"fused_ce": True}, False, 6.0),
])
def test_bytes_per_logit(precision, impl, compiled, expected):
    assert loss_bytes_per_logit(_setup(precision=precision, **impl), compiled=compiled) == expected


def test_gemma2_final_softcap_adds_its_three_passes():
    # `/ cap`, tanh, `* cap` on bf16 logits: forward 3 x (2 + 2) = 12, backward 2 + 3 + 2 elements = 14 bytes;
    # compiled, inductor fuses them into the loss's reductions
    assert loss_bytes_per_logit(_setup(GEMMA2_2B)) == 48.0 + 12.0 + 14.0
    assert loss_bytes_per_logit(_setup(GEMMA2_2B), compiled=True) == 28.0
    assert loss_bytes_per_token(_setup(GEMMA2_2B)) == 74.0 * GEMMA2_2B.vocab_size


def test_the_loss_traffic_is_timed_and_said():
    # Qwen2.5-0.5B, 4 x 4096 tokens on one H100: 48 x 151,936 x 16,384 bytes / (0.8 x 3.35 TB/s) = 44.6 ms
    est = trainplan.estimate("qwen2.5-0.5b", method="full", gpu="h100", seq_len=4096, batch_size=4,
                             calibration=False)
    expected_ms = 48 * 151_936 * 16_384 / (0.8 * 3.35e12) * 1e3
    assert expected_ms == pytest.approx(44.59, abs=0.01)
    [note] = [n for n in est.notes if n.startswith("loss traffic: ")]
    assert note.startswith("loss traffic: eager cross-entropy on an fp32 copy moves 48 bytes per logit over a "
                           "151,936-token vocabulary, 44.6 ms per micro-batch")
    fused = trainplan.estimate("qwen2.5-0.5b", method="full", gpu="h100", seq_len=4096, batch_size=4, loss="fused",
                               calibration=False)
    # the fused kernel moves 6 of those 48 bytes: the step is 7/8 of 44.6 ms shorter
    saved_s = est.time.step_s - fused.time.step_s
    assert saved_s == pytest.approx(expected_ms * 42 / 48 / 1e3, rel=1e-6)


def test_llm_foundry_and_flash_attention_recipes_fuse_their_loss():
    facts, notes = trainer_facts({"framework": "MosaicML llm-foundry + Composer (MosaicML platform), PyTorch FSDP"})
    assert facts == {"fused_ce": True} and "fused_crossentropy" in notes[0]
    facts, notes = trainer_facts({"framework": "flash-attention training scripts (PyTorch Lightning + Hydra)"})
    assert facts == {"fused_ce": True} and "CrossEntropyLossApex" in notes[0]


def test_the_loss_note_reads_in_chinese():
    from trainplan.i18n import translate

    est = trainplan.estimate("qwen2.5-0.5b", method="full", gpu="h100", seq_len=4096, batch_size=4, calibration=False)
    [note] = [n for n in est.notes if n.startswith("loss traffic: ")]
    # 44.6 ms of a micro-batch's compute (the share is the estimate's, printed as it is)
    share = note.rsplit("(", 1)[1].split(" of its compute")[0]
    assert translate(note, lang="zh") == ("损失函数访存：逐算子执行的交叉熵（在 fp32 副本上），每个 logit 读写 48 字节，"
                                          f"词表 151,936 个 token，每个微批次 44.6 毫秒（占其计算的 {share}）")
