import re

import pytest

from devkit.project.naming import parse_backend_name
from devkit.util.errors import DevkitError


def test_default_device_type_is_lower_case_name():
    b = parse_backend_name("STPU")
    assert (b.name, b.device_type, b.upper, b.project_name) == ("STPU", "stpu", "STPU", "paddle-custom-stpu")


def test_explicit_device_type():
    assert parse_backend_name("MyChip", "my_chip").device_type == "my_chip"


@pytest.mark.parametrize(
    "name, message",
    [
        ("", "is empty"),
        ("9tpu", "must start with a letter"),
        ("st-pu", "must start with a letter"),
        ("_x", "must start with a letter"),
        ("A" * 33, "more than 32"),
        ("int", "C/C++ keyword"),
        ("Class", "C/C++ keyword"),
        ("cpu", "already used by Paddle"),
        ("GPU", "already used by Paddle"),
        ("custom_cpu", "already used by Paddle"),
        ("xpu", "already used by Paddle"),
    ],
)
def test_rejected_names(name, message):
    with pytest.raises(DevkitError, match=re.escape(message)) as info:
        parse_backend_name(name)
    assert "Fix:" in info.value.one_line() and "\n" not in info.value.one_line()


def test_longest_allowed_name():
    assert parse_backend_name("A" * 32).device_type == "a" * 32


def test_device_type_must_be_lower_case():
    with pytest.raises(DevkitError, match="lower case"):
        parse_backend_name("STPU", "Stpu")


def test_invalid_device_type_names_the_flag():
    with pytest.raises(DevkitError, match="already used by Paddle") as info:
        parse_backend_name("STPU", "ipu")
    assert "--device-type" in info.value.one_line()


@pytest.mark.parametrize(
    "name, device_type, message",
    [
        ("Zeta7", None, "cannot name a PyTorch device: torch.device() takes only letters and _"),
        ("Chip", "chip2", "cannot name a PyTorch device"),
        ("Abc_", None, "double underscore"),
        ("A__b", None, "double underscore"),
        ("Mps", None, "already used by PyTorch"),
        ("HPU", None, "already used by PyTorch"),
        ("Meta", None, "already used by PyTorch"),
        ("PrivateUseOne", None, "already used by PyTorch"),
        ("STPU", "view", "already used by PyTorch"),  # torch.view: the backend's module would replace it
        ("STPU", "quantized", "already used by PyTorch"),  # Tensor.is_quantized would clash with is_<type>
        ("MyCuda", None, "Paddle's set_device rewrites to 'gpu'"),
    ],
)
def test_device_types_pytorch_cannot_take(name, device_type, message):
    with pytest.raises(DevkitError, match=re.escape(message)) as info:
        parse_backend_name(name, device_type)
    line = info.value.one_line()
    assert "\n" not in line and "Fix: pass --device-type " in line, line
    suggested = line.split("Fix: pass --device-type ")[1].split()[0]
    assert parse_backend_name(name, suggested).device_type == suggested  # the fix is itself accepted


def test_digits_in_the_name_with_a_device_type_both_frameworks_take():
    assert parse_backend_name("Zeta7", "zeta").device_type == "zeta"
    assert parse_backend_name("My_Chip").device_type == "my_chip"
