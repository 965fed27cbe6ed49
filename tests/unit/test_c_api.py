"""The device library's C API as data (scaffold/c_api.py): every op of the header is accounted
for in op_kernels.toml, a flavour's missing ops get stubs and leave their kernels unregistered,
and a flavour without a required op is refused in one line."""

import re
import tomllib
from pathlib import Path

import pytest

from devkit.scaffold import c_api
from devkit.scaffold.flavours import load_flavour
from devkit.util.errors import InputError
from devkit.util.resources import resource_dir

HOST_SRC = resource_dir("templates") / "backend" / "device" / "src"


def host_sources(leave_out: tuple[str, ...] = ()) -> list[str]:
    return [p.read_text() for p in sorted(HOST_SRC.glob("*.cc")) if p.name not in leave_out]


def test_every_op_of_the_header_is_in_the_kernel_table():
    declared = set(c_api.declared_ops(c_api.header_path().read_text()))
    assert len(declared) > 80  # the parser sees the whole header (multi-line, `{{ p }}_..._t` parameters)
    table = c_api.OpKernels.load()
    listed = [*table.required, *table.no_kernels, *table.kernels]
    assert sorted(listed) == sorted(declared), (sorted(declared - set(listed)), sorted(set(listed) - declared))


def test_the_host_backed_device_implements_the_whole_c_api():
    found = c_api.implementation("host-backed", host_sources())
    assert found.missing == () and found.stubs == ""
    assert found.unregistered == {"paddle": (), "torch": ()}


def test_a_flavour_without_a_family_gets_stubs_and_its_kernels_unregistered():
    found = c_api.implementation("partial", host_sources(leave_out=("conv_pool_ops.cc",)))
    assert "conv2d_forward" in found.missing and "max_pool2d_with_indices_backward" in found.missing
    assert "gemm" not in found.missing
    assert {"conv2d.*", "depthwise_conv2d.*", "pool2d.*"} <= set(found.unregistered["paddle"])
    assert set(found.unregistered["torch"]) == {"convolution_.*", "max_pool2d_with_indices.*"}
    assert '{{ p }}::core::unimplemented("conv2d_forward", IMPLEMENTATION)' in found.stubs
    assert "matmul" not in found.stubs


def test_a_flavour_without_a_required_op_is_refused():
    with pytest.raises(InputError) as info:
        c_api.implementation("partial", host_sources(leave_out=("movement_ops.cc",)))
    assert "does not define {{ p }}_fill, {{ p }}_cast, {{ p }}_strided_copy" in info.value.problem
    assert "templates/sdks/partial/device/src" in info.value.fix


RUNTIME = ("device.cc", "streams.cc", "memory.cc", "debug.cc", "movement_ops.cc")


def test_a_flavour_of_one_op_leaves_every_other_kernel_unregistered():
    """The runtime, the data movement and GEMM: every building block's kernels go to the CPU,
    GEMM's stay (matmul_grad goes: it also reduces with sum_to_shape)."""
    sources = [p.read_text() for p in sorted(HOST_SRC.glob("*.cc")) if p.name in (*RUNTIME, "matmul_ops.cc")]
    found = c_api.implementation("gemm-only", sources)
    assert "gemm" not in found.missing and {"binary", "unary", "scale", "sgd_update", "ccl_all_reduce"} <= set(
        found.missing
    )
    paddle, torch = set(found.unregistered["paddle"]), set(found.unregistered["torch"])
    assert {"(add|subtract|multiply|divide)(_grad)?", "matmul_grad", "sgd", "conv2d.*"} <= paddle
    assert "matmul" not in paddle
    assert {
        r"(add|sub|mul|div)_?\..*",
        "relu_?",
        r"(threshold|sigmoid|tanh)_backward(\..*)?",
        "convolution_.*",
    } <= torch


def registered_kernels() -> dict[str, set[str]]:
    """The names both adapters register: Paddle's PD_REGISTER_PLUGIN_KERNEL and <NAME>_REGISTER_*
    macro uses, torch's .impl("name") calls."""
    backend = resource_dir("templates") / "backend"
    paddle_text = "\n".join(p.read_text() for p in (backend / "paddle" / "kernels").glob("*.cc"))
    paddle = set(re.findall(r"^(?:PD_REGISTER_PLUGIN_KERNEL|\{\{ NAME \}\}_REGISTER_\w+)\((\w+),", paddle_text, re.M))
    torch_text = "\n".join(p.read_text() for p in (backend / "pytorch" / "csrc").rglob("*.cpp"))
    torch = set(re.findall(r'\.impl\("([\w.]+)"', torch_text))
    return {"paddle": paddle - {"name"}, "torch": torch}


def test_every_kernel_pattern_names_kernels_the_adapters_register():
    """A pattern that matches nothing (a typo, a renamed kernel) would leave the real kernel
    registered on a flavour without its op."""
    names = registered_kernels()
    assert {"add", "matmul_grad", "sgd"} <= names["paddle"] and {"add.Tensor", "mm", "relu_"} <= names["torch"]
    for op, by_framework in c_api.OpKernels.load().kernels.items():
        for framework, patterns in by_framework.items():
            for pattern in patterns:
                assert any(re.fullmatch(pattern, n) for n in names[framework]), (op, framework, pattern)


def test_opencl_lists_follow_from_its_sources():
    """The lists flavour.toml held by hand (before they were derived) are what its sources give."""
    by_hand = {
        "paddle": {
            "conv2d.*",
            "depthwise_conv2d.*",
            "pool2d.*",
            "softmax.*",
            "cross_entropy_with_softmax.*",
            "batch_norm.*",
            "layer_norm.*",
            "gelu.*",
            "dropout.*",
            "embedding.*",
            "gather.*",
            "argmax",
            "topk",
            "accuracy",
            "adam",
            "pad",
            "uniform",
            "gaussian",
            "check_finite_and_unscale",  # (the loss-scaling ops: mixed precision, which needs half-precision)
            "update_loss_scaling",
            "quantize_linear",  # (quantization: the OpenCL flavour has no int8 ops yet)
            "dequantize_linear",
        },
        "torch": {
            "_log_softmax.*",
            "nll_loss.*",
            "argmax.*",
            "convolution_.*",
            "max_pool2d_with_indices.*",
            "native_group_norm",  # (the device's layer norm, which OpenCL lacks)
            "normal_",
            "uniform_",
            "_amp_foreach_non_finite_check_and_unscale_",
            "_amp_update_scale_",
        },
    }
    flavour = load_flavour("opencl")
    assert {fw: set(p) for fw, p in flavour.unregistered.items()} == by_hand
    assert flavour.device_sources[-1] == c_api.STUBS_FILE


def test_the_kernel_table_is_valid_toml_with_known_frameworks():
    data = tomllib.loads(Path(c_api.__file__).with_name("op_kernels.toml").read_text())
    assert {fw for entry in data["kernels"].values() for fw in entry} <= {"paddle", "torch"}
