"""Mixed precision on the device, PyTorch (`devkit verify --framework torch --amp O1`): LeNet
trained under torch.autocast with torch.amp.GradScaler (float16) and under autocast in bfloat16,
each against the float32 CPU curve, with the dtype and device of every op the first step ran
(a dispatch trace) and no CPU fallback; a step whose loss scale overflows float16; and every op
of torch's own autocast test lists giving the dtype torch's policy says, on the device."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from types import ModuleType
from typing import Any

import numpy as np
from records import (
    CheckRecord,
    CpuCurve,
    TorchAmpVerdict,
    TorchAutocastListsCheck,
    TorchOverflowCheck,
    TrainingCriteria,
)
from torch_common import first_line, log
from torch_suites import allow_torch_testing_imports
from torch_training import fallback_counts, initial_state, lenet, split_by_design, unimplemented_kernels
from training_verdict import Dataset, failed_check, require_data, training_verdict

CURVE_DIFF = {"float16": 0.15, "bfloat16": 0.3}  # from the float32 CPU curve (bfloat16 keeps 8 bits)
ACCURACY_POINTS = 0.01
# what must run in the low dtype on the device (torch's lower-precision list: convolutions, GEMMs)
LOW_PRECISION_OPS = ("aten.convolution.default", "aten.addmm.default")
SCALER_OPS = ("aten._amp_foreach_non_finite_check_and_unscale_.default", "aten._amp_update_scale_.default")


def dispatch_trace(torch: ModuleType) -> Any:
    """A TorchDispatchMode recording each op's name, the dtypes of its tensor outputs (its inputs
    when it returns none: the in-place scaler ops) and whether they are on the device."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Trace(TorchDispatchMode):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.ops: Counter[tuple[str, str, str]] = Counter()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            tensors = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            tensors = tensors or [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
            for t in tensors[:1]:
                self.ops[(str(func), str(t.dtype).removeprefix("torch."), t.device.type)] += 1
            return out

    return Trace()


def train_amp(
    torch: ModuleType, device: str, data: Dataset, steps: int, batch: int, seed: int, dtype: str
) -> dict[str, Any]:
    """LeNet under torch.autocast(device, dtype); float16 with a dynamic GradScaler. The first
    step runs under the dispatch trace."""
    F = torch.nn.functional
    low = getattr(torch, dtype)
    torch.manual_seed(seed)
    model = lenet(torch)
    model.load_state_dict(initial_state(torch, model, seed))
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**15, enabled=dtype == "float16")
    order = np.random.RandomState(seed).permutation(len(data["x_train"]))
    getattr(torch, device).reset_fallback_counts()
    losses, skipped, trace = [], 0, dispatch_trace(torch)
    start = time.perf_counter()
    for step in range(steps):
        idx = np.take(order, range(step * batch, (step + 1) * batch), mode="wrap")
        x = torch.from_numpy(data["x_train"][idx]).to(device)
        y = torch.from_numpy(data["y_train"][idx].reshape(-1).astype(np.int64)).to(device)
        with trace if step == 0 else nullcontext():
            with torch.autocast(device_type=device, dtype=low):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            scale = scaler.get_scale() if scaler.is_enabled() else 1.0
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        skipped += scaler.is_enabled() and scaler.get_scale() < scale
        losses.append(float(loss.item()))
        if step % 50 == 0 or step == steps - 1:
            log(f"  mnist autocast {dtype} {device} step {step}: loss {losses[-1]:.4f}")
    seconds = time.perf_counter() - start
    fell_back = fallback_counts(torch, device)
    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast(device_type=device, dtype=low):
        for i in range(0, len(data["x_test"]), 256):
            logits = model(torch.from_numpy(data["x_test"][i : i + 256]).to(device))
            label = torch.from_numpy(data["y_test"][i : i + 256].reshape(-1).astype(np.int64)).to(device)
            correct += int((logits.argmax(dim=1) == label).sum().item())
    table: dict[str, dict[str, int]] = {}
    for (op, dt, where), n in sorted(trace.ops.items()):
        table.setdefault(op, {})[f"{dt} on {where}"] = n
    return {
        "losses": losses,
        "heldout_accuracy": correct / len(data["x_test"]),
        "train_seconds": seconds,
        "ops": table,
        "fallbacks": fell_back,
        "skipped_steps": int(skipped),
    }


def check_autocast(
    torch: ModuleType,
    device: str,
    data: Dataset | None,
    steps: int,
    batch: int,
    seed: int,
    dtype: str,
    cpu: Callable[[], CpuCurve],
) -> TorchAmpVerdict | CheckRecord:
    """LeNet under autocast(dtype) on the device vs `cpu()`, the float32 CPU curve (trained once for
    both dtypes, or read from the native reference)."""
    name = f"mnist autocast {dtype}"
    try:
        data = require_data(data, name)
        dev = train_amp(torch, device, data, steps, batch, seed, dtype)
        curve = cpu()
    except Exception as exc:
        return failed_check(name, "training", first_line(exc))
    criteria: TrainingCriteria = {
        "min_loss_drop_fraction": 0.5,
        "min_heldout_accuracy": curve["heldout_accuracy"] - ACCURACY_POINTS,
        "max_curve_abs_diff": CURVE_DIFF[dtype],
    }
    run = {k: dev[k] for k in ("losses", "heldout_accuracy", "train_seconds")}
    verdict = training_verdict(name, run, curve, criteria, data, steps, batch, seed)  # type: ignore[arg-type]
    problems = [
        f"{op} did not run in {dtype} on {device}"
        for op in LOW_PRECISION_OPS
        if not dev["ops"].get(op, {}).get(f"{dtype} on {device}")
    ]
    if dtype == "float16":
        problems += [f"{op} did not run on {device}" for op in SCALER_OPS if not _on(dev["ops"].get(op, {}), device)]
    designed, unexpected = split_by_design(dev["fallbacks"], unimplemented_kernels(torch, device))
    if unexpected:
        problems.append(f"CPU fallbacks: {unexpected}")
    low = sorted(
        op.removeprefix("aten.").removesuffix(".default") for op, d in dev["ops"].items() if f"{dtype} on {device}" in d
    )
    result: TorchAmpVerdict = {
        **verdict,
        "passed": verdict["passed"] and not problems,
        "detail": verdict["detail"]
        + f"; {dtype} on {device}: {', '.join(low) or 'nothing'}"
        + (f"; {dev['skipped_steps']} steps skipped by the scaler" if dtype == "float16" else "")
        + (f"; {'; '.join(problems)}" if problems else ", no CPU fallback"),
        "dtype": dtype,
        "ops": dev["ops"],
        "fallbacks": dev["fallbacks"],
        "fallbacks_by_design": designed,
    }
    return result


def _on(placements: dict[str, int], device: str) -> bool:
    return any(key.endswith(f" on {device}") for key in placements)


def check_overflow(
    torch: ModuleType, device: str, data: Dataset | None, batch: int, seed: int
) -> TorchOverflowCheck | CheckRecord:
    """A clean step, then one with a loss scale of 2^40, which overflows float16: the scaler
    must find the infinity on the device, skip the optimizer step (parameters bit-identical) and
    halve the scale."""
    name = "amp overflow (autocast float16)"
    try:
        data = require_data(data, name)
        F = torch.nn.functional
        torch.manual_seed(seed)
        model = lenet(torch)
        model.load_state_dict(initial_state(torch, model, seed))
        model.to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x = torch.from_numpy(data["x_train"][:batch]).to(device)
        y = torch.from_numpy(data["y_train"][:batch].reshape(-1).astype(np.int64)).to(device)

        def step(scaler: Any) -> None:
            with torch.autocast(device_type=device, dtype=torch.float16):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        step(torch.amp.GradScaler(device, init_scale=1024.0))
        before = {n: p.detach().cpu().clone() for n, p in model.named_parameters()}
        huge = torch.amp.GradScaler(device, init_scale=2.0**40)
        step(huge)
        scale = float(huge.get_scale())
        changed = sorted(n for n, p in model.named_parameters() if not torch.equal(p.detach().cpu(), before[n]))
    except Exception as exc:
        return failed_check(name, "amp", first_line(exc))
    passed = not changed and scale == 2.0**39
    return {
        "name": name,
        "kind": "amp",
        "passed": passed,
        "detail": "loss scale 2^40: optimizer step "
        + (f"applied to {', '.join(changed)}" if changed else "skipped (parameters unchanged)")
        + f", scale {scale:g} (want {2.0**39:g})",
        "changed_parameters": changed,
        "scale_after": scale,
    }


# torch's autocast policy tests (torch.testing._internal.autocast_test_lists.AutocastTestLists,
# what test_cuda.py runs for CUDA): list -> (where the op is looked up, the dtype its output must
# have: "low" is the autocast dtype; None, the one the list gives per op).
POLICY_LISTS: dict[str, tuple[str, str | None]] = {
    "torch_expect_builtin_promote": ("torch", None),
    "methods_expect_builtin_promote": ("method", None),
    "torch_fp16": ("torch", "low"),
    "torch_fp32": ("torch", "float32"),
    "torch_need_autocast_promote": ("torch", "float32"),
    "nn_fp16": ("nn", "low"),
    "nn_fp32": ("nn", "float32"),
    "linalg_fp16": ("linalg", "low"),
    "methods_fp16": ("method", "low"),
    "methods_fp32": ("method", "float32"),
}
# Ops of the lists no device but CUDA has (no CPU kernel either, so no fallback can run them).
CUDA_ONLY = ("cudnn_",)


def _cast(torch: ModuleType, value: Any, dtype: Any) -> Any:
    """The inputs as autocast would see them cast by hand: floating tensors to `dtype`."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(torch, v, dtype) for v in value)
    return value


def _same(torch: ModuleType, a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and bool(torch.equal(a, b))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(torch, x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _policy_case(
    torch: ModuleType, device: str, where: str, op: str, args: Any, kwargs: dict[str, Any], amp: Any, want: Any
) -> str | None:
    """One op of a list under torch.autocast(device, amp): None when each variant (torch.* or
    Tensor.*) gives `want` on the device and the same bits as the inputs cast by hand outside
    autocast (what torch's own test asserts); otherwise what is wrong."""
    module = {"torch": torch, "nn": torch._C._nn, "linalg": torch._C._linalg, "method": None}[where]
    calls: list[Callable[..., Any]] = []
    if module is not None and hasattr(module, op):
        calls.append(lambda *a, **k: getattr(module, op)(*a, **k))
    if hasattr(torch.Tensor, op):
        calls.append(lambda first, *a, **k: getattr(first, op)(*a, **k))
    if not calls:
        return "no such op"
    run_as = want if want in (torch.float16, torch.bfloat16) else torch.float32
    for call in calls:
        with torch.autocast(device_type=device, dtype=amp):
            out = call(*args, **kwargs)
        tensors = [t for t in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(t, torch.Tensor)]
        if isinstance(out, torch.Tensor) and out.dtype != want:
            return f"gave {str(out.dtype).removeprefix('torch.')}, policy says {str(want).removeprefix('torch.')}"
        if elsewhere := [t.device for t in tensors if t.device.type != device]:
            return f"gave a tensor on {elsewhere[0]}"
        control = call(*_cast(torch, args, run_as), **kwargs)
        if not _same(torch, out, control):
            return "differs from the inputs cast by hand outside autocast"
    return None


def check_autocast_lists(torch: ModuleType, device: str) -> TorchAutocastListsCheck | CheckRecord:
    """Every op of torch's autocast test lists under torch.autocast(device) in float16 (the lists'
    dtype), the lower-precision lists in bfloat16 too, and the banned ops refused: the device's
    AutocastPrivateUse1 registration applies torch's own policy. Ops without a device kernel run
    through the CPU fallback here (the lists span ops LeNet never uses); what fell back is listed."""
    name = "autocast policy lists"
    module = getattr(torch, device)
    try:
        allow_torch_testing_imports()
        from torch.testing._internal.autocast_test_lists import AutocastTestLists

        failures: dict[str, str] = {}
        skipped: dict[str, str] = {}
        cases = 0
        with module.strict_fallback(False):
            module.reset_fallback_counts()
            torch.manual_seed(0)
            lists = AutocastTestLists(torch.device(device))
            runs = [("float16", lst) for lst in POLICY_LISTS]
            runs += [("bfloat16", lst) for lst, (_, want) in POLICY_LISTS.items() if want == "low"]
            for amp, lst in runs:
                where, want = POLICY_LISTS[lst]
                for n, entry in enumerate(getattr(lists, lst)):
                    op, args, extra = entry[0], entry[1], entry[2] if len(entry) > 2 else None
                    label = f"{lst}[{n}] {op} ({amp})"
                    if op.startswith(CUDA_ONLY):
                        skipped[label] = "a CUDA-only op (cuDNN): no device but CUDA has a kernel for it"
                        continue
                    # A third element is the output dtype (the builtin-promote lists), kwargs, or
                    # test_cuda.py's "skip": ROCm's flag, and einsum's operands, so torch never runs
                    # its einsum entry, whose equation needs 4-d ones.
                    if extra and not isinstance(extra, (dict, torch.dtype)):
                        skipped[label] = "skipped by torch's own test (a true third element)"
                        continue
                    cases += 1
                    expected = extra if want is None else getattr(torch, amp if want == "low" else want)
                    kwargs = extra if isinstance(extra, dict) else {}
                    try:
                        problem = _policy_case(torch, device, where, op, args, kwargs, getattr(torch, amp), expected)
                    except Exception as exc:
                        problem = f"raised {first_line(exc)}"
                    if problem:
                        failures[label] = problem
            for op, args, banned_module in lists.banned:
                cases += 1
                try:
                    with torch.autocast(device_type=device, dtype=torch.float16):
                        getattr(banned_module, op)(*args)
                    failures[f"banned {op}"] = "ran under autocast; torch's policy refuses it"
                except RuntimeError:
                    pass
            fell_back = fallback_counts(torch, device)
    except Exception as exc:
        return failed_check(name, "amp", first_line(exc))
    return {
        "name": name,
        "kind": "amp",
        "passed": not failures and cases > 0,
        "detail": f"{cases - len(failures)} of {cases} ops of torch's autocast test lists as the policy says"
        + (f"; wrong: {'; '.join(f'{k}: {v}' for k, v in list(failures.items())[:5])}" if failures else "")
        + (f"; not run: {', '.join(sorted(skipped))}" if skipped else "")
        + (f"; {len(fell_back)} ops ran through the CPU fallback" if fell_back else ""),
        "cases": cases,
        "failures": failures,
        "skipped": skipped,
        "fallbacks": fell_back,
    }
