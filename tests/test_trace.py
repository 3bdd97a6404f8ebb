"""The trace backend (issue 3): fake-tensor traces held byte for byte to real CPU runs, and one
test per pitfall found with torch 2.13 / transformers 5.x / peft 0.21."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import peft  # noqa: F401  (the dev extra installs it: missing, the tests fail)
import pytest
import torch
import transformers  # noqa: F401  (the dev extra installs it: missing, the tests fail)

from trainplan.enums import Attention, GradCkpt, Method, Optimizer, Precision  # noqa: E402
from trainplan.errors import TrainplanError  # noqa: E402
from trainplan.job.training import LoraConfig, QuantConfig, TrainingSetup  # noqa: E402
from trainplan.model.hfconfig import spec_from_hf_config  # noqa: E402
from trainplan.trace import (  # noqa: E402  # noqa: E402
    TraceUnsupported,
    autocast_table,
    build,
    cuda_emulation,
    optim,
    plot_timeline,
    run,
    run_trace,
    step,
)
from trainplan.trace.categories import CATEGORIES  # noqa: E402
from trainplan.trace.tracker import MemoryTracker  # noqa: E402

pytestmark = pytest.mark.trace

FIXTURES = Path(__file__).parent / "fixtures" / "trace"
ARCHS = ("tiny_llama", "tiny_qwen2", "tiny_gpt2", "tiny_mistral", "tiny_phi3", "tiny_qwen2_moe")


def spec(name: str):
    return spec_from_hf_config(json.loads((FIXTURES / f"{name}.json").read_text()), name=name)


def setup(name: str, **kw) -> TrainingSetup:
    kw.setdefault("batch_size", 2)
    kw.setdefault("seq_len", 32)
    return TrainingSetup(model=spec(name), **kw)


def lora(targets=("q_proj", "v_proj"), rank=8, dropout=0.05) -> dict:
    return {"method": Method.LORA, "lora": LoraConfig(rank=rank, targets=targets, dropout=dropout)}


def assert_fake_equals_real(s: TrainingSetup):
    fake = run_trace(s, timeline=True)
    real = run_trace(s, timeline=True, real_tensors=True)
    assert (fake.mode, real.mode) == ("fake", "real")
    for field in ("peak_allocated_bytes", "peak_cuda_allocated_bytes", "breakdown_bytes",
                  "peak_phase", "peak_module", "peak_in_recompute", "per_module",
                  "live_tensors_at_peak", "timeline"):
        assert getattr(fake, field) == getattr(real, field), field
    return fake


# -- reality check: fake == real, byte for byte ---------------------------------------------

VARIANTS = {
    "llama-full-bf16": ("tiny_llama", {}),
    "llama-lora-ckpt": ("tiny_llama", {**lora(), "grad_ckpt": GradCkpt.FULL}),
    "llama-qlora-nf4-dq": ("tiny_llama", {"method": Method.QLORA, "quant": QuantConfig(double_quant=True),
                                          "lora": LoraConfig(rank=8, targets=("all-linear",))}),
    "qwen2-full-bf16": ("tiny_qwen2", {}),
    "qwen2-lora-all-linear-fp32": ("tiny_qwen2", {**lora(("all-linear",)), "precision": Precision.FP32}),
    "gpt2-full-bf16": ("tiny_gpt2", {}),
    "gpt2-eager-pure-sgd": ("tiny_gpt2", {"attention": Attention.EAGER, "precision": Precision.BF16_PURE,
                                          "optimizer": Optimizer.SGD}),
    "mistral-full-bf16": ("tiny_mistral", {}),
    "mistral-freeze-adafactor": ("tiny_mistral", {"method": Method.FREEZE, "freeze_trainable_layers": 1,
                                                  "optimizer": Optimizer.ADAFACTOR}),
    "phi3-full-bf16": ("tiny_phi3", {}),
    "phi3-fused-ckpt-fp16": ("tiny_phi3", {"optimizer": Optimizer.ADAMW_FUSED, "grad_ckpt": GradCkpt.FULL,
                                           "precision": Precision.FP16}),
    "qwen2moe-full-bf16": ("tiny_qwen2_moe", {}),
    "qwen2moe-pure-lora": ("tiny_qwen2_moe", {**lora(("all-linear",)), "precision": Precision.BF16_PURE}),
    "llama-dora-accum": ("tiny_llama", {"method": Method.LORA, "grad_accum": 4,
                                        "lora": LoraConfig(rank=4, dora=True, targets=("all-linear",))}),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fake_trace_equals_real_cpu_run(variant):
    name, kw = VARIANTS[variant]
    result = assert_fake_equals_real(setup(name, **kw))
    assert result.peak_allocated_bytes == sum(result.breakdown_bytes.values())
    assert set(result.breakdown_bytes) == set(CATEGORIES)
    assert result.peak_phase in ("forward", "backward", "optimizer")


def _torch_memtracker_peak(s: TrainingSetup) -> tuple[int, int]:
    """torch.distributed._tools.mem_tracker.MemTracker and ours, nested, on one real CPU step:
    (torch's peak less the AdamW step counters, which live on the host in a GPU run; ours)."""
    from torch.distributed._tools.mem_tracker import MemTracker

    model = build.build_model(s, device="cpu", notes=[])
    with step.no_packed_sequence_detection(), step.grouped_mm_needs_bf16(), \
            cuda_emulation.cuda_autocast(), cuda_emulation.cuda_dropout(), \
            cuda_emulation.cuda_sdpa_dropout([]):
        optimizer = optim.make_optimizer(s.optimizer, model, [])
        optim.create_state(optimizer)
        input_ids = torch.randint(0, s.model.vocab_size, (s.batch_size, s.seq_len))
        theirs, ours = MemTracker(), MemoryTracker()
        theirs.track_external(model, optimizer, input_ids)
        with theirs, ours:
            run._register_state(ours, model, optimizer, input_ids)
            step.run_step(model, optimizer, input_ids, autocast=build.dtype_plan(s).autocast,
                          clip_grad=True, tracker=ours)
    host_steps = sum(4 for state in optimizer.state.values() if "step" in state)
    peak = theirs.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
    return peak - host_steps, ours.state.peak_bytes


@pytest.mark.parametrize("name", ARCHS)
def test_our_count_matches_torch_memtracker(name):
    """torch's own MemTracker (full fine-tuning: it cannot track frozen parameters), run on the
    same real step, counts the same peak, less the AdamW step counters."""
    theirs, ours = _torch_memtracker_peak(setup(name))
    assert theirs == ours


def test_tracking_keeps_nothing_alive():
    """Our module tracking makes no reference cycle: with the garbage collector off, a step that
    discards a subgraph in forward (peft DoRA's detached weight norm) traces the same as with it
    on. (torch's ModTracker keeps such subgraphs alive until the collector runs.)"""
    import gc

    s = setup("tiny_llama", method=Method.LORA, lora=LoraConfig(rank=4, dora=True))
    with_gc = run_trace(s)
    gc.disable()
    try:
        without_gc = run_trace(s)
    finally:
        gc.enable()
    assert without_gc.peak_allocated_bytes == with_gc.peak_allocated_bytes
    assert without_gc.timeline == with_gc.timeline


# -- pitfalls ----------------------------------------------------------------------------------

def test_pitfall_a_fake_cuda_tensors_abort_autograd_so_trace_uses_fake_cpu():
    code = ("import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
            "with FakeTensorMode():\n    x = torch.empty(2, device='cuda', requires_grad=True)\n"
            "    (x * 2).sum().backward()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:
        pytest.skip("this torch build has CUDA")
    assert "not linked with support for cuda" in proc.stderr
    model = build.build_model(setup("tiny_llama"), device="meta", notes=[])
    build.swap_to_fake(model, torch._subclasses.fake_tensor.FakeTensorMode())
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert all(isinstance(p, torch._subclasses.fake_tensor.FakeTensor) for p in model.parameters())


def test_pitfall_b_peft_fails_inside_fake_mode_so_wrap_on_meta_then_swap_keeping_ties():
    from peft import LoraConfig as PeftLora
    from peft import get_peft_model
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    s = setup("tiny_qwen2", **lora())
    config = build.hf_config(s, [])
    from transformers import AutoModelForCausalLM

    with FakeTensorMode(), pytest.raises(RuntimeError, match="swap"):
        get_peft_model(AutoModelForCausalLM.from_config(config), PeftLora(r=4, target_modules=["q_proj"]))
    model = build.build_model(s, device="meta", notes=[])
    build.swap_to_fake(model, FakeTensorMode())
    base = model.get_base_model()
    assert base.lm_head.weight is base.model.embed_tokens.weight        # tied stays tied
    assert isinstance(base.lm_head.weight, FakeTensor)
    assert any("lora_A" in n for n, p in model.named_parameters() if p.requires_grad)


@pytest.mark.filterwarnings("ignore:global module forward hook")
def test_pitfall_c_torch_memtracker_fails_on_frozen_parameters_ours_does_not():
    s = setup("tiny_llama", **lora())
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        _torch_memtracker_peak(s)
    result = run_trace(s)
    assert result.breakdown_bytes["parameters"] > 0 and result.breakdown_bytes["optimizer_state"] > 0


def test_pitfall_d_packed_sequence_detection_is_neutralised(monkeypatch):
    s = setup("tiny_qwen2")                 # GQA: a 4-D mask would also make sdpa copy K/V
    real = run_trace(s, real_tensors=True)
    assert run_trace(s).peak_allocated_bytes == real.peak_allocated_bytes
    monkeypatch.setattr(step, "no_packed_sequence_detection", contextlib.nullcontext)
    unpatched = run_trace(s)
    assert unpatched.peak_allocated_bytes != real.peak_allocated_bytes


def test_pitfall_e_model_is_built_without_kv_cache():
    s = setup("tiny_llama")
    assert build.hf_config(s, []).use_cache is False
    model = build.build_model(s, device="cpu", notes=[])
    assert model.config.use_cache is False
    out = model(input_ids=torch.zeros(1, 4, dtype=torch.long))
    assert getattr(out, "past_key_values", None) is None


@pytest.mark.parametrize("precision", [Precision.BF16, Precision.BF16_PURE, Precision.FP32])
def test_pitfall_f_moe_uses_grouped_experts_without_data_dependent_shapes(precision):
    s = setup("tiny_qwen2_moe", precision=precision)
    notes: list[str] = []
    model = build.build_model(s, device="meta", notes=notes)
    assert model.config._experts_implementation == "grouped_mm"
    assert any("grouped_mm" in n for n in notes)
    from transformers.integrations import moe

    w32, wbf = torch.empty(2, 4, 4), torch.empty(2, 4, 4, dtype=torch.bfloat16)
    with step.grouped_mm_needs_bf16():
        assert not moe._can_use_grouped_mm(w32[0], w32, torch.zeros(2, dtype=torch.int32))
        assert moe._can_use_grouped_mm(wbf[0], wbf, torch.zeros(2, dtype=torch.int32))
    assert_fake_equals_real(s)


def test_pitfall_g_autocast_table_is_the_installed_cuda_registration():
    registered = set(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCUDA"))
    assert set(autocast_table.CUDA_AUTOCAST_POLICY) == registered


def test_pitfall_g_cuda_autocast_policies_probe_as_tabled_and_emulation_matches_them():
    from trainplan.trace.autocast_probe import probe_all

    names = sorted(set(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU"))
                   | set(autocast_table.CUDA_AUTOCAST_POLICY))
    cuda = probe_all(names, "cuda")
    tabled = {n: p for n, p in cuda.items() if n in autocast_table.CUDA_AUTOCAST_POLICY}
    assert len(tabled) >= 100
    assert tabled == {n: autocast_table.CUDA_AUTOCAST_POLICY[n] for n in tabled}
    plain_cpu = probe_all(names, "cpu")
    assert all(plain_cpu[n] == autocast_table.LOWER for n in autocast_table.CPU_KERNELS_KEPT)
    assert plain_cpu["aten::layer_norm"] is None and cuda["aten::layer_norm"] == autocast_table.FP32
    with cuda_emulation.cuda_autocast():
        emulated = probe_all(names, "cpu")
    assert set(emulated) == set(cuda)
    assert emulated == cuda


def test_pitfall_g_emulated_autocast_output_dtypes():
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    w = torch.randn(8, 8)
    with cuda_emulation.cuda_autocast(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.pow(x, 2).dtype == torch.float32                     # fp32 list on CUDA
        assert torch.nn.functional.layer_norm(x, (8,)).dtype == torch.float32
        assert x.sum().dtype == torch.float32                             # fp32_set_opt_dtype
        assert torch.nn.functional.linear(x.float(), w).dtype == torch.bfloat16
        assert torch.cat([x, x.float()]).dtype == torch.float32           # no CPU-only promote
    with torch.autocast("cpu", dtype=torch.bfloat16):                     # registrations restored
        assert torch.pow(x, 2).dtype == torch.bfloat16


def test_pitfall_g_cuda_dropout_keeps_a_bool_mask():
    x = torch.randn(64, 64, requires_grad=True)
    with cuda_emulation.cuda_dropout():
        y = torch.nn.functional.dropout(x, 0.1, training=True)
        assert torch.nn.functional.dropout(x, 0.0, training=True) is x
    assert type(y.grad_fn).__name__ == "NativeDropoutBackward0"
    assert y.grad_fn._saved_result1.dtype == torch.bool                   # 1 byte per element
    cpu = torch.nn.functional.dropout(x, 0.1, training=True)
    assert type(cpu.grad_fn).__name__ == "MulBackward0"
    assert cpu.grad_fn._saved_other.dtype == torch.float32                # CPU: 4 bytes per element


def test_pitfall_g_dropout_emulation_changes_a_dropout_model(monkeypatch):
    s = setup("tiny_gpt2", attention=Attention.EAGER)    # resid/embd/attn dropout 0.1
    emulated = run_trace(s)
    monkeypatch.setattr(cuda_emulation, "cuda_dropout", contextlib.nullcontext)
    cpu_dropout = run_trace(s)
    assert emulated.peak_allocated_bytes < cpu_dropout.peak_allocated_bytes



def _saved_by(fn):
    """(shape, dtype) of every tensor autograd saves while fn runs."""
    saved = []

    def pack(t):
        saved.append((tuple(t.shape), t.dtype))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = fn()
    return saved, result


@pytest.mark.parametrize("fake", [False, True])
def test_pitfall_g_mla_sdpa_keeps_what_cuda_mem_efficient_attention_keeps(fake):
    from torch._subclasses.fake_tensor import FakeTensorMode

    b, h, s, dqk, dv = 2, 4, 40, 24, 16          # value head dim unlike q/k's: no flash kernel
    mode = FakeTensorMode() if fake else contextlib.nullcontext()
    notes = []
    with mode:
        q, k, v = (torch.randn(b, h, s, d, dtype=torch.bfloat16, requires_grad=True)
                   for d in (dqk, dqk, dv))
        sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
        cpu_saved, _ = _saved_by(sdpa)
        with cuda_emulation.cuda_sdpa_dropout(notes):
            saved, out = _saved_by(sdpa)
        out.float().sum().backward()
    assert any(shape[-2:] == (s, s) for shape, _ in cpu_saved)          # CPU math kernel: S x S
    lse = ((b, h, 64), torch.float32)                                    # rows padded to 32s
    assert sorted(saved, key=str) == sorted([((b, h, s, dqk), torch.bfloat16)] * 2
                                            + [((b, h, s, dv), torch.bfloat16)] * 2 + [lse], key=str)
    assert (out.shape, out.dtype) == ((b, h, s, dv), torch.bfloat16)
    assert [(t.grad.shape, t.grad.dtype) for t in (q, k, v)] == [(t.shape, t.dtype) for t in (q, k, v)]
    assert any("memory-efficient" in note for note in notes)


def test_pitfall_g_mla_sdpa_emulation_matches_cpu_sdpa_values():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 40, d, requires_grad=True) for d in (24, 24, 16))
    mask = torch.rand(2, 1, 40, 40) > 0.3
    mask[..., 0] = True
    for kw in ({"is_causal": True}, {"attn_mask": mask}):
        with cuda_emulation.cuda_sdpa_dropout([]):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
        assert out.grad_fn.name() == "MemEfficientAttentionBackward"
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), **kw)
        grad = torch.randn_like(out)
        for got, want in zip(torch.autograd.grad(out, (q, k, v), grad),
                             torch.autograd.grad(ref, (q, k, v), grad.double())):
            torch.testing.assert_close(got, want.float(), atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(out, ref.float(), atol=1e-5, rtol=1e-4)


def test_pitfall_g_mla_model_trace_equals_real_and_keeps_no_s_by_s(monkeypatch):
    config = json.loads((Path(__file__).parent / "fixtures" / "configs" / "deepseek_v2.json").read_text())
    s = TrainingSetup(model=spec_from_hf_config(config, name="tiny_deepseek_v2"), batch_size=2,
                      seq_len=32, precision=Precision.BF16_PURE, **lora(("q_proj", "kv_b_proj")))
    emulated = assert_fake_equals_real(s)
    assert any("memory-efficient" in note for note in emulated.notes)
    model = build.build_model(s, device="cpu", notes=[])
    input_ids = torch.randint(0, s.model.vocab_size, (s.batch_size, s.seq_len))
    with step.no_packed_sequence_detection(), step.grouped_mm_needs_bf16(), \
            cuda_emulation.cuda_sdpa_dropout([]):
        saved, _ = _saved_by(lambda: model(input_ids, labels=input_ids).loss)
    assert not any(shape[-2:] == (s.seq_len, s.seq_len) for shape, _ in saved)
    monkeypatch.setattr(cuda_emulation.mem_efficient, "cuda_runs_mem_efficient_not_flash",
                        lambda *args: False)
    assert run_trace(s).peak_allocated_bytes > emulated.peak_allocated_bytes   # CPU math kernel

# -- QLoRA, optimizers, result -----------------------------------------------------------------

def test_qlora_stands_in_packed_uint8_weights_and_says_so():
    from trainplan.trace.qlora import FourBitLinear

    s = setup("tiny_llama", method=Method.QLORA, quant=QuantConfig(),
              lora=LoraConfig(rank=8, targets=("q_proj", "v_proj")))
    notes: list[str] = []
    model = build.build_model(s, device="meta", notes=notes)
    layers = [m for m in model.modules() if isinstance(m, FourBitLinear)]
    assert len(layers) == 7 * 2                                          # every decoder linear
    q = layers[0]
    n = q.in_features * q.out_features
    assert q.weight.dtype == torch.uint8 and q.weight.numel() == n // 2   # 0.5 byte/param
    assert q.absmax.dtype == torch.float32 and q.absmax.numel() == n // 64
    assert not isinstance(model.get_base_model().lm_head, FourBitLinear)
    assert any("bitsandbytes is not runnable" in note for note in notes)
    assert any("stand in" in note for note in run_trace(s).notes)


def test_setups_the_trace_cannot_run_say_why():
    from trainplan.frozen import replace

    no_config = replace(spec("tiny_llama"), hf_config_json="")
    with pytest.raises(TrainplanError, match="config.json"):
        run_trace(TrainingSetup(model=no_config, batch_size=1, seq_len=8))
    with pytest.raises(TraceUnsupported, match="fp8"):
        run_trace(setup("tiny_llama", precision=Precision.FP8))
    with pytest.raises(TraceUnsupported, match="grad-ckpt"):
        run_trace(setup("tiny_llama", grad_ckpt=GradCkpt.SELECTIVE))
    with pytest.raises(TraceUnsupported, match="DoRA"):
        run_trace(setup("tiny_llama", method=Method.QLORA, quant=QuantConfig(),
                        lora=LoraConfig(rank=4, dora=True)))


@pytest.mark.parametrize("kind", [Optimizer.LION, Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT])
def test_unsupported_optimizers_are_reported(kind):
    with pytest.raises(TraceUnsupported, match="cannot be traced"):
        run_trace(setup("tiny_llama", optimizer=kind))


def _optimizer_phase_bytes(s: TrainingSetup) -> int:
    state = run._measure(s, fake=True, module_events=False, notes=[])
    return sum(r.nbytes for r in state.records if r.phase == "optimizer" and r.kind == "")


def test_fused_adamw_allocates_no_temporaries_foreach_does():
    fused = _optimizer_phase_bytes(setup("tiny_llama", optimizer=Optimizer.ADAMW_FUSED))
    foreach = _optimizer_phase_bytes(setup("tiny_llama", optimizer=Optimizer.ADAMW))
    params_bytes = sum(p.numel() * 4 for p in build.build_model(
        setup("tiny_llama"), device="meta", notes=[]).parameters())
    assert fused < 1024                       # clip_grad_norm_ scalars only
    assert foreach >= params_bytes            # foreach sqrt(exp_avg_sq) over all parameters


def test_result_to_dict_and_timeline_plot(tmp_path):
    result = run_trace(setup("tiny_llama", **lora()), timeline=True, plot_path=str(tmp_path / "t.svg"))
    data = json.loads(json.dumps(result.to_dict()))
    assert data["peak_allocated_bytes"] == sum(data["breakdown_bytes"].values())
    assert data["peak_cuda_allocated_bytes"] >= data["peak_allocated_bytes"]
    labels = [label for label, _ in result.timeline]
    assert labels.index("forward") < labels.index("backward") < labels.index("optimizer")
    assert any(label.startswith("forward model.layers.0") for label in labels)
    assert any(label.startswith("peak") for label in labels)
    assert max(v for _, v in result.timeline) == result.peak_allocated_bytes
    svg = (tmp_path / "t.svg").read_text()
    assert svg.startswith("<svg") or (svg.startswith("<?xml") and "<svg" in svg[:500])
    assert "model.layers.1" in result.per_module


def test_png_plot_is_skipped_cleanly_without_matplotlib(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        result = run_trace(setup("tiny_llama"), plot_path=str(tmp_path / "t.png"))
        assert plot_timeline(result, tmp_path / "t.png") is None
        assert any("matplotlib" in note for note in result.notes)
        assert not (tmp_path / "t.png").exists()
    else:
        result = run_trace(setup("tiny_llama"), plot_path=str(tmp_path / "t.png"))
        assert (tmp_path / "t.png").stat().st_size > 0


def test_checkpointing_lowers_the_forward_activations():
    s_plain = setup("tiny_llama", batch_size=4, seq_len=128)
    s_ckpt = setup("tiny_llama", batch_size=4, seq_len=128, grad_ckpt=GradCkpt.FULL)
    plain, ckpt = run_trace(s_plain), run_trace(s_ckpt)
    assert ckpt.peak_allocated_bytes <= plain.peak_allocated_bytes


def test_import_trainplan_does_not_import_torch():
    code = ("import sys, trainplan, trainplan.job.training, trainplan.model.params, trainplan.trace\n"
            "from trainplan.trace import TraceResult, TraceUnsupported\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
