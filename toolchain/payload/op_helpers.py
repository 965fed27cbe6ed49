"""What the Paddle op cases are made of: seeded inputs, running a case on one place (forward, and
backward with a fixed upstream gradient), and the small composite functions some cases call."""

from __future__ import annotations

from check_common import F, np, paddle


def rng(seed: int) -> np.random.RandomState:
    return np.random.RandomState(seed)


def uniform(r: np.random.RandomState):
    """u(*shape, lo=-1, hi=1): float32 uniform samples from `r` (u() is a 0-d array)."""
    return lambda *shape, lo=-1.0, hi=1.0: np.asarray(r.uniform(lo, hi, shape), dtype=np.float32)


def run_case(fn, arrays: dict, device: str, grad: bool):
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
