"""plugin_checks' checks of the plugin's kernels, each against Paddle's CPU: the op cases, the
optimizers, the random ops, strided views and queued work; with the kernels the flavour leaves to
the CPU by design named, and CPU fallback on or off as each check needs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import queued_work
from check_common import BACKWARD_TOL, FORWARD_TOL, F, _compare, _first_line, log, np, paddle
from op_cases import op_cases
from op_helpers import rng, run_case
from plugin_exports import by_design
from records import CheckRecord, OpCheckCase, PaddleOpsCheck

# What with_fallback_by_design() runs: a check, or a case of the ops check
Entry = TypeVar("Entry", CheckRecord, OpCheckCase)


def check_queued_work(device: str) -> CheckRecord:
    paddle.set_device(f"{device}:0")
    a = queued_work.chain_input()
    x = paddle.to_tensor(a)
    y = x
    for _ in range(queued_work.STEPS):
        y = paddle.matmul(y, x) + x
    chain = y.numpy()
    host = (x * 3)._copy_to(paddle.CPUPlace(), False)
    tripled = host.numpy()  # read at once (numpy() copies)
    # A late copy (an adapter that does not wait) must land in `host`, still alive, not in
    # memory freed and reused by then: the wait comes before `host` goes.
    paddle.device.synchronize()
    return queued_work.verdict(a, chain, tripled)


def check_with_kernels_left_out(name: str, check: Callable[[str], CheckRecord], device: str) -> CheckRecord:
    """A check whose ops may lack their kernel (left out with <NAME>_FALLBACK_OPS): the error is
    the check's result, not the payload's end; the current device is <type>:0 again after it."""
    try:
        return check(device)
    except Exception as exc:
        return {"name": name, "kind": "basics", "passed": False, "detail": _first_line(exc)}
    finally:
        paddle.set_device(f"{device}:0")


def registered_dtypes(device: str) -> dict[str, set[str]]:
    """kernel -> dtypes the plugin registers it for (keys read "(stpu, layout, float32)")."""
    from paddle.base import core

    found: dict[str, set[str]] = {}
    for name, keys in core._get_registered_phi_kernels("function").items():
        for key in keys:
            parts = [p.strip() for p in key.strip("()").split(",")]
            if parts and parts[0] == device:
                found.setdefault(name, set()).add(parts[-1])
    return found


def registered_kernels(device: str) -> list[str]:
    """phi kernels the plugin registered for `device`."""
    return sorted(registered_dtypes(device))


@contextmanager
def cpu_fallback(enabled: bool) -> Iterator[None]:
    """Paddle's CPU fallback on for the block when `enabled` (the checks run with it off, so
    that a missing kernel fails)."""
    saved = paddle.get_flags(["FLAGS_enable_api_kernel_fallback"]) if enabled else {}
    try:
        if enabled:
            paddle.set_flags({"FLAGS_enable_api_kernel_fallback": True})
        yield
    finally:
        if saved:
            paddle.set_flags(saved)


def with_fallback_by_design(
    check: Callable[..., Entry], kernels: list[str], patterns: list[str], *args: object
) -> Entry:
    """`check`, with the CPU fallback on when its kernels include one the device library lacks."""
    designed = by_design(kernels, patterns)
    with cpu_fallback(bool(designed)):
        entry = check(*args)
    if designed:
        entry["cpu_by_design"] = designed
    return entry


def with_kernels_left_to_the_cpu(check: Callable[[], CheckRecord], unimplemented: list[str]) -> CheckRecord:
    """A basic check (tensors, devices, queues, views: everyday kernels) on a device library that
    leaves kernels to the CPU by design: with Paddle's CPU fallback on, so those run there. Which
    kernels a model then runs on the CPU, and whether each is by design, is the fallback report's
    and the training check's to judge."""
    if not unimplemented:
        return check()
    with cpu_fallback(True):
        entry = check()
    entry["detail"] = f"{entry.get('detail', '')} (CPU fallback on: the device library leaves kernels to the CPU)"
    return entry


# Kernels whose outputs are their inputs (update_loss_scaling_): when the device library lacks
# one, Paddle runs it on the CPU and does not write the results back into the device tensors, so
# its case has nothing to compare on such a flavour.
WRITTEN_IN_PLACE = {"update_loss_scaling"}


def check_ops(device: str, registered: list[str], unimplemented: list[str]) -> PaddleOpsCheck:
    results: list[OpCheckCase] = []
    for case, kernels, fn, inputs, grad, *case_flags in op_cases():
        flags = dict(case_flags[0]) if case_flags else {}
        designed = by_design(kernels, unimplemented)
        if set(designed) & WRITTEN_IN_PLACE:
            reason = "in place: Paddle's CPU fallback leaves the device tensors as they were"
            results.append(
                {"case": case, "kernels": kernels, "passed": True, "cpu_by_design": designed, "not_run": reason}
            )
            log(f"  op {case}: not run ({reason})")
            continue
        if unimplemented:  # (the case's inputs and gradient use everyday kernels the library may lack too)
            flags["FLAGS_enable_api_kernel_fallback"] = True
        saved = paddle.get_flags(list(flags)) if flags else {}
        try:
            if flags:
                paddle.set_flags(flags)
            dev = run_case(fn, inputs, device, grad)
            cpu = run_case(fn, inputs, "cpu", grad)
            entry: OpCheckCase = {"case": case, "kernels": kernels, "passed": True, "max_abs_diff": {}}
            if designed:
                entry["cpu_by_design"] = designed
            for key in cpu:
                ok, diff = _compare(dev[key], cpu[key], FORWARD_TOL if key == "out" else BACKWARD_TOL)
                entry["max_abs_diff"][key] = diff
                entry["passed"] &= ok
        except Exception as exc:  # a missing kernel raises here: report it by name
            entry = {"case": case, "kernels": kernels, "passed": False, "error": _first_line(exc)}
        finally:
            if saved:
                paddle.set_flags(saved)
        log(f"  op {case}: {'pass' if entry['passed'] else 'FAIL'}")
        results.append(entry)
    results.append(with_fallback_by_design(check_optimizers, ["sgd", "adam"], unimplemented, device))
    results.append(with_fallback_by_design(check_random, ["uniform", "gaussian"], unimplemented, device))
    results.append(with_fallback_by_design(check_dropout_random, ["dropout", "dropout_grad"], unimplemented, device))
    import quant_cases  # (bit for bit: the quantization kernels' cases of test-ops)

    for quant in quant_cases.run(device, registered_dtypes(device), ["float32"], lambda case, kernel: True):
        if quant["status"] == "not registered":
            continue
        quantized: OpCheckCase = {
            "case": quant["case"],
            "kernels": quant["kernels"],
            "passed": quant["status"] == "pass",
        }
        if "error" in quant:
            quantized["error"] = quant["error"]
        results.append(quantized)
    failed = [r["case"] for r in results if not r["passed"]]
    covered = {k for r in results for k in r["kernels"]}
    uncovered = sorted(set(registered) - covered)
    designed = sorted({k for r in results for k in r.get("cpu_by_design", ())})
    return {
        "name": "ops",
        "kind": "ops",
        "passed": not failed,
        "detail": f"{len(results) - len(failed)}/{len(results)} cases match Paddle CPU, covering "
        f"{len(covered & set(registered))}/{len(registered)} registered kernels"
        + (f"; failing: {', '.join(failed)}" if failed else "")
        + (f"; not exercised: {', '.join(uncovered)}" if uncovered else "")
        + (f"; on the CPU by design (the device library lacks them): {', '.join(designed)}" if designed else ""),
        "uncovered_kernels": uncovered,
        "tolerance": {"forward": FORWARD_TOL, "backward": BACKWARD_TOL},
        "cases": results,
    }


def check_optimizers(device: str) -> OpCheckCase:
    """Three SGD and three Adam steps on the same parameters and gradients."""
    r = rng(3)
    w0 = r.uniform(-1, 1, (6, 4)).astype(np.float32)
    grads = [r.uniform(-1, 1, (6, 4)).astype(np.float32) for _ in range(3)]
    entry: OpCheckCase = {"case": "sgd / adam updates", "kernels": ["sgd", "adam"], "passed": True, "max_abs_diff": {}}
    try:
        for opt_name in ("SGD", "Adam"):
            finals: dict[str, np.ndarray] = {}
            for place in (device, "cpu"):
                paddle.set_device(place)
                w = paddle.create_parameter([6, 4], "float32")
                w.set_value(w0)
                opt = getattr(paddle.optimizer, opt_name)(learning_rate=0.1, parameters=[w])
                for g in grads:
                    (w * paddle.to_tensor(g)).sum().backward()
                    opt.step()
                    opt.clear_grad()
                finals[place] = w.numpy()
            ok, diff = _compare(finals[device], finals["cpu"], FORWARD_TOL)
            entry["max_abs_diff"][opt_name.lower()] = diff
            entry["passed"] &= ok
    except Exception as exc:
        entry.update({"passed": False, "error": _first_line(exc)})
    log(f"  op sgd/adam: {'pass' if entry['passed'] else 'FAIL'}")
    return entry


def check_random(device: str) -> OpCheckCase:
    """uniform/gaussian cannot match CPU bit for bit: check their statistics."""
    paddle.set_device(device)
    entry: OpCheckCase = {"case": "uniform / gaussian statistics", "kernels": ["uniform", "gaussian"], "passed": True}
    try:
        u = paddle.uniform([20000], min=-2.0, max=2.0).numpy()
        g = paddle.normal(1.0, 2.0, [20000]).numpy()
        stats: dict[str, float | bool] = {
            "uniform_min": float(u.min()),
            "uniform_max": float(u.max()),
            "uniform_mean": float(u.mean()),
            "gaussian_mean": float(g.mean()),
            "gaussian_std": float(g.std()),
        }
        entry["stats"] = stats
        entry["passed"] = bool(
            u.min() >= -2.0
            and u.max() <= 2.0
            and abs(u.mean()) < 0.05
            and abs(g.mean() - 1.0) < 0.1
            and abs(g.std() - 2.0) < 0.1
        )
    except Exception as exc:
        entry.update({"passed": False, "error": _first_line(exc)})
    log(f"  op uniform/gaussian: {'pass' if entry['passed'] else 'FAIL'}")
    return entry


def check_dropout_random(device: str) -> OpCheckCase:
    """Dropout without a fixed seed (the device generator): keep rate, scaling, gradient = mask."""
    paddle.set_device(device)
    entry: OpCheckCase = {
        "case": "dropout (device generator) statistics",
        "kernels": ["dropout", "dropout_grad"],
        "passed": True,
    }
    try:
        x = paddle.to_tensor(np.full([20000], 2.0, np.float32), stop_gradient=False)
        y = F.dropout(x, 0.3)
        y.sum().backward()
        yv, g = y.numpy(), x.grad.numpy()
        again = F.dropout(x, 0.3).numpy()
        kept = yv != 0
        entry["stats"] = {"dropped_fraction": float(1 - kept.mean()), "masks_differ": bool((again != yv).any())}
        entry["passed"] = bool(
            abs(entry["stats"]["dropped_fraction"] - 0.3) < 0.02
            and np.allclose(yv[kept], 2.0 / 0.7)
            and np.allclose(g, kept / 0.7)
            and entry["stats"]["masks_differ"]
        )
    except Exception as exc:
        entry.update({"passed": False, "error": _first_line(exc)})
    log(f"  op dropout statistics: {'pass' if entry['passed'] else 'FAIL'}")
    return entry


def check_strided_views(device: str) -> CheckRecord:
    """With Paddle's default FLAGS_use_stride_kernel, transpose/slice/split return views: an op on
    them needs the device's contiguous kernel, an in-place write its strided_copy."""
    # (detail: set below)
    entry: CheckRecord = {"name": "strided views", "kind": "basics", "passed": False, "detail": ""}
    try:
        saved = paddle.get_flags(["FLAGS_use_stride_kernel"])
        paddle.set_flags({"FLAGS_use_stride_kernel": True})
        results: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, bool]] = {}
        for place in (device, "cpu"):
            paddle.set_device(place)
            x = paddle.to_tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4), stop_gradient=False)
            t = paddle.transpose(x, [2, 0, 1])
            view_is_strided = not t.is_contiguous()
            y = t * 2.0 + x[:, 1:, ::1].sum()
            y.sum().backward()
            z = paddle.zeros([3, 4])
            paddle.transpose(z, [1, 0]).add_(paddle.to_tensor(np.arange(12, dtype=np.float32).reshape(4, 3)))
            # (an in-place op on a view: computed contiguous, written back into z by strided_copy)
            results[place] = (y.numpy(), x.grad.numpy(), z.numpy(), view_is_strided)
        expected_z = np.arange(12, dtype=np.float32).reshape(4, 3).T
        paddle.set_flags(saved)
        same = all(
            np.allclose(a, b, rtol=1e-5, atol=1e-6)
            for a, b in zip(results[device][:3], results["cpu"][:3], strict=True)
        )
        same = same and np.array_equal(results[device][2], expected_z)
        entry.update(
            {
                "passed": bool(same and results[device][3]),
                "detail": (
                    f"transpose view (strided: {results[device][3]}) + op, slice grad and a write into a "
                    f"view match cpu: {same}"
                ),
            }
        )
    except Exception as exc:
        entry["detail"] = _first_line(exc)
    return entry
