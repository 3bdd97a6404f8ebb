"""An optimizer stepped in the backward (torchtune optimizer_in_bwd, torchtitan early_step_in_backward):
one optimizer a parameter, stepped in that parameter's post-accumulate-grad hook.

Hand values: Llama-2-7B has 6,738,415,616 parameters, its largest tensors the embeddings and head of
32000 x 4096 = 131,072,000 elements. torchtune builds `config.instantiate(cfg_optimizer, [p])` for every
parameter (recipes/full_finetune_single_device.py _setup_optimizer), so foreach AdamW's
`torch._foreach_sqrt(exp_avg_sq)` covers one tensor a step, not the model.
"""

from __future__ import annotations

import pytest

from trainplan.estimation import estimate
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.memory.regime import resolve_regime
from trainplan.memory.state import model_state
from trainplan.timing.estimate import estimate_time

LLAMA2_7B_PARAMS = 6_738_415_616
LARGEST = 32000 * 4096


def _job(optimizer: str, **kw):
    return resolve_job(JobOptions(model="llama-2-7b", optimizer=optimizer, precision="bf16-pure",
                                  optimizer_in_backward=True, framework="torchtune", grad_ckpt="full", **kw))


def test_foreach_adamw_temporary_is_the_largest_tensor_when_stepped_alone():
    setup = _job("adamw").setup
    state = model_state(setup, resolve_regime(setup))
    # bf16 states: the whole model's sqrt for one optimizer.step(), one tensor's in a per-parameter hook
    assert state.optimizer_temp == 2 * LLAMA2_7B_PARAMS == 13_476_831_232
    assert state.step_temp_one_tensor == 2 * LARGEST == 262_144_000


def test_fused_adamw_has_no_step_temporary():
    setup = _job("adamw-fused").setup
    state = model_state(setup, resolve_regime(setup))
    assert (state.optimizer_temp, state.step_temp_one_tensor) == (0, 0)


def test_the_step_in_the_backward_holds_its_temporary_with_every_activation_saved():
    # the head's gradient is the backward's first: its step runs while every activation is still saved
    foreach = estimate(_job("adamw")).memory.phases_bytes["backward (lm_head)"]
    fused = estimate(_job("adamw-fused")).memory.phases_bytes["backward (lm_head)"]
    assert foreach - fused == 262_144_000


def test_step_in_backward_steps_every_micro_batch():
    # torchtitan's OptimizersInBackwardContainer steps in the hook after every backward, accumulation or not
    def optimizer_s(grad_accum: int) -> float:
        job = resolve_job(JobOptions(model="llama-3-8b", optimizer="adamw-fused", precision="bf16-pure",
                                     optimizer_in_backward=True, framework="torchtitan", grad_accum=grad_accum,
                                     num_gpus=8, fsdp="full"))
        return estimate_time(job.setup, job.layout, job.gpu, job.workload, job.timing).breakdown.optimizer_s

    assert optimizer_s(4) == pytest.approx(4 * optimizer_s(1))
    assert optimizer_s(1) > 0
