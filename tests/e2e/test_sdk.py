"""A vendor SDK declared in [tool.devkit.sdk], provided from Debian's OpenCL packages (Khronos
headers and the ICD loader, fetched by apt-get download into devkit's cache), on the host runner:
the device library links it, the wheel leaves its runtime library to the driver, the ABI check
resolves the plugin's OpenCL symbols against it, and what is missing stops the build in one line."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import docker.models.containers
import pytest
from conftest import OPENCL_PACKAGES, devkit, render_with_opencl_sdk, standalone_build, verify_passes
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from devkit.building.elf import LibraryAbi
from devkit.building.sdk_abi import SdkExports
from devkit.project.frameworks import PADDLE, TORCH
from devkit.project.recipes import find_recipe
from devkit.run.container import ContainerRunner, Mount
from devkit.run.engine import Engine
from devkit.run.envs import cache_root, reference_env
from devkit.run.images import builder_spec, ensure_image
from devkit.run.step import HostRunner, Step
from devkit.util.errors import ExitCode


def debian_prefix() -> Path:
    """Where the host build provided the SDK from Debian's packages (devkit's cache may also hold
    the archive test's, and a prefix of versions apt resolved before: the newest is the build's)."""
    markers = [
        marker
        for marker in (cache_root() / "host" / "sdk").glob("opencl-3.0-x86_64-*/devkit-sdk.json")
        if json.loads(marker.read_text())["packages"]
        == ["opencl-c-headers", "ocl-icd-opencl-dev", "ocl-icd-libopencl1"]
    ]
    return max(markers, key=lambda m: m.stat().st_mtime_ns).parent


# Two runtime libraries, as real vendor SDKs have (the ICD loader and its development link here):
# a list reaches the loader's generated header, the torch adapter's data file and auditwheel.
RUNTIME_LIBS = ("libOpenCL.so.1", "libOpenCL.so")


@pytest.fixture(scope="module")
def sdk_project(tmp_path_factory) -> Path:
    project = render_with_opencl_sdk(tmp_path_factory.mktemp("sdk"), "opencl-backend")
    pyproject = project / "pyproject.toml"
    declared = 'runtime-libs = ["libOpenCL.so.1"]'
    assert declared in pyproject.read_text()
    pyproject.write_text(pyproject.read_text().replace(declared, f"runtime-libs = {json.dumps(list(RUNTIME_LIBS))}"))
    return project


# The library that links the SDK, per wheel (Paddle's loader beside it links nothing of it).
PLUGIN_PROPER = {"paddle": "paddle_custom_device/stpu/libpaddle-custom-stpu-impl.so", "torch": "torch_stpu/_C.so"}
PADDLE_LOADER = "paddle_custom_device/libpaddle-custom-stpu.so"


def plugin_library(wheel: Path) -> bytes:
    """The wheel's library that links the SDK, after checking that no SDK library is in the wheel
    and that its METADATA names the SDK (with the RECORD line matching the rewritten METADATA)."""
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if "libOpenCL" in n], "the SDK's runtime library was copied into the wheel"
        metadata = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(metadata)
        assert "Requires-External: opencl (==3.0)" in text.decode().partition("\n\n")[0]
        digest = base64.urlsafe_b64encode(hashlib.sha256(text).digest()).rstrip(b"=").decode()
        record = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))).decode()
        assert f"{metadata},sha256={digest},{len(text)}" in record.splitlines()
        libs = {n for n in zf.namelist() if n.endswith(".so")}
        if wheel.name.startswith("torch_"):
            assert libs == {PLUGIN_PROPER["torch"]}
            return zf.read(PLUGIN_PROPER["torch"])
        assert libs == {PLUGIN_PROPER["paddle"], PADDLE_LOADER}
        assert not [n for n in needed(zf.read(PADDLE_LOADER)) if "OpenCL" in n or "phi" in n]
        return zf.read(PLUGIN_PROPER["paddle"])


def needed(data: bytes) -> list[str]:
    dynamic = next(s for s in ELFFile(io.BytesIO(data)).iter_sections() if isinstance(s, DynamicSection))
    return [t.needed for t in dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"]


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_a_declared_sdk_is_provided_linked_and_left_to_the_driver(sdk_project, framework):
    proc = devkit("build", str(sdk_project), "--framework", framework, "--runner", "host", "--json")
    summary = json.loads(proc.stdout)
    assert "libOpenCL.so.1" in summary["platform"]["excluded"] and summary["platform"]["grafted"] == []
    lib = plugin_library(Path(summary["wheel"]))
    if framework == "torch":  # what the adapter reads at import: data, not generated code
        with zipfile.ZipFile(summary["wheel"]) as zf:
            info = json.loads(zf.read("torch_stpu/_build_info.json"))
        assert (info["sdk"], info["sdk_runtime_libs"]) == ("opencl 3.0", list(RUNTIME_LIBS))
    assert "libOpenCL.so.1" in needed(lib)
    assert b"stpu-sdk-build: opencl=3.0" in lib  # which SDK the library needs, readable from the file
    log = Path(summary["log"]).read_text()
    assert re.search(r"STPU device library: opencl SDK 3\.0 at \S+/sdk/opencl-3\.0-x86_64-\w+", log), log[-3000:]
    # the exact Debian versions apt resolved: in the report, the build's log, the prefix's record and the index
    debs = summary["sdk"]["debian"]
    assert [d.partition(":")[0] for d in debs] == ["ocl-icd-libopencl1", "ocl-icd-opencl-dev", "opencl-c-headers"]
    assert all(re.fullmatch(r"[a-z0-9.+-]+:(amd64|all)=[0-9][\w.+~:-]*", d) for d in debs), debs
    assert f"[devkit] opencl SDK 3.0 for x86_64: {' '.join(debs)}\n" in log
    assert json.loads((Path(summary["sdk"]["root"]) / "devkit-sdk.json").read_text())["debian"] == debs
    assert SdkExports.recorded("opencl", "3.0", "x86_64")["host"]["debian"] == debs
    # the SDK prefix is made once (by whichever framework built first) and reused while apt resolves the same
    again = json.loads(devkit("build", str(sdk_project), "--framework", framework, "--runner", "host", "--json").stdout)
    assert "apt-get download" not in Path(again["log"]).read_text()
    assert again["sdk"] == summary["sdk"]


def test_check_abi_of_the_wheel_finds_the_sdk_the_build_provided(sdk_project, tmp_path, monkeypatch):
    devkit("build", str(sdk_project), "--runner", "host")  # provides the SDK (cached after the first test)
    wheel = next((sdk_project / "dist").glob("paddle_custom_stpu-*.whl"))
    devkit("check-abi", str(wheel))  # clGetPlatformIDs@OPENCL_1.0 resolved against the SDK's libOpenCL.so.1
    # a machine where no build provided the SDK (another cache: the shared one is other tests')
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "empty-cache"))
    proc = devkit("check-abi", str(wheel), check=False)
    assert proc.returncode == ExitCode.BUILD_FAILED
    assert (
        "was built against the opencl SDK 3.0, which devkit has not provided for x86_64 on this machine" in proc.stderr
    )


def test_the_abi_check_resolves_symbols_against_the_sdk_and_names_what_it_lacks(sdk_project):
    devkit("build", str(sdk_project), "--runner", "host")
    prefix = debian_prefix()
    sdk = SdkExports.read("the opencl SDK 3.0", sorted((prefix / "usr/lib/x86_64-linux-gnu").glob("libOpenCL.so*")))
    assert "OPENCL_1.0" in sdk.version_tags
    plugin = LibraryAbi(
        "libplugin.so",
        "EM_X86_64",
        needed=["libOpenCL.so.1", "libc.so.6"],
        undefined={"clGetPlatformIDs": "OPENCL_1.0", "clNotInThisSdk": "OPENCL_1.0", "memcpy": "GLIBC_2.14"},
    )
    rest, findings = sdk.resolve(plugin)
    assert rest.undefined == {"memcpy": "GLIBC_2.14"}  # left to the framework's and the system's checks
    (finding,) = findings
    assert "clNotInThisSdk@OPENCL_1.0 is exported by no library of the opencl SDK 3.0" in finding.problem


def test_a_header_the_sdk_lacks_stops_the_configure_in_one_line(tmp_path):
    project = render_with_opencl_sdk(tmp_path, "no-header", headers='"CL/cl.h", "CL/cl_vendor_ext.h"')
    proc = devkit("build", str(project), "--runner", "host", check=False)
    assert proc.returncode == ExitCode.BUILD_FAILED
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr[-2000:]
    assert re.search(
        r"the opencl SDK 3\.0 at \S+ has no header CL/cl_vendor_ext\.h in \S+/usr/include\. Fix: install", errors[0]
    )
    assert not list((project / "dist").glob("*.whl"))


def test_a_package_apt_cannot_find_is_named(tmp_path):
    project = render_with_opencl_sdk(tmp_path, "no-package", packages=OPENCL_PACKAGES + ', "opencl-vendor-sdk"')
    proc = devkit("build", str(project), "--runner", "host", check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == ExitCode.INPUT and len(errors) == 1, proc.stderr[-2000:]
    assert "tool.devkit.sdk.build.x86_64.debian has opencl-vendor-sdk, which apt cannot find" in errors[0]
    assert not list((project / "dist").glob("*.whl"))
    # a pin is passed to apt as it is written: a version apt does not have is named
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text().replace(', "opencl-vendor-sdk"', "")
    pyproject.write_text(text.replace('"ocl-icd-opencl-dev"', '"ocl-icd-opencl-dev=0.0-0"', 1))
    proc = devkit("build", str(project), "--runner", "host", check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == ExitCode.INPUT and len(errors) == 1, proc.stderr[-2000:]
    assert "debian has ocl-icd-opencl-dev=0.0-0, a version apt cannot find for x86_64 on host" in errors[0]


def without_the_opencl_loader(cmd: list[str]) -> list[str]:
    """`cmd` where libOpenCL.so.1 cannot be loaded, as on a machine without the OpenCL runtime
    (CI installs it on the host, for verify): /dev/null over each copy ldconfig knows, in a
    mount namespace of its own."""
    known = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    libs = [line.split(" => ")[1] for line in known.splitlines() if line.strip().startswith("libOpenCL.so.1 ")]
    mounts = "".join(f"mount --bind /dev/null {lib} && " for lib in libs)
    return ["unshare", "--mount", "sh", "-c", f'{mounts}exec "$@"', "sh", *cmd]


def installed(wheel: Path, site: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)], check=True
    )
    return site


def test_import_torch_without_the_sdk_runtime_is_one_line_and_cpu_still_works(sdk_project, tmp_path):
    """Without the OpenCL runtime, `import torch` with the adapter names the SDK and the library,
    and torch works on the CPU; with the SDK's libOpenCL.so.1 found, the device registers."""
    devkit("build", str(sdk_project), "--framework", "torch", "--runner", "host")
    site = installed(next((sdk_project / "dist").glob("torch_stpu-*.whl")), tmp_path / "site")
    reference = reference_env(HostRunner(), TORCH.version(find_recipe("x86_64")), tmp_path / "env.log", TORCH)
    script = "import torch; print(torch.ones(3).sum().item(), hasattr(torch, 'stpu'))"
    env = {**os.environ, "PYTHONPATH": str(site), "TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
    cmd = without_the_opencl_loader([str(reference / "bin/python"), "-c", script])
    without = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert without.returncode == 0 and without.stdout.split() == ["3.0", "False"], without.stderr[-2000:]
    (line,) = [x for x in without.stderr.splitlines() if x.strip()]
    assert line.startswith(
        "torch-stpu: the stpu device is unavailable: it needs the opencl 3.0 runtime, and libOpenCL.so.1"
    )
    assert "(the driver package, which provides libOpenCL.so.1 and libOpenCL.so) to use it" in line, line
    prefix = debian_prefix()
    env["LD_LIBRARY_PATH"] = str(prefix / "usr/lib/x86_64-linux-gnu")
    script = "import torch; print(torch.stpu.device_count(), (torch.ones(3, device='stpu') * 2).sum().item())"
    found = subprocess.run([str(reference / "bin/python"), "-c", script], env=env, capture_output=True, text=True)
    assert found.returncode == 0 and found.stdout.split()[1] == "6.0", found.stderr[-2000:]
    assert int(found.stdout.split()[0]) >= 1  # pocl's CPU device (CI installs pocl-opencl-icd)
    # torch.compile: this device library cannot launch compiled kernels, so Inductor is refused in
    # one line naming the backend that works, which does
    script = (
        "import torch\nf = lambda x: torch.relu(x) * 2\nx = torch.ones(3, device='stpu')\n"
        "print(torch.compile(f, backend='aot_eager')(x).sum().item())\n"
        "try:\n    torch.compile(f)(x)\nexcept Exception as e:\n    print('REFUSED', str(e))\n"
    )
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")
    compiled = subprocess.run([str(reference / "bin/python"), "-c", script], env=env, capture_output=True, text=True)
    assert compiled.stdout.splitlines()[0] == "6.0", compiled.stderr[-2000:]
    assert 'cannot launch compiled kernels: compile with torch.compile(model, backend="aot_eager")' in compiled.stdout


def test_import_paddle_without_the_sdk_runtime_is_one_line_and_cpu_still_works(sdk_project, tmp_path):
    """Without the OpenCL runtime, the loader Paddle opens names the SDK and the library, Paddle
    skips the plugin and works on the CPU (no `Fail to open library` from `import paddle`)."""
    devkit("build", str(sdk_project), "--runner", "host")
    site = installed(next((sdk_project / "dist").glob("paddle_custom_stpu-*.whl")), tmp_path / "site")
    reference = reference_env(HostRunner(), PADDLE.version(find_recipe("x86_64")), tmp_path / "env.log", PADDLE)
    script = "import paddle; print(paddle.ones([3]).sum().item(), paddle.device.get_all_custom_device_type())"
    env = {**os.environ, "CUSTOM_DEVICE_ROOT": str(site / "paddle_custom_device")}
    cmd = without_the_opencl_loader([str(reference / "bin/python"), "-c", script])
    without = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert without.returncode == 0 and without.stdout.split() == ["3.0", "[]"], without.stderr[-2000:]
    ours = [x for x in without.stderr.splitlines() if "device is unavailable" in x]
    assert len(ours) == 1 and ours[0].startswith(
        "paddle-custom-stpu: the stpu device is unavailable: it needs the opencl 3.0 runtime, and libOpenCL.so.1 "
        "could not be loaded ("
    )
    assert "(the driver package, which provides libOpenCL.so.1 and libOpenCL.so) to use it" in ours[0], ours[0]
    assert "Traceback" not in without.stderr and "Fail to open library" not in without.stderr
    found = subprocess.run([str(reference / "bin/python"), "-c", script], env=env, capture_output=True, text=True)
    assert found.returncode == 0 and found.stdout.split()[1] == "['stpu']", found.stderr[-2000:]


def opencl_stub(directory: Path, version_nodes: str) -> Path:
    """A libOpenCL.so.1 defining one function per version node given (clStub_<node>, and
    clGetPlatformIDs in OPENCL_1.0): a runtime other than the one the plugin was built for."""
    directory.mkdir()
    nodes = version_nodes.split()
    names = ["clGetPlatformIDs"] + [f"clStub_{n.replace('.', '_')}" for n in nodes[1:]]
    (directory / "cl.c").write_text("".join(f"int {name}(void) {{ return -1001; }}\n" for name in names))
    (directory / "cl.map").write_text(
        "".join(
            f"{node} {{ global: {name}; {'local: *; ' if i == 0 else ''}}};\n"
            for i, (node, name) in enumerate(zip(nodes, names, strict=True))
        )
    )
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-Wl,-soname,libOpenCL.so.1", f"-Wl,--version-script={directory / 'cl.map'}"]
        + ["-o", str(directory / "libOpenCL.so.1"), str(directory / "cl.c")],
        check=True,
    )
    return directory


def test_an_sdk_runtime_of_another_version_is_one_line_in_both_frameworks(sdk_project, tmp_path):
    """OpenCL runtimes other than the plugin was built for: an older one (only OPENCL_1.0; the
    plugin calls OpenCL 1.2 functions) and one with every version but lacking the functions.
    Each framework says in one line which SDK version it needs and what the runtime found lacks,
    and goes on without the device."""
    stubs = {
        opencl_stub(tmp_path / "older", "OPENCL_1.0"): "the libOpenCL.so.1 found is of another version (",
        opencl_stub(
            tmp_path / "lacking", "OPENCL_1.0 OPENCL_1.1 OPENCL_1.2"
        ): "the plugin library could not be loaded (",
    }
    for name in ("paddle", "torch"):
        framework = TORCH if name == "torch" else PADDLE
        devkit("build", str(sdk_project), "--framework", name, "--runner", "host")
        wheel = next((sdk_project / "dist").glob(f"{'torch_stpu' if name == 'torch' else 'paddle_custom_stpu'}-*.whl"))
        site = installed(wheel, tmp_path / name)
        python = reference_env(HostRunner(), framework.version(find_recipe("x86_64")), tmp_path / "env.log", framework)
        extra = (
            {"PYTHONPATH": str(site), "TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
            if name == "torch"
            else {"CUSTOM_DEVICE_ROOT": str(site / "paddle_custom_device")}
        )
        runtime = "Paddle 3.3.1" if name == "paddle" else f"torch {framework.version(find_recipe('x86_64'))}"
        for stub, says in stubs.items():
            proc = subprocess.run(
                [str(python / "bin/python"), "-c", f"import {name}; print({name}.ones([3]).sum().item())"],
                env={**os.environ, **extra, "LD_LIBRARY_PATH": str(stub)},
                capture_output=True,
                text=True,
            )
            assert proc.returncode == 0 and proc.stdout.split() == ["3.0"], (name, proc.stderr[-2000:])
            (line,) = [x for x in proc.stderr.splitlines() if "device is unavailable" in x]
            assert line.startswith(f"{wheel.name.split('-')[0].replace('_', '-')}: the stpu device is unavailable: ")
            assert says in line, line
            if stub.name == "older":
                # (the loader names the first missing version in the library's list, whose order is the linker's)
                assert "it needs the opencl 3.0 runtime" in line, line
                assert re.search(r"version `OPENCL_1\.[12]' not found", line), line
                assert "Install the opencl 3.0 runtime" in line, line
            else:
                assert re.search(r"undefined symbol: cl\w+", line), line
                assert f"It was built for the opencl 3.0 runtime and {runtime}: install those" in line, line


def test_an_sdk_archive_is_checked_and_unpacked_once(sdk_project, tmp_path):
    """The same SDK as a tarball with its sha256 (a vendor's usual delivery): its single top
    directory becomes the root, unpacked once into the build cache; the build tree, configured
    against the Debian prefix before, follows the new root."""
    devkit("build", str(sdk_project), "--runner", "host")  # the Debian-provided SDK to pack
    prefix = debian_prefix()
    archive = tmp_path / "opencl-sdk-3.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(prefix / "usr", arcname="opencl-sdk-3.0/usr")
    sha256 = hashlib.sha256(archive.read_bytes()).hexdigest()
    project = render_with_opencl_sdk(tmp_path, "from-archive")
    devkit("build", str(project), "--runner", "host")  # configured against the Debian prefix first
    pyproject = project / "pyproject.toml"
    text = re.sub(
        r"x86_64 = \{ debian = \[[^]]*\] \}",
        f'x86_64 = {{ archive = "{archive}", sha256 = "{sha256}" }}',
        pyproject.read_text(),
    )
    pyproject.write_text(text)
    unpacked = []
    for _ in range(2):
        summary = json.loads(devkit("build", str(project), "--runner", "host", "--json").stdout)
        log = Path(summary["log"]).read_text()
        root = r"(\S+/sdk/opencl-3\.0-x86_64-\w+)/opencl-sdk-3\.0"
        found = re.search(
            rf"opencl SDK 3\.0 at {root} \(\1/opencl-sdk-3\.0/usr/lib/x86_64-linux-gnu/libOpenCL\.so\)", log
        )
        assert found and "libOpenCL.so.1" in summary["platform"]["excluded"], log[-2000:]
        marker = Path(found[1]) / "devkit-sdk.json"
        unpacked.append((marker, marker.stat().st_mtime_ns))
    assert unpacked[0] == unpacked[1]  # the second build reused the unpacked archive


# pybind11 3.1.0's only wheel (pybind11-3.1.0-py3-none-any.whl)
PYBIND11_SHA256 = "b8488090f8acffbcb6b5d6a85571a6827a0a2981ffb75e5a0b27b87c4a6b7dd0"


def test_an_sdk_from_pip_is_installed_for_the_target(tmp_path):
    """A headers-only SDK from a wheel (pybind11's, as a stand-in for a vendor's pip-installable
    SDK): pinned and its hash checked, pip installs it for the target's platform into a prefix, the
    configure finds its header. A hash that does not match stops pip before anything is installed."""
    project = tmp_path / "pip-sdk"
    devkit("new-backend", "STPU", "--out", str(project))
    pyproject = project / "pyproject.toml"
    with pyproject.open("a") as f:
        f.write(
            '\n[tool.devkit.sdk]\nname = "pybind11"\nversion = "3.0"\nheaders = ["pybind11/pybind11.h"]\n'
            'include-dirs = ["pybind11/include"]\nlib-dirs = []\n\n'
            '[tool.devkit.sdk.build]\nx86_64 = { pip = ["pybind11==3.1.0"], hashes = { pybind11 = ["sha256:%s"] } }\n'
            % ("0" * 64)
        )
    wrong = devkit("build", str(project), "--runner", "host", check=False)
    errors = [line for line in wrong.stderr.splitlines() if line.startswith("error:")]
    assert wrong.returncode == ExitCode.INPUT and len(errors) == 1, wrong.stderr[-2000:]
    assert "tool.devkit.sdk.build.x86_64.hashes do not match what pip downloaded for pybind11==3.1.0" in errors[0]
    assert not list((project / "dist").glob("*.whl"))
    pyproject.write_text(pyproject.read_text().replace("0" * 64, PYBIND11_SHA256))
    summary = json.loads(devkit("build", str(project), "--runner", "host", "--json").stdout)
    log = Path(summary["log"]).read_text()
    found = re.search(r"pybind11 SDK 3\.0 at (\S+/sdk/pybind11-3\.0-x86_64-\w+) \(\)", log)
    assert found, log[-2000:]
    prefix = Path(found[1])
    assert json.loads((prefix / "devkit-sdk.json").read_text())["kind"] == "pip"
    assert (prefix / "pybind11" / "include" / "pybind11" / "pybind11.h").is_file()
    with zipfile.ZipFile(summary["wheel"]) as zf:
        assert b"stpu-sdk-build: pybind11=3.0" in zf.read(PLUGIN_PROPER["paddle"])


def test_without_an_opencl_driver_each_framework_says_so_once_and_works_on_the_cpu(sdk_project, tmp_path):
    """The ICD loader there but no driver (pocl uninstalled: an empty vendors directory): the device
    library's one line, no device, CPU work unaffected, in both frameworks."""
    (tmp_path / "vendors").mkdir()
    env = {**os.environ, "OCL_ICD_VENDORS": str(tmp_path / "vendors"), "TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
    line = "[STPU] no OpenCL platform: the ICD loader found no driver (install one, e.g. pocl-opencl-icd"
    paddle_site = installed(next((sdk_project / "dist").glob("paddle_custom_stpu-*.whl")), tmp_path / "paddle")
    torch_site = installed(next((sdk_project / "dist").glob("torch_stpu-*.whl")), tmp_path / "torch")
    runs = {
        "paddle": (
            {"CUSTOM_DEVICE_ROOT": str(paddle_site / "paddle_custom_device")},
            "import paddle; print(paddle.ones([3]).sum().item(), len(paddle.device.get_available_custom_device()))",
        ),
        "torch": (
            {"PYTHONPATH": str(torch_site)},
            "import torch; print(torch.ones(3).sum().item(), torch.stpu.device_count())",
        ),
    }
    for name, (extra, script) in runs.items():
        framework = TORCH if name == "torch" else PADDLE
        python = reference_env(HostRunner(), framework.version(find_recipe("x86_64")), tmp_path / "env.log", framework)
        proc = subprocess.run(
            [str(python / "bin/python"), "-c", script], env={**env, **extra}, capture_output=True, text=True
        )
        assert proc.returncode == 0 and proc.stdout.split() == ["3.0", "0"], (name, proc.stderr[-2000:])
        assert [x for x in proc.stderr.splitlines() if x.startswith("[STPU]")] == [
            line + ", or check /etc/OpenCL/vendors)"
        ]


def test_the_opencl_device_library_passes_its_own_tests(sdk_project, tmp_path):
    """The conformance suite (tests/conformance) and the flavour's own cases on the OpenCL device
    the ICD loader finds here (pocl): memory, copies, streams, events, each implemented op."""
    build, env = standalone_build(sdk_project, "device-tests")  # cmake and ninja from pip (devkit's own)
    subprocess.run(
        ["cmake", "-S", sdk_project, "-B", build, "-G", "Ninja", "-DWITH_PADDLE=OFF", "-DWITH_TESTING=ON"],
        check=True,
        capture_output=True,
        env=env,
    )
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True, env=env)
    proc = subprocess.run([build / "test_stpu_device"], capture_output=True, text=True)
    assert proc.returncode == 0 and re.search(r"\n\d+ passed, 0 failed, 67 unimplemented\n", proc.stdout), (
        proc.stdout + proc.stderr
    )
    # what the flavour leaves out is named by case and op; its own case (a failing OpenCL call) ran
    assert (
        "UNIMPLEMENTED ops.conv_pool.conv2d_matches_naive: conv2d_forward is not implemented by the opencl device "
        "library" in proc.stdout
    )
    assert "PASS flavour.opencl.a_failed_host_function_does_not_block_the_stream" in proc.stdout
    # its pooling is float only: the int8 engine's max and average pooling are named, not failed
    assert (
        "UNIMPLEMENTED ops.quant.int8_max_pooling_and_relu_keep_the_integers: pool2d_forward is not implemented"
        in proc.stdout
    )
    assert (
        "UNIMPLEMENTED ops.quant.int8_average_pooling_sums_the_integers_and_rescales_once: avg_pool2d_int8 is not "
        "implemented by the opencl device library" in proc.stdout
    )
    # no compiled kernels either (torch.compile's Inductor is refused; aot_eager works)
    assert (
        "UNIMPLEMENTED launch.kernel_runs_in_queue_order_on_device_memory: launch_kernel is not implemented by the "
        "opencl device library" in proc.stdout
    )
    # no tracer: the trace cases are named, not failed
    assert (
        "UNIMPLEMENTED trace.a_full_buffer_counts_what_it_drops: trace_enable is not implemented by the opencl "
        "device library" in proc.stdout
    )
    # no half precision (flavour.toml): the 16-bit cases are unimplemented by design, not failures
    assert (
        "UNIMPLEMENTED ops.half_precision.cast_to_float16_rounds_to_nearest_even: float16 (the device has no "
        "cl_khr_fp16) is not implemented by the "
        "OpenCL flavour" in proc.stdout
    )


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_the_opencl_device_verifies_on_pocl(sdk_project, framework):
    """verify on the host's OpenCL (pocl): ops vs CPU and LeNet, with the ops the OpenCL library does
    not implement on the CPU by design (their kernels unregistered), any other fallback a failure."""
    _, report = verify_passes(sdk_project, "--framework", framework)
    conformance = report["checks"][0]  # the device library's suite on pocl, every case by name
    assert conformance["name"] == "device conformance" and conformance["counts"]["unimplemented"] == 67
    assert {
        "ops.conv_pool.conv2d_matches_naive",
        "collectives.every_collective_across_processes",
        "ops.quant.int8_max_pooling_and_relu_keep_the_integers",
        "ops.quant.int8_average_pooling_sums_the_integers_and_rescales_once",
        "ops.quant.int8_add_rescales_each_operand_by_its_own_scale",
        "ops.quant.int8_softmax_takes_the_exponentials_of_the_integer_differences",
        "ops.quant.int8_concat_rescales_each_operand_into_its_slice",
        "ops.conv_pool.max_pooling_takes_the_first_maximum_and_the_last_nan",
    } <= set(conformance["unimplemented"])
    mnist = next(c for c in report["checks"] if c["name"] == "mnist")
    if framework == "paddle":
        assert (
            "conv2d.*" in report["unimplemented_kernels"] and mnist["cpu_by_design"] == report["unimplemented_kernels"]
        )
        ops = next(c for c in report["checks"] if c["name"] == "ops")
        assert "matmul" in report["registered_kernels"] and "conv2d" not in report["registered_kernels"]
        assert "on the CPU by design" in ops["detail"] and "conv2d" in ops["detail"]
    else:
        assert "aten::convolution_overrideable" in mnist["fallbacks_by_design"]
        assert set(mnist["fallbacks"]) == set(mnist["fallbacks_by_design"])  # nothing else fell back


def test_the_opencl_device_runs_an_inference_bundle(sdk_project):
    """Paddle Inference on the OpenCL device: conv2d and pool2d on the CPU by design (and flatten,
    which Paddle keeps with their CPU output), every other float op on the device."""
    devkit("build", str(sdk_project), "--runner", "host", "--infer")
    summary = json.loads(devkit("verify", str(sdk_project), "--runner", "host", "--infer", "--json").stdout)
    report = json.loads(Path(summary["report"]).read_text())
    inference = next(c for c in report["checks"] if c["name"].startswith("inference"))
    assert inference["passed"], inference["detail"]
    assert set(inference["placement"]["cpu_by_design"]) == {"conv2d", "pool2d", "flatten"}
    assert {"matmul", "add", "relu"} <= set(inference["placement"]["on_device"])


def _as_nobody() -> list[str] | None:
    """setpriv argv that runs a command as nobody with the docker socket's group (as a user in the
    docker group has it), or None where the machine cannot (not root, no setpriv, no engine)."""
    socket = Path("/var/run/docker.sock")
    if os.geteuid() != 0 or not shutil.which("setpriv") or not socket.exists() or not Engine.available():
        return None
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", f"--groups={socket.stat().st_gid}", "--"]


@pytest.mark.container
@pytest.mark.skipif(_as_nobody() is None, reason="needs root (to become nobody), setpriv and a local Docker Engine")
def test_a_user_who_is_not_root_builds_the_opencl_example_in_a_container():
    """devkit run by nobody (the builder container then runs as nobody too, as for any user): the
    OpenCL example's Debian SDK is fetched without root (apt's lists and cache in devkit's cache, the
    foreign architecture named to apt) and the armhf device library builds. Everything nobody
    touches is nobody's: a fresh cache and project in a private directory."""
    interpreter = next(
        python
        for python in (sys.executable, "/usr/bin/python3")
        if subprocess.run([*_as_nobody(), python, "-c", "import sys"], capture_output=True).returncode == 0
        and subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
        ).stdout
        == f"{tuple(sys.version_info[:2])}\n"
    )
    work = Path(tempfile.mkdtemp(prefix="devkit-nonroot-"))
    try:
        os.chown(work, 65534, 65534)
        env = {
            **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HTTP", "NO_PROXY", "http", "no_proxy"))},
            "PATH": os.environ["PATH"],
            "HOME": str(work),
            "DEVKIT_CACHE_DIR": str(work / "cache"),
            # the test's own Python path (devkit and its dependencies), readable by anyone
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and Path(p).is_dir()),
            "COLUMNS": "200",
        }

        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [*_as_nobody(), interpreter, "-m", "devkit", *args], env=env, cwd=work, capture_output=True, text=True
            )

        made = run("new-backend", "STPU", "--sdk", "opencl", "--out", str(work / "opencl-backend"))
        assert made.returncode == 0, made.stderr[-2000:]
        proc = run("build", str(work / "opencl-backend"), "--arch", "armhf", "--runner", "docker", "--json")
        assert proc.returncode == 0, proc.stderr[-3000:]
        summary = json.loads(proc.stdout)
        assert summary["kind"] == "device-bundle" and Path(summary["artifact"]).stat().st_uid == 65534
        log = Path(summary["log"]).read_text()
        assert re.search(r"Get:\d+ \S+ \w+/main armhf ocl-icd-libopencl1 armhf", log), log[:3000]  # apt as nobody
        assert re.search(r"STPU device library: opencl SDK 3\.0 at /cache/sdk/opencl-3\.0-armhf-\w+", log), log[-3000:]
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)


@pytest.mark.container
@pytest.mark.skipif(not Engine.available(), reason="needs a Docker Engine")
def test_a_remote_engine_gets_a_dir_sdk_streamed_once_per_build(tmp_path, monkeypatch):
    """Copy mode (a remote engine: files go in archives): a dir SDK, read-only like the project, is
    tarred once per build into a temporary file and streamed to each step's container from it (not
    tarred in memory for every step); the writable build tree follows each step."""
    monkeypatch.setenv("DEVKIT_ENGINE_FILES", "copy")
    sdk = tmp_path / "sdk"
    (sdk / "lib").mkdir(parents=True)
    (sdk / "lib" / "libvendor.so.1").write_bytes(b"\x7fELF" + os.urandom(1 << 20))
    (tmp_path / "build").mkdir()
    engine = Engine.connect()
    image = ensure_image(engine, builder_spec(), tmp_path / "image.log")
    mounts = [Mount(sdk, "/inputs/0"), Mount(tmp_path / "build", "/src/build", read_only=False)]
    runner = ContainerRunner(engine, image, "linux/amd64", mounts)
    added: list[str] = []
    real_add = tarfile.TarFile.add
    monkeypatch.setattr(
        tarfile.TarFile, "add", lambda tar, name, *a, **k: added.append(name) or real_add(tar, name, *a, **k)
    )
    sent: list[type] = []
    real_put = docker.models.containers.Container.put_archive
    monkeypatch.setattr(
        docker.models.containers.Container,
        "put_archive",
        lambda c, path, data: sent.append(type(data)) or real_put(c, path, data),
    )
    script = 'wc -c < /inputs/0/lib/libvendor.so.1 > /src/build/size; echo "$1" >> /src/build/steps'
    for step in ("one", "two"):
        runner.run(Step(f"step {step}", ["sh", "-c", script, "sh", step], tmp_path / "step.log"))
    assert (tmp_path / "build" / "size").read_text().strip() == str((1 << 20) + 4)
    assert (tmp_path / "build" / "steps").read_text().split() == ["one", "two"]  # the build tree went in and out
    assert added.count(str(sdk / "lib" / "libvendor.so.1")) == 1, added
    assert sent and bytes not in sent, sent
