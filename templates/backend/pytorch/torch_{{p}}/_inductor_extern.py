"""torch.compile onto the {{ device_type }} device: the ops whose own kernels beat what Inductor generates.

Inductor decomposes max pooling (and its backward) into loops of its own. Generated for the C++
scheduling, those loops are scalar: LeNet's first pooling, fused with its relu, took 3.9 ms where
the device's relu and max_pool2d take 0.25 ms, and the compiled training step lost to eager (1.5x).
On this device, and only here, such ops stay aten ops in the graph (their decomposition is not
applied) and are lowered as extern kernels: the generated Python calls the op, the device's eager
kernel computes it, queued on the stream like every launch. Compiles for other devices (the CPU)
are unchanged: each hook hands any other device on to what Inductor does.

Both hooks are registrations in Inductor's tables (no torch code is replaced):
- the decompositions: Inductor builds its table when torch._inductor.decomposition is imported,
  and AOT autograd applies it before the device's backend is looked up (with Inductor's caches
  off, before this adapter's _inductor.py is imported): install() runs skip_decompositions() as
  that module is imported (or at once, if it already was).
- the lowerings (lowering.user_lowerings, consulted before Inductor's own): lower_as_extern(),
  called when _inductor.py is imported, which Inductor does before it lowers a graph.

VENDOR: list in DEVICE_KERNELS the ops your library computes better than your code generator
does (measure: benchmarks/compiled_vs_eager.py --profile), with the dtypes it has them for.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

DEVICE_TYPE = "{{ device_type }}"
# aten ops (overload names) computed by the device's own kernels inside compiled graphs
DEVICE_KERNELS = ("max_pool2d_with_indices.default", "max_pool2d_with_indices_backward.default")
# the dtypes the device's kernels take (the first tensor argument's): others keep Inductor's code
DEVICE_DTYPES = ("float32", "float64"{{ ', "float16", "bfloat16"' if half_precision else "" }})
DECOMPOSITIONS = "torch._inductor.decomposition"


def _device_kernels() -> list[Any]:
    """DEVICE_KERNELS as OpOverloads, those the device registers a kernel for (an op the build
    leaves to the CPU, {{ NAME }}_FALLBACK_OPS, keeps Inductor's code)."""
    import torch

    ops = [_overload(torch, name) for name in DEVICE_KERNELS]
    return [op for op in ops if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1")]


def _overload(torch: Any, name: str) -> Any:
    packet, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


def _ours(device: Any, dtype: Any) -> bool:
    return getattr(device, "type", None) == DEVICE_TYPE and str(dtype).removeprefix("torch.") in DEVICE_DTYPES


def _kept(decompose: Callable[..., Any]) -> Callable[..., Any]:
    """`decompose`, except for the device's tensors: NotImplemented keeps the op in the graph."""

    def decomposition(*args: Any, **kwargs: Any) -> Any:
        first = args[0]
        if _ours(first.device, first.dtype):
            return NotImplemented
        return decompose(*args, **kwargs)

    decomposition.{{ p }}_kept = True  # type: ignore[attr-defined]
    return decomposition


def skip_decompositions(decompositions: ModuleType) -> None:
    """Inductor's decomposition tables (the one it builds at import and the cached copy
    select_decomp_table hands out) leave DEVICE_KERNELS to the device (idempotent)."""
    ops = _device_kernels()
    cached = getattr(decompositions, "fast_random_decomps", None)  # (a torch without it: one table)
    for table in (decompositions.decompositions, *([cached()] if cached else [])):
        for op in ops:
            decompose = table.get(op)
            if decompose is not None and not getattr(decompose, "{{ p }}_kept", False):
                table[op] = _kept(decompose)


def lower_as_extern() -> None:
    """DEVICE_KERNELS on the device lower to extern kernels (the aten op called by the generated
    code); on other devices the lowering declines (None) and Inductor's own applies."""
    from torch._inductor import lowering

    for op in _device_kernels():
        lowering.user_lowerings.setdefault(op, _extern(lowering.fallback_handler(op, add_to_fallback_set=False)))


def _extern(call_op: Callable[..., Any]) -> Callable[..., Any]:
    def lower(*args: Any, **kwargs: Any) -> Any:
        first = args[0]
        return call_op(*args, **kwargs) if _ours(first.get_device(), first.get_dtype()) else None

    return lower


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` right after the module `name` has first been executed."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # once; and the lookup below finds the module's own spec
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            loader, then = spec.loader, self.then
            execute = loader.exec_module

            def exec_module(module: ModuleType) -> None:
                execute(module)
                then(module)

            loader.exec_module = exec_module  # type: ignore[method-assign]  # (this spec's own loader)
        return spec


def install() -> None:
    """At the adapter's registration: Inductor's decompositions skip DEVICE_KERNELS on the device
    from its first compile on, without importing Inductor before a program compiles."""
    module = sys.modules.get(DECOMPOSITIONS)
    if module is not None:
        skip_decompositions(module)
    elif not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(DECOMPOSITIONS, skip_decompositions))
