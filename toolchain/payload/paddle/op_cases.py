"""The op cases that verify's ops check and `devkit test-ops` run on the device and on CPU:
every registered kernel over shapes (broadcast, empty, 0-d), forward and backward. A table
more than code, which is why it is long."""

from __future__ import annotations

from check_common import F, np, paddle
from op_helpers import (
    DENSE_KERNELS,
    OpCase,
    rng,
    uniform,
)
from op_mode_cases import kernel_mode_cases


def op_cases() -> list[OpCase]:
    """(case, kernels exercised, function, inputs, check gradients[, Paddle flags for the case])."""
    r = rng(0)
    u = uniform(r)

    cases: list[OpCase] = [
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
        # (values drawn from 0..2, so that some are equal; as float32, the other dtypes derive from it)
        *(
            (
                f"compare {np.dtype(kind).name}",
                ["equal", "not_equal", "less_than", "greater_than"],
                lambda x, y: (
                    (x == y).astype("int64")
                    + 2 * (x != y).astype("int64")
                    + 4 * (x < y).astype("int64")
                    + 8 * (x > y).astype("int64")
                ),
                {"x": r.randint(0, 3, (4, 5)).astype(kind), "y": r.randint(0, 3, (4, 5)).astype(kind)},
                False,
            )
            for kind in (np.int64, np.float32)
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
            "stack",
            ["stack"],
            lambda x, y, z: paddle.stack([x, y, z], axis=1),
            {"x": u(2, 3), "y": u(2, 3), "z": u(2, 3)},
            False,
        ),
        (
            "stack (last axis)",
            ["stack"],
            lambda x, y: paddle.stack([x, y], axis=-1),
            {"x": u(4, 2, 3), "y": u(4, 2, 3)},
            False,
        ),
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
        # (to dtypes the device library lacks: what AMP asks of a float32 tensor, and complex)
        *(
            (f"cast to {out}", ["cast"], lambda x, out=out: paddle.cast(x * 10, out), {"x": u(3, 4)}, False)
            for out in ("float16", "bfloat16", "complex64", "complex128")
        ),
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
    ]
    return cases + kernel_mode_cases(r, u)
