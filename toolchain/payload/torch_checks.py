"""Checks of an installed PyTorch adapter, run inside a fresh environment.

Executed by `devkit verify --framework torch` (and `test-ops` / `check-kernels`) with the
verify environment's Python: torch==V, NumPy and the adapter wheel, nothing else. Only
`import torch` loads the adapter (the torch.backends entry point). Writes a JSON report
with the layout of plugin_checks.py's; devkit renders it.

    python torch_checks.py --device stpu --data data.npz --steps 200 --out report.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import time
import traceback

import numpy as np
from training_verdict import load_data, training_verdict

TOL = json.loads(os.environ.get("DEVKIT_TOLERANCES") or "{}")
if not TOL:
    sys.exit("DEVKIT_TOLERANCES is not set: these checks are run by `devkit verify`, which passes the tolerances")
FORWARD = {"rtol": TOL["op_rtol"], "atol": TOL["op_atol"]}
BACKWARD = {"rtol": TOL["grad_rtol"], "atol": TOL["grad_atol"]}
# Registered kernels the op cases reach only from inside other kernels (the dispatcher calls them
# below a Python dispatch mode), or that every case uses: exempt from the coverage check.
INFRASTRUCTURE = re.compile(
    r"^aten::(empty\.memory_format|empty_strided|_copy_from|_copy_from_and_resize|as_strided|view|"
    r"_reshape_alias|resize_|set_\..*|_local_scalar_dense)$"
)


def log(msg: str) -> None:
    print(msg, flush=True)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:400]


# ---------------------------------------------------------------- registration and tensors


def check_registration(torch, device: str) -> dict:
    module = getattr(torch, device, None)
    name = torch._C._get_privateuse1_backend_name()
    ok = module is not None and name == device and module.is_available() and module.device_count() >= 1
    return {
        "name": "registration",
        "passed": bool(ok),
        "detail": (
            f"PrivateUse1 is {name!r}; torch.{device}: "
            + (f"{module.device_count()} device(s), available {module.is_available()}" if module else "missing")
            + " (loaded by `import torch` alone, through the torch.backends entry point)"
        ),
    }


def check_version_guard(torch, device: str) -> dict:
    """The message a user gets when the installed torch is not the one the adapter was built for:
    one RuntimeError naming the package, both torch versions and the fix (not a symbol riddle)."""
    import importlib

    adapter = importlib.import_module(f"torch_{device}")
    built = adapter._build_info.TORCH_VERSION
    try:
        adapter.check_torch_version("1.0.0")
        message = ""
    except RuntimeError as exc:
        message = str(exc)
    ok = all(s in message for s in (f"torch-{device}", built, "1.0.0", f"pip install torch=={built}"))
    return {
        "name": "version guard",
        "passed": ok and built == torch.__version__.split("+")[0],
        "detail": f"built for torch {built}; against torch 1.0.0 import would say: {message.splitlines()[0] if message else 'nothing'}",
    }


def check_tensor(torch, device: str) -> dict:
    x_int = torch.tensor([1, 2, 3], dtype=torch.int64, device=device)
    x_float = torch.tensor([0.5, -1.25, 3.0], dtype=torch.float32, device=device)
    int_sum, float_sum = (x_int + x_int), (x_float + x_float)
    ok = (
        str(int_sum.device) == f"{device}:0"
        and int_sum.dtype == torch.int64
        and int_sum.cpu().tolist() == [2, 4, 6]
        and float_sum.cpu().tolist() == [1.0, -2.5, 6.0]
    )
    return {
        "name": "tensor",
        "passed": bool(ok),
        "detail": f"device {int_sum.device}; int64 x+x = {int_sum.cpu().tolist()}; "
        f"float32 x+x = {float_sum.cpu().tolist()}",
    }


def check_save_load(torch, device: str) -> dict:
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(device)
    buffer = io.BytesIO()
    torch.save({"x": x}, buffer)
    buffer.seek(0)
    back = torch.load(buffer)["x"]
    buffer.seek(0)
    to_cpu = torch.load(buffer, map_location="cpu")["x"]
    ok = (
        back.device.type == device
        and to_cpu.device.type == "cpu"
        and torch.equal(back.cpu(), x.cpu())
        and torch.equal(to_cpu, x.cpu())
    )
    return {
        "name": "save-load",
        "passed": bool(ok),
        "detail": f"torch.save of a {device} tensor loads back on {back.device} and, with map_location='cpu', on "
        f"{to_cpu.device}",
    }


def check_dataloader(torch, device: str) -> dict:
    from torch.utils.data import DataLoader, TensorDataset

    r = np.random.RandomState(5)
    x, y = torch.from_numpy(r.rand(50, 3).astype(np.float32)), torch.from_numpy(r.randint(0, 4, 50))
    sums_device, sums_cpu = [], []
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=16):
        sums_device.append(float((xb.to(device) * 2).sum().cpu()) + int(yb.to(device).sum().cpu()))
        sums_cpu.append(float((xb * 2).sum()) + int(yb.sum()))
    ok = np.allclose(sums_device, sums_cpu, **FORWARD) and len(sums_device) == 4
    return {
        "name": "dataloader",
        "passed": bool(ok),
        "detail": f"{len(sums_device)} batches moved to {device} and reduced there, equal to CPU",
    }


# ---------------------------------------------------------------- ops vs CPU


def op_cases(torch) -> list[tuple]:
    """(name, fn, inputs, differentiable): inputs are NumPy arrays, fn takes tensors."""
    F = torch.nn.functional
    r = np.random.RandomState(0)

    def u(*shape, low=-1.0, high=1.0):
        return r.uniform(low, high, shape).astype(np.float32)

    labels = r.randint(0, 5, 6).astype(np.int64)
    cases = [
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
        ("sum all", lambda x: x.sum(), [u(3, 4)], True),
        ("sum dim keepdim", lambda x: x.sum(dim=1, keepdim=True), [u(3, 4, 2)], True),
        ("mean all", lambda x: x.mean(), [u(5, 2)], True),
        ("mean dims", lambda x: x.mean(dim=(0, 2)), [u(3, 4, 2)], True),
        ("argmax", lambda x: x.argmax(dim=1), [u(6, 5)], False),
        ("eq accuracy", lambda x, t: (x.argmax(dim=1) == t).float().mean(), [u(6, 5), labels], False),
        ("eq scalar", lambda t: t == 2, [labels], False),
        ("flatten / view", lambda x: torch.flatten(x, 1) * 2, [u(2, 3, 4)], True),
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
    ]
    return cases


def _optimizer_step(torch, name: str, param, grad, foreach: bool):
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


class _Recorder:
    """Which aten ops the cases reached: overloads exactly as they left autograd (a Python dispatch
    mode), and op names (the profiler, which also sees what kernels call inside: convolution ->
    convolution_overrideable, add -> add.out)."""

    def __init__(self, torch) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        self.torch = torch
        self.overloads: set[str] = set()
        self.names: set[str] = set()
        seen = self.overloads

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                overload = func._overloadname
                seen.add(func._schema.name + ("" if overload == "default" else f".{overload}"))
                return func(*args, **(kwargs or {}))

        self.mode = Mode()

    def run(self, fn, *args):
        with self.torch.autograd.profiler.profile() as prof, self.mode:
            result = fn(*args)
        self.names.update(e.name for e in prof.function_events)
        return result

    def reached(self, kernel: str) -> bool:
        return kernel in self.overloads or kernel.split(".")[0] in self.names


def run_case(torch, fn, inputs: list, device: str, grad: bool) -> tuple[list, list]:
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


def compare(got: list, want: list, tol: dict) -> tuple[bool, float]:
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


def check_ops(torch, device: str, pattern: str = "") -> dict:
    selected = re.compile(pattern) if pattern else None
    recorder = _Recorder(torch)
    results = []
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
    untested = [] if selected else [k for k in registered if not recorder.reached(k) and not INFRASTRUCTURE.match(k)]
    failed = [r for r in results if r["status"] != "pass"]
    detail = f"{len(results) - len(failed)}/{len(results)} cases match CPU (forward and backward)"
    if failed:
        detail += "; failing: " + ", ".join(f"{r['case']} ({r.get('error') or r['status']})" for r in failed[:6])
    if untested:
        detail += f"; registered but exercised by no case: {', '.join(untested)}"
    return {
        "name": "ops",
        "passed": not failed and not untested and bool(results),
        "detail": detail,
        "cases": results,
        "registered_kernels": registered,
        "exercised_kernels": sorted(k for k in registered if recorder.reached(k)),
        "untested_kernels": untested,
    }


def check_random(torch, device: str) -> dict:
    """normal_ / uniform_ on the device: seeded (torch.manual_seed repeats them), the right moments.
    The device has its own generator, so its values are not CPU's: these are compared with theory."""
    n = 20000

    def draw():
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


# ---------------------------------------------------------------- LeNet on MNIST


def lenet(torch):
    nn, F = torch.nn, torch.nn.functional

    class LeNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(400, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
            x = torch.flatten(x, 1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    return LeNet()


def initial_state(torch, model, seed: int) -> dict:
    """The weights Paddle's verify starts from (fan-in uniform from NumPy), in torch's layout
    (Linear weights [out, in], where Paddle's are [in, out])."""
    r = np.random.RandomState(seed)
    state = {}
    for name, p in model.state_dict().items():
        shape = list(p.shape)
        if name.endswith("weight") and len(shape) == 2:  # draw in Paddle's [in, out], then transpose
            values = r.uniform(-1 / np.sqrt(shape[1]), 1 / np.sqrt(shape[1]), shape[::-1]).T
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            values = r.uniform(-1 / np.sqrt(fan_in), 1 / np.sqrt(fan_in), shape)
        state[name] = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
    return state


def train(torch, device: str, data: dict, steps: int, batch: int, seed: int) -> dict:
    F = torch.nn.functional
    torch.manual_seed(seed)
    model = lenet(torch)
    model.load_state_dict(initial_state(torch, model, seed))
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x_train, y_train = data["x_train"], data["y_train"]
    order = np.random.RandomState(seed).permutation(len(x_train))
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        idx = np.take(order, range(step * batch, (step + 1) * batch), mode="wrap")
        x = torch.from_numpy(x_train[idx]).to(device)
        y = torch.from_numpy(y_train[idx].reshape(-1).astype(np.int64)).to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        if step % 50 == 0 or step == steps - 1:
            log(f"  mnist {device} step {step}: loss {losses[-1]:.4f}")
    train_seconds = time.perf_counter() - start
    model.eval()
    correct = 0
    x_test, y_test = data["x_test"], data["y_test"]
    with torch.no_grad():
        for i in range(0, len(x_test), 256):
            logits = model(torch.from_numpy(x_test[i : i + 256]).to(device))
            label = torch.from_numpy(y_test[i : i + 256].reshape(-1).astype(np.int64)).to(device)
            correct += int((logits.argmax(dim=1) == label).sum().item())  # argmax, eq, sum on the device
    return {"losses": losses, "heldout_accuracy": correct / len(x_test), "train_seconds": train_seconds}


def fallback_counts(torch, device: str) -> dict:
    return dict(getattr(torch, device).fallback_counts())


def check_mnist(torch, device: str, data: dict, steps: int, batch: int, seed: int) -> dict:
    try:
        getattr(torch, device).reset_fallback_counts()
        dev = train(torch, device, data, steps, batch, seed)
        fell_back = fallback_counts(torch, device)
        cpu = train(torch, "cpu", data, steps, batch, seed)
    except Exception as exc:
        return {
            "name": "mnist",
            "passed": False,
            "detail": first_line(exc),
            "traceback": traceback.format_exc()[-3000:],
        }
    criteria = {
        "min_loss_drop_fraction": TOL["min_loss_drop"],
        "min_heldout_accuracy": TOL["min_accuracy"],
        "max_curve_abs_diff": TOL["max_curve_diff"],
    }
    report = training_verdict("mnist", dev, cpu, criteria, data, steps, batch, seed)
    report.update(
        passed=report["passed"] and not fell_back,
        detail=report["detail"] + (f", CPU fallbacks: {fell_back}" if fell_back else ", no CPU fallback"),
        criteria={**criteria, "max_fallbacks": 0},
        optimizer="torch.optim.Adam(lr=1e-3), foreach default",
        fallbacks=fell_back,
    )
    return report


def check_fallback_report(torch, device: str, data: dict, seed: int) -> dict:
    """With fallback allowed: which ops LeNet training runs on the CPU (none expected), and an op
    the adapter has no kernel for (cumsum) running through the CPU fallback, correctly."""
    module = getattr(torch, device)
    module.reset_fallback_counts()
    train(torch, device, data, 5, 64, seed)
    lenet_fallbacks = fallback_counts(torch, device)
    module.reset_fallback_counts()
    x = np.random.RandomState(3).uniform(-1, 1, (4, 6)).astype(np.float32)
    got = torch.cumsum(torch.from_numpy(x).to(device), dim=1)
    unseen = fallback_counts(torch, device)
    ok_unseen = got.device.type == device and np.allclose(got.cpu().numpy(), np.cumsum(x, axis=1), **FORWARD)
    passed = not lenet_fallbacks and ok_unseen and any("cumsum" in op for op in unseen)
    return {
        "name": "fallback report",
        "passed": bool(passed),
        "detail": (
            "LeNet: "
            + (f"fell back {lenet_fallbacks}" if lenet_fallbacks else "every op on the device")
            + f"; an op without a kernel runs through the CPU fallback ({unseen}), "
            + ("result correct" if ok_unseen else "WRONG result")
        ),
        "lenet_fallbacks": lenet_fallbacks,
        "unseen_op_fallbacks": unseen,
    }


def check_kernels(torch, device: str) -> dict:
    """The aten kernels the adapter registered. The dispatcher compared each one's C++ signature with
    this torch's operator schema when the library loaded (a mismatch fails `import torch`), so a
    list here means they all fit."""
    registered = sorted(k for k in torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))
    aten = [k for k in registered if k.startswith("aten::")]
    return {
        "name": "kernel signatures",
        "passed": bool(aten),
        "detail": f"{len(aten)} aten kernels registered for {device} (PrivateUse1), each signature accepted by "
        f"torch {torch.__version__}'s dispatcher at load",
        "kernels": {k: "PrivateUse1" for k in aten},
        "mismatched": [],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", required=True)
    parser.add_argument("--data", help=".npz with x_train, y_train, x_test, y_test, source")
    parser.add_argument("--only", default="", help="comma-separated checks (default: all but fallback-report)")
    parser.add_argument("--ops", default="", help="with ops: a regular expression selecting cases")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    report: dict = {"framework": "torch", "device": args.device, "checks": []}
    try:
        import torch  # loads the adapter through the torch.backends entry point, or raises its message
    except Exception as exc:
        report["checks"].append({"name": "registration", "passed": False, "detail": first_line(exc)})
        torch = None
    if torch is not None:
        report["torch_version"] = torch.__version__
        report["paddle_version"] = None
        report["strict_fallback"] = os.environ.get(f"{args.device.upper()}_STRICT_FALLBACK", "")
        wanted = [w for w in args.only.split(",") if w] or [
            "version-guard",
            "tensor",
            "save-load",
            "dataloader",
            "ops",
            "mnist",
        ]
        log("check registration")
        report["checks"].append(check_registration(torch, args.device))
        if report["checks"][-1]["passed"]:
            data = load_data(args.data)
            for name in wanted:
                log(f"check {name}")
                try:
                    if name == "version-guard":
                        result = check_version_guard(torch, args.device)
                    elif name == "tensor":
                        result = check_tensor(torch, args.device)
                    elif name == "save-load":
                        result = check_save_load(torch, args.device)
                    elif name == "dataloader":
                        result = check_dataloader(torch, args.device)
                    elif name == "ops":
                        result = check_ops(torch, args.device, args.ops)
                    elif name == "mnist":
                        result = check_mnist(torch, args.device, data, args.steps, args.batch_size, args.seed)
                    elif name == "kernels":
                        result = check_kernels(torch, args.device)
                    elif name == "fallback-report":
                        result = check_fallback_report(torch, args.device, data, args.seed)
                    else:
                        raise ValueError(f"unknown check {name!r}")
                except Exception as exc:
                    result = {
                        "name": name,
                        "passed": False,
                        "detail": first_line(exc),
                        "traceback": traceback.format_exc()[-3000:],
                    }
                report["checks"].append(result)
    report["passed"] = all(c["passed"] for c in report["checks"])
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2, default=float)
    log("all checks passed" if report["passed"] else "some checks failed")
    return 0  # the report, not the exit code, carries pass/fail


if __name__ == "__main__":
    sys.exit(main())
