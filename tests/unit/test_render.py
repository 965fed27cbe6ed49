import re
import shutil
import subprocess
import sys

import pytest

from devkit.project.naming import parse_backend_name
from devkit.project.project import load_project
from devkit.scaffold.render import render_backend
from devkit.util.errors import DevkitError, ExitCode, InputError

EXPECTED = [
    "CMakeLists.txt",
    "pyproject.toml",
    "README.md",
    "compile.sh",
    "cmake/preamble.cmake",
    "paddle/CMakeLists.txt",
    "paddle/cmake/FindPaddle.cmake",
    "build_support/framework_pin.py",
    "device/include/npu_x_device.h",
    "device/src/device.cc",
    "device/src/matmul_ops.cc",
    "paddle/runtime/runtime.cc",
    "paddle/kernels/kernel_helpers.h",
    "paddle/kernels/conv_pool_kernels.cc",
    "paddle/engine/int8_engine.cc",
    "paddle/inference/run.sh",
    "tests/conformance/harness.cc",
    "tests/conformance/ops_matmul_cases.cc",
    "tests/flavour/host_cases.cc",
    "paddle/tests/test_ops.py",
    "paddle/tests/test_mnist.py",
    "device/CMakeLists.txt",
    "pytorch/pyproject.toml",
    "pytorch/CMakeLists.txt",
    "pytorch/csrc/runtime/caching_allocator.cpp",
    "pytorch/csrc/runtime/guard.cpp",
    "pytorch/csrc/python_ops.cpp",
    "pytorch/csrc/fallback.cpp",
    "pytorch/torch_npu_x/__init__.py",
    "pytorch/torch_npu_x/device.py",
    "pytorch/tests/test_training.py",
]


def test_renders_complete_project(tmp_path):
    out = tmp_path / "NPU_X"
    result = render_backend(parse_backend_name("NPU_X"), out)
    for rel in EXPECTED:
        assert (out / rel).is_file(), rel
    assert set(EXPECTED) <= set(result.files)
    text = "\n".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert "{{" not in text and "{%" not in text  # nothing left unrendered
    assert 'params->device_type = const_cast<char*>("npu_x")' in (out / "paddle/runtime/runtime.cc").read_text()
    assert re.search(r'^device-type = "npu_x"$', (out / "pyproject.toml").read_text(), re.M)
    assert (out / "compile.sh").stat().st_mode & 0o111


def test_every_kernel_has_a_signature_check(tmp_path):
    out = tmp_path / "STPU"
    render_backend(parse_backend_name("STPU"), out)
    for src in (out / "paddle/kernels").glob("*.cc"):
        text = src.read_text()
        defined = set(re.findall(r"^void (\w+Kernel)\(", text, re.M))
        checked = set(re.findall(r"STPU_CHECK_SIGNATURE(?:_ANY_DTYPE)?\((\w+Kernel),", text))
        assert defined <= checked, f"{src.name}: unchecked {defined - checked}"


def test_a_project_with_the_paddle_adapter_at_its_root_is_refused_in_one_line(tmp_path):
    """A project rendered before paddle/ (runtime/, kernels/ at the root) gets the move as the fix."""
    out = render_backend(parse_backend_name("STPU"), tmp_path / "STPU").out_dir
    for part in ("runtime", "kernels", "inference"):
        (out / "paddle" / part).rename(out / part)
    shutil.rmtree(out / "paddle")
    with pytest.raises(InputError, match=r"has the Paddle adapter at its root .*expects it in paddle/") as info:
        load_project(out)
    assert "git mv runtime kernels inference paddle/" in info.value.fix
    shown = subprocess.run([sys.executable, "-m", "devkit", "config", "show", str(out)], capture_output=True, text=True)
    assert shown.returncode == ExitCode.INPUT and shown.stdout == ""
    assert [line for line in shown.stderr.splitlines() if line] == [f"error: {info.value.one_line()}"]
    assert load_project(render_backend(parse_backend_name("STPU"), tmp_path / "new").out_dir).name == "STPU"


def test_existing_non_empty_dir_is_refused_and_kept(tmp_path):
    out = tmp_path / "STPU"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(DevkitError, match="already exists") as info:
        render_backend(parse_backend_name("STPU"), out)
    assert "--force" in info.value.one_line()
    assert (out / "mine.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["STPU"]  # no staging left behind


def test_force_replaces(tmp_path):
    out = tmp_path / "STPU"
    out.mkdir()
    (out / "old.txt").write_text("x")
    render_backend(parse_backend_name("STPU"), out, force=True)
    assert not (out / "old.txt").exists() and (out / "CMakeLists.txt").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["STPU"]


def test_failed_render_leaves_nothing(tmp_path, monkeypatch):
    """A failure half-way (disk full) leaves neither the output nor a staging dir."""
    import pathlib

    real_write = pathlib.Path.write_text
    calls = {"n": 0}

    def failing_write(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError("No space left on device")
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", failing_write)
    with pytest.raises(OSError):
        render_backend(parse_backend_name("STPU"), tmp_path / "STPU")
    assert calls["n"] == 5
    assert list(tmp_path.iterdir()) == []


def test_readme_documents_the_debugging_switches(tmp_path):
    from conftest import devkit

    devkit("new-backend", "STPU", "--out", str(tmp_path / "STPU"))
    readme = (tmp_path / "STPU" / "README.md").read_text()
    for switch in ("STPU_FALLBACK_OPS", "STPU_AUTOCOMPARE=1", "STPU_DUMP_OP_ARGS=1", "devkit test-ops"):
        assert f"`{switch}" in readme, switch
