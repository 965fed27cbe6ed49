"""The "grads" suite (torch_suites.py): gradients of PyTorch's OpInfo samples on the device against
torch's CPU, in float32 and float64. Each OpInfo with autograd is a case ("nn.functional.conv2d");
without --all, those whose forward or backward on a sample reaches a kernel the adapter registers.
A sample's output (after its output_process_fn_grad, as torch's test_ops does) is differentiated
with fixed random output gradients with respect to every input that requires grad."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from torch_opinfo import SampleFn, Variant, check_samples, implements, op_db_cases, op_label, samples_of
from torch_suites import CaseRun

if TYPE_CHECKING:  # (types only)
    from op_records import OpSuite

GRAD_DTYPES = ("float32", "float64")


def gradients(torch: ModuleType, op: Any) -> SampleFn:
    """The gradients of the sample's differentiable outputs with respect to its inputs that
    require grad (None where an input gets none)."""
    from torch.utils._pytree import tree_flatten

    def fn(s: Any) -> Any:
        output = s.output_process_fn_grad(op(s.input, *s.args, **s.kwargs))
        outputs = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        inputs = [t for t in tree_flatten((s.input, s.args, s.kwargs))[0] if isinstance(t, torch.Tensor)]
        inputs = [t for t in inputs if t.requires_grad]
        if not outputs or not inputs:
            raise ValueError("nothing to differentiate")  # (the CPU's refusal: the sample is not counted)
        seeded = torch.Generator().manual_seed(0)
        grad_outputs = [
            torch.randn(t.shape, dtype=t.dtype, generator=seeded).to(t.device)
            if t.is_floating_point() or t.is_complex()
            else None
            for t in outputs
        ]
        grads = torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=True)
        return [g if g is not None else "no gradient" for g in grads]

    return fn


def differentiates(torch: ModuleType, op: Any, dtype: str) -> bool:
    return dtype in GRAD_DTYPES and getattr(torch, dtype) in op.supported_backward_dtypes("cpu")


class OpInfoGrads:
    """OpInfo gradients: backward on the device vs the CPU."""

    name: OpSuite = "grads"

    def cases(self, torch: ModuleType, pattern: str) -> list[Any]:
        return [op for op in op_db_cases(torch, pattern) if op.supports_autograd]

    def label(self, case: Any) -> str:
        return op_label(case)

    def run(self, torch: ModuleType, op: Any, run: CaseRun) -> None:
        fn = gradients(torch, op)
        if run.implemented_only and not implements(torch, op, run, fn, requires_grad=True):
            return
        label = op_label(op)
        for dtype in [d for d in run.dtypes if differentiates(torch, op, d)]:
            samples = samples_of(torch, op, run, label, dtype, requires_grad=True)
            if samples:
                check_samples(torch, run, op, Variant(label, fn, grads=True), dtype, samples)


GRADS = OpInfoGrads()
