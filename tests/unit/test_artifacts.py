"""Wheel checks against real wheels built with scikit-build-core's tag rules (no Paddle needed)."""

import zipfile

import pytest

from devkit.building.frameworks.paddle import check_plugin_wheel
from devkit.project.recipes import find_recipe
from devkit.util.errors import DevkitError


def make_wheel(path, so_bytes, requires="paddlepaddle==3.3.1", tag="py3-none-linux_x86_64"):
    wheel = path / f"paddle_custom_stpu-0.1.0-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("paddle_custom_device/libpaddle-custom-stpu.so", so_bytes)
        zf.writestr(
            "paddle_custom_stpu-0.1.0.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: paddle-custom-stpu\nVersion: 0.1.0\nRequires-Dist: {requires}\n",
        )
    return wheel


@pytest.fixture
def host_elf():
    return open(__import__("sys").executable, "rb").read()  # a real x86_64 ELF


def test_good_wheel(tmp_path, host_elf):
    info = check_plugin_wheel(make_wheel(tmp_path, host_elf), find_recipe("x86_64"), "3.3.1")
    assert info["tag"] == "py3-none-linux_x86_64"


def test_wrong_pin(tmp_path, host_elf):
    with pytest.raises(DevkitError, match="requires paddlepaddle==3.2.2, expected paddlepaddle==3.3.1"):
        check_plugin_wheel(
            make_wheel(tmp_path, host_elf, requires="paddlepaddle==3.2.2"), find_recipe("x86_64"), "3.3.1"
        )


def test_manylinux_tag_is_accepted(tmp_path, host_elf):
    wheel = make_wheel(tmp_path, host_elf, tag="py3-none-manylinux_2_31_x86_64")
    assert check_plugin_wheel(wheel, find_recipe("x86_64"), "3.3.1")["tag"] == "py3-none-manylinux_2_31_x86_64"


@pytest.mark.parametrize("tag", ["cp311-cp311-linux_x86_64", "py3-none-manylinux_2_31_aarch64", "py3-none-any"])
def test_wrong_tag(tmp_path, host_elf, tag):
    with pytest.raises(DevkitError, match="expected py3-none-manylinux_X_Y_x86_64"):
        check_plugin_wheel(make_wheel(tmp_path, host_elf, tag=tag), find_recipe("x86_64"), "3.3.1")


def test_wrong_machine(tmp_path, host_elf):
    arm = bytearray(host_elf)
    arm[18:20] = (183).to_bytes(2, "little")  # e_machine = EM_AARCH64
    with pytest.raises(DevkitError, match="built for EM_AARCH64"):
        check_plugin_wheel(make_wheel(tmp_path, bytes(arm)), find_recipe("x86_64"), "3.3.1")
