"""Which module is running, in forward and in backward, without changing what the step keeps alive.

torch's ModTracker (torch.distributed._tools.mod_tracker) finds backward module boundaries with
`register_multi_grad_hook` on module inputs and outputs; those hooks hold their autograd nodes in
closures registered on the same nodes, a reference cycle that keeps a discarded subgraph (and its
saved tensors) alive until the garbage collector runs: the traced program would then hold memory
the real one frees at once (seen with peft's DoRA weight norm). This tracker holds no graph
object: forward uses global module hooks and a name stack; backward registers on each module
output's grad_fn a prehook that only carries the module's name, so "the module whose backward
runs" is the last module whose output gradient has started.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import torch
from torch import nn
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)

ROOT = "(model)"


def in_backward() -> bool:
    return torch._C._current_graph_task_id() != -1


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)


class ModuleTracker:
    """Current module (full name, `ROOT` for the outermost) and whether it is a recomputation."""

    def __init__(self, on_event: Callable[[str, str], None]) -> None:
        self._on_event = on_event
        self._names: dict[int, str] = {}
        self._stack: list[str] = []
        self._backward_module = ""
        self.recompute_depth = 0
        self._handles: list = []

    def _name(self, module: nn.Module) -> str:
        name = self._names.get(id(module))
        if name is None:                       # first call of an outermost module: name its tree
            for child_name, child in module.named_modules():
                self._names.setdefault(id(child), child_name or ROOT)
            name = self._names[id(module)]
        return name

    def current(self) -> str:
        if self._stack:
            return self._stack[-1]
        return self._backward_module if in_backward() else ""

    def reset_backward(self) -> None:
        self._backward_module = ""

    def _pre_forward(self, module: nn.Module, _inputs) -> None:
        name = self._name(module)
        self._stack.append(name)
        if in_backward():
            self.recompute_depth += 1
        self._on_event("recompute" if self.recompute_depth else "forward", name)

    def _post_forward(self, module: nn.Module, _inputs, output) -> None:
        name = self._stack.pop() if self._stack else self._name(module)
        if in_backward():
            self.recompute_depth = max(self.recompute_depth - 1, 0)
            return
        for tensor in _tensors(output):
            if tensor.grad_fn is not None:
                tensor.grad_fn.register_prehook(partial(self._enter_backward, name))

    def _enter_backward(self, name: str, _grad_outputs) -> None:
        if name != self._backward_module:
            self._backward_module = name
            self._on_event("backward", name)

    def __enter__(self) -> ModuleTracker:
        self._handles = [register_module_forward_pre_hook(self._pre_forward),
                         register_module_forward_hook(self._post_forward, always_call=True)]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
