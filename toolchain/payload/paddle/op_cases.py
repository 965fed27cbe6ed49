"""The op cases that verify's ops check and `devkit test-ops` run on the device and on CPU:
every registered kernel over shapes (broadcast, empty, 0-d), forward and backward. A table
more than code, which is why it is long."""

from __future__ import annotations

from check_common import F, np, paddle
from op_helpers import (
    DENSE_KERNELS,
    STRIDE_KERNELS,
    OpCase,
    _bn,
    _check_finite_and_unscale,
    _dropout,
    _split_concat,
    _update_loss_scaling,
    _write_through_view,
    rng,
    uniform,
)


def op_cases() -> list[OpCase]:
    """(case, kernels exercised, function, inputs, check gradients[, Paddle flags for the case])."""
    r = rng(0)
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
            "bitwise_or of bool",
            ["bitwise_or"],
            lambda x, y: paddle.bitwise_or(x, y),
            {"x": r.randint(0, 2, (4, 5)).astype(bool), "y": r.randint(0, 2, (4, 5)).astype(bool)},
            False,
        ),
        (
            "check_finite_and_unscale (GradScaler)",
            ["check_finite_and_unscale", "multiply", "concat", "cast"],
            _check_finite_and_unscale,
            {"x": u(4, 5), "y": u(3)},
            False,
        ),
        (
            "check_finite_and_unscale finds an infinity",
            ["check_finite_and_unscale", "multiply", "concat", "cast"],
            lambda x, y: _check_finite_and_unscale(x, y, with_y=False),
            {"x": u(4, 5), "y": np.array([1.0, np.inf, -2.0], np.float32)},
            False,
        ),
        *(
            (
                f"update_loss_scaling {'after an overflow' if found else 'after a clean step'}",
                ["update_loss_scaling", "multiply", "concat", "cast"],
                lambda x, found=found: _update_loss_scaling(x, found),
                {"x": u(3, 4)},
                False,
            )
            for found in (False, True)
        ),
        (
            "in-place op on a view",
            ["strided_copy", "contiguous"],
            _write_through_view,
            {"x": u(3, 4), "y": u(4, 3)},
            False,
            STRIDE_KERNELS,
        ),
        # (last: the cases draw their inputs in turn from one generator; earlier ones keep theirs)
        (  # (one geometry: kernels/conv_geometry.h, shared with the int8 engine)
            "conv2d dilation 2 pad 1",
            ["conv2d", "conv2d_grad"],
            lambda x, w: F.conv2d(x, w, padding=1, dilation=2),
            {"x": u(2, 2, 9, 9), "w": u(4, 2, 3, 3)},
            True,
        ),
        (  # SAME pads for ceil(in / stride) and runs undilated, whatever the dilation says (as Paddle's CPU)
            "conv2d SAME stride 2 dilation 2",
            ["conv2d", "conv2d_grad"],
            lambda x, w: F.conv2d(x, w, stride=2, padding="SAME", dilation=2),
            {"x": u(2, 2, 10, 9), "w": u(4, 2, 3, 4)},
            True,
        ),
        (
            "max_pool2d 3x3 stride 2 SAME",
            ["pool2d", "pool2d_grad"],
            lambda x: F.max_pool2d(x, 3, 2, padding="SAME"),
            {"x": u(2, 3, 9, 8)},
            True,
        ),
    ]
