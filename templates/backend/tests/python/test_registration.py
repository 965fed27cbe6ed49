"""The plugin loads, registers "{{ device_type }}", and tensors live on it."""

import numpy as np
import paddle


def test_device_type_is_registered():
    assert "{{ device_type }}" in paddle.device.get_all_custom_device_type()


def test_integer_add_runs_on_device():
    paddle.set_device("{{ device_type }}")
    x = paddle.to_tensor([1, 2, 3])
    y = x + x
    assert str(y.place) == "Place({{ device_type }}:0)"
    assert y.numpy().tolist() == [2, 4, 6]


def test_float_add_runs_on_device():
    paddle.set_device("{{ device_type }}")
    x = paddle.to_tensor(np.array([0.5, -1.5], dtype="float32"))
    np.testing.assert_array_equal((x + x).numpy(), np.array([1.0, -3.0], dtype="float32"))
