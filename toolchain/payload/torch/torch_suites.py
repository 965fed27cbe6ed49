"""The suites `devkit test-ops --framework torch --suite ...` runs (torch_test_ops.py runs them):
the interface each suite implements, and what the suites share (device copies, comparison with
the CPU, the kernels the adapter registers).

A suite is one of the wheel's test databases run on the device against torch's CPU. It is a
module with a `SUITE` object (the `Suite` protocol) and one entry in torch_test_ops.SUITES:

    name                        the OpSuite its results carry: "ops", "grads", "modules", "optims"
    cases(torch, pattern)       its cases in a fixed order (the runner resumes by index after a
                                crash); pattern is --ops: comma-separated regexes, each matching a
                                whole label (select() does it), "" for all
    label(case)                 the case's name in the report ("nn.functional.conv2d", "nn.Linear")
    run(torch, case, run)       runs one case in the worker: run.sample(...) before each sample
                                (a crash is reported at it), run.result(OpResult) once per case
                                name and dtype (a variant has its own name: "add[out]"); a result
                                with status "skipped" is dropped (nothing ran)

`CaseRun` is what a case gets: the device, the dtypes asked for (a suite runs those it has),
implemented_only (no --all: only what reaches a kernel the adapter registers, in `kernels`),
samples per case and dtype, tolerances by dtype name (CaseRun.tolerance). The runner bounds each
case by --timeout; a worker that dies or hangs is reported as the case (and sample) it was on,
and a new worker goes on from the next case.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from torch_common import ALLOCATION_AND_VIEWS, TOL, op_name

if TYPE_CHECKING:  # (types only)
    from op_records import OpResult, OpStatus, OpSuite

# (or the adapter's own one-line refusal of sparse layouts: "aten::op: stpu has no SparseCsr tensors")
NO_BACKEND = re.compile(
    r"Could not run '[^']+' with arguments from the '(Sparse|Quantized|Mkldnn)\w*' backend|has no Sparse\w* tensors"
)
# Kernels every op reaches (allocation, views, copies, fills): they do not make an op "implemented".
INFRASTRUCTURE = ALLOCATION_AND_VIEWS | {"copy_", "fill_", "zero_", "view_as_real", "view_as_complex"}
# (rtol, atol) by dtype name where devkit's op tolerances are too tight for the type
LOW_PRECISION = {"float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}


class SampleStart(TypedDict):
    """The worker's line before each sample: where a crash is reported."""

    at: str  # the case name (a variant's: "add[inplace]")
    dtype: str
    sample: int
    summary: str


def emit(record: Mapping[str, object]) -> None:
    sys.stdout.write(json.dumps(record, default=float) + "\n")
    sys.stdout.flush()


@dataclass
class CaseRun:
    """What a suite's case runs with, and where its lines go (the worker's stdout)."""

    suite: OpSuite
    device: str
    dtypes: list[str]
    implemented_only: bool
    samples: int
    kernels: set[str] = field(default_factory=set)  # registered for the device, less INFRASTRUCTURE

    def tolerance(self, dtype: str, *, grads: bool = False) -> tuple[float, float]:
        """(rtol, atol) for values of a dtype (name), devkit's gradient tolerances with `grads`."""
        if dtype in LOW_PRECISION:
            return LOW_PRECISION[dtype]
        return (TOL["grad_rtol"], TOL["grad_atol"]) if grads else (TOL["op_rtol"], TOL["op_atol"])

    def sample(self, case: str, dtype: str, index: int, summary: str) -> None:
        start: SampleStart = {"at": case, "dtype": dtype, "sample": index, "summary": summary}
        emit(start)

    def result(self, result: OpResult) -> None:
        emit({**result, "suite": self.suite})


class Suite(Protocol):
    name: OpSuite

    def cases(self, torch: ModuleType, pattern: str) -> list[Any]: ...

    def label(self, case: Any) -> str: ...

    def run(self, torch: ModuleType, case: Any, run: CaseRun) -> None: ...


def select(items: Iterable[Any], label: Callable[[Any], str], pattern: str, *also: Callable[[Any], str]) -> list[Any]:
    """The items whose label (or one of `also`'s names) fully matches one of --ops' regexes."""
    if not pattern:
        return list(items)
    wanted = [re.compile(n.strip()) for n in pattern.split(",") if n.strip()]
    names = (label, *also)
    return [item for item in items if any(w.fullmatch(name(item)) for w in wanted for name in names)]


def error_status(exc: BaseException) -> OpStatus:
    """A layout the adapter does not have (sparse, quantized) is a clean refusal, not a wrong op."""
    return "not registered" if NO_BACKEND.search(str(exc)) else "error"


def registered_kernels(torch: ModuleType) -> set[str]:
    names = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    found = {op_name(n) for n in names if n.startswith("aten::")} - INFRASTRUCTURE
    # at::convolution reaches the backend as convolution_overrideable
    return found | {k.removesuffix("_overrideable") for k in found if k.endswith("_overrideable")}


def reached_kernels(torch: ModuleType, fn: Callable[[], object]) -> set[str]:
    """The aten ops a call reaches below autograd (where backend kernels sit)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
        ) -> Any:
            seen.add(func._schema.name.removeprefix("aten::"))
            return func(*args, **(kwargs or {}))

    with Mode():
        fn()
    return seen


def compare(torch: ModuleType, got: Any, want: Any, values: bool, tol: Callable[[str], tuple[float, float]]) -> float:
    """Max |diff| of the outputs (any pytree, on the device vs the CPU's); raises AssertionError
    naming the first difference. tol: (rtol, atol) by dtype name."""
    from torch.utils._pytree import tree_flatten

    got_flat, want_flat = tree_flatten(got)[0], tree_flatten(want)[0]
    assert len(got_flat) == len(want_flat), f"{len(got_flat)} outputs, CPU gives {len(want_flat)}"
    worst = 0.0
    for g, w in zip(got_flat, want_flat, strict=True):
        if not isinstance(w, torch.Tensor):
            if values and isinstance(w, (int, float, complex, bool)):
                assert g == w or (w != w and g != g), f"got {g}, CPU gives {w}"
            continue
        assert isinstance(g, torch.Tensor), f"got {type(g).__name__}, CPU gives a tensor"
        g = g.detach().cpu()
        w = w.detach()
        assert g.shape == w.shape and g.dtype == w.dtype, f"got {g.dtype}{list(g.shape)}, CPU {w.dtype}{list(w.shape)}"
        if not values or w.numel() == 0 or w.layout != torch.strided:
            continue
        rtol, atol = tol(str(w.dtype).removeprefix("torch."))
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
        if w.is_floating_point() or w.is_complex():
            diff = (g.to(torch.complex128 if w.is_complex() else torch.float64) - w).abs()
            finite = diff[diff.isfinite()]
            worst = max(worst, float(finite.max()) if finite.numel() else 0.0)
    return worst


def to_device(torch: ModuleType, t: Any, device: str) -> Any:
    """t on the device as the same view of a copy of its whole storage: ops such as as_strided
    read elements outside the view. (Detached: a caller that needs a leaf sets requires_grad.)"""
    if not isinstance(t, torch.Tensor):
        return t
    t = t.detach()
    if t.layout != torch.strided or t.is_quantized or t.numel() == 0:
        return t.clone().to(device)
    flat = t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)
    return flat.clone().to(device).as_strided(t.shape, t.stride(), t.storage_offset())


def summarize(sample: Any) -> str:
    """A SampleInput in one line: its tensors' dtypes and shapes, its other arguments' reprs."""

    def one(x: Any) -> str:
        shape = getattr(x, "shape", None)
        if shape is not None:
            flags = "".join(f for f, on in (("conj", x.is_conj()), ("neg", x.is_neg())) if on)
            return f"{str(x.dtype).removeprefix('torch.')}{list(shape)}{' ' + flags if flags else ''}"
        return repr(x)[:40]

    parts = [one(sample.input), *(one(a) for a in sample.args), *(f"{k}={one(v)}" for k, v in sample.kwargs.items())]
    return ", ".join(parts)[:200]


def allow_torch_testing_imports() -> None:
    """torch.testing._internal imports expecttest, which the verify env (torch + NumPy) lacks;
    only its TestCase base is needed to import the samples and lists devkit reads."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        import types
        import unittest

        sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase)  # type: ignore[assignment]
