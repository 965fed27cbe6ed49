"""torch's module database (torch.testing._internal.common_modules.module_db) on the device vs
torch's CPU, as torch's own test_modules.py test_cpu_gpu_parity does for CUDA: a suite of
torch_test_ops.py (`--suite modules`, MODULES below).

Each ModuleInfo is a case; each of its module inputs (up to --samples) is a sample. The module is
built on the CPU and copied to the device (the same parameters and buffers); the forward outputs
are compared, then one backward of every differentiable output with the same random gradient:
the inputs' and the parameters' gradients, and the buffers the forward updated (BatchNorm's
running statistics). A module whose modes differ runs in train and eval mode, as two cases
("nn.BatchNorm2d[train]", "nn.BatchNorm2d[eval]"); the others in train mode under their own name.
A module whose CPU output changes with the random seed (FractionalMaxPool) has only its shapes
and dtypes compared. Without --all, a module counts only if its run reaches a kernel the adapter
registers.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from torch_common import first_line
from torch_suites import CaseRun, compare, error_status, reached_kernels, select, to_device

if TYPE_CHECKING:  # (types only)
    from op_records import OpResult, OpSuite

Tensor = Any  # a torch.Tensor (torch is absent where devkit is type-checked)
Tolerances = Callable[[str], tuple[float, float]]  # (rtol, atol) by dtype name


class Mismatch(AssertionError):
    """A compared value differs: the assertion's text with what was compared first."""


def modes(info: Any) -> list[tuple[str, bool]]:
    """(case name, training) for a ModuleInfo: both modes where they differ."""
    if not info.train_and_eval_differ:
        return [(info.name, True)]
    return [(f"{info.name}[train]", True), (f"{info.name}[eval]", False)]


def leaves(torch: ModuleType, tree: Any, device: str | None) -> Any:
    """The forward arguments as fresh leaves (on `device`, or copied on the CPU), each keeping
    whether it requires a gradient, so that both sides' input gradients can be read."""
    from torch.utils._pytree import tree_map

    def leaf(t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return copy.deepcopy(t)
        fresh = to_device(torch, t, device) if device else t.detach().clone()
        return fresh.requires_grad_(t.requires_grad and (t.is_floating_point() or t.is_complex()))

    return tree_map(leaf, tree)


def grads(torch: ModuleType, tree: Any) -> list[Tensor | None]:
    from torch.utils._pytree import tree_flatten

    return [t.grad for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor) and t.requires_grad]


def build(torch: ModuleType, info: Any, sample: Any, dtype: Any, training: bool, args: Any) -> Any:
    """The CPU module of a sample; a lazy module sees its input once so it has parameters."""
    module = info.module_cls(*sample.constructor_input.args, **sample.constructor_input.kwargs).to(dtype)
    module.train(training)
    if info.is_lazy:
        with torch.no_grad():
            copy.deepcopy(module)(*args[0], **args[1])  # (a copy: the real module's first call is the test's)
            module(*args[0], **args[1])
    return module


def is_random(torch: ModuleType, module: Any, args: Any) -> bool:
    """Whether the CPU's own output depends on the random seed (two seeds, module copies: a
    forward may update buffers)."""
    outputs = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        with torch.no_grad():
            outputs.append(copy.deepcopy(module)(*copy.deepcopy(args[0]), **copy.deepcopy(args[1])))
    try:
        compare(torch, outputs[0], outputs[1], True, lambda _: (0.0, 0.0))
    except AssertionError:
        return True
    return False


def checked(what: str, torch: ModuleType, got: Any, want: Any, values: bool, tol: Tolerances) -> float:
    """compare(), its AssertionError a Mismatch naming what was compared."""
    try:
        return compare(torch, got, want, values, tol)
    except AssertionError as exc:
        raise Mismatch(f"{what}: {first_line(exc)}") from None


def run_sample(
    torch: ModuleType, info: Any, sample: Any, dtype: Any, training: bool, run: CaseRun, reached: set[str]
) -> dict[str, float]:
    """One module input on the device vs the CPU: max |diff| of outputs and gradients, the device
    kernels it reached added to `reached`. Raises Mismatch naming what differs, or the device's
    own error; {} if the CPU refuses the input."""
    forward = (sample.forward_input.args, sample.forward_input.kwargs)
    try:
        cpu_args = leaves(torch, forward, None)
        cpu_module = build(torch, info, sample, dtype, training, cpu_args)
        values = not is_random(torch, cpu_module, cpu_args)
        device_module = copy.deepcopy(cpu_module)
        torch.manual_seed(0)
        want = cpu_module(*cpu_args[0], **cpu_args[1])
        seeds = output_grads(torch, want)
        if seeds:
            torch.autograd.backward(differentiable(torch, want), seeds)
    except Exception:
        return {}
    device_args = leaves(torch, cpu_args, run.device)
    got: Any = None

    def on_device() -> None:
        nonlocal got
        torch.manual_seed(0)
        got = device_module.to(run.device)(*device_args[0], **device_args[1])
        if seeds:
            torch.autograd.backward(differentiable(torch, got), [s.to(run.device) for s in seeds])

    reached |= reached_kernels(torch, on_device)
    widened = parity_tolerance(torch, info, run.device.split(":")[0], dtype)

    def tolerance(dtype: str, grads: bool) -> tuple[float, float]:
        rtol, atol = run.tolerance(dtype, grads=grads)
        return max(rtol, widened[0]), max(atol, widened[1])

    return compare_module(torch, (cpu_module, cpu_args, want), (device_module, device_args, got), values, tolerance)


def parity_tolerance(torch: ModuleType, info: Any, device_type: str, dtype: Any) -> tuple[float, float]:
    """The (rtol, atol) torch's own test_cpu_gpu_parity allows the module in a dtype beyond devkit's
    (its ModuleInfo's toleranceOverride and precisionOverride decorators for every device or this
    one: LinearCrossEntropyLoss in float16, 0.3 and 0.04); (0, 0) where it names none."""
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
    from torch.testing._internal.opinfo.core import DecorateInfo

    rtol, atol = 0.0, 0.0
    for listed in info.decorators:
        try:
            active = isinstance(listed, DecorateInfo) and listed.is_active(
                "TestModule", "test_cpu_gpu_parity", device_type, dtype, {}
            )
        except Exception:  # (an active_if that reads test parameters devkit does not have)
            active = False
        for decorator in listed.decorators if active else ():
            if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
                rtol, atol = max(rtol, decorator.d[dtype].rtol), max(atol, decorator.d[dtype].atol)
            elif isinstance(decorator, precisionOverride) and dtype in decorator.d:
                atol = max(atol, decorator.d[dtype])
    return rtol, atol


def compare_module(
    torch: ModuleType,
    cpu: tuple[Any, Any, Any],
    device: tuple[Any, Any, Any],
    values: bool,
    tolerance: Callable[[str, bool], tuple[float, float]],
) -> dict[str, float]:
    """Outputs, updated buffers, input and parameter gradients: max |diff| of outputs ("out") and
    gradients ("grad"). tolerance: (rtol, atol) by dtype name, for gradients or not."""
    (cpu_module, cpu_args, want), (device_module, device_args, got) = cpu, device

    def forward_tol(dtype: str) -> tuple[float, float]:
        return tolerance(dtype, False)

    def grad_tol(dtype: str) -> tuple[float, float]:
        return tolerance(dtype, True)

    worst = {"out": checked("output", torch, got, want, values, forward_tol), "grad": 0.0}
    buffers = dict(device_module.named_buffers())
    for name, buffer in cpu_module.named_buffers():
        checked(f"buffer {name}", torch, buffers[name], buffer, values, forward_tol)
    pairs = [("input grads", grads(torch, device_args), grads(torch, cpu_args))]
    parameters = dict(device_module.named_parameters())
    pairs += [(f"{n}.grad", parameters[n].grad, p.grad) for n, p in cpu_module.named_parameters()]
    for what, device_grad, cpu_grad in pairs:
        diff = checked(what, torch, device_grad, cpu_grad, values, grad_tol)
        worst["grad"] = max(worst["grad"], diff)
    return worst


def output_grads(torch: ModuleType, outputs: Any) -> list[Tensor]:
    """The same random gradient for each differentiable output on both sides."""
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(w.shape, dtype=w.dtype, generator=generator) for w in differentiable(torch, outputs)]


def differentiable(torch: ModuleType, outputs: Any) -> list[Tensor]:
    """The outputs a gradient flows back through."""
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(outputs)[0] if isinstance(t, torch.Tensor) and t.requires_grad]


def describe(sample: Any) -> str:
    def one(x: Any) -> str:
        shape = getattr(x, "shape", None)
        return f"{str(x.dtype).removeprefix('torch.')}{list(shape)}" if shape is not None else repr(x)[:30]

    forward = [
        *(one(a) for a in sample.forward_input.args),
        *(f"{k}={one(v)}" for k, v in sample.forward_input.kwargs.items()),
    ]
    return f"{sample.desc or 'default'}: {', '.join(forward)}"[:200]


class ModulesSuite:
    name: OpSuite = "modules"

    def cases(self, torch: ModuleType, pattern: str) -> list[Any]:
        from torch.testing._internal.common_modules import module_db

        return select(module_db, self.label, pattern)

    def label(self, case: Any) -> str:
        name: str = case.name
        return name

    def run(self, torch: ModuleType, case: Any, run: CaseRun) -> None:
        for dtype_name in [d for d in run.dtypes if getattr(torch, d, None) in case.dtypes]:
            for name, training in modes(case):
                run.result(self.run_mode(torch, case, run, dtype_name, name, training))

    def run_mode(
        self, torch: ModuleType, info: Any, run: CaseRun, dtype_name: str, name: str, training: bool
    ) -> OpResult:
        dtype = getattr(torch, dtype_name)
        result: OpResult = {"case": name, "dtype": dtype_name, "kernels": [], "status": "pass", "samples": 0}
        worst: dict[str, float] = {}
        reached: set[str] = set()
        try:
            inputs = list(
                info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=True, training=training)
            )
        except Exception as exc:
            return {**result, "status": "skipped", "detail": f"module inputs: {first_line(exc)}"}
        for index, sample in enumerate(inputs[: run.samples]):
            run.sample(name, dtype_name, index, describe(sample))
            try:
                diffs = run_sample(torch, info, sample, dtype, training, run, reached)
            except Mismatch as exc:
                result.update({"status": "fail", "mismatch": [f"sample {index} ({describe(sample)}): {exc}"]})
                break
            except Exception as exc:
                result.update(
                    {"status": error_status(exc), "error": f"sample {index} ({describe(sample)}): {first_line(exc)}"}
                )
                break
            if diffs:
                result["samples"] += 1
                worst = {k: max(worst.get(k, 0.0), v) for k, v in diffs.items()}
        result["kernels"] = sorted(reached & run.kernels)
        result["max_abs_diff"] = worst
        if not result["samples"] and result["status"] == "pass":
            return {**result, "status": "skipped", "detail": "no module input the CPU runs"}
        if run.implemented_only and not result["kernels"] and result["status"] == "pass":
            return {**result, "status": "skipped", "detail": "reaches no kernel the device registers"}
        return result


MODULES = ModulesSuite()
