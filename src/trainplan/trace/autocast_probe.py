"""Read an op's autocast cast policy from the installed torch by calling its autocast kernel.

The op is called on fake tensors of the device under test (fake `cuda` tensors work for a forward
call on a CPU build of torch) with autocast enabled for that device; a dispatch mode below the
autocast key records the casts the kernel makes (`_to_copy` to a new dtype) and stops at the first
other op, so no kernel runs. Three calls tell the policies apart: all-fp32 inputs (lower casts them
down), all-16-bit inputs (fp32 casts them up; set_opt_dtype and append_dtype pass dtype=float32)
and mixed inputs (promote casts the 16-bit one up).
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

from trainplan.trace import autocast_table as table

_LOW = torch.bfloat16


class _Stop(Exception):
    pass


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.casts: list[tuple[torch.dtype, torch.dtype]] = []
        self.inner_dtype: torch.dtype | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.prim.device.default:
            return func(*args, **kwargs)
        if func is torch.ops.aten._to_copy.default and kwargs.get("dtype") is not None:
            self.casts.append((args[0].dtype, kwargs["dtype"]))
            return func(*args, **kwargs)
        self.inner_dtype = kwargs.get("dtype")
        raise _Stop


def _overload(name: str):
    base, _, overload = name.removeprefix("aten::").partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


_BY_NAME = {"normalized_shape": [2], "equation": "ij,jk->ik", "weight_arr": None}


def _value(name: str, arg_type: str, dtypes: list[torch.dtype], device: str):
    arg_type = arg_type.replace("List[Tensor]", "Tensor[]").replace("List[Optional[Tensor]]", "Tensor?[]")
    if name in _BY_NAME:
        return _BY_NAME[name]
    if arg_type in ("Tensor", "Tensor?", "Optional[Tensor]"):
        return torch.empty(2, 2, device=device, dtype=dtypes.pop(0) if len(dtypes) > 1 else dtypes[0])
    if arg_type in ("Tensor[]", "Tensor?[]"):
        return [torch.empty(2, 2, device=device, dtype=dtypes[0]) for _ in range(2)]
    simple = {"int": 1, "SymInt": 1, "float": 1.0, "bool": False, "Scalar": 2, "str": "mean",
              "ScalarType": torch.float32, "number": 2}
    if arg_type in simple:
        return simple[arg_type]
    if arg_type.startswith(("int[", "SymInt[", "List[int]")):
        return [1]
    if arg_type.endswith("?") or arg_type.startswith("Optional["):
        return None
    raise NotImplementedError(arg_type)


def _call(op, dtypes: list[torch.dtype], device: str, dtype_kw: torch.dtype | None) -> _Recorder:
    args, kwargs = [], {}
    for arg in op._schema.arguments:
        arg_type = str(arg.type)
        if arg.name == "dtype" and dtype_kw is not None:
            kwargs["dtype"] = dtype_kw
            continue
        if arg.has_default_value() and not arg_type.startswith("Tensor"):
            continue
        value = _value(arg.name, arg_type, dtypes, device)
        if arg.kwarg_only:
            kwargs[arg.name] = value
        else:
            args.append(value)
    recorder = _Recorder()
    with recorder:
        try:
            op(*args, **kwargs)
        except _Stop:
            pass
    return recorder


def _has_dtype_arg(op) -> bool:
    return any(arg.name == "dtype" for arg in op._schema.arguments)


def probe_policy(name: str, device: str) -> str | None:
    """The autocast policy of op `name` ("aten::pow.Tensor_Scalar") for device "cuda" or "cpu",
    with autocast enabled on it (bf16); None: the kernel does not cast. Raises NotImplementedError
    or RuntimeError where sample inputs cannot be made from the schema."""
    op = _overload(name)
    low_all = _call(op, [_LOW], device, None)
    f32_all = _call(op, [torch.float32], device, None)
    if any(dst == _LOW for _, dst in f32_all.casts):
        return table.LOWER
    up = any(src == _LOW and dst == torch.float32 for src, dst in low_all.casts)
    if low_all.inner_dtype == torch.float32 or (up and _has_dtype_arg(op)):
        if not _has_dtype_arg(op):
            return table.FP32_APPEND_DTYPE
        kept = _call(op, [_LOW], device, _LOW)
        if not any(dst == torch.float32 for _, dst in kept.casts) and kept.inner_dtype != torch.float32:
            return table.FP32_SET_OPT_DTYPE
        return table.FP32
    if up:
        return table.FP32
    mixed = _call(op, [_LOW, torch.float32, torch.float32], device, None)
    if any(src == _LOW and dst == torch.float32 for src, dst in mixed.casts):
        return table.PROMOTE
    return None


def probe_all(names, device: str) -> dict[str, str | None]:
    """Probe each op under autocast(device, bf16) with fake tensors; ops whose sample inputs
    cannot be built from the schema are left out."""
    result: dict[str, str | None] = {}
    with FakeTensorMode(allow_non_fake_inputs=False):
        previous = torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)
        torch.set_autocast_enabled(device, True)
        torch.set_autocast_dtype(device, _LOW)
        torch.autocast_increment_nesting()
        try:
            for name in names:
                try:
                    result[name] = probe_policy(name, device)
                except (NotImplementedError, RuntimeError, IndexError, TypeError, ValueError):
                    continue
        finally:
            torch.autocast_decrement_nesting()
            torch.clear_autocast_cache()
            torch.set_autocast_enabled(device, previous[0])
            torch.set_autocast_dtype(device, previous[1])
    return result
