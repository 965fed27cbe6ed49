"""Op cases beyond what LeNet runs: every mode the kernels' attributes admit (batch norm's layouts
and modes, layer norm, gelu, dropout, embedding, gather, slices, AMP's kernels, views, the
convolution geometry). They draw their inputs from op_cases' generator after its own cases, in
this order: a case moved or added among them changes the inputs of those after it."""

from __future__ import annotations

from check_common import F, np, paddle
from op_helpers import (
    DENSE_KERNELS,
    STRIDE_KERNELS,
    OpCase,
    Sampler,
    _bn,
    _check_finite_and_unscale,
    _dropout,
    _split_concat,
    _update_loss_scaling,
    _write_through_view,
)


def kernel_mode_cases(r: np.random.RandomState, u: Sampler) -> list[OpCase]:
    """(as op_cases) `r`, `u`: op_cases' generator and its uniform draws, after its own cases."""
    return [
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
