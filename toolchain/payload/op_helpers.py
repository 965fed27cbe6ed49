"""What the Paddle op cases are made of: seeded inputs, running a case on one place (forward, and
backward with a fixed upstream gradient), and the small composite functions some cases call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from check_common import F, Tensor, np, paddle

Inputs = dict[str, np.ndarray]  # a case's inputs, by the name its function takes them
# (case, kernels exercised, function of the inputs as tensors, inputs, check gradients[, Paddle flags])
OpCase = (
    tuple[str, list[str], Callable[..., Any], Inputs, bool]
    | tuple[str, list[str], Callable[..., Any], Inputs, bool, dict[str, bool]]
)


class Sampler(Protocol):
    def __call__(self, *shape: int, lo: float = ..., hi: float = ...) -> np.ndarray: ...


def rng(seed: int) -> np.random.RandomState:
    return np.random.RandomState(seed)


def uniform(r: np.random.RandomState) -> Sampler:
    """u(*shape, lo=-1, hi=1): float32 uniform samples from `r` (u() is a 0-d array)."""
    return lambda *shape, lo=-1.0, hi=1.0: np.asarray(r.uniform(lo, hi, shape), dtype=np.float32)


def run_case(fn: Callable[..., Any], arrays: Inputs, device: str, grad: bool) -> dict[str, np.ndarray]:
    """Forward (and backward with a fixed upstream gradient) on one place: "out", and "d_<input>"."""
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
        upstream = paddle.to_tensor(rng(7).uniform(-1, 1, out.shape).astype(out.numpy().dtype))
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


def _bn(
    x: Tensor,
    g: Tensor,
    b: Tensor,
    training: bool = True,
    data_format: str = "NCHW",
    use_global_stats: bool | None = None,
) -> Tensor:
    """batch_norm, then its output and the running statistics after the momentum update."""
    c = x.shape[1] if data_format == "NCHW" else x.shape[-1]
    m = paddle.to_tensor(np.linspace(-0.5, 0.5, c)).astype(x.dtype)
    v = paddle.to_tensor(np.linspace(0.5, 2.0, c)).astype(x.dtype)
    y = F.batch_norm(
        x, m, v, g, b, training=training, momentum=0.8, data_format=data_format, use_global_stats=use_global_stats
    )
    return paddle.concat([y.flatten(), m, v])


def _dropout(x: Tensor, p: float, training: bool, mode: str, seed: int = 1234) -> Tensor:
    """dropout with Paddle's fixed seed (fix_seed): the device draws the CPU kernel's mask."""
    program = paddle.static.default_main_program()
    saved, program.random_seed = program.random_seed, seed
    try:
        return F.dropout(x, p, training=training, mode=mode)
    finally:
        program.random_seed = saved


def _split_concat(x: Tensor, sections: int | list[int], axis: int) -> Tensor:
    parts = paddle.split(x, sections, axis=axis)
    return paddle.concat([parts[-1], parts[0] * 2.0, *parts[1:-1]], axis=axis)


def _write_through_view(x: Tensor, y: Tensor) -> Tensor:
    z = x * 1.0
    paddle.transpose(z, [1, 0]).add_(y)  # in place on a view: written back by strided_copy
    return z
