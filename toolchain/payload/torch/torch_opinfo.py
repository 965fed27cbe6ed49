"""The "ops" suite (torch_suites.py): PyTorch's own OpInfo samples
(torch.testing._internal.common_methods_invocations.op_db) on the device against torch's CPU, each
OpInfo a case: its forward samples ("add"), and its out= ("add[out]") and in-place
("add[inplace]") variants where the OpInfo has them. Also what the "grads" suite
(torch_opinfo_grads.py) shares: which OpInfos the device implements, the sample loop."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from torch_common import first_line
from torch_suites import (
    INFRASTRUCTURE,
    CaseRun,
    allow_torch_testing_imports,
    compare,
    error_status,
    reached_kernels,
    select,
    summarize,
    to_device,
)

if TYPE_CHECKING:  # (types only)
    from op_records import OpResult, OpSuite

# Ops whose values are random or uninitialised: only shapes and dtypes are compared.
UNCHECKED_VALUES = re.compile(
    r"rand|normal|bernoulli|dropout|multinomial|uniform|cauchy|exponential|geometric|poisson|empty|"
    r"^new_empty|rrelu|^nn\.functional\.feature_alpha_dropout"
)
SampleFn = Callable[[Any], Any]  # a SampleInput -> what is compared


def op_label(op: Any) -> str:
    label: str = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
    return label


def op_db_cases(torch: ModuleType, pattern: str) -> list[Any]:
    allow_torch_testing_imports()
    from torch.testing._internal.common_methods_invocations import op_db

    return select(op_db, op_label, pattern, lambda op: str(op.name))


def call(op: Any) -> SampleFn:
    return lambda s: op(s.input, *s.args, **s.kwargs)


def implements(torch: ModuleType, op: Any, run: CaseRun, fn: SampleFn, *, requires_grad: bool = False) -> bool:
    """The op reaches a kernel the adapter registers (or is itself one of the infrastructure
    kernels it registers), with `fn` on its first CPU sample."""
    reached: set[str] = set()
    probe = next((d for d in ("float32", *run.dtypes) if getattr(torch, d) in op.supported_dtypes("cpu")), None)
    try:
        first = (
            next(iter(op.sample_inputs("cpu", getattr(torch, probe), requires_grad=requires_grad))) if probe else None
        )
        if first is not None:
            reached = reached_kernels(torch, lambda: fn(first))
    except Exception:
        pass
    own = {op.name.split(".")[-1], (op.aten_name or "").split(".")[-1]}
    return bool((reached | own) & (run.kernels | INFRASTRUCTURE if own & INFRASTRUCTURE else run.kernels))


def copy_sample(torch: ModuleType, sample: Any, device: str) -> Any:
    """A fresh copy of the sample on `device` (the CPU too: a variant may write to its input),
    each tensor that requires grad a leaf that does."""

    def copy(t: Any) -> Any:
        moved = to_device(torch, t, device)
        return moved.requires_grad_() if isinstance(t, torch.Tensor) and t.requires_grad else moved

    return sample.transform(copy)


def check_samples(
    torch: ModuleType, run: CaseRun, name: str, dtype: str, samples: list[Any], fn: SampleFn, values: bool, grads: bool
) -> None:
    """`fn` of each sample on the device against the CPU's; the first wrong or raising sample ends
    the case. A sample the CPU refuses is not counted. One result for (name, dtype)."""
    result: OpResult = {"case": name, "dtype": dtype, "kernels": [], "status": "pass", "samples": 0}
    worst = 0.0
    reached: set[str] = set()
    for index, sample in enumerate(samples):
        where = f"sample {index} ({summarize(sample)})"
        run.sample(name, dtype, index, summarize(sample))
        try:
            want = fn(copy_sample(torch, sample, "cpu"))
        except Exception:
            continue  # the CPU refuses this sample too
        result["samples"] += 1
        try:
            got = None

            def on_device(s: Any = copy_sample(torch, sample, run.device)) -> None:
                nonlocal got
                got = fn(s)

            reached |= reached_kernels(torch, on_device)
            worst = max(worst, compare(torch, got, want, values, lambda d: run.tolerance(d, grads=grads)))
        except AssertionError as exc:
            result.update({"status": "fail", "mismatch": [f"{where}: {first_line(exc)}"]})
            break
        except Exception as exc:
            result.update({"status": error_status(exc), "error": f"{where}: {first_line(exc)}"})
            break
    result["kernels"] = sorted(reached & run.kernels)
    result["max_abs_diff"] = {"grad" if grads else "out": worst}
    run.result(result if result["samples"] else {**result, "status": "skipped", "detail": "no sample the CPU runs"})


def samples_of(torch: ModuleType, op: Any, run: CaseRun, name: str, dtype: str, requires_grad: bool) -> list[Any]:
    """The op's first run.samples CPU samples in the dtype; none (and a skipped result) if it has none."""
    try:
        return list(op.sample_inputs("cpu", getattr(torch, dtype), requires_grad=requires_grad))[: run.samples]
    except Exception as exc:
        run.result({"case": name, "dtype": dtype, "kernels": [], "status": "skipped", "detail": first_line(exc)})
        return []


def out_variant(torch: ModuleType, op: Any) -> SampleFn:
    """op(..., out=) into empty tensors shaped as its result (torch's test_out does so)."""
    from torch.utils._pytree import tree_map

    def fn(s: Any) -> Any:
        expected = op(s.input, *s.args, **s.kwargs)
        out = tree_map(lambda t: torch.empty_like(t) if isinstance(t, torch.Tensor) else t, expected)
        op(s.input, *s.args, **s.kwargs, out=out)
        return out

    return fn


def inplace_variant(torch: ModuleType, inplace: Any) -> SampleFn:
    """The in-place form on the sample's own input: what it leaves there and what it returns."""

    def fn(s: Any) -> Any:
        if not isinstance(s.input, torch.Tensor):
            raise TypeError("an in-place variant needs a tensor input")
        returned = inplace(s.input, *s.args, **s.kwargs)
        return s.input, returned

    return fn


class OpInfoOps:
    """OpInfo forward samples and their out= and in-place variants."""

    name: OpSuite = "ops"

    def cases(self, torch: ModuleType, pattern: str) -> list[Any]:
        return op_db_cases(torch, pattern)

    def label(self, case: Any) -> str:
        return op_label(case)

    def run(self, torch: ModuleType, op: Any, run: CaseRun) -> None:
        if run.implemented_only and not implements(torch, op, run, call(op)):
            return
        label, values = op_label(op), not UNCHECKED_VALUES.search(op.name)
        variants = [(label, call(op))]
        if op.supports_out:
            variants.append((f"{label}[out]", out_variant(torch, op)))
        if op.get_inplace() is not None:
            variants.append((f"{label}[inplace]", inplace_variant(torch, op.get_inplace())))
        for dtype in [d for d in run.dtypes if getattr(torch, d) in op.supported_dtypes("cpu")]:
            samples = samples_of(torch, op, run, label, dtype, requires_grad=False)
            for name, fn in variants if samples else []:
                check_samples(torch, run, name, dtype, samples, fn, values, grads=False)


OPS = OpInfoOps()
