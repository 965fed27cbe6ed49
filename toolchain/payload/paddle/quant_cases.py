"""test-ops cases of the quantization kernels: quantize_linear and dequantize_linear on the
device, bit for bit against Paddle's CPU kernels (a quantized model must give the same integers
on the device, not nearly the same).

Inference mode runs in dygraph (Paddle's legacy op, as a converted model calls it); training
mode (is_test false: the kernel observes its scales) only exists in a static program, so it
runs one on each place.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import check_common as common
import op_helpers
from op_records import OpResult
from records import Tolerance

np, paddle = common.np, common.paddle
EXACT: Tolerance = {"rtol": 0.0, "atol": 0.0}
Arrays = dict[str, Any]  # output name -> np.ndarray


def _quantize(x: Any, scale: Any, axis: int, qmax: int, round_type: int) -> Arrays:
    from paddle import _legacy_C_ops

    zero = paddle.zeros(scale.shape, "float32")
    out = _legacy_C_ops.quantize_linear(
        x, scale, zero, "quant_axis", axis, "bit_length", 8, "qmin", -qmax - 1, "qmax", qmax, "round_type", round_type
    )
    return {"out": out.numpy()}


def _dequantize(q: Any, scale: Any, axis: int) -> Arrays:
    from paddle import _legacy_C_ops

    zero = paddle.zeros(scale.shape, "float32")
    out = _legacy_C_ops.dequantize_linear(
        q, scale, zero, "quant_axis", axis, "bit_length", 8, "qmin", -128, "qmax", 127
    )
    return {"out": out.numpy()}


def _observe_in_training(x_value: Any, axis: int, device: str) -> Arrays:
    """quantize_linear with is_test false in a static program run on `place`: x fake-quantized with
    the scales the kernel observed (a moving average from accum 2 and state 1, or each channel's)."""
    from paddle import _C_ops

    channels = x_value.shape[axis] if axis >= 0 else 1
    main, startup = paddle.static.Program(), paddle.static.Program()
    paddle.enable_static()
    try:
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", list(x_value.shape), "float32")
            full = paddle.full  # (constants of the program, on the place it runs on)
            scale, zero = full([channels], 1.0, "float32"), full([channels], 0.0, "float32")
            accum, state = full([1], 2.0, "float32"), full([1], 1.0, "float32")
            # (Paddle's Python binding returns only the output: the observed scales show in it)
            out = _C_ops.quantize_linear(x, scale, zero, accum, state, axis, 8, -128, 127, 0, False, False)[0]
        exe = paddle.static.Executor(_place(device))
        exe.run(startup)
        (value,) = exe.run(main, feed={"x": x_value}, fetch_list=[out])
    finally:
        paddle.disable_static()
    return {"out": value}


def _on_each(fn: Callable[..., Arrays], *arrays_then_device: Any, **kw: Any) -> Arrays:
    """fn on the arrays as tensors of the device given last (partial() binds the arrays first)."""
    *arrays, device = arrays_then_device
    paddle.set_device(device)
    return fn(*(paddle.to_tensor(a) for a in arrays), **kw)


def cases() -> list[tuple[str, str, str, Callable[[str], Arrays]]]:
    """(case, kernel, dtype, run on a device -> outputs)."""
    r = op_helpers.rng(21)
    x = r.uniform(-4, 4, (6, 3, 5)).astype(np.float32)
    # exact ties of x * 127 / 3 are rare in random data: add values that land on .5 in float32
    ties = (np.arange(-20, 21, dtype=np.float32) + 0.5) * np.float32(3.0 / 127.0)
    flat = np.concatenate([x.reshape(-1), ties, np.array([0.0, -0.0, 3.0, -3.0, 7.5, -7.5], np.float32)])
    per_axis0 = np.abs(x).max(axis=(1, 2)).astype(np.float32) * np.float32(0.75)  # some values clip
    per_axis1 = np.abs(x).max(axis=(0, 2)).astype(np.float32)
    ints = r.randint(-128, 128, (6, 3, 5)).astype(np.int8)

    three = np.array([3.0], np.float32)
    out: list[tuple[str, str, str, Callable[[str], Arrays]]] = []
    for round_type in (0, 1):
        out.append(
            (
                f"quantize_linear per-tensor round_type {round_type} (ties, clipping)",
                "quantize_linear",
                "float32",
                partial(_on_each, _quantize, flat, three, axis=-1, qmax=127, round_type=round_type),
            )
        )
    for axis, scales in ((0, per_axis0), (1, per_axis1)):
        out.append(
            (
                f"quantize_linear per-channel axis {axis}",
                "quantize_linear",
                "float32",
                partial(_on_each, _quantize, x, scales, axis=axis, qmax=127, round_type=0),
            )
        )
    out.append(
        (
            "dequantize_linear int8 per-tensor",
            "dequantize_linear",
            "int8",
            partial(_on_each, _dequantize, ints, np.array([0.37], np.float32), axis=-1),
        )
    )
    out.append(
        (
            "dequantize_linear float32 per-channel axis 1",
            "dequantize_linear",
            "float32",
            partial(_on_each, _dequantize, ints.astype(np.float32), per_axis1, axis=1),
        )
    )
    for axis in (-1, 0):
        out.append(
            (
                f"quantize_linear training ({'moving average' if axis < 0 else 'per-channel abs-max'} scales)",
                "quantize_linear",
                "float32",
                partial(_observe_in_training, x, axis),
            )
        )
    return out


def _place(device: str) -> Any:
    return paddle.CPUPlace() if device == "cpu" else paddle.CustomPlace(device, 0)


def _same_bits(a: Any, b: Any) -> bool:
    """Bit for bit (any NaN for a NaN): a quantized model's integers must not be nearly equal."""
    if a is None:
        return False
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    nan = np.isnan(a) & np.isnan(b)
    bits = f"u{a.itemsize}"
    return bool(np.array_equal(a.view(bits)[~nan], b.view(bits)[~nan]))


def run(
    device: str, registered: dict[str, set[str]], dtypes: list[str], selected: Callable[[str, str], bool]
) -> list[OpResult]:
    """The cases (run with float32: their outputs are float32) whose kernel the plugin registers
    for the case's input dtype, each bit-exact."""
    results: list[OpResult] = []
    for case, kernel, dtype, fn in cases():
        if "float32" not in dtypes or not selected(case, kernel):
            continue
        entry: OpResult = {"case": case, "dtype": dtype, "kernels": [kernel], "status": "pass"}
        if dtype not in registered.get(kernel, set()):
            entry.update({"status": "not registered", "detail": f"{kernel} not registered for {dtype}"})
            results.append(entry)
            continue
        try:
            dev, cpu = fn(device), fn("cpu")
            wrong = [key for key in cpu if not _same_bits(dev.get(key), cpu[key])]
            if wrong:
                entry["status"] = "fail"
                entry["mismatch"] = [
                    f"{key}: {int(np.count_nonzero(np.asarray(dev[key]) != np.asarray(cpu[key])))} of "
                    f"{np.asarray(cpu[key]).size} elements differ from Paddle CPU's"
                    for key in wrong
                ]
        except Exception as exc:  # a missing or failing kernel raises: report it by name
            entry.update({"status": "error", "error": common._first_line(exc)})
        entry["tolerance"] = {"forward": EXACT, "backward": EXACT}
        common.log(f"  {case} [{dtype}]: {entry['status']}")
        results.append(entry)
    return results
