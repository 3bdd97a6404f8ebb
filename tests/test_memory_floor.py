"""MemoryModel.device_floor: the planner rejects a layout on this bound alone when even it exceeds the
GPU, so it must never exceed the exact peak (device_bytes), for any layout the planner searches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup
from trainplan.job.training import Layout
from trainplan.memory.model import MemoryModel
from trainplan.planner.space import Shape, node_counts, shardings, splits

P_LLAMA2_7B = 6_738_415_616          # parameters of Llama-2-7B (tests/test_params: the published total)


def test_single_gpu_full_fine_tune_floor_by_hand():
    # fp32 weights (4 B) + AdamW's two fp32 states (8 B) = 12 B per parameter; no layout buffers on one GPU.
    # allocated 12 x 6,738,415,616 = 80,860,987,392 B; reserved int(x 1.1) + 256 MiB = 89,215,521,587;
    # device view + 512 MiB CUDA context = 89,752,392,499 B (memory/overhead.Overhead defaults).
    setup = build_setup(JobOptions(model="llama-2-7b", method="full"))
    mm = MemoryModel()
    layout = Layout(gpu_id="any", num_gpus=1)
    assert mm.device_floor(setup, layout) == 89_752_392_499
    assert mm.device_bytes(setup, layout) > 89_752_392_499     # activations and gradients come on top


def _pairs(model: str, method: str, max_gpus: int):
    spec = build_setup(JobOptions(model=model, method=method)).model
    out = []
    for n in node_counts(max_gpus, 8):
        nodes = 1 if n <= 8 else n // 8
        for tp, pp in splits(spec, n, 8, 256):
            for z, f, o in shardings(n, nodes, tp, pp):
                out.append(Shape(num_gpus=n, nodes=nodes, tp=tp, pp=pp, zero=z, fsdp=f, offload=o).layout("any"))
    return out


CASES = [("llama-3.1-70b", "full", 256), ("llama-3.1-8b", "lora", 64), ("llama-3.1-8b", "qlora", 16),
         ("qwen3-30b-a3b", "full", 64)]
LAYOUTS = {(m, meth): _pairs(m, meth, g) for m, meth, g in CASES}


@pytest.mark.parametrize("model,method", list(LAYOUTS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_floor_never_exceeds_the_exact_peak(model, method, data):
    layouts = LAYOUTS[(model, method)]
    assert layouts
    layout = data.draw(st.sampled_from(layouts))
    batch = data.draw(st.sampled_from((1, 2, 4)))
    accum = data.draw(st.sampled_from((1, 8)))
    ckpt = data.draw(st.sampled_from(("none", "full")))
    opt = data.draw(st.sampled_from(("adamw-fused", "adamw-8bit")))
    setup = build_setup(JobOptions(model=model, method=method, batch_size=batch, grad_accum=accum, grad_ckpt=ckpt,
                                   optimizer=opt))
    mm = MemoryModel()
    floor = mm.device_floor(setup, layout)
    assert 0 < floor <= mm.device_bytes(setup, layout)
    assert MemoryModel().device_floor(setup, layout) == floor      # cached or not, the same bound
