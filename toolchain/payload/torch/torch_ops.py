"""The PyTorch adapter's kernels against torch's CPU: op cases forward and backward (broadcasting,
0-d, empty, non-contiguous, in-place and out=, optimizers), seeded random ops, and which
registered kernels the cases reach."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
from records import Tolerance, TorchOpCase, TorchOpsCheck
from torch_common import BACKWARD, FORWARD, Tensor, first_line, is_infrastructure

# (name, fn, inputs, differentiable): inputs are NumPy arrays, fn takes tensors
OpCase = tuple[str, Callable[..., Any], list[np.ndarray], bool]
R = TypeVar("R")


def op_cases(torch: ModuleType) -> list[OpCase]:
    """(name, fn, inputs, differentiable): inputs are NumPy arrays, fn takes tensors."""
    F = torch.nn.functional
    r = np.random.RandomState(0)

    def u(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
        return r.uniform(low, high, shape).astype(np.float32)

    def through_unfold(a: Tensor) -> Tensor:
        """unfold is a view: a write through it reaches its base."""
        base = a.clone()
        base.unfold(1, 2, 2).mul_(3)
        return base

    labels = r.randint(0, 5, 6).astype(np.int64)
    lstm_w = [u(20, 4), u(20, 5), u(20), u(20)]  # weight_ih, weight_hh, bias_ih, bias_hh: 4 gates x 5
    gru_w = [u(15, 4), u(15, 5), u(15), u(15)]  # 3 gates x 5
    cases: list[OpCase] = [
        ("add broadcast", lambda a, b: a + b, [u(3, 4), u(4)], True),
        ("add alpha", lambda a, b: torch.add(a, b, alpha=2.5), [u(2, 3), u(2, 1)], True),
        ("add scalar", lambda a: a + 1.5, [u(4, 5)], True),
        ("add 0-d", lambda a, b: a + b, [u(), u()], True),
        ("add empty", lambda a, b: a + b, [u(0, 4), u(4)], False),
        ("add non-contiguous", lambda a, b: a.t() + b, [u(4, 3), u(3, 4)], True),
        ("add_ in place", lambda a, b: a.clone().add_(b, alpha=-0.5), [u(3, 4), u(3, 4)], True),
        ("add out=", lambda a, b: torch.add(a, b, out=torch.empty_like(a)), [u(3, 4), u(1, 4)], False),
        ("add int64", lambda a, b: a + b, [r.randint(-9, 9, (3, 4)), r.randint(-9, 9, (4,))], False),
        ("sub broadcast", lambda a, b: a - b, [u(2, 3, 4), u(3, 1)], True),
        ("sub_ in place", lambda a, b: a.clone().sub_(b), [u(5), u(5)], True),
        ("mul broadcast", lambda a, b: a * b, [u(3, 4), u(3, 1)], True),
        ("mul scalar", lambda a: a * 3.0, [u(6)], True),
        ("mul_ in place", lambda a, b: a.clone().mul_(b), [u(2, 5), u(5)], True),
        ("mul int64", lambda a, b: a * b, [r.randint(-9, 9, (6,)), r.randint(-9, 9, (6,))], False),
        ("div broadcast", lambda a, b: a / b, [u(3, 4), u(4, low=0.5, high=2.0)], True),
        ("div scalar", lambda a: a / 4.0, [u(3)], True),
        ("div_ in place", lambda a, b: a.clone().div_(b), [u(4), u(4, low=0.5, high=2.0)], True),
        ("mm", lambda a, b: a @ b, [u(5, 3), u(3, 4)], True),
        ("mm transposed", lambda a, b: a.t() @ b, [u(3, 5), u(3, 4)], True),
        ("addmm / linear", lambda x, w, b: F.linear(x, w, b), [u(6, 7), u(4, 7), u(4)], True),
        ("linear no bias", lambda x, w: F.linear(x, w), [u(6, 7), u(4, 7)], True),
        ("bmm", lambda a, b: torch.bmm(a, b), [u(2, 3, 4), u(2, 4, 5)], True),
        # (forward only: addr's backward is torch's mv, which no flavour registers, so strict fallback refuses it)
        ("addr", lambda s, a, b: torch.addr(s, a, b, beta=0.5, alpha=2.0), [u(4, 1), u(4), u(5)], False),
        ("conv2d pad 1", lambda x, w, b: F.conv2d(x, w, b, padding=1), [u(2, 3, 7, 7), u(4, 3, 3, 3), u(4)], True),
        ("conv2d stride 2", lambda x, w: F.conv2d(x, w, stride=2), [u(1, 2, 8, 9), u(3, 2, 3, 3)], True),
        (
            "conv2d dilation groups",
            lambda x, w: F.conv2d(x, w, padding=2, dilation=2, groups=2),
            [u(2, 4, 6, 6), u(6, 2, 3, 3)],
            True,
        ),
        ("conv2d lenet", lambda x, w, b: F.conv2d(x, w, b, padding=2), [u(2, 1, 28, 28), u(6, 1, 5, 5), u(6)], True),
        ("max_pool2d 2x2", lambda x: F.max_pool2d(x, 2, 2), [u(2, 3, 8, 8)], True),
        ("max_pool2d 3x3 s2 p1", lambda x: F.max_pool2d(x, 3, 2, 1), [u(1, 2, 7, 7)], True),
        ("relu", lambda x: F.relu(x), [u(4, 5)], True),
        ("relu_ in place", lambda x: F.relu(x.clone(), inplace=True), [u(7)], True),
        ("log_softmax dim 1", lambda x: F.log_softmax(x, dim=1), [u(6, 5)], True),
        ("log_softmax last dim 3-d", lambda x: F.log_softmax(x, dim=-1), [u(2, 3, 4)], True),
        ("nll_loss mean", lambda x, t: F.nll_loss(F.log_softmax(x, 1), t), [u(6, 5), labels], True),
        ("nll_loss sum", lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, reduction="sum"), [u(6, 5), labels], True),
        ("nll_loss none", lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, reduction="none"), [u(6, 5), labels], True),
        ("cross_entropy", lambda x, t: F.cross_entropy(x, t), [u(6, 5), labels], True),
        ("sigmoid", lambda x: torch.sigmoid(x), [u(3, 4, low=-4.0, high=4.0)], True),
        ("tanh", lambda x: torch.tanh(x), [u(3, 4, low=-3.0, high=3.0)], True),
        ("tanh_ in place non-contiguous", lambda x: x.clone().t().tanh_(), [u(4, 3)], True),
        # recurrent cells: on the device torch calls the fused cell ops (CUDA's alone upstream)
        ("lstm_cell", lambda x, h, c, *w: torch.lstm_cell(x, (h, c), *w), [u(3, 4), u(3, 5), u(3, 5)] + lstm_w, True),
        (
            "lstm_cell no bias",
            lambda x, h, c, *w: torch.lstm_cell(x, (h, c), *w),
            [u(3, 4), u(3, 5), u(3, 5)] + lstm_w[:2],
            True,
        ),
        ("gru_cell", lambda x, h, *w: torch.gru_cell(x, h, *w), [u(3, 4), u(3, 5)] + gru_w, True),
        ("gru_cell no bias", lambda x, h, *w: torch.gru_cell(x, h, *w), [u(3, 4), u(3, 5)] + gru_w[:2], True),
        (
            "lstm layer, 4 steps",
            lambda x, h, c, *w: torch.lstm(x, (h, c), w, True, 1, 0.0, True, False, False),
            [u(4, 3, 4), u(1, 3, 5), u(1, 3, 5)] + lstm_w,
            True,
        ),
        (
            "gru layer, 4 steps",
            lambda x, h, *w: torch.gru(x, h, w, True, 1, 0.0, True, False, False),
            [u(4, 3, 4), u(1, 3, 5)] + gru_w,
            True,
        ),
        ("view_as_real / view_as_complex", lambda x: torch.view_as_real(torch.view_as_complex(x)) * 2, [u(3, 2)], True),
        ("sum all", lambda x: x.sum(), [u(3, 4)], True),
        ("sum dim keepdim", lambda x: x.sum(dim=1, keepdim=True), [u(3, 4, 2)], True),
        ("mean all", lambda x: x.mean(), [u(5, 2)], True),
        ("mean dims", lambda x: x.mean(dim=(0, 2)), [u(3, 4, 2)], True),
        ("argmax", lambda x: x.argmax(dim=1), [u(6, 5)], False),
        ("eq accuracy", lambda x, t: (x.argmax(dim=1) == t).float().mean(), [u(6, 5), labels], False),
        ("eq scalar", lambda t: t == 2, [labels], False),
        ("flatten / view", lambda x: torch.flatten(x, 1) * 2, [u(2, 3, 4)], True),
        ("unfold, written through", through_unfold, [u(3, 6)], True),
        ("transpose contiguous", lambda x: x.transpose(0, 1).contiguous() + 0, [u(3, 4)], True),
        (
            "zeros / ones / full",
            lambda x: x + torch.zeros_like(x) + torch.ones_like(x) + torch.full_like(x, 2.0),
            [u(3)],
            True,
        ),
        ("to float64 and back", lambda x: x.double().sum().float(), [u(4)], False),
        ("sqrt / neg", lambda x: -torch.sqrt(x), [u(3, 4, low=0.1, high=2.0)], True),
        (
            "addcmul_ / addcdiv_",
            lambda a, b, c: a.clone().addcmul_(b, c, value=0.5).addcdiv_(b, c, value=-2.0),
            [u(3, 4), u(3, 4), u(3, 4, low=0.5, high=2.0)],
            True,
        ),
        ("lerp_", lambda a, b: a.clone().lerp_(b, 0.1), [u(5), u(5)], True),
        ("Adam step", lambda p, g: _optimizer_step(torch, "Adam", p, g, foreach=False), [u(4, 3), u(4, 3)], False),
        (
            "Adam step, foreach",
            lambda p, g: _optimizer_step(torch, "Adam", p, g, foreach=True),
            [u(4, 3), u(4, 3)],
            False,
        ),
        ("SGD momentum step", lambda p, g: _optimizer_step(torch, "SGD", p, g, foreach=False), [u(6), u(6)], False),
        ("reciprocal", lambda x: torch.reciprocal(x), [u(5, low=0.5)], True),
        ("reciprocal out=", lambda x: torch.reciprocal(x, out=torch.empty_like(x)), [u(5, low=0.5)], False),
        # torch.amp.GradScaler's ops: unscaling with the found-inf flag, then the scale update
        ("GradScaler unscale", lambda a, b: _unscale(torch, a, b), [u(3, 4), u(5)], False),
        (
            "GradScaler unscale finds inf",
            lambda a, b: _unscale(torch, a, b, with_b=False),
            [u(3, 4), np.array([1.0, np.inf], np.float32)],
            False,
        ),
        *(
            (
                f"GradScaler update {'after an overflow' if found else 'after a clean step'}",
                lambda s, found=found: _update_scale(torch, s, found),
                [np.array(1024.0, np.float32)],
                False,
            )
            for found in (False, True)
        ),
    ]
    # The device's native_group_norm, where the flavour registers it (forward only: its backward
    # has no device kernel and runs through the CPU fallback). Without it torch's composite runs
    # var_mean on the CPU by design, which strict fallback refuses: no case to run then.
    if torch._C._dispatch_has_kernel_for_dispatch_key("aten::native_group_norm", "PrivateUse1"):
        cases.append(("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), [u(2, 4, 3, 3), u(4), u(4)], False))
    return cases


def _optimizer_step(torch: ModuleType, name: str, param: Tensor, grad: Tensor, foreach: bool) -> Tensor:
    """Two optimizer steps on `param` with gradient `grad` (both on the device under test)."""
    p = torch.nn.Parameter(param.detach().clone())
    opt = {
        "Adam": lambda: torch.optim.Adam([p], lr=0.1, foreach=foreach),
        "SGD": lambda: torch.optim.SGD([p], lr=0.1, momentum=0.9, foreach=foreach),
    }[name]()
    for _ in range(2):
        p.grad = grad.detach().clone()
        opt.step()
    return p.detach()


def _unscale(torch: ModuleType, a: Tensor, b: Tensor, with_b: bool = True) -> Tensor:
    """a (and b's sum) multiplied by 1/4 in place, plus 100 when the flag is set (the ops the
    adapter has: no cat)."""
    a, b = a.clone(), b.clone()
    found = torch.zeros((), dtype=torch.float32, device=a.device)
    torch._amp_foreach_non_finite_check_and_unscale_([a, b], found, torch.full((), 0.25, device=a.device))
    return a + 100 * found + (b.sum() if with_b else 0)


def _update_scale(torch: ModuleType, scale: Tensor, found_inf: bool) -> Tensor:
    """One update with growth_interval 2 after one clean step: the scale doubles (the tracker back
    to 0), or halves on an overflow; scale * 10 + tracker shows both."""
    scale = scale.clone().reshape(())
    tracker = torch.ones((), dtype=torch.int32, device=scale.device)
    found = torch.full((), float(found_inf), device=scale.device)
    torch._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 2)
    return scale * 10 + tracker.float()


class _Recorder:
    """Which aten ops the cases reached: overloads exactly as they left autograd (a Python dispatch
    mode), and op names (the profiler, which also sees what kernels call inside: convolution ->
    convolution_overrideable, add -> add.out)."""

    def __init__(self, torch: ModuleType) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        self.torch = torch
        self.overloads: set[str] = set()
        self.names: set[str] = set()
        seen = self.overloads

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(
                self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
            ) -> Any:
                overload = func._overloadname
                seen.add(func._schema.name + ("" if overload == "default" else f".{overload}"))
                return func(*args, **(kwargs or {}))

        self.mode = Mode()

    def run(self, fn: Callable[..., R], *args: Any) -> R:
        with self.torch.autograd.profiler.profile() as prof, self.mode:
            result = fn(*args)
        self.names.update(e.name for e in prof.function_events)
        return result

    def reached(self, kernel: str) -> bool:
        return kernel in self.overloads or kernel.split(".")[0] in self.names


def run_case(
    torch: ModuleType, fn: Callable[..., Any], inputs: list[np.ndarray], device: str, grad: bool
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    tensors = []
    for a in inputs:
        t = torch.from_numpy(np.ascontiguousarray(a)).to(device)
        if grad and t.is_floating_point():
            t.requires_grad_(True)
        tensors.append(t)
    out = fn(*tensors)
    outs = out if isinstance(out, tuple) else (out,)
    grads = []
    if grad:
        upstream = [
            torch.from_numpy(np.random.RandomState(7).uniform(-1, 1, o.shape).astype(np.float32)).to(device)
            for o in outs
        ]
        torch.autograd.backward(list(outs), upstream)
        grads = [t.grad.cpu().numpy() for t in tensors if t.requires_grad]
    return [o.detach().cpu().numpy() for o in outs], grads


def compare(got: list[np.ndarray], want: list[np.ndarray], tol: Tolerance) -> tuple[bool, float]:
    worst = 0.0
    for g, w in zip(got, want, strict=False):
        if g.shape != w.shape or g.dtype != w.dtype:
            return False, float("inf")
        if g.size:
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            worst = max(worst, float(diff.max()))
            if not np.allclose(g, w, **tol):
                return False, worst
    return len(got) == len(want), worst


def check_ops(torch: ModuleType, device: str, pattern: str = "") -> TorchOpsCheck:
    selected = re.compile(pattern) if pattern else None
    recorder = _Recorder(torch)
    results: list[TorchOpCase] = []
    for name, fn, inputs, grad in op_cases(torch):
        if selected and not selected.search(name):
            continue
        try:
            want_out, want_grad = run_case(torch, fn, inputs, "cpu", grad)
            got_out, got_grad = recorder.run(run_case, torch, fn, inputs, device, grad)
            ok_out, diff_out = compare(got_out, want_out, FORWARD)
            ok_grad, diff_grad = compare(got_grad, want_grad, BACKWARD)
            results.append(
                {
                    "case": name,
                    "shapes": [list(np.shape(a)) for a in inputs],
                    "status": "pass" if ok_out and ok_grad else "fail",
                    "max_diff": diff_out,
                    "max_grad_diff": diff_grad if grad else None,
                }
            )
        except Exception as exc:
            results.append({"case": name, "status": "error", "error": first_line(exc)})
    if not selected:
        try:
            results.append(recorder.run(check_random, torch, device))
        except Exception as exc:
            results.append({"case": "random", "status": "error", "error": first_line(exc)})
    registered = sorted(torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))
    registered = [k for k in registered if k.startswith("aten::")]
    # (ops the adapter registers only to send them to the CPU fallback have no device kernel to exercise)
    routed = set(getattr(getattr(torch, device.split(":")[0]), "routed_to_cpu", list)())
    untested = (
        [] if selected else [k for k in registered if not (recorder.reached(k) or is_infrastructure(k) or k in routed)]
    )
    failed = [r for r in results if r["status"] != "pass"]
    detail = f"{len(results) - len(failed)}/{len(results)} cases match CPU (forward and backward)"
    if failed:
        detail += "; failing: " + ", ".join(f"{r['case']} ({r.get('error') or r['status']})" for r in failed[:6])
    if untested:
        detail += f"; registered but exercised by no case: {', '.join(untested)}"
    return {
        "name": "ops",
        "kind": "ops",
        "passed": not failed and not untested and bool(results),
        "detail": detail,
        "cases": results,
        "registered_kernels": registered,
        "exercised_kernels": sorted(k for k in registered if recorder.reached(k)),
        "untested_kernels": untested,
    }


def check_random(torch: ModuleType, device: str) -> TorchOpCase:
    """normal_ / uniform_ on the device: seeded (torch.manual_seed repeats them), the right moments.
    The device has its own generator, so its values are not CPU's: these are compared with theory."""
    n = 20000

    def draw() -> tuple[np.ndarray, np.ndarray]:
        torch.manual_seed(123)
        return (
            torch.empty(n, device=device).normal_(1.0, 2.0).cpu().numpy(),
            torch.empty(n, device=device).uniform_(-3.0, 5.0).cpu().numpy(),
        )

    (normal, uniform), (normal2, uniform2) = draw(), draw()
    ok = (
        np.array_equal(normal, normal2)
        and np.array_equal(uniform, uniform2)
        and abs(normal.mean() - 1.0) < 0.06
        and abs(normal.std() - 2.0) < 0.06
        and uniform.min() >= -3.0
        and uniform.max() < 5.0
        and abs(uniform.mean() - 1.0) < 0.1
        and not np.array_equal(normal[: n // 2], normal[n // 2 :])
    )
    return {
        "case": "random normal_ / uniform_ (seeded, moments)",
        "shapes": [[n]],
        "status": "pass" if ok else "fail",
        "max_diff": float(abs(normal.std() - 2.0)),
        "max_grad_diff": None,
    }
