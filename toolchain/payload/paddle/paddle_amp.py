"""Mixed precision on the device (`devkit verify --amp O1|O2`): LeNet trained under
paddle.amp.auto_cast with a GradScaler (O2: paddle.amp.decorate, float32 master weights) vs the
float32 CPU curve, with Paddle's own per-op dtype counts; a step whose loss scale overflows
float16, which must skip the optimizer step and halve the scale; and bfloat16, which Paddle's
auto_cast refuses for most custom device types, through explicit casts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from check_common import F, _first_line, log, np, paddle
from mnist import LeNet, initial_state
from op_helpers import rng
from records import AmpOverflowCheck, AmpTrainingVerdict, Bfloat16Check, CheckRecord, CpuCurve, TrainingCriteria
from training_verdict import Dataset, failed_check, require_data, training_verdict

# How far the mixed-precision curve may stray from the float32 CPU one: float16 rounds every
# activation (2^-11 relative) and the runs drift apart over the steps. Accuracy: within a point.
AMP_CURVE_DIFF = 0.15
BF16_CURVE_DIFF = 0.3  # bfloat16 keeps 8 bits of mantissa
ACCURACY_POINTS = 0.01


@contextmanager
def op_counts() -> Iterator[dict[str, dict[str, int]]]:
    """Paddle's counts of the ops the block runs, by dtype (its collect_operator_stats): the
    yielded dict is filled when the block ends."""
    counts: dict[str, dict[str, int]] = {}
    paddle.amp.debugging.enable_operator_stats_collection()  # (clears the earlier counts)
    try:
        yield counts
        raw = paddle.base.core.get_low_precision_op_list() or {}
        for op, value in sorted(raw.items()):
            calls = [int(v) for v in (value.split(",") if isinstance(value, str) else value)]
            counts[op] = dict(zip(("float16", "bfloat16", "float32", "other"), calls, strict=False))
    finally:
        paddle.set_flags({"FLAGS_low_precision_op_list": 0})  # (without disable_...: it prints the table)


def grad_scaler(init_loss_scaling: float, **kwargs: Any) -> Any:
    """paddle.amp.GradScaler with a 0-d scale: Paddle 3.3.1's scaler prints float(scale) of its
    1-element scale when it shrinks it, which NumPy 2 refuses ("only 0-dimensional arrays can be
    converted to Python scalars"), so the first overflow would end training there."""
    scaler = paddle.amp.GradScaler(init_loss_scaling=init_loss_scaling, **kwargs)
    scaler._scale = scaler._scale.reshape([])
    return scaler


def _scale_of(scaler: Any) -> float:
    return float(np.asarray(scaler.state_dict()["scale"]).reshape(-1)[0])


def _model(place: str, seed: int, level: str, dtype: str) -> tuple[Any, Any]:
    paddle.set_device(place)
    model = LeNet()
    model.set_state_dict({k: paddle.to_tensor(v) for k, v in initial_state(model, seed).items()})
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    if level == "O2":
        model, opt = paddle.amp.decorate(models=model, optimizers=opt, level="O2", dtype=dtype)
    return model, opt


def amp_step(model: Any, opt: Any, scaler: Any, x: Any, y: Any, level: str) -> Any:
    """One training step under auto_cast(level, float16) and `scaler`; the loss."""
    with paddle.amp.auto_cast(level=level, dtype="float16"):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.clear_grad()
    return loss


def _accuracy(model: Any, data: Dataset, level: str, dtype: str) -> float:
    model.eval()
    correct = 0.0
    with paddle.no_grad(), paddle.amp.auto_cast(level=level, dtype=dtype):
        for i in range(0, len(data["x_test"]), 256):
            logits = model(paddle.to_tensor(data["x_test"][i : i + 256])).astype("float32")
            correct += float(paddle.metric.accuracy(logits, paddle.to_tensor(data["y_test"][i : i + 256]))) * len(
                data["x_test"][i : i + 256]
            )
    return correct / len(data["x_test"])


def train_amp(place: str, data: Dataset, steps: int, batch: int, seed: int, level: str) -> dict[str, Any]:
    """LeNet under auto_cast(level, float16) and a dynamic GradScaler; Paddle's op counts and the
    device memory high-water mark come with the curve."""
    model, opt = _model(place, seed, level, "float16")
    scaler = grad_scaler(2.0**15)
    order = rng(seed).permutation(len(data["x_train"]))
    paddle.device.synchronize()
    paddle.device.reset_max_memory_allocated(place)
    losses, skipped = [], 0
    start = time.perf_counter()
    with op_counts() as stats:
        for step in range(steps):
            idx = np.take(order, range(step * batch, (step + 1) * batch), mode="wrap")
            x, y = paddle.to_tensor(data["x_train"][idx]), paddle.to_tensor(data["y_train"][idx])
            loss = amp_step(model, opt, scaler, x, y, level)
            skipped += bool(scaler._cache_found_inf)
            losses.append(float(loss))
            if step % 50 == 0 or step == steps - 1:
                log(f"  mnist amp {level} {place} step {step}: loss {losses[-1]:.4f}")
    seconds = time.perf_counter() - start
    peak = int(paddle.device.max_memory_allocated(place))  # (of the training steps: before evaluation)
    return {
        "losses": losses,
        "heldout_accuracy": _accuracy(model, data, level, "float16"),
        "train_seconds": seconds,
        "op_stats": stats,
        "skipped_steps": skipped,
        "final_scale": _scale_of(scaler),
        "peak_memory_bytes": peak,
    }


def peak_memory_fp32(place: str, data: Dataset, steps: int, batch: int, seed: int) -> int:
    """The device memory high-water mark of the same steps in float32 (O2's yardstick)."""
    model, opt = _model(place, seed, "O0", "float32")
    order = rng(seed).permutation(len(data["x_train"]))
    paddle.device.synchronize()
    paddle.device.reset_max_memory_allocated(place)
    for step in range(steps):
        idx = np.take(order, range(step * batch, (step + 1) * batch), mode="wrap")
        loss = F.cross_entropy(model(paddle.to_tensor(data["x_train"][idx])), paddle.to_tensor(data["y_train"][idx]))
        loss.backward()
        opt.step()
        opt.clear_grad()
    return int(paddle.device.max_memory_allocated(place))


def low_precision_ops(stats: dict[str, dict[str, int]]) -> list[str]:
    return sorted(op for op, calls in stats.items() if calls["float16"])


def check_amp(
    device: str, data: Dataset | None, steps: int, batch: int, seed: int, level: str, cpu_curve: Callable[[], CpuCurve]
) -> AmpTrainingVerdict | CheckRecord:
    """LeNet under AMP on the device vs float32 on the CPU: the loss falls, the curve stays within
    AMP_CURVE_DIFF, the held-out accuracy within a point of the CPU's; the convolutions and GEMMs
    ran in float16 (Paddle's counts); O2 holds at most 0.65x the float32 run's device memory."""
    name = f"mnist amp {level}"
    try:
        data = require_data(data, name)
        dev = train_amp(device, data, steps, batch, seed, level)
        cpu = cpu_curve()
        fp32_peak = peak_memory_fp32(device, data, min(steps, 5), batch, seed) if level == "O2" else 0
    except Exception as exc:
        return failed_check(name, "training", _first_line(exc))
    criteria: TrainingCriteria = {
        "min_loss_drop_fraction": 0.5,
        "min_heldout_accuracy": cpu["heldout_accuracy"] - ACCURACY_POINTS,
        "max_curve_abs_diff": AMP_CURVE_DIFF,
    }
    run = {k: dev[k] for k in ("losses", "heldout_accuracy", "train_seconds")}
    verdict = training_verdict(name, run, cpu, criteria, data, steps, batch, seed)  # type: ignore[arg-type]
    low = low_precision_ops(dev["op_stats"])
    problems = [f"{op} never ran in float16" for op in ("conv2d", "matmul_v2") if op not in low]
    ratio = dev["peak_memory_bytes"] / fp32_peak if fp32_peak else None
    if ratio is not None and ratio > 0.65:
        problems.append(f"peak device memory {ratio:.2f}x the float32 run's (at most 0.65x)")
    result: AmpTrainingVerdict = {
        **verdict,
        "passed": verdict["passed"] and not problems,
        "detail": verdict["detail"]
        + f"; float16 ops: {', '.join(low) or 'none'}; {dev['skipped_steps']} steps skipped by the scaler "
        + f"(scale now {dev['final_scale']:g})"
        + (f"; peak device memory {ratio:.2f}x float32's" if ratio is not None else "")
        + (f"; {'; '.join(problems)}" if problems else ""),
        "level": level,
        "op_stats": dev["op_stats"],
        "peak_memory_bytes": dev["peak_memory_bytes"],
        "fp32_peak_memory_bytes": fp32_peak,
    }
    return result


def check_overflow(
    device: str, data: Dataset | None, batch: int, seed: int, level: str
) -> AmpOverflowCheck | CheckRecord:
    """A clean step, then one whose loss scale (2^40) overflows float16: the scaler must find the
    infinity on the device (the flag is read only through a synchronising copy), skip the optimizer
    step (every parameter unchanged, bit for bit) and halve the scale."""
    name = f"amp overflow ({level})"
    try:
        data = require_data(data, name)
        model, opt = _model(device, seed, level, "float16")
        x, y = paddle.to_tensor(data["x_train"][:batch]), paddle.to_tensor(data["y_train"][:batch])
        amp_step(model, opt, grad_scaler(1024.0), x, y, level)
        before = {n: p.numpy().copy() for n, p in model.named_parameters()}
        huge = grad_scaler(2.0**40, decr_every_n_nan_or_inf=1)
        amp_step(model, opt, huge, x, y, level)
        found = bool(huge._cache_found_inf)
        scale = _scale_of(huge)
        changed = sorted(n for n, p in model.named_parameters() if not np.array_equal(p.numpy(), before[n]))
    except Exception as exc:
        return failed_check(name, "amp", _first_line(exc))
    passed = found and not changed and scale == 2.0**39
    return {
        "name": name,
        "kind": "amp",
        "passed": passed,
        "detail": f"loss scale 2^40: inf/NaN found {found}, optimizer step "
        + (f"applied to {', '.join(changed)}" if changed else "skipped (parameters unchanged)")
        + f", scale {scale:g} (want {2.0**39:g})",
        "found_inf": found,
        "changed_parameters": changed,
        "scale_after": scale,
    }


def bfloat16_gate(device: str) -> str:
    """Why Paddle's auto_cast will not run bfloat16 on `device` ("" when it does): asked of Paddle
    itself, a matmul under auto_cast(bfloat16), since the device types it allows vary by version."""
    import warnings

    paddle.set_device(device)
    x = paddle.ones([2, 2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with paddle.amp.auto_cast(dtype="bfloat16"):
            y = paddle.matmul(x, x)
    if y.dtype == paddle.bfloat16:
        return ""
    said = next((str(w.message) for w in caught), "")
    return (
        f"Paddle {paddle.__version__} turns bfloat16 auto_cast off for custom device type {device.split(':')[0]!r}"
        + (f" ({said!r})" if said else "")
        + ": the bfloat16 kernels are verified through explicit casts"
    )


def check_bfloat16(
    device: str, data: Dataset | None, steps: int, batch: int, seed: int, cpu_curve: Callable[[], CpuCurve]
) -> Bfloat16Check | CheckRecord:
    """LeNet in bfloat16 by explicit casts (parameters and inputs bfloat16, Adam with float32
    master weights), since auto_cast may refuse it: every step finite, the loss falls and stays
    within BF16_CURVE_DIFF of the float32 CPU curve's first steps (the curve check_amp judges by:
    the same weights and batches, so its first steps are a shorter run's)."""
    name = "bfloat16 (explicit casts)"
    gate = bfloat16_gate(device)
    try:
        from mnist import train

        data = require_data(data, name)
        paddle.set_device(device)
        model = LeNet()
        model.set_state_dict({k: paddle.to_tensor(v) for k, v in initial_state(model, seed).items()})
        model.to(dtype="bfloat16")
        opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters(), multi_precision=True)
        order = rng(seed).permutation(len(data["x_train"]))
        losses = []
        with op_counts() as stats:
            for step in range(steps):
                idx = np.take(order, range(step * batch, (step + 1) * batch), mode="wrap")
                x = paddle.to_tensor(data["x_train"][idx]).astype("bfloat16")
                loss = F.cross_entropy(model(x), paddle.to_tensor(data["y_train"][idx]))
                loss.backward()
                opt.step()
                opt.clear_grad()
                losses.append(float(loss.astype("float32")))
        cpu_losses = cpu_curve()["losses"]
        if len(cpu_losses) < steps:  # (a run shorter than this check: its own CPU steps)
            cpu_losses = train("cpu", data, steps, batch, seed)["losses"]
    except Exception as exc:
        return failed_check(name, "amp", (gate + "; " if gate else "") + _first_line(exc))
    window = max(1, min(10, steps // 4))
    first, last = float(np.mean(losses[:window])), float(np.mean(losses[-window:]))
    diff = float(np.max(np.abs(np.array(losses) - np.array(cpu_losses[:steps]))))
    bf16 = sorted(op for op, calls in stats.items() if calls["bfloat16"])
    passed = bool(np.all(np.isfinite(losses))) and last < 0.5 * first and diff <= BF16_CURVE_DIFF
    passed = passed and all(op in bf16 for op in ("conv2d", "matmul_v2"))
    return {
        "name": name,
        "kind": "amp",
        "passed": passed,
        "detail": (f"{gate}; " if gate else "")
        + f"{steps} steps: loss {first:.3f} -> {last:.3f}, max |loss diff vs cpu float32| {diff:.2e}; "
        + f"bfloat16 ops: {', '.join(bf16) or 'none'}",
        "gate": gate,
        "losses": losses,
        "op_stats": stats,
    }
