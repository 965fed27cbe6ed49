"""`devkit new-backend --sdk opencl`: the OpenCL device library rendered over the backend."""

import re
import tomllib

import pytest

from devkit.project.config_parse import parse_config
from devkit.project.naming import parse_backend_name
from devkit.scaffold.flavours import available, int8_engine_ops, load_flavour
from devkit.scaffold.render import render_backend
from devkit.util.errors import InputError
from devkit.util.resources import resource_dir

OPENCL_SOURCES = ["opencl_device.h", "ops.cc", "ops.cl", "runtime.cc", "unimplemented.cc"]


def device_library_sources(cmake: str) -> list[str]:
    """device/CMakeLists.txt's sources: the ops' (add_library, -O3), then the runtime's (-O1)."""
    lists = (r"add_library\(stpu_device STATIC(.*?)\)", r"set\(_runtime_sources(.*?)\)")
    return [source for pattern in lists for source in re.search(pattern, cmake, re.S).group(1).split()]


def render(tmp_path, sdk: str | None):
    out = tmp_path / ("ocl" if sdk else "host") / "STPU"
    render_backend(parse_backend_name("STPU"), out, flavour=load_flavour(sdk))
    return out


def test_opencl_replaces_the_device_library_and_declares_its_sdk(tmp_path):
    assert "opencl" in available()
    out = render(tmp_path, "opencl")
    assert sorted(p.name for p in (out / "device/src").iterdir()) == OPENCL_SOURCES
    cmake = (out / "device/CMakeLists.txt").read_text()
    listed = device_library_sources(cmake)
    # the flavour's own files keep -O3 (the ops' list); the core's op-name patterns are runtime (-O1)
    assert listed == ["core/core.cc", "src/runtime.cc", "src/ops.cc", "src/unimplemented.cc", "core/op_patterns.cc"]
    assert "include(${CMAKE_CURRENT_SOURCE_DIR}/sdk.cmake)" in cmake and (out / "device/sdk.cmake").is_file()
    # the flavour's own cases replace the host library's; the conformance suite and the rest are there
    assert sorted(p.name for p in (out / "tests/flavour").iterdir()) == ["opencl_cases.cc"]
    assert (out / "tests/conformance/harness.cc").is_file() and (out / "tests/conformance/golden_check.cc").is_file()
    assert (out / "paddle/kernels/conv_pool_kernels.cc").is_file()
    text = "\n".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert "{{ " not in text and "{%" not in text  # nothing left unrendered (C++ has "{{x, &rx}")
    assert not (out / "_pyproject-sdk.toml").exists() and not (out / "flavour.toml").exists()
    devkit = tomllib.loads((out / "pyproject.toml").read_text())["tool"]["devkit"]
    sdk = parse_config(devkit, name="STPU", device_type="stpu").sdk
    assert sdk.name == "opencl" and sdk.runtime_libs == ("libOpenCL.so.1",)
    assert "pocl-opencl-icd" in sdk.runtime["x86_64"].packages
    assert sdk.build["aarch64"].packages[1] == "ocl-icd-opencl-dev:arm64"


def test_kernels_of_unimplemented_ops_are_compiled_out_of_registration(tmp_path):
    out = render(tmp_path, "opencl")
    paddle = re.search(
        r'kUnimplemented\[\] = R"patterns\((.*)\)patterns";', (out / "paddle/kernels/fallback_ops.cc").read_text()
    ).group(1)
    assert "conv2d.*" in paddle.split(",") and "matmul" not in paddle
    torch = re.search(
        r'kUnimplemented\[\] = R"patterns\((.*)\)patterns";', (out / "pytorch/csrc/fallback.cpp").read_text()
    ).group(1)
    assert {"_log_softmax.*", "nll_loss.*", "convolution_.*"} <= set(torch.split(","))
    host = render(tmp_path, None)
    assert 'kUnimplemented[] = R"patterns()patterns";' in (host / "paddle/kernels/fallback_ops.cc").read_text()
    assert 'kUnimplemented[] = R"patterns()patterns";' in (host / "pytorch/csrc/fallback.cpp").read_text()


def test_opencl_library_defines_every_function_of_the_c_api(tmp_path):
    """Nothing of the C API left undefined: an op the library lacks is defined, answering
    UNSUPPORTED (unimplemented.cc), so a plugin never fails to load on a missing symbol."""
    out = render(tmp_path, "opencl")
    header = re.sub(r"/\*.*?\*/", "", (out / "device/include/stpu_device.h").read_text(), flags=re.S)
    declared = set(re.findall(r"\b(stpu_\w+)\(", header))
    sources = "\n".join(
        (out / "device" / name).read_text()
        for name in ("core/core.cc", "src/runtime.cc", "src/ops.cc", "src/unimplemented.cc")
    )
    defined = set(re.findall(r"^\S.*?\b(stpu_\w+)\([^;]*?\)\s*\{", sources, re.M | re.S))
    assert declared and declared <= defined, sorted(declared - defined)
    stubs = re.findall(r'core::unimplemented\("(\w+)", ', (out / "device/src/unimplemented.cc").read_text())
    assert "conv2d_forward" in stubs and "gemm" not in stubs and "binary" not in stubs


def test_host_backed_device_is_the_default(tmp_path):
    out = render(tmp_path, None)
    cmake = (out / "device/CMakeLists.txt").read_text()
    listed = device_library_sources(cmake)
    assert "src/matmul_ops.cc" in listed and len(listed) == 2 + len(list((out / "device/src").glob("*.cc")))
    assert not (out / "device/src/unimplemented.cc").exists()  # the host-backed device has every op
    assert "sdk.cmake" not in cmake and "[tool.devkit.sdk]" not in (out / "pyproject.toml").read_text()


def test_verify_gets_the_runtime_environment_the_sdk_declares(tmp_path):
    """runtime-env reaches every check's environment (pocl shows two devices), under the modes."""
    from devkit.project.project import load_project
    from devkit.project.recipes import find_recipe
    from devkit.verify.request import verify_options

    out = render(tmp_path, "opencl")
    env = verify_options(load_project(out), find_recipe("x86_64"), None).modes_env
    assert env["POCL_DEVICES"] == "pthread pthread" and env["STPU_DEVICE_COUNT"] == "2"
    host = verify_options(load_project(render(tmp_path, None)), find_recipe("x86_64"), None).modes_env
    assert "POCL_DEVICES" not in host


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        (None, "neither a device library devkit ships nor a directory holding flavour.toml"),
        ("summary = 'x'\ndevice-sources = [", "is not valid TOML"),
        ("summary = 'x'\n", "lacks 'device-sources'"),
        ("summary = 'x'\ndevice-sources = ['../../etc/x.cc']\n", "which is not a path inside the project"),
        ("summary = 'x'\ndevice-sources = ['src/a.cc']\nreplaces = ['/tmp']\n", "which is not a path inside"),
        ("summary = 'x'\ndevice-sources = ['src/a.cc']\nhalf-precision = 'yes'\n", "which is not true or false"),
    ],
)
def test_a_vendor_flavour_directory_that_is_wrong_is_refused_in_one_line(tmp_path, toml, problem):
    flavour = tmp_path / "mine"
    (flavour / "device" / "src").mkdir(parents=True)
    if toml is not None:
        (flavour / "flavour.toml").write_text(toml)
    with pytest.raises(InputError) as info:
        load_flavour(str(flavour))
    assert problem in info.value.problem and "\n" not in info.value.problem


def test_a_deeply_nested_flavour_toml_is_bad_toml(tmp_path):
    """(tomllib recurses once per level: 20,000 nested arrays were a RecursionError, exit 3)"""
    flavour = tmp_path / "mine"
    (flavour / "device" / "src").mkdir(parents=True)
    (flavour / "flavour.toml").write_text("summary = " + "[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(InputError) as info:
        load_flavour(str(flavour))
    assert "nested too deeply" in info.value.problem


def test_a_vendor_flavour_directory_renders_without_an_sdk(tmp_path):
    """A flavour on plain C++ (no _pyproject-sdk.toml, no device/sdk.cmake) declares no SDK; the
    ops its sources lack are stubbed."""
    flavour = tmp_path / "plain"
    src = flavour / "device" / "src"
    src.mkdir(parents=True)
    host = resource_dir("templates") / "backend" / "device" / "src"
    for name in ("device.cc", "streams.cc", "memory.cc", "debug.cc", "movement_ops.cc", "debug.h", "internal.h"):
        (src / name).write_text((host / name).read_text())
    (flavour / "flavour.toml").write_text(
        "summary = 'plain'\nreplaces = ['device/src']\ndevice-sources = ['src/device.cc', 'src/streams.cc', "
        "'src/memory.cc', 'src/debug.cc', 'src/movement_ops.cc']\n"
    )
    out = render(tmp_path, str(flavour))
    assert "[tool.devkit.sdk]" not in (out / "pyproject.toml").read_text()
    cmake = (out / "device/CMakeLists.txt").read_text()
    assert "sdk.cmake" not in cmake and "src/unimplemented.cc" in cmake
    assert "stpu_gemm(" in (out / "device/src/unimplemented.cc").read_text()
    # half-precision not declared: no float16/bfloat16 kernel registrations, and no such dtype
    helpers = (out / "paddle/kernels/kernel_helpers.h").read_text()
    assert "#define STPU_AND_HALF_TYPES\n" in helpers and "return STPU_FLOAT16;" not in helpers


def test_the_host_backed_device_registers_float16_and_bfloat16_kernels(tmp_path):
    helpers = (render(tmp_path, None) / "paddle/kernels/kernel_helpers.h").read_text()
    assert "#define STPU_AND_HALF_TYPES , phi::dtype::float16, phi::dtype::bfloat16" in helpers
    assert "case phi::DataType::FLOAT16: return STPU_FLOAT16;" in helpers


def test_the_int8_engines_device_ops_are_read_from_its_sources():
    # (the activations' dequantize_linear too: a flavour without it must not get an engine that calls it)
    engine_ops = {"quantize_linear", "dequantize_linear", "conv2d_int8", "gemm_int8", "requantize"}
    # (relu and max pooling on int8, average pooling's int32 sums, the residual add, softmax, concat)
    engine_ops |= {"fill", "binary", "pool2d_forward", "avg_pool2d_int8", "add_int8", "softmax_int8", "concat_int8"}
    assert set(int8_engine_ops()) == engine_ops
    assert load_flavour(None).int8_engine and not load_flavour("opencl").int8_engine
