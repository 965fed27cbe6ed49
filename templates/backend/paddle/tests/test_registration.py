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


def test_amp_asks_the_device_for_half_precision():
    # true exactly when the plugin registers float16/bfloat16 kernels (flavour.toml: half-precision)
    registered = {{ "True" if half_precision else "False" }}
    assert paddle.amp.is_float16_supported("{{ device_type }}") is registered
    assert paddle.amp.is_bfloat16_supported("{{ device_type }}") is registered


def test_device_properties_come_from_the_device_library():
    props = paddle.base.core.get_device_properties("{{ device_type }}", 0)
    assert props.name == "{{ NAME }}" and props.total_memory > 0 and props.major >= 1
    # Paddle 3.3.1's Python API gives them for metax_gpu and iluvatar_gpu only (by device-type name)
    try:
        paddle.device.get_device_properties("{{ device_type }}")
    except RuntimeError as error:
        assert "only available for gpgpu devices" in str(error)
