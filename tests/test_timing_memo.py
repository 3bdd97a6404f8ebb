"""The timing caches (trainplan.timing.memo, trainplan.timing.context): records by identity, values by
value, and an estimate that does not depend on what was estimated before it."""

from trainplan.catalog import resolve_gpu, resolve_model
from trainplan.enums import GradCkpt, Method
from trainplan.frozen import by_identity, replace
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.timing.estimate import estimate_time, step_time
from trainplan.timing.offload import HostSpec
from trainplan.timing.options import TimingOptions


def test_by_identity_keys_records_by_object_and_the_rest_by_value():
    calls = []

    @by_identity(1, limit=3)
    def f(record, n):
        calls.append((record, n))
        return len(calls)

    a, b = {"x": 1}, {"x": 1}          # equal but distinct, and unhashable
    assert f(a, 2) == 1
    assert f(a, 2) == 1                 # same object, same value: no second call
    assert f(a, 2.0) == 1               # 2 == 2.0 and they hash alike
    assert f(b, 2) == 2                 # an equal record is another key
    assert f(a, 3) == 3
    assert f(a, 4) == 4                 # 4th entry: the cache starts again
    assert f(a, 2) == 5
    assert len(calls) == 5


def test_host_description_is_the_notes_text():
    # 409.6e9 B/s / 1e9 = 409.6 -> "410" GB/s; HOST_BW_FRACTION 0.75 -> "75%"
    host = HostSpec(name="2 x EPYC", cpu_cores=64, mem_bw_bytes_per_s=409.6e9)
    assert host.described == "2 x EPYC (64 cores, 410 GB/s DRAM x 75%)"


def _setup(**changes):
    fields = {"model": resolve_model("llama-3.1-8b"), "method": Method.FULL, "seq_len": 2048, "batch_size": 2,
              "grad_accum": 4}
    return TrainingSetup(**(fields | changes))


def test_an_estimate_does_not_depend_on_the_ones_before_it():
    gpu, options, workload = resolve_gpu("h100-sxm"), TimingOptions(), Workload(samples=10_000)
    setup = _setup()
    layouts = [Layout(num_gpus=8), Layout(num_gpus=16, nodes=2, tp=2), Layout(num_gpus=8, pp=2, cp=2)]
    first = [estimate_time(setup, layout, gpu, workload, options) for layout in layouts]
    # other setups sharing the efficiency (accumulation, recomputation differ) and other layouts in between
    for other in (replace(setup, grad_accum=1), replace(setup, grad_ckpt=GradCkpt.NONE)):
        for layout in reversed(layouts):
            estimate_time(other, layout, gpu, workload, options)
    again = [estimate_time(setup, layout, gpu, workload, options) for layout in layouts]
    # equal records, other objects: nothing is read from the caches
    fresh = [estimate_time(_setup(), layout, replace(gpu), Workload(samples=10_000), TimingOptions())
             for layout in layouts]
    assert again == first
    assert fresh == first


def test_setups_equal_where_the_efficiency_looks_share_it():
    gpu = resolve_gpu("h100-sxm")
    a = step_time(_setup(), Layout(num_gpus=8), gpu)
    b = step_time(_setup(grad_ckpt=GradCkpt.NONE), Layout(num_gpus=8), gpu)
    c = step_time(_setup(batch_size=4), Layout(num_gpus=8), gpu)
    assert a.efficiency is b.efficiency
    assert c.efficiency.tokens > a.efficiency.tokens     # 8192 tokens per micro-batch against 4096
