"""Make a CPU step keep the tensors a CUDA step keeps (pitfall g).

1. Autocast. CPU autocast casts a different op list than CUDA autocast: layer_norm, pow, exp,
   softmax, sum ... are cast to fp32 on CUDA and left alone on CPU; cat, stack, cross_entropy_loss
   ... are cast on CPU only. While `cuda_autocast()` is active, the AutocastCPU kernel of every op
   in either list is replaced: by a Python kernel applying CUDA's policy (autocast_table), or by a
   fallthrough where CUDA has none. Ops whose CPU kernel already does what CUDA's does (linear,
   matmul, bmm, sdpa ...) keep their C++ kernel and its weight-cast cache. Python lower-precision
   kernels keep their own cache with the C++ rules (fp32 leaf requiring grad, not a view), cleared
   with the C++ one when the outermost autocast region exits.
2. Dropout. `aten::dropout` on CUDA runs the fused `native_dropout`, which keeps a bool mask (1
   byte/element) for backward; on CPU it runs `input * (bernoulli / (1-p))` and keeps the float
   noise (2 or 4 bytes/element). While `cuda_dropout()` is active, dropout's
   CompositeImplicitAutograd kernel is replaced by CUDA's: native_dropout for 0 < p < 1 in
   training (ATen native/Dropout.cpp `is_fused_kernel_acceptable`), the input itself otherwise.

3. Attention dropout. CUDA's fused SDPA kernels (flash, memory-efficient) apply dropout inside the
   kernel from a Philox seed and keep no mask; the CPU has no fused kernel with dropout and falls
   back to the math kernel, which materialises the B x H x S x S scores, probabilities and mask.
   While `cuda_sdpa_dropout()` is active, SDPA runs with dropout_p=0 (the CPU flash kernel, which
   keeps what CUDA's flash kernel keeps); the values differ, the memory does not.
   The reverse case: fp32 grouped-query attention (enable_gqa, fewer kv heads). CUDA's flash
   kernel takes 16-bit inputs only and its memory-efficient kernel does not take enable_gqa, so
   CUDA runs the math kernel (scaled q and repeated k, repeated v, the S x S probabilities), where
   the CPU flash kernel would accept it; inside the context SDPA runs the math kernel too
   (measured on an H200: the same bytes).
   A value head dim unlike the query/key one (MLA: DeepSeek-V2/V3): both flash kernels reject it,
   the CPU falls back to the math kernel (S x S kept), CUDA runs its memory-efficient kernel
   (q, k, v, output, fp32 logsumexp kept); inside the context SDPA runs mem_efficient_sdpa's
   autograd Function, which keeps those (the dropout, as above, is not applied).

4. MoE experts that are not bf16. The CPU's grouped-mm kernel takes bf16 only, so the trace routes
   other dtypes to transformers' fallback op (step.grouped_mm_needs_bf16), whose autograd saves the
   input and the weight whatever needs a gradient. CUDA's grouped_mm takes fp32 too (sm80+, torch
   >= 2.10) and saves as aten ops do: the input only for the weight's gradient (measured on an H200:
   frozen fp32 experts keep no input). While `cuda_grouped_mm_saves()` is active, the fallback op
   saves the input only when the expert weights train, and computes only the gradients needed.

The first two register kernels with torch.library for the duration of the context only (not thread-safe:
run one trace at a time per process).
"""

from __future__ import annotations

import contextlib
import warnings
import weakref

import torch
from torch.utils._pytree import tree_leaves, tree_map

from trainplan.trace import autocast_table as table
from trainplan.trace import mem_efficient_sdpa as mem_efficient

_AUTOCAST_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)


def _overload(name: str):
    base, _, overload = name.removeprefix("aten::").partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _eligible(value) -> bool:
    """c10 is_eligible: a defined floating tensor on the autocast device, not float64."""
    return (isinstance(value, torch.Tensor) and value.is_floating_point()
            and value.dtype != torch.float64 and value.device.type == "cpu")


class _CastCache:
    """autocast's cached_cast cache for Python kernels (fp32 leaves that require grad)."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[weakref.ref, torch.Tensor]] = {}

    def cast(self, value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        cacheable = (value.dtype == torch.float32 and value.requires_grad and value.is_leaf
                     and not value._is_view() and torch.is_autocast_cache_enabled())
        if not cacheable:
            return value.to(dtype)
        hit = self._cache.get(id(value))
        if hit is not None and hit[0]() is value and hit[1].dtype == dtype:
            return hit[1]
        cast = value.to(dtype)
        self._cache[id(value)] = (weakref.ref(value), cast)
        return cast

    def clear(self) -> None:
        self._cache.clear()


def _cast_all(args, kwargs, dtype: torch.dtype, cache: _CastCache | None = None):
    def cast(value):
        if _eligible(value) and value.dtype != dtype:
            return cache.cast(value, dtype) if cache else value.to(dtype)
        return value

    return tree_map(cast, args), tree_map(cast, kwargs)


def _first_tensor(args):
    return args[0] if args else None


def _set_opt_dtype(op, args, kwargs):
    names = [arg.name for arg in op._schema.arguments]
    index = names.index("dtype")
    args = list(args)
    if index < len(args):
        if args[index] is None:
            args[index] = torch.float32
    elif kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": torch.float32}
    return args, kwargs


def _promote(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    """torch.promote_types for floating dtypes, without dispatching an op."""
    if a == b:
        return a
    if {a, b} == {torch.float16, torch.bfloat16}:
        return torch.float32
    return a if a.itemsize > b.itemsize else b


def _widest(args, kwargs, low: torch.dtype) -> torch.dtype:
    widest = low
    for leaf in tree_leaves((args, kwargs)):
        if _eligible(leaf):
            widest = _promote(widest, leaf.dtype)
    return widest


def _bind(op, args, kwargs) -> dict:
    """All arguments of a call by name, defaults filled in."""
    bound = {}
    for index, arg in enumerate(op._schema.arguments):
        if index < len(args):
            bound[arg.name] = args[index]
        elif arg.name in kwargs:
            bound[arg.name] = kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
    return bound


def _kernel(name: str, policy: str, cache: _CastCache):
    op = _overload(name)
    append_to = _overload(f"{name.split('.')[0]}.{table.APPEND_DTYPE_OVERLOAD[name]}") \
        if policy == table.FP32_APPEND_DTYPE else None

    def kernel(_keyset, *args, **kwargs):
        low = torch.get_autocast_dtype("cpu")
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_CPU):
            if policy == table.LOWER:
                args, kwargs = _cast_all(args, kwargs, low, cache)
            elif policy == table.FP32:
                args, kwargs = _cast_all(args, kwargs, torch.float32)
            elif policy == table.FP32_SET_OPT_DTYPE and _eligible(_first_tensor(args)):
                args, kwargs = _set_opt_dtype(op, args, kwargs)
            elif policy == table.FP32_APPEND_DTYPE and _eligible(_first_tensor(args)):
                return append_to(**_bind(op, args, kwargs), dtype=torch.float32)
            elif policy == table.PROMOTE:
                args, kwargs = _cast_all(args, kwargs, _widest(args, kwargs, low))
            elif policy == table.BANNED:
                raise RuntimeError(f"{name} is unsafe to autocast (CUDA autocast bans it)")
            return op(*args, **kwargs)

    return kernel


def _cpu_autocast_ops() -> set[str]:
    return set(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU"))


@contextlib.contextmanager
def cuda_autocast():
    """CPU autocast casts exactly what CUDA autocast casts, inside this context."""
    cache = _CastCache()
    lib = torch.library.Library("aten", "IMPL")
    original_clear = torch.clear_autocast_cache

    def clear_both() -> None:
        cache.clear()
        original_clear()

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in sorted(_cpu_autocast_ops() | set(table.CUDA_AUTOCAST_POLICY)):
                if name in table.CPU_KERNELS_KEPT:
                    continue
                op_name = name.removeprefix("aten::")
                policy = table.CUDA_AUTOCAST_POLICY.get(name)
                if policy is None:
                    lib.impl(op_name, torch.library.fallthrough_kernel, "AutocastCPU")
                else:
                    lib.impl(op_name, _kernel(name, policy, cache), "AutocastCPU", with_keyset=True)
        torch.clear_autocast_cache = clear_both
        yield
    finally:
        torch.clear_autocast_cache = original_clear
        cache.clear()
        lib._destroy()


def _cuda_dropout(input: torch.Tensor, p: float, train: bool) -> torch.Tensor:
    """ATen dropout as on CUDA: the fused kernel when acceptable, else the identity cases."""
    if train and 0.0 < p < 1.0 and input.numel() > 0:
        return torch.ops.aten.native_dropout.default(input, p, train)[0]
    if p == 0.0 or not train or input.numel() == 0:
        return input
    return input * torch.zeros((), dtype=input.dtype, device=input.device)   # p == 1


@contextlib.contextmanager
def cuda_dropout():
    """aten::dropout keeps what CUDA keeps for backward (a bool mask), inside this context."""
    lib = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.impl("dropout", _cuda_dropout, "CompositeImplicitAutograd")
        yield
    finally:
        lib._destroy()


@contextlib.contextmanager
def cuda_sdpa_dropout(notes: list[str]):
    """F.scaled_dot_product_attention runs its fused kernel even with attention dropout."""
    functional = torch.nn.functional
    original = functional.scaled_dot_product_attention
    seen = [False]

    math_seen = [False]
    mem_efficient_seen = [False]

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False):
        if mem_efficient.cuda_runs_mem_efficient_not_flash(query, key, value, attn_mask, enable_gqa):
            mem_efficient_seen[0] = True
            seen[0] = seen[0] or dropout_p > 0.0
            return mem_efficient.mem_efficient_sdpa(query, key, value, attn_mask, is_causal, scale)
        if _cuda_math_only(query, key, enable_gqa):
            math_seen[0] = True
            return torch.ops.aten._scaled_dot_product_attention_math(
                query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)[0]
        if dropout_p > 0.0:
            seen[0] = True
        return original(query, key, value, attn_mask=attn_mask, dropout_p=0.0,
                        is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

    functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        functional.scaled_dot_product_attention = original
        if seen[0]:
            notes.append("attention dropout: SDPA runs its fused kernel as on CUDA (dropout inside "
                         "the kernel, no mask kept); the CPU would fall back to the math kernel")
        if math_seen[0]:
            notes.append("fp32 grouped-query SDPA runs the math kernel as on CUDA (no fused CUDA "
                         "kernel takes fp32 with enable_gqa): S x S probabilities are kept")
        if mem_efficient_seen[0]:
            notes.append("SDPA with a value head dim unlike the query's runs CUDA's memory-efficient "
                         "kernel (flash needs equal head dims): q, k, v, output and logsumexp are kept, "
                         "not the S x S probabilities the CPU's math kernel would keep")


def _cuda_math_only(query: torch.Tensor, key: torch.Tensor, enable_gqa: bool) -> bool:
    """CUDA has no fused SDPA kernel for fp32 grouped-query attention (flash: 16-bit only;
    memory-efficient: no enable_gqa). The dtype is the one the kernel sees (autocast's, if on)."""
    if not enable_gqa or query.size(-3) == key.size(-3):
        return False
    device = query.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else query.dtype
    return dtype == torch.float32


def _grouped_setup(ctx, inputs, output) -> None:
    input, weight, offs = inputs
    # the weight is a parameter (or a view of one): keeping it costs nothing
    ctx.save_for_backward(input if weight.requires_grad else None, weight)
    ctx.offs = offs


def _grouped_backward(ctx, grad_output):
    input, weight = ctx.saved_tensors
    ops = torch.ops.transformers
    if input is None:   # frozen experts: the input's gradient only, grad_output @ W^T per expert
        return ops.grouped_mm_fallback(grad_output, weight.transpose(1, 2), ctx.offs), None, None
    grad_input, grad_weight = ops.grouped_mm_fallback_backward(input, weight, ctx.offs, grad_output)
    return grad_input, grad_weight, None


@contextlib.contextmanager
def cuda_grouped_mm_saves():
    """transformers' grouped-mm fallback op saves and computes what CUDA's grouped_mm does."""
    try:
        from transformers.integrations import moe
    except ImportError:   # no MoE support in this transformers: nothing to emulate
        yield
        return
    name = "transformers::grouped_mm_fallback"
    torch.library.register_autograd(name, _grouped_backward, setup_context=_grouped_setup)
    try:
        yield
    finally:
        torch.library.register_autograd(name, moe._grouped_mm_fallback_backward,
                                        setup_context=moe._grouped_mm_fallback_setup_context)
