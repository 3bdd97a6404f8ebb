"""ZeRO-Offload under the HF Trainer family steps DeepSpeedCPUAdam whatever the trainer's `optim`.

accelerate 1.14 accelerator.py `_prepare_deepspeed`: when offload_optimizer.device is not "none" and
zero_force_ds_cpu_optimizer is unset, the trainer's optimizer goes through map_pytorch_optim_to_deepspeed
(accelerate/utils/deepspeed.py), which returns DeepSpeedCPUAdam for every class but torch Adagrad and
bitsandbytes Lion. A user's own DeepSpeed script (--framework deepspeed) hands its optimizer over as it is.

Hand values, Llama-2-7B (6,738,415,616 parameters), 8 x A100-SXM4-80GB in one DGX A100 (16 DDR4-3200
channels: 409.6 GB/s; the CPU optimizer gets 75% of it), ZeRO-3 with the optimizer offloaded:
- DeepSpeedCPUAdam moves 28 B a parameter (fp32 p, g, m, v read; p, m, v written) and the cast to the
  16-bit copy 6 B; 8 ranks x 1 OpenMP thread x 2.16e9 params/s a core is faster than DRAM, so the step is
  6,738,415,616 x 34 B / (409.6 GB/s x 0.75) = 0.7458 s.
- bitsandbytes AdamW8bit keeps two 1-byte moments and one fp32 absmax per 256-element block of each:
  6 - 2 x 4 / 256 = 5.96875 B a parameter less than Adam's two fp32 moments.
"""

from __future__ import annotations

import pytest

from trainplan.api import estimate

PARAMS = 6_738_415_616
DGX_A100_DRAM_BYTES_PER_S = 16 * 3200e6 * 8
COMMON = {"model": "llama-2-7b", "gpu": "a100-80gb", "num_gpus": 8, "method": "full", "zero": 3,
          "offload": "optimizer"}
SWAP_NOTE = "accelerate replaces it with DeepSpeedCPUAdam"


def _run(**kw):
    return estimate(**{**COMMON, **kw})


@pytest.mark.parametrize("optimizer", ["adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd", "adam-mini"])
def test_the_hf_family_steps_deepspeed_cpu_adam(optimizer):
    est = _run(framework="llamafactory", optimizer=optimizer)
    hand_s = PARAMS * (28 + 6) / (DGX_A100_DRAM_BYTES_PER_S * 0.75)
    assert est.time.step.breakdown.optimizer_s == pytest.approx(hand_s, rel=1e-9)
    assert round(hand_s, 4) == 0.7458
    assert sum(SWAP_NOTE in n and f"--optimizer {optimizer} " in n for n in est.notes) == 1   # said once
    adamw = _run(framework="llamafactory", optimizer="adamw")
    assert est.memory.cpu_ram_bytes == adamw.memory.cpu_ram_bytes
    assert est.memory.device_bytes == adamw.memory.device_bytes


def test_an_own_deepspeed_script_keeps_its_8bit_states():
    swapped = _run(framework="llamafactory", optimizer="adamw-8bit")
    own = _run(framework="deepspeed", optimizer="adamw-8bit")
    assert not any(SWAP_NOTE in n for n in own.notes)
    # two fp32 moments against two 1-byte moments and their fp32 absmax per 256 elements
    assert swapped.memory.cpu_ram_bytes - own.memory.cpu_ram_bytes == PARAMS * (8 - 2 - 2 * 4 / 256) == 40_219_918_208


@pytest.mark.parametrize("kw", [
    {"optimizer": "lion"},                                          # bitsandbytes Lion -> DeepSpeedCPULion
    {"optimizer": "adamw-fused"},                                   # torch AdamW -> DeepSpeedCPUAdam, as modelled
    {"optimizer": "adamw-8bit", "offload": "params"},               # the optimizer stays on the GPU
    {"optimizer": "adamw-8bit", "offload": "none"},
    {"optimizer": "adamw-8bit", "zero": 0, "fsdp": "full", "offload": "all"},   # FSDP steps the trainer's own
])
def test_no_swap_where_accelerate_makes_none(kw):
    est = _run(framework="hf", **kw)
    assert not any(SWAP_NOTE in n for n in est.notes)


def test_an_own_deepspeed_script_is_told_deepspeed_refuses_its_client_optimizer():
    # runtime/engine.py _configure_optimizer: ZeRORuntimeException unless zero_force_ds_cpu_optimizer is false
    own = _run(framework="deepspeed", optimizer="adamw-8bit")
    said = [n for n in own.notes if "zero_force_ds_cpu_optimizer: false (runtime/engine.py" in n]
    assert len(said) == 1
    assert not any("zero_force_ds_cpu_optimizer" in n for n in _run(framework="deepspeed", optimizer="adamw-8bit",
                                                                     offload="none").notes)


def test_the_note_follows_the_layout_not_the_first_one_asked():
    # one memory model asked about the same setup with and without offload (as the planner does)
    from trainplan.api import resolve
    from trainplan.enums import Offload
    from trainplan.frozen import replace
    from trainplan.memory import estimate_memory
    from trainplan.memory.model import MemoryModel

    job = resolve(**{**COMMON, "framework": "deepspeed", "optimizer": "adamw-8bit", "offload": "none"})
    model = MemoryModel()
    plain = estimate_memory(job.setup, job.layout, job.gpu, model=model)
    offloaded = estimate_memory(job.setup, replace(job.layout, offload=Offload.OPTIMIZER), job.gpu, model=model)
    assert not any("zero_force_ds_cpu_optimizer" in n for n in plain.notes)
    assert any("zero_force_ds_cpu_optimizer" in n for n in offloaded.notes)
