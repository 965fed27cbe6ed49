"""Checks of an installed Paddle device plugin, run inside a fresh environment.

This file is executed by `devkit verify` with the verify environment's Python
(paddlepaddle + the plugin wheel and nothing else), so it imports only Paddle,
NumPy and the standard library. It writes a JSON report; devkit renders it.

    python plugin_checks.py --device stpu --data data.npz --steps 200 --out report.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback

# Every check runs with CPU fallback off: an op without a device kernel must fail
# loudly instead of silently running on the host. (fallback_report.py imports this
# module with fallback on, to list what falls back.)
os.environ.setdefault("FLAGS_enable_api_kernel_fallback", "0")
os.environ.setdefault("GLOG_minloglevel", "2")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.nn as nn  # noqa: E402
import paddle.nn.functional as F  # noqa: E402


# The project's [tool.devkit.tolerances], passed by devkit (defaults match devkit's).
def tolerances() -> dict:
    """The project's [tool.devkit.tolerances], resolved by devkit and passed whole: payloads hold no defaults."""
    raw = os.environ.get("DEVKIT_TOLERANCES")
    if not raw:
        sys.exit("DEVKIT_TOLERANCES is not set: these checks are run by `devkit verify`, which passes the tolerances")
    return json.loads(raw)


_TOL = tolerances()
FORWARD_TOL = {"rtol": _TOL["op_rtol"], "atol": _TOL["op_atol"]}
BACKWARD_TOL = {"rtol": _TOL["grad_rtol"], "atol": _TOL["grad_atol"]}
# MNIST acceptance: stated here and copied into the report.
MNIST_CRITERIA = {
    "min_loss_drop_fraction": _TOL["min_loss_drop"],  # mean of the last 10 losses <= half the first 10
    "min_heldout_accuracy": _TOL["min_accuracy"],
    "max_curve_abs_diff": _TOL["max_curve_diff"],  # per-step |loss_device - loss_cpu|
}


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------- registration


def check_registration(device: str) -> dict:
    types = paddle.device.get_all_custom_device_type() or []
    return {
        "name": "registration",
        "passed": device in types,
        "detail": f"custom device types: {types}",
        "custom_device_types": types,
    }


def check_tensor(device: str) -> dict:
    paddle.set_device(device)
    x_int = paddle.to_tensor([1, 2, 3], dtype="int64")
    x_float = paddle.to_tensor([0.5, -1.25, 3.0], dtype="float32")
    int_sum = (x_int + x_int).numpy()
    float_sum = (x_float + x_float).numpy()
    place = str(x_int.place)
    expected_place = f"Place({device}:0)"
    passed = (
        place == expected_place
        and str((x_int + x_int).place) == expected_place
        and int_sum.dtype == np.int64
        and int_sum.tolist() == [2, 4, 6]
        and np.array_equal(float_sum, np.array([1.0, -2.5, 6.0], dtype=np.float32))
    )
    return {
        "name": "tensor",
        "passed": bool(passed),
        "detail": f"place {place}; int64 x+x = {int_sum.tolist()}; float32 x+x = {float_sum.tolist()}",
    }


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


# ------------------------------------------------------- kernel signatures

ATTRIBUTE_TYPES = (
    "undefined",
    "bool",
    "int32",
    "int64",
    "float32",
    "float64",
    "string",
    "bools",
    "int32s",
    "int64s",
    "float32s",
    "float64s",
    "strings",
    "Scalar",
    "Scalars",
    "IntArray",
    "DataType",
    "DataLayout",
    "Place",
)  # phi::AttributeType, in order


def _plugin_library(device: str):
    """The loaded plugin, found where Paddle looks for plugins (CUSTOM_DEVICE_ROOT, site-packages)."""
    import ctypes
    import glob

    roots = [os.environ.get("CUSTOM_DEVICE_ROOT", "")] + [os.path.join(p, "paddle_custom_device") for p in sys.path]
    for root in filter(None, roots):
        for path in sorted(glob.glob(os.path.join(root, "*.so"))):
            lib = ctypes.CDLL(path)  # already loaded by Paddle: the same handle
            if hasattr(lib, f"{device}_kernel_report"):
                return path, getattr(lib, f"{device}_kernel_report")
    return None, None


def _parse_args_def(text: str) -> dict:
    parts = {}
    for kind, _count, items in re.findall(r"(inputs|attributes|outputs) (\d+) \[([^\]]*)\]", text):
        parts[kind] = [i for i in items.split(",") if i]
    return parts


def _describe_difference(ours: dict, paddles: dict) -> str:
    diffs = []
    for kind in ("inputs", "attributes", "outputs"):
        a, b = ours.get(kind, []), paddles.get(kind, [])
        if a == b:
            continue
        if kind == "attributes":

            def names(xs: list[str]) -> str:
                return ", ".join(
                    ATTRIBUTE_TYPES[int(x)] if x.isdigit() and int(x) < len(ATTRIBUTE_TYPES) else x for x in xs
                )

            diffs.append(f"attributes ({names(a)}) but Paddle's are ({names(b)})")
        elif len(a) != len(b):
            diffs.append(f"{len(a)} {kind} but Paddle's kernel has {len(b)}")
        else:
            diffs.append(f"{kind} of other tensor types than Paddle's")
    return "; ".join(diffs)


def check_kernel_signatures(device: str) -> dict:
    """Each registered kernel's inputs, attributes and outputs vs the installed Paddle's CPU kernel."""
    path, report_fn = _plugin_library(device)
    if report_fn is None:
        return {
            "name": "kernel signatures",
            "passed": False,
            "detail": f"no loaded library exports {device}_kernel_report (rebuild with this devkit's template)",
        }
    import ctypes

    report_fn.restype = ctypes.c_char_p
    mismatched, unmatched, kernels = [], [], {}
    for line in report_fn().decode().splitlines():
        name, ours, paddles = line.split("\t")
        kernels[name] = {"plugin": ours, "paddle": paddles}
        if paddles == "-":
            unmatched.append(name)
        elif ours != paddles:
            why = _describe_difference(_parse_args_def(ours), _parse_args_def(paddles))
            mismatched.append(f"{name}: {why}")
    return {
        "name": "kernel signatures",
        "passed": not mismatched and bool(kernels),
        "detail": (
            f"{len(kernels) - len(mismatched) - len(unmatched)}/{len(kernels)} kernels match Paddle "
            f"{paddle.__version__}'s definitions"
            + (f"; MISMATCH {'; '.join(mismatched)}" if mismatched else "")
            + (f"; no CPU kernel to compare: {', '.join(unmatched)}" if unmatched else "")
        ),
        "library": path,
        "mismatched": mismatched,
        "kernels": kernels,
    }


# ------------------------------------------------------------- ops vs CPU


def _rng(seed: int) -> np.random.RandomState:
    return np.random.RandomState(seed)


def uniform(r: np.random.RandomState):
    """u(*shape, lo=-1, hi=1): float32 uniform samples from `r` (u() is a 0-d array)."""
    return lambda *shape, lo=-1.0, hi=1.0: np.asarray(r.uniform(lo, hi, shape), dtype=np.float32)


def _run(fn, arrays: dict, device: str, grad: bool):
    """Forward (and backward with a fixed upstream gradient) on one place."""
    paddle.set_device(device)
    tensors = {}
    for key, arr in arrays.items():
        t = paddle.to_tensor(arr)
        if grad and arr.dtype.kind == "f":
            t.stop_gradient = False
        tensors[key] = t
    out = fn(**tensors)
    result = {"out": out.numpy()}
    if grad:
        upstream = paddle.to_tensor(_rng(7).uniform(-1, 1, out.shape).astype(out.numpy().dtype))
        (out * upstream).sum().backward()
        for key, t in tensors.items():
            if not t.stop_gradient and t.grad is not None:  # (inputs such as running statistics get none)
                result[f"d_{key}"] = t.grad.numpy()
    return result


# Dygraph transpose/slice/split return strided views by default (materialized by
# the device's contiguous kernel); FLAGS_use_stride_kernel=0 runs the dense kernels,
# which static graphs and Paddle Inference use: cases test both.
DENSE_KERNELS = {"FLAGS_use_stride_kernel": False}
STRIDE_KERNELS = {"FLAGS_use_stride_kernel": True}


def _bn(x, g, b, training=True, data_format="NCHW", use_global_stats=None):
    """batch_norm, then its output and the running statistics after the momentum update."""
    c = x.shape[1] if data_format == "NCHW" else x.shape[-1]
    m = paddle.to_tensor(np.linspace(-0.5, 0.5, c)).astype(x.dtype)
    v = paddle.to_tensor(np.linspace(0.5, 2.0, c)).astype(x.dtype)
    y = F.batch_norm(
        x, m, v, g, b, training=training, momentum=0.8, data_format=data_format, use_global_stats=use_global_stats
    )
    return paddle.concat([y.flatten(), m, v])


def _dropout(x, p, training, mode, seed=1234):
    """dropout with Paddle's fixed seed (fix_seed): the device draws the CPU kernel's mask."""
    program = paddle.static.default_main_program()
    saved, program.random_seed = program.random_seed, seed
    try:
        return F.dropout(x, p, training=training, mode=mode)
    finally:
        program.random_seed = saved


def _split_concat(x, sections, axis):
    parts = paddle.split(x, sections, axis=axis)
    return paddle.concat([parts[-1], parts[0] * 2.0, *parts[1:-1]], axis=axis)


def _write_through_view(x, y):
    z = x * 1.0
    paddle.transpose(z, [1, 0]).add_(y)  # in place on a view: written back by strided_copy
    return z


def op_cases() -> list[tuple]:
    """(case, kernels exercised, function, inputs, check gradients[, Paddle flags for the case])."""
    r = _rng(0)
    u = uniform(r)

    return [
        ("add", ["add", "add_grad"], lambda x, y: x + y, {"x": u(4, 5), "y": u(4, 5)}, True),
        ("add broadcast [2,3,4]+[4]", ["add", "add_grad"], lambda x, y: x + y, {"x": u(2, 3, 4), "y": u(4)}, True),
        ("add broadcast [3,1]+[1,5]", ["add", "add_grad"], lambda x, y: x + y, {"x": u(3, 1), "y": u(1, 5)}, True),
        (
            "add int64",
            ["add"],
            lambda x, y: x + y,
            {"x": r.randint(-50, 50, (6,)).astype(np.int64), "y": r.randint(-50, 50, (6,)).astype(np.int64)},
            False,
        ),
        ("subtract broadcast", ["subtract", "subtract_grad"], lambda x, y: x - y, {"x": u(4, 5), "y": u(5)}, True),
        (
            "multiply broadcast",
            ["multiply", "multiply_grad"],
            lambda x, y: x * y,
            {"x": u(2, 3, 4), "y": u(3, 1)},
            True,
        ),
        ("divide", ["divide", "divide_grad"], lambda x, y: x / y, {"x": u(4, 5), "y": u(4, 5, lo=0.5, hi=2.0)}, True),
        ("relu", ["relu", "relu_grad"], lambda x: F.relu(x), {"x": u(8, 16)}, True),
        ("matmul", ["matmul", "matmul_grad"], lambda x, y: paddle.matmul(x, y), {"x": u(8, 16), "y": u(16, 4)}, True),
        (
            "matmul transpose_y",
            ["matmul", "matmul_grad"],
            lambda x, y: paddle.matmul(x, y, transpose_y=True),
            {"x": u(8, 16), "y": u(4, 16)},
            True,
        ),
        (
            "matmul batched broadcast",
            ["matmul", "matmul_grad"],
            lambda x, y: paddle.matmul(x, y),
            {"x": u(2, 3, 4), "y": u(4, 5)},
            True,
        ),
        (
            "linear",
            ["matmul", "add", "matmul_grad", "add_grad"],
            lambda x, w, b: F.linear(x, w, b),
            {"x": u(8, 20), "w": u(20, 6), "b": u(6)},
            True,
        ),
        (
            "conv2d pad 2",
            ["conv2d", "conv2d_grad"],
            lambda x, w: F.conv2d(x, w, padding=2),
            {"x": u(2, 1, 12, 12), "w": u(6, 1, 5, 5)},
            True,
        ),
        (
            "conv2d stride 2 groups 2",
            ["conv2d", "conv2d_grad"],
            lambda x, w: F.conv2d(x, w, stride=2, groups=2),
            {"x": u(2, 4, 9, 9), "w": u(6, 2, 3, 3)},
            True,
        ),
        ("max_pool2d 2x2", ["pool2d", "pool2d_grad"], lambda x: F.max_pool2d(x, 2, 2), {"x": u(2, 3, 8, 8)}, True),
        (
            "avg_pool2d 3x3 pad 1",
            ["pool2d", "pool2d_grad"],
            lambda x: F.avg_pool2d(x, 3, 1, padding=1),
            {"x": u(2, 3, 7, 7)},
            True,
        ),
        ("softmax", ["softmax", "softmax_grad"], lambda x: F.softmax(x, axis=-1), {"x": u(4, 10)}, True),
        (
            "cross_entropy",
            ["cross_entropy_with_softmax", "cross_entropy_with_softmax_grad"],
            lambda x, label: F.cross_entropy(x, label, reduction="none"),
            {"x": u(8, 10), "label": r.randint(0, 10, (8, 1)).astype(np.int64)},
            True,
        ),
        ("mean (all)", ["mean_all", "mean_all_grad"], lambda x: paddle.mean(x), {"x": u(4, 5)}, True),
        ("mean axis 1", ["mean", "mean_grad"], lambda x: paddle.mean(x, axis=1), {"x": u(4, 5)}, True),
        ("sum axis 0", ["sum", "sum_grad"], lambda x: paddle.sum(x, axis=0), {"x": u(4, 5)}, True),
        ("reshape", ["reshape", "reshape_grad"], lambda x: paddle.reshape(x, [6, 4]), {"x": u(2, 3, 4)}, True),
        ("flatten", ["flatten", "flatten_grad"], lambda x: paddle.flatten(x, 1), {"x": u(2, 3, 4, 5)}, True),
        ("sigmoid", ["sigmoid", "sigmoid_grad"], lambda x: F.sigmoid(x), {"x": u(5, 6)}, True),
        ("tanh", ["tanh", "tanh_grad"], lambda x: paddle.tanh(x), {"x": u(5, 6)}, True),
        ("exp", ["exp", "exp_grad"], lambda x: paddle.exp(x), {"x": u(5, 6)}, True),
        ("sqrt", ["sqrt", "sqrt_grad"], lambda x: paddle.sqrt(x), {"x": u(5, 6, lo=0.1, hi=2.0)}, True),
        (
            "compare",
            ["equal", "not_equal", "less_than", "greater_than"],
            lambda x, y: (
                (x == y).astype("int64")
                + 2 * (x != y).astype("int64")
                + 4 * (x < y).astype("int64")
                + 8 * (x > y).astype("int64")
            ),
            {"x": r.randint(0, 3, (4, 5)).astype(np.int64), "y": r.randint(0, 3, (4, 5)).astype(np.int64)},
            False,
        ),
        (
            "full_like / assign",
            ["full_like", "assign"],
            lambda x: paddle.full_like(x, 3.0) + paddle.assign(x),
            {"x": u(3, 4)},
            False,
        ),
        (
            "depthwise conv2d",
            ["depthwise_conv2d", "depthwise_conv2d_grad"],
            lambda x, w: F.conv2d(x, w, padding=1, groups=4),
            {"x": u(2, 4, 7, 7), "w": u(8, 1, 3, 3)},
            True,
        ),
        (
            "batch_norm (inference)",
            ["batch_norm"],
            lambda x, m, v, g, b: F.batch_norm(x, m, v, g, b, training=False),
            {"x": u(2, 3, 4, 4), "m": u(3), "v": u(3, lo=0.5, hi=2.0), "g": u(3), "b": u(3)},
            False,
        ),
        ("concat", ["concat"], lambda x, y: paddle.concat([x, y], axis=1), {"x": u(2, 3, 4), "y": u(2, 5, 4)}, False),
        (
            "transpose",
            ["transpose", "transpose_grad"],
            lambda x: paddle.transpose(x, [2, 0, 1]),
            {"x": u(2, 3, 4)},
            True,
            DENSE_KERNELS,
        ),
        ("pad", ["pad"], lambda x: F.pad(x, [1, 0, 2, 1], value=0.5), {"x": u(3, 4)}, False),
        ("scale", ["scale"], lambda x: paddle.scale(x, 2.0, 1.0), {"x": u(3, 4)}, False),
        ("cast float32->int64", ["cast"], lambda x: paddle.cast(x * 10, "int64"), {"x": u(3, 4)}, False),
        ("argmax", ["argmax"], lambda x: paddle.argmax(x, axis=1), {"x": u(8, 10)}, False),
        ("topk", ["topk"], lambda x: paddle.topk(x, 3, axis=1)[0], {"x": u(8, 10)}, False),
        (
            "accuracy",
            ["topk", "accuracy"],
            lambda x, label: paddle.metric.accuracy(x, label, k=2),
            {"x": u(16, 10), "label": r.randint(0, 10, (16, 1)).astype(np.int64)},
            False,
        ),
        ("full", ["full"], lambda x: paddle.full([3, 4], 2.5, dtype="float32") + x * 0, {"x": u(3, 4)}, False),
        # ---- beyond LeNet: every mode the kernels' attributes admit
        (
            "batch_norm training NCHW",
            ["batch_norm", "batch_norm_grad"],
            lambda x, g, b: _bn(x, g, b),
            {"x": u(4, 3, 5, 5), "g": u(3), "b": u(3)},
            True,
        ),
        (
            "batch_norm training NHWC",
            ["batch_norm", "batch_norm_grad"],
            lambda x, g, b: _bn(x, g, b, data_format="NHWC"),
            {"x": u(4, 5, 5, 3), "g": u(3), "b": u(3)},
            True,
        ),
        (
            "batch_norm training [N,C]",
            ["batch_norm", "batch_norm_grad"],
            lambda x, g, b: _bn(x, g, b),
            {"x": u(16, 3), "g": u(3), "b": u(3)},
            True,
        ),
        (
            "batch_norm use_global_stats",
            ["batch_norm", "batch_norm_grad"],
            lambda x, g, b: _bn(x, g, b, use_global_stats=True),
            {"x": u(4, 3, 5, 5), "g": u(3), "b": u(3)},
            True,
        ),
        (
            "batch_norm inference NHWC",
            ["batch_norm"],
            lambda x, g, b: _bn(x, g, b, training=False, data_format="NHWC"),
            {"x": u(2, 4, 4, 3), "g": u(3), "b": u(3)},
            False,
        ),
        (
            "layer_norm begin_norm_axis 1",
            ["layer_norm", "layer_norm_grad"],
            lambda x, g, b: F.layer_norm(x, [3, 4], g, b),
            {"x": u(2, 3, 4), "g": u(12), "b": u(12)},
            True,
        ),
        (
            "layer_norm last axis, no affine",
            ["layer_norm", "layer_norm_grad"],
            lambda x: F.layer_norm(x, [6]),
            {"x": u(2, 5, 6)},
            True,
        ),
        ("gelu", ["gelu", "gelu_grad"], lambda x: F.gelu(x), {"x": u(5, 6, lo=-3, hi=3)}, True),
        (
            "gelu approximate",
            ["gelu", "gelu_grad"],
            lambda x: F.gelu(x, approximate=True),
            {"x": u(5, 6, lo=-3, hi=3)},
            True,
        ),
        (
            "dropout upscale_in_train, fixed seed",
            ["dropout", "dropout_grad"],
            lambda x: _dropout(x, 0.3, True, "upscale_in_train"),
            {"x": u(8, 50)},
            True,
        ),
        (
            "dropout downscale_in_infer, fixed seed",
            ["dropout", "dropout_grad"],
            lambda x: _dropout(x, 0.4, True, "downscale_in_infer"),
            {"x": u(8, 50)},
            True,
        ),
        (
            "dropout eval upscale_in_train",
            ["dropout", "dropout_grad"],
            lambda x: _dropout(x, 0.3, False, "upscale_in_train"),
            {"x": u(4, 5)},
            True,
        ),
        (
            "dropout eval downscale_in_infer",
            ["dropout", "dropout_grad"],
            lambda x: _dropout(x, 0.3, False, "downscale_in_infer"),
            {"x": u(4, 5)},
            True,
        ),
        (
            "embedding padding_idx",
            ["embedding", "embedding_grad"],
            lambda w, ids: F.embedding(ids, w, padding_idx=2),
            {"w": u(10, 4), "ids": r.randint(0, 10, (3, 5)).astype(np.int64)},
            True,
        ),
        (
            "embedding int32 ids",
            ["embedding", "embedding_grad"],
            lambda w, ids: F.embedding(ids, w),
            {"w": u(7, 3), "ids": r.randint(0, 7, (6,)).astype(np.int32)},
            True,
        ),
        (
            "gather axis 0",
            ["gather", "gather_grad"],
            lambda x, i: paddle.gather(x, i),
            {"x": u(5, 3), "i": np.array([4, 0, 4, 2], dtype=np.int64)},
            True,
        ),
        (
            "gather axis 1 int32 index",
            ["gather", "gather_grad"],
            lambda x, i: paddle.gather(x, i, axis=1),
            {"x": u(3, 6, 2), "i": np.array([5, 1, 1], dtype=np.int32)},
            True,
        ),
        (
            "concat grad",
            ["concat", "concat_grad"],
            lambda x, y: paddle.concat([x, y], axis=-1),
            {"x": u(2, 3, 4), "y": u(2, 3, 2)},
            True,
        ),
        (
            "slice decrease_axis (dense)",
            ["slice", "slice_grad"],
            lambda x: x[1:, -3:, 1],
            {"x": u(3, 6, 4)},
            True,
            DENSE_KERNELS,
        ),
        (
            "slice clamped ends (dense)",
            ["slice", "slice_grad"],
            lambda x: paddle.slice(x, axes=[0, 2], starts=[-2, 1], ends=[100, 3]),
            {"x": u(3, 6, 4)},
            True,
            DENSE_KERNELS,
        ),
        (
            "split sections (dense)",
            ["split", "concat", "concat_grad"],
            lambda x: _split_concat(x, [2, -1, 1], 1),
            {"x": u(3, 6, 4)},
            True,
            DENSE_KERNELS,
        ),
        (
            "split num (dense)",
            ["split_with_num", "concat", "concat_grad"],
            lambda x: _split_concat(x, 3, -1),
            {"x": u(2, 3, 6)},
            True,
            DENSE_KERNELS,
        ),
        (
            "transpose view (stride kernels)",
            ["contiguous"],
            lambda x: paddle.transpose(x, [2, 0, 1]) * 2.0,
            {"x": u(2, 3, 4)},
            True,
            STRIDE_KERNELS,
        ),
        (
            "slice view (stride kernels)",
            ["contiguous", "fill"],
            lambda x: x[1:, -3:, 1] * 2.0,
            {"x": u(3, 6, 4)},
            True,
            STRIDE_KERNELS,
        ),
        (
            "split view (stride kernels)",
            ["contiguous"],
            lambda x: _split_concat(x, [2, -1, 1], 1),
            {"x": u(3, 6, 4)},
            True,
            STRIDE_KERNELS,
        ),
        (
            "in-place op on a view",
            ["strided_copy", "contiguous"],
            _write_through_view,
            {"x": u(3, 4), "y": u(4, 3)},
            False,
            STRIDE_KERNELS,
        ),
    ]


def _compare(a: np.ndarray, b: np.ndarray, tol: dict) -> tuple[bool, float]:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, float("inf")
    if a.size == 0:
        return True, 0.0
    diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    return bool(np.allclose(a, b, **tol)), diff


def check_ops(device: str, registered: list[str]) -> dict:
    results = []
    for case, kernels, fn, inputs, grad, *flags in op_cases():
        flags = flags[0] if flags else {}
        saved = paddle.get_flags(list(flags)) if flags else {}
        try:
            if flags:
                paddle.set_flags(flags)
            dev = _run(fn, inputs, device, grad)
            cpu = _run(fn, inputs, "cpu", grad)
            entry = {"case": case, "kernels": kernels, "passed": True, "max_abs_diff": {}}
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
    results.append(check_optimizers(device))
    results.append(check_random(device))
    results.append(check_dropout_random(device))
    failed = [r["case"] for r in results if not r["passed"]]
    covered = {k for r in results for k in r["kernels"]}
    uncovered = sorted(set(registered) - covered)
    return {
        "name": "ops",
        "passed": not failed,
        "detail": f"{len(results) - len(failed)}/{len(results)} cases match Paddle CPU, covering "
        f"{len(covered & set(registered))}/{len(registered)} registered kernels"
        + (f"; failing: {', '.join(failed)}" if failed else "")
        + (f"; not exercised: {', '.join(uncovered)}" if uncovered else ""),
        "uncovered_kernels": uncovered,
        "tolerance": {"forward": FORWARD_TOL, "backward": BACKWARD_TOL},
        "cases": results,
    }


def check_optimizers(device: str) -> dict:
    """Three SGD and three Adam steps on the same parameters and gradients."""
    r = _rng(3)
    w0 = r.uniform(-1, 1, (6, 4)).astype(np.float32)
    grads = [r.uniform(-1, 1, (6, 4)).astype(np.float32) for _ in range(3)]
    entry = {"case": "sgd / adam updates", "kernels": ["sgd", "adam"], "passed": True, "max_abs_diff": {}}
    try:
        for opt_name in ("SGD", "Adam"):
            finals = {}
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
        entry.update(passed=False, error=_first_line(exc))
    log(f"  op sgd/adam: {'pass' if entry['passed'] else 'FAIL'}")
    return entry


def check_random(device: str) -> dict:
    """uniform/gaussian cannot match CPU bit for bit: check their statistics."""
    paddle.set_device(device)
    entry = {"case": "uniform / gaussian statistics", "kernels": ["uniform", "gaussian"], "passed": True}
    try:
        u = paddle.uniform([20000], min=-2.0, max=2.0).numpy()
        g = paddle.normal(1.0, 2.0, [20000]).numpy()
        stats = {
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
        entry.update(passed=False, error=_first_line(exc))
    log(f"  op uniform/gaussian: {'pass' if entry['passed'] else 'FAIL'}")
    return entry


def check_dropout_random(device: str) -> dict:
    """Dropout without a fixed seed (the device generator): keep rate, scaling, gradient = mask."""
    paddle.set_device(device)
    entry = {"case": "dropout (device generator) statistics", "kernels": ["dropout", "dropout_grad"], "passed": True}
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
        entry.update(passed=False, error=_first_line(exc))
    log(f"  op dropout statistics: {'pass' if entry['passed'] else 'FAIL'}")
    return entry


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("C++ Traceback", "-----", "0 ", "1 ", "2 ")) and "Error" in line:
            return line[:400]
    return (text.splitlines() or [type(exc).__name__])[0][:400]


# --------------------------------------------------------------------- MNIST


class LeNet(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2D(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2D(6, 16, 5)
        self.pool = nn.MaxPool2D(2, 2)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = paddle.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def initial_state(model: nn.Layer, seed: int) -> dict:
    """Identical initial weights for both places (fan-in uniform), from NumPy."""
    r = _rng(seed)
    state = {}
    for name, p in model.state_dict().items():
        shape = list(p.shape)
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        bound = 1.0 / np.sqrt(fan_in)
        if name.endswith("weight") and len(shape) == 2:  # paddle Linear weight is [in, out]
            bound = 1.0 / np.sqrt(shape[0])
        state[name] = r.uniform(-bound, bound, shape).astype(np.float32)
    return state


def train(place: str, data: dict, steps: int, batch: int, seed: int) -> dict:
    paddle.set_device(place)
    model = LeNet()
    model.set_state_dict({k: paddle.to_tensor(v) for k, v in initial_state(model, seed).items()})
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    x_train, y_train = data["x_train"], data["y_train"]
    order = _rng(seed).permutation(len(x_train))
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        idx = np.take(order, range(step * batch, (step + 1) * batch), mode="wrap")
        x = paddle.to_tensor(x_train[idx])
        y = paddle.to_tensor(y_train[idx])
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
        if step % 50 == 0 or step == steps - 1:
            log(f"  mnist {place} step {step}: loss {losses[-1]:.4f}")
    train_seconds = time.perf_counter() - start
    model.eval()
    correct = 0
    x_test, y_test = data["x_test"], data["y_test"]
    with paddle.no_grad():
        for i in range(0, len(x_test), 256):
            logits = model(paddle.to_tensor(x_test[i : i + 256]))
            label = paddle.to_tensor(y_test[i : i + 256])
            acc = paddle.metric.accuracy(logits, label)  # topk + accuracy kernels on the place
            correct += float(acc) * len(label)
    return {
        "losses": losses,
        "heldout_accuracy": correct / len(x_test),
        "train_seconds": train_seconds,
    }


def check_mnist(device: str, data: dict, steps: int, batch: int, seed: int) -> dict:
    try:
        dev = train(device, data, steps, batch, seed)
        cpu = train("cpu", data, steps, batch, seed)
    except Exception as exc:
        return {
            "name": "mnist",
            "passed": False,
            "detail": _first_line(exc),
            "traceback": traceback.format_exc()[-3000:],
        }
    window = max(1, min(10, steps // 4))
    first, last = float(np.mean(dev["losses"][:window])), float(np.mean(dev["losses"][-window:]))
    drop = 1.0 - last / first if first > 0 else 0.0
    curve_diff = float(np.max(np.abs(np.array(dev["losses"]) - np.array(cpu["losses"]))))
    c = MNIST_CRITERIA
    passed = (
        drop >= c["min_loss_drop_fraction"]
        and dev["heldout_accuracy"] >= c["min_heldout_accuracy"]
        and curve_diff <= c["max_curve_abs_diff"]
    )
    return {
        "name": "mnist",
        "passed": bool(passed),
        "detail": (
            f"loss {first:.3f} -> {last:.3f} (drop {drop:.0%}), held-out accuracy "
            f"{dev['heldout_accuracy']:.3f} (cpu {cpu['heldout_accuracy']:.3f}), "
            f"max |loss diff vs cpu| {curve_diff:.2e}"
        ),
        "criteria": c,
        "dataset": data["source"],
        "steps": steps,
        "batch_size": batch,
        "seed": seed,
        "loss_drop_fraction": drop,
        "max_curve_abs_diff": curve_diff,
        "device": dev,
        "cpu": cpu,
    }


# ------------------------------------------------------------ model battery
#
# Models beyond LeNet, each trained on the device and on the CPU from the same
# initial weights on the same batches; the loss curves must agree. `resnet_bn`
# trains BatchNorm (batch statistics, running-statistics momentum update) and then
# evaluates with the running statistics; `transformer` is a tiny encoder with
# embedding, gather, layer_norm, multi-head attention (split, transpose views,
# softmax), gelu, dropout, slice and concat.
#
# Dropout: every step sets Paddle's fixed dropout seed (default_main_program().
# random_seed = seed + step, i.e. dropout's fix_seed/seed attributes), for which the
# device library draws the mask from the same std::mt19937_64 stream as Paddle's CPU
# kernel: both places drop the same elements, so the curves are comparable with p > 0.
# The un-seeded path (the device's own generator) is checked by its statistics
# in the "ops" cases.

BATTERY = ("resnet_bn", "transformer")
BATTERY_CRITERIA = {
    "max_curve_abs_diff": _TOL["max_curve_diff"],  # per-step |loss_device - loss_cpu|
    "max_eval_abs_diff": _TOL["max_curve_diff"],  # held-out loss, eval mode, device vs cpu
    "loss_must_drop": True,  # mean of the last steps < mean of the first
}


class BasicBlock(nn.Layer):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2D(cin, cout, 3, stride=stride, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(cout)
        self.conv2 = nn.Conv2D(cout, cout, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2D(cin, cout, 1, stride=stride, bias_attr=False), nn.BatchNorm2D(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNetBN(nn.Layer):
    """28x28 digits: stem conv+BN, max pool, two residual blocks (one downsampling), global average pool."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2D(1, 8, 3, padding=1, bias_attr=False)
        self.bn = nn.BatchNorm2D(8)
        self.block1 = BasicBlock(8, 8, 1)
        self.block2 = BasicBlock(8, 16, 2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 2, 2)
        x = self.block2(self.block1(x))
        return self.fc(paddle.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class EncoderLayer(nn.Layer):
    def __init__(self, d: int, heads: int, ff: int, dropout: float) -> None:
        super().__init__()
        self.heads, self.p = heads, dropout
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        b, n, d = x.shape
        h = self.norm1(x)
        q, k, v = paddle.split(self.qkv(h), 3, axis=-1)  # split_with_num (views)
        q, k, v = (
            paddle.transpose(paddle.reshape(t, [b, n, self.heads, d // self.heads]), [0, 2, 1, 3]) for t in (q, k, v)
        )  # transpose views -> contiguous
        att = F.softmax(paddle.matmul(q, k, transpose_y=True) * (d // self.heads) ** -0.5, axis=-1)
        att = F.dropout(att, self.p, training=self.training)
        y = paddle.reshape(paddle.transpose(paddle.matmul(att, v), [0, 2, 1, 3]), [b, n, d])
        x = x + F.dropout(self.out(y), self.p, training=self.training)
        return x + F.dropout(self.ff2(F.gelu(self.ff1(self.norm2(x)))), self.p, training=self.training)


class TinyTransformer(nn.Layer):
    """Token + position embeddings, two pre-norm encoder layers, [first token, mean] pooling."""

    def __init__(
        self,
        vocab: int = 12,
        seq: int = 12,
        d: int = 32,
        heads: int = 4,
        ff: int = 64,
        classes: int = 8,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)  # padding_idx in forward: the layer would zero its row with set_value
        self.pos = self.create_parameter([seq, d], default_initializer=nn.initializer.Normal(std=0.1))
        self.layers = nn.LayerList([EncoderLayer(d, heads, ff, dropout) for _ in range(2)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(2 * d, classes)

    def forward(self, tokens):
        n = tokens.shape[1]
        positions = paddle.to_tensor(np.arange(n, dtype=np.int64))
        x = F.embedding(tokens, self.tok.weight, padding_idx=0) + paddle.gather(self.pos, positions)
        for layer in self.layers:
            x = layer(x)
        x = self.norm(x)
        pooled = paddle.concat([x[:, 0], paddle.mean(x, axis=1)], axis=-1)  # slice + concat
        return self.head(pooled)


def majority_tokens(count: int, seed: int, vocab: int = 12, seq: int = 12, classes: int = 8) -> dict:
    """Synthetic, deterministic: tokens 1..classes (0 = padding at the end); label = the most
    frequent token (ties: the smallest), minus one."""
    r = _rng(seed)
    tokens = r.randint(1, classes + 1, (count, seq)).astype(np.int64)
    lengths = r.randint(seq - 3, seq + 1, count)
    for i, n in enumerate(lengths):
        tokens[i, n:] = 0
    labels = np.array([np.bincount(t[t > 0], minlength=classes + 1)[1:].argmax() for t in tokens], dtype=np.int64)
    return {"x": tokens, "y": labels[:, None]}


def battery_data(model: str, data: dict | None, seed: int) -> dict:
    if model == "transformer":
        train, test = majority_tokens(4096, seed), majority_tokens(512, seed + 1)
        return {
            "x_train": train["x"],
            "y_train": train["y"],
            "x_test": test["x"],
            "y_test": test["y"],
            "source": "synthetic majority-token sequences (numpy RandomState)",
        }
    return data


def build_model(model: str) -> nn.Layer:
    return ResNetBN() if model == "resnet_bn" else TinyTransformer()


def battery_initial_state(model: str, seed: int) -> dict:
    """Paddle's default initialization, drawn once on the CPU, for both places."""
    saved = paddle.get_device()
    paddle.set_device("cpu")
    paddle.seed(seed)
    state = {k: v.numpy() for k, v in build_model(model).state_dict().items()}
    paddle.set_device(saved)
    return state


def train_model(
    model: str, place: str, data: dict, steps: int, batch: int, seed: int, state: dict | None = None
) -> dict:
    """Train `model` on `place` (same weights, same batches, same dropout seeds), then evaluate."""
    state = state if state is not None else battery_initial_state(model, seed)
    paddle.set_device(place)
    net = build_model(model)
    net.set_state_dict({k: paddle.to_tensor(v) for k, v in state.items()})
    net.train()
    opt = paddle.optimizer.Adam(learning_rate=3e-3, parameters=net.parameters())
    x_train, y_train = data["x_train"], data["y_train"]
    order = _rng(seed).permutation(len(x_train))
    program = paddle.static.default_main_program()
    saved_seed = program.random_seed
    losses = []
    start = time.perf_counter()
    try:
        for step in range(steps):
            program.random_seed = seed + step + 1  # fixed dropout seed, new for every step
            idx = np.take(order, range(step * batch, (step + 1) * batch), mode="wrap")
            loss = F.cross_entropy(net(paddle.to_tensor(x_train[idx])), paddle.to_tensor(y_train[idx]))
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
            if step % 10 == 0 or step == steps - 1:
                log(f"  {model} {place} step {step}: loss {losses[-1]:.4f}")
    finally:
        program.random_seed = saved_seed
    train_seconds = time.perf_counter() - start
    net.eval()  # batch_norm with the running statistics, dropout off
    x_test, y_test = data["x_test"][:512], data["y_test"][:512]
    with paddle.no_grad():
        logits = net(paddle.to_tensor(x_test))
        eval_loss = float(F.cross_entropy(logits, paddle.to_tensor(y_test)))
        accuracy = float((logits.numpy().argmax(-1) == y_test[:, 0]).mean())
    return {"losses": losses, "eval_loss": eval_loss, "heldout_accuracy": accuracy, "train_seconds": train_seconds}


def check_battery(model: str, device: str, data: dict | None, steps: int, batch: int, seed: int) -> dict:
    try:
        data = battery_data(model, data, seed)
        if data is None:
            raise ValueError(f"{model} needs --data (the digits .npz devkit verify writes)")
        state = battery_initial_state(model, seed)
        dev = train_model(model, device, data, steps, batch, seed, state)
        cpu = train_model(model, "cpu", data, steps, batch, seed, state)
    except Exception as exc:
        return {"name": model, "passed": False, "detail": _first_line(exc), "traceback": traceback.format_exc()[-3000:]}
    window = max(1, min(10, steps // 4))
    first, last = float(np.mean(dev["losses"][:window])), float(np.mean(dev["losses"][-window:]))
    diffs = np.abs(np.array(dev["losses"]) - np.array(cpu["losses"]))
    curve_diff, eval_diff = float(diffs.max()), abs(dev["eval_loss"] - cpu["eval_loss"])
    c = BATTERY_CRITERIA
    passed = curve_diff <= c["max_curve_abs_diff"] and eval_diff <= c["max_eval_abs_diff"] and last < first
    return {
        "name": model,
        "passed": bool(passed),
        "detail": (
            f"loss {first:.3f} -> {last:.3f}, max |loss diff vs cpu| {curve_diff:.2e} (mean "
            f"{float(diffs.mean()):.1e}), eval loss {dev['eval_loss']:.4f} vs cpu {cpu['eval_loss']:.4f}, "
            f"held-out accuracy {dev['heldout_accuracy']:.3f} (cpu {cpu['heldout_accuracy']:.3f}); "
            f"{dev['train_seconds']:.1f} s on {device}, {cpu['train_seconds']:.1f} s on cpu"
        ),
        "criteria": c,
        "dataset": data["source"],
        "steps": steps,
        "batch_size": batch,
        "seed": seed,
        "dropout": "fixed per-step seed (fix_seed): identical masks on device and cpu"
        if model == "transformer"
        else None,
        "max_curve_abs_diff": curve_diff,
        "mean_curve_abs_diff": float(diffs.mean()),
        "eval_abs_diff": eval_diff,
        "device": dev,
        "cpu": cpu,
    }


def check_strided_views(device: str) -> dict:
    """With Paddle's default FLAGS_use_stride_kernel, transpose/slice/split return views: an op on
    them needs the device's contiguous kernel, an in-place write its strided_copy."""
    entry = {"name": "strided views", "passed": False}
    try:
        saved = paddle.get_flags(["FLAGS_use_stride_kernel"])
        paddle.set_flags({"FLAGS_use_stride_kernel": True})
        results = {}
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
        results["expected_z"] = np.arange(12, dtype=np.float32).reshape(4, 3).T
        paddle.set_flags(saved)
        same = all(
            np.allclose(a, b, rtol=1e-5, atol=1e-6)
            for a, b in zip(results[device][:3], results["cpu"][:3], strict=True)
        )
        same = same and np.array_equal(results[device][2], results["expected_z"])
        entry.update(
            passed=bool(same and results[device][3]),
            detail=(
                f"transpose view (strided: {results[device][3]}) + op, slice grad and a write into a "
                f"view match cpu: {same}"
            ),
        )
    except Exception as exc:
        entry["detail"] = _first_line(exc)
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", help="expected device type; default: the only registered one")
    parser.add_argument("--data", help=".npz with x_train, y_train, x_test, y_test, source (for mnist, resnet_bn)")
    parser.add_argument("--model", default="mnist", choices=("mnist", *BATTERY), help="the model to train")
    parser.add_argument("--only", default="", help="comma-separated checks to run (default: all)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    paddle.seed(args.seed)
    types = paddle.device.get_all_custom_device_type() or []
    device = args.device or (types[0] if len(types) == 1 else "")
    report = {
        "paddle_version": paddle.__version__,
        "device": device,
        "fallback_flag": paddle.get_flags(["FLAGS_enable_api_kernel_fallback"]),
        "checks": [],
    }
    if not device:
        report["checks"].append(
            {
                "name": "registration",
                "passed": False,
                "detail": f"cannot tell the plugin's device type; registered: {types}",
            }
        )
    else:
        wanted = set(filter(None, args.only.split(","))) or {
            "tensor",
            "kernel-signatures",
            "ops",
            "strided-views",
            args.model,
        }
        log("check registration")
        report["checks"].append(check_registration(device))
        if report["checks"][-1]["passed"]:
            report["registered_kernels"] = registered_kernels(device)
            if "kernel-signatures" in wanted:
                log("check kernel signatures")
                report["checks"].append(check_kernel_signatures(device))
            if "tensor" in wanted:
                log("check tensor")
                report["checks"].append(check_tensor(device))
            if "ops" in wanted:
                log("check ops vs cpu")
                report["checks"].append(check_ops(device, report["registered_kernels"]))
            if "strided-views" in wanted:
                log("check strided views")
                report["checks"].append(check_strided_views(device))
            data = None
            if args.data:
                with np.load(args.data) as npz:
                    data = {k: npz[k] for k in ("x_train", "y_train", "x_test", "y_test")}
                    data["source"] = str(npz["source"])
            if "mnist" in wanted:
                log(f"check mnist ({args.steps} steps)")
                report["checks"].append(check_mnist(device, data, args.steps, args.batch_size, args.seed))
            for model in BATTERY:
                if model in wanted:
                    log(f"check {model} ({args.steps} steps)")
                    report["checks"].append(check_battery(model, device, data, args.steps, args.batch_size, args.seed))
    report["passed"] = all(c["passed"] for c in report["checks"])
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2, default=float)
    log("all checks passed" if report["passed"] else "some checks failed")
    return 0  # the report, not the exit code, carries pass/fail


if __name__ == "__main__":
    sys.exit(main())
