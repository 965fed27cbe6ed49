"""{{ NAME }} kernels against Paddle's CPU kernels, forward and backward."""

import numpy as np
import paddle
import paddle.nn.functional as F
import pytest

rng = np.random.RandomState(0)


def u(*shape):
    return rng.uniform(-1, 1, shape).astype("float32")


CASES = {
    "add_broadcast": (lambda x, y: x + y, [u(2, 3, 4), u(4)]),
    "multiply_broadcast": (lambda x, y: x * y, [u(3, 4), u(3, 1)]),
    "matmul": (lambda x, y: paddle.matmul(x, y), [u(5, 7), u(7, 3)]),
    "conv2d": (lambda x, w: F.conv2d(x, w, padding=1), [u(2, 3, 8, 8), u(4, 3, 3, 3)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, 2), [u(2, 3, 8, 8)]),
    "softmax": (lambda x: F.softmax(x), [u(4, 10)]),
    "relu": (lambda x: F.relu(x), [u(6, 6)]),
    "mean": (lambda x: paddle.mean(x), [u(4, 5)]),
    "batch_norm_training": (lambda x, g, b: F.batch_norm(x, paddle.zeros([3]), paddle.ones([3]), g, b, training=True),
                            [u(4, 3, 5, 5), u(3), u(3)]),
    "layer_norm": (lambda x, g, b: F.layer_norm(x, [6], g, b), [u(4, 6), u(6), u(6)]),
    "gelu": (lambda x: F.gelu(x), [u(4, 6)]),
    "transpose_view": (lambda x: paddle.transpose(x, [1, 0]) * 2.0, [u(3, 4)]),  # a strided view: contiguous
}


def run(place, fn, arrays):
    paddle.set_device(place)
    tensors = [paddle.to_tensor(a, stop_gradient=False) for a in arrays]
    out = fn(*tensors)
    out.sum().backward()
    return [out.numpy()] + [t.grad.numpy() for t in tensors]


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_cpu(case):
    fn, arrays = CASES[case]
    device = run("{{ device_type }}", fn, arrays)
    cpu = run("cpu", fn, arrays)
    for got, want in zip(device, cpu):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
