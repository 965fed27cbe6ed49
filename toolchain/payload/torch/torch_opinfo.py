"""The "ops" suite (torch_suites.py): PyTorch's own OpInfo samples
(torch.testing._internal.common_methods_invocations.op_db) on the device against torch's CPU, each
OpInfo a case: its forward samples ("add"), and its out= ("add[out]") and in-place
("add[inplace]") variants where the OpInfo has them. Also what the "grads" suite
(torch_opinfo_grads.py) shares: which OpInfos the device implements, the sample loop."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
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

# Ops whose values are random or uninitialised: only shapes and dtypes are compared (fractional
# max pooling draws its regions from the device's generator).
UNCHECKED_VALUES = re.compile(
    r"rand|normal|bernoulli|dropout|multinomial|uniform|cauchy|exponential|geometric|poisson|empty|"
    r"^new_empty|rrelu|^nn\.functional\.feature_alpha_dropout|fractional_max_pool"
)
# OpInfos whose samples make their other tensors on the CPU for every device (tensor_split reads
# its indices there): only the input goes to the device.
HOST_ARGUMENTS = {"tensor_split"}
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


def copy_sample(torch: ModuleType, op: Any, sample: Any, device: str) -> Any:
    """A fresh copy of the sample on `device` (the CPU too: a variant may write to its input),
    each tensor that requires grad a leaf that does."""
    from torch.utils._pytree import tree_leaves

    host = {id(t) for t in tree_leaves((sample.args, sample.kwargs))} if op.name in HOST_ARGUMENTS else set()

    def copy(t: Any) -> Any:
        moved = to_device(torch, t, "cpu" if id(t) in host else device)
        return moved.requires_grad_() if isinstance(t, torch.Tensor) and t.requires_grad else moved

    return sample.transform(copy)


@dataclass(frozen=True)
class Variant:
    """One way of calling an OpInfo, a case of its own: what runs on the device, and the CPU's
    reference (the same call unless said)."""

    name: str
    fn: SampleFn
    reference: SampleFn | None = None
    grads: bool = False  # compared with devkit's gradient tolerances


def check_samples(torch: ModuleType, run: CaseRun, op: Any, variant: Variant, dtype: str, samples: list[Any]) -> None:
    """The variant of each sample on the device against the CPU's; the first wrong or raising
    sample ends the case. A sample the CPU refuses is not counted. One result for the dtype."""
    name, fn, grads = variant.name, variant.fn, variant.grads
    result: OpResult = {"case": name, "dtype": dtype, "kernels": [], "status": "pass", "samples": 0}
    values = not UNCHECKED_VALUES.search(op.name)
    worst = 0.0
    reached: set[str] = set()
    for index, sample in enumerate(samples):
        where = f"sample {index} ({summarize(sample)})"
        run.sample(name, dtype, index, summarize(sample))
        try:
            want = (variant.reference or fn)(copy_sample(torch, op, sample, "cpu"))
        except Exception:
            continue  # the CPU refuses this sample too
        result["samples"] += 1
        try:
            got = fn(copy_sample(torch, op, sample, run.device))
            reached = reached or kernels_of(torch, fn, copy_sample(torch, op, sample, run.device))
            worst = max(worst, compare(torch, got, want, values, lambda d: run.tolerance(d, grads=grads)))
        except AssertionError as exc:
            result.update({"status": "fail", "mismatch": [f"{where}: {mismatch_line(exc)}"]})
            break
        except Exception as exc:
            result.update({"status": error_status(exc), "error": f"{where}: {first_line(exc)}"})
            break
    result["kernels"] = sorted(reached & run.kernels)
    result["max_abs_diff"] = {"grad" if grads else "out": worst}
    run.result(result if result["samples"] else {**result, "status": "skipped", "detail": "no sample the CPU runs"})


def mismatch_line(exc: AssertionError) -> str:
    """assert_close's message in one line: what differs, by how much, where, and what is allowed."""
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())[:400]


def kernels_of(torch: ModuleType, fn: SampleFn, sample: Any) -> set[str]:
    """The kernels `fn` of a sample reaches, from a call of its own: under the dispatch mode that
    sees them some ops compute something else (linalg.matrix_rank's out= leaves `out` unwritten,
    on the CPU too), so the compared call runs without it."""
    try:
        return reached_kernels(torch, lambda: fn(sample))
    except Exception:
        return set()


def samples_of(torch: ModuleType, op: Any, run: CaseRun, name: str, dtype: str, requires_grad: bool) -> list[Any]:
    """The op's first run.samples CPU samples in the dtype; none (and a skipped result) if it has none."""
    try:
        return list(op.sample_inputs("cpu", getattr(torch, dtype), requires_grad=requires_grad))[: run.samples]
    except Exception as exc:
        run.result({"case": name, "dtype": dtype, "kernels": [], "status": "skipped", "detail": first_line(exc)})
        return []


def out_variant(torch: ModuleType, op: Any, label: str) -> Variant:
    """op(..., out=) into empty tensors shaped as its result, against the CPU's op without out=
    (as torch's test_out; the CPU's own out= can be wrong: fft.ihfftn's leaves `out` unwritten),
    for the samples whose out= call the CPU takes (nonzero's as_tuple=True has no out=)."""
    from torch.utils._pytree import tree_map

    def fn(s: Any) -> Any:
        expected = op(s.input, *s.args, **s.kwargs)
        out = tree_map(lambda t: torch.empty_like(t) if isinstance(t, torch.Tensor) else t, expected)
        op(s.input, *s.args, **s.kwargs, out=out)
        return out

    def reference(s: Any) -> Any:
        fn(s)  # (raises where the CPU refuses the call: the sample is not counted)
        return op(s.input, *s.args, **s.kwargs)

    return Variant(f"{label}[out]", fn, reference=reference)


def inplace_variant(torch: ModuleType, inplace: Any, label: str) -> Variant:
    """The in-place form on the sample's own input: what it leaves there and what it returns
    (where the CPU refuses it, e.g. a result dtype the input cannot hold, the sample is not counted)."""

    def fn(s: Any) -> Any:
        if not isinstance(s.input, torch.Tensor):
            raise TypeError("an in-place variant needs a tensor input")
        returned = inplace(s.input, *s.args, **s.kwargs)
        return s.input, returned

    return Variant(f"{label}[inplace]", fn)


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
        label = op_label(op)
        variants = [Variant(label, call(op))]
        if op.supports_out:
            variants.append(out_variant(torch, op, label))
        if op.get_inplace() is not None:
            variants.append(inplace_variant(torch, op.get_inplace(), label))
        for dtype in [d for d in run.dtypes if getattr(torch, d) in op.supported_dtypes("cpu")]:
            samples = samples_of(torch, op, run, label, dtype, requires_grad=False)
            for variant in variants if samples else []:
                check_samples(torch, run, op, variant, dtype, samples)


OPS = OpInfoOps()
