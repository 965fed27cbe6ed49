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


def run_case(
    fn: Callable[..., Any], arrays: Inputs, device: str, grad: bool, cast_to: str = "", widen: bool = False
) -> dict[str, np.ndarray]:
    """Forward (and backward with a fixed upstream gradient) on one place: "out", and "d_<input>".
    With `cast_to` (float16, bfloat16), the float inputs are cast to it on the place; then, and
    when the caller compares with such a run, 16-bit results are read back as float32 (NumPy has
    no bfloat16)."""
    paddle.set_device(device)
    widen = widen or bool(cast_to)
    tensors = {}
    for key, arr in arrays.items():
        t = paddle.to_tensor(arr)
        if cast_to and arr.dtype.kind == "f":
            t = t.astype(cast_to).detach()
        if grad and arr.dtype.kind == "f":
            t.stop_gradient = False
        tensors[key] = t

    def read(t: Tensor) -> np.ndarray:
        wide = t.astype("float32") if widen and t.dtype in (paddle.float16, paddle.bfloat16) else t
        return np.asarray(wide.numpy())

    out = fn(**tensors)
    result = {"out": read(out)}
    if grad:
        upstream = paddle.to_tensor(rng(7).uniform(-1, 1, out.shape).astype(np.float32)).astype(out.dtype)
        (out * upstream).sum().backward()
        for key, t in tensors.items():
            if not t.stop_gradient and t.grad is not None:  # (inputs such as running statistics get none)
                result[f"d_{key}"] = read(t.grad)
    return result


def round_to(a: np.ndarray, dtype: str) -> np.ndarray:
    """Float32 values of `a` rounded to float16 or bfloat16 (to nearest, ties to even), as float32."""
    if dtype == "float16":
        return a.astype(np.float16).astype(np.float32)
    return (bfloat16_bits(a).astype(np.uint32) << 16).view(np.float32)


def bfloat16_bits(a: np.ndarray) -> np.ndarray:
    """The bfloat16 bit patterns of float32 `a`, rounded to nearest even (NaN kept quiet)."""
    bits = np.array(a, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    return np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)


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


# Loss scaling as paddle.amp.GradScaler and the static-graph scaler call it: the scale is float32
# whatever the gradients' dtype, the found-inf flag BOOL; the ops work in place, hence the copies.
def _check_finite_and_unscale(x: Tensor, y: Tensor, with_y: bool = True) -> Tensor:
    """Both tensors unscaled and the flag; without `with_y` (y holds an infinity) x and the flag:
    what lands in the other elements after an infinity differs between Paddle's own kernels
    (CPU: zeros and NaN, GPU: x / scale), and the scaler skips that step anyway."""
    from paddle import _legacy_C_ops

    xs = [x * 1.0, y * 1.0]
    found = paddle.to_tensor(np.array([False]))
    _legacy_C_ops.check_finite_and_unscale(xs, paddle.to_tensor(np.array([4.0], np.float32)), xs, found)
    return paddle.concat([xs[0].flatten(), *([xs[1].flatten()] if with_y else []), found.astype(x.dtype)])


def _update_loss_scaling(x: Tensor, found_inf: bool) -> Tensor:
    """One update: with found_inf the gradients are zeroed and the scale halves (decr_every 1);
    without, the good-step count reaches incr_every 2 and the scale doubles."""
    from paddle import _C_ops

    xs = [x * 1.0]
    scale = paddle.to_tensor(np.array([1024.0], np.float32))
    good, bad = paddle.to_tensor(np.array([1], np.int32)), paddle.to_tensor(np.array([0], np.int32))
    _C_ops.update_loss_scaling_(xs, paddle.to_tensor(np.array([found_inf])), scale, good, bad, 2, 1, 2.0, 0.5, False)
    return paddle.concat([xs[0].flatten(), scale.astype(x.dtype), good.astype(x.dtype), bad.astype(x.dtype)])
