"""torch's optimizer database (torch.testing._internal.common_optimizers.optim_db) on the device vs
torch's CPU: a suite of torch_test_ops.py (`--suite optims`, OPTIMS below).

Each OptimizerInfo is a case; each of its configurations for the device (optim_inputs_func, all of
them: a handful) is a sample. Both sides start from the same parameters and take STEPS steps of
the same quadratic loss (elementwise: its gradients are exact on any device), each step through a
closure (LBFGS needs one, the others call it once); the parameters after each step and the
optimizer's state at the end are compared. Forms, each its own case name: the for-loop ("Adam"),
"Adam[foreach]" where torch allows foreach on the device type, "Adam[fused]" where the device
registers the optimizer's fused kernel (aten::_fused_adam_). The CPU reference runs the same form
where the CPU has it, the for-loop otherwise. SparseAdam takes sparse gradients.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from torch_common import first_line
from torch_suites import CaseRun, compare, error_status, reached_kernels, select

if TYPE_CHECKING:  # (types only)
    from op_records import OpResult, OpSuite

Tensor = Any  # a torch.Tensor (torch is absent where devkit is type-checked)
Tolerances = Callable[[str], tuple[float, float]]  # (rtol, atol) by dtype name
STEPS = 3
DTYPES = ("float32", "float64")
# The parameters' shapes: a matrix and a vector; Muon takes matrices only.
SHAPES = ((5, 4), (4,))
MATRICES_ONLY = {"Muon": ((5, 4), (4, 3))}
# Optimizers that compute their update in a type of their own, whatever the parameters' type: the
# tolerance is that type's (Muon orthogonalises in bfloat16: one rounding is lr * 2^-8).
COMPUTES_IN = {"Muon": "bfloat16"}


def forms(torch: ModuleType, info: Any, device: str, kernels: set[str]) -> list[str]:
    """The implementations to run on the device: "" (the for-loop), "foreach", "fused"."""
    from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices

    found = [""]
    if "foreach" in info.supported_impls and device in _get_foreach_kernels_supported_devices():
        found.append("foreach")
    if "fused" in info.supported_impls and f"_fused_{info.name.lower()}_" in kernels:
        found.append("fused")
    return found


def form_kwargs(info: Any, form: str, device: str) -> dict[str, bool]:
    """The impl flags for a form on a device type (the CPU has fused only where torch says so)."""
    if form == "fused" and device not in info.supports_fused_on:
        form = ""
    return {impl: impl == form for impl in ("foreach", "fused") if impl in info.supported_impls}


class Problem:
    """The parameters and the loss both sides optimise: 0.5 * sum(scale * (p - target)^2)."""

    def __init__(self, torch: ModuleType, info: Any, dtype: Any, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        shapes = MATRICES_ONLY.get(info.name, SHAPES)
        self.start = [torch.randn(s, dtype=dtype, generator=generator) for s in shapes]
        self.targets = [torch.randn(s, dtype=dtype, generator=generator) for s in shapes]
        self.scales = [torch.rand(s, dtype=dtype, generator=generator) + 0.5 for s in shapes]
        self.sparse = info.only_supports_sparse_grads

    def params(self, torch: ModuleType, device: str) -> list[Tensor]:
        return [p.to(device, copy=True).requires_grad_() for p in self.start]

    def closure(self, torch: ModuleType, params: list[Tensor], device: str) -> Any:
        targets = [t.to(device) for t in self.targets]
        scales = [s.to(device) for s in self.scales]

        def loss() -> Tensor:
            total = sum((0.5 * s * (p - t) ** 2).sum() for p, t, s in zip(params, targets, scales, strict=True))
            for p in params:
                p.grad = None
            total.backward()
            if self.sparse:
                for p in params:
                    p.grad = p.grad.to_sparse()
            return total

        return loss


def optimise(torch: ModuleType, info: Any, problem: Problem, kwargs: dict[str, Any], device: str) -> list[Any]:
    """The parameters after each step, then the optimizer's state; an optimizer that needs a
    closure keeps its line search's history as state (curvature pairs, 1/(y.s)), which near the
    optimum is rounding noise amplified: only its parameters are compared."""
    params = problem.params(torch, device)
    optimizer = info.optim_cls(params, **copy.deepcopy(kwargs))
    closure = problem.closure(torch, params, device)
    after: list[Any] = []
    for _ in range(STEPS):
        optimizer.step(closure)
        after.append([p.detach().clone() for p in params])
    return after if info.step_requires_closure else [*after, optimizer.state_dict()["state"]]


def describe(config: Any) -> str:
    return f"{config.desc or 'default'}: {config.kwargs}"[:200]


class OptimsSuite:
    name: OpSuite = "optims"

    def cases(self, torch: ModuleType, pattern: str) -> list[Any]:
        from torch.testing._internal.common_optimizers import optim_db

        return select(optim_db, self.label, pattern)

    def label(self, case: Any) -> str:
        name: str = case.name
        return name

    def run(self, torch: ModuleType, case: Any, run: CaseRun) -> None:
        for dtype_name in [d for d in run.dtypes if d in DTYPES]:
            for form in forms(torch, case, run.device.split(":")[0], run.kernels):
                run.result(self.run_form(torch, case, run, dtype_name, form))

    def run_form(self, torch: ModuleType, info: Any, run: CaseRun, dtype_name: str, form: str) -> OpResult:
        name = f"{info.name}[{form}]" if form else info.name
        result: OpResult = {"case": name, "dtype": dtype_name, "kernels": [], "status": "pass", "samples": 0}
        device_type = run.device.split(":")[0]
        dtype = getattr(torch, dtype_name)
        reached: set[str] = set()
        worst = 0.0

        def tolerance(dtype: str) -> tuple[float, float]:
            return run.tolerance(COMPUTES_IN.get(info.name, dtype))

        for index, config in enumerate(info.optim_inputs_func(device=run.device, dtype=dtype)):
            run.sample(name, dtype_name, index, describe(config))
            problem = Problem(torch, info, dtype, index)
            try:
                want = optimise(torch, info, problem, {**config.kwargs, **form_kwargs(info, form, "cpu")}, "cpu")
            except Exception:
                continue  # the CPU refuses this configuration too
            got: list[Any] = []
            kwargs = {**config.kwargs, **form_kwargs(info, form, device_type)}
            result["samples"] += 1
            try:

                def on_device(
                    problem: Problem = problem, kwargs: dict[str, Any] = kwargs, got: list[Any] = got
                ) -> None:
                    got.extend(optimise(torch, info, problem, kwargs, run.device))

                reached |= reached_kernels(torch, on_device)
                worst = max(worst, self.compare_steps(torch, got, want, tolerance))
            except AssertionError as exc:
                result.update({"status": "fail", "mismatch": [f"sample {index} ({describe(config)}): {exc}"]})
                break
            except Exception as exc:
                result.update(
                    {"status": error_status(exc), "error": f"sample {index} ({describe(config)}): {first_line(exc)}"}
                )
                break
        result["kernels"] = sorted(reached & run.kernels)
        result["max_abs_diff"] = {"params": worst}
        if not result["samples"]:
            return {**result, "status": "skipped", "detail": "no configuration the CPU runs"}
        if run.implemented_only and not result["kernels"] and result["status"] == "pass":
            return {**result, "status": "skipped", "detail": "reaches no kernel the device registers"}
        return result

    @staticmethod
    def compare_steps(torch: ModuleType, got: list[Any], want: list[Any], tolerance: Tolerances) -> float:
        """Max |diff| of the parameters over the steps; an AssertionError names the step (or the
        state) that differs first."""
        worst = 0.0
        for step, (g, w) in enumerate(zip(got, want, strict=True), 1):
            what = "state" if step > STEPS else f"parameters after step {step}"
            try:
                worst = max(worst, compare(torch, g, w, True, tolerance))
            except AssertionError as exc:
                raise AssertionError(f"{what}: {first_line(exc)}") from None
        return worst


OPTIMS = OptimsSuite()
