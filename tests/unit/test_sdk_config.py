"""[tool.devkit.sdk] parsed into its settings: the OpenCL declaration of the README, and every
way a declaration can be wrong named by its key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from devkit.project.recipes import find_recipe
from devkit.project.sdk import parse_sdk
from devkit.util.errors import DevkitError

OPENCL = """
name = "opencl"
version = "3.0"
headers = ["CL/cl.h"]
libraries = ["OpenCL"]
include-dirs = ["usr/include"]
lib-dirs = ["usr/lib/{triple}"]
runtime-libs = ["libOpenCL.so.1"]
env = { OCL_ICD_VENDORS = "/etc/OpenCL/vendors" }
runtime-env = { POCL_DEVICES = "pthread pthread" }
[build]
x86_64 = { debian = ["opencl-c-headers", "ocl-icd-opencl-dev", "ocl-icd-libopencl1"] }
armv8 = { archive = "https://example.com/opencl-sdk.tar.gz", sha256 = "%s" }
armhf = { dir = "/opt/opencl" }
[runtime]
x86_64 = { debian = ["ocl-icd-libopencl1", "pocl-opencl-icd"] }
""" % ("ab" * 32)


def test_the_opencl_declaration():
    sdk = parse_sdk(tomllib.loads(OPENCL))
    assert (sdk.name, sdk.version, sdk.variable) == ("opencl", "3.0", "OPENCL")
    assert sdk.build["aarch64"].kind == "archive" and sdk.build["aarch64"].sha256 == "ab" * 32  # alias resolved
    assert sdk.build["x86_64"].packages == ("opencl-c-headers", "ocl-icd-opencl-dev", "ocl-icd-libopencl1")
    assert sdk.build["armhf"].path == "/opt/opencl" and sdk.runtime["x86_64"].kind == "debian"
    assert sdk.dirs(find_recipe("aarch64"), sdk.lib_dirs) == ("usr/lib/aarch64-linux-gnu",)
    assert sdk.env == {"OCL_ICD_VENDORS": "/etc/OpenCL/vendors"}
    assert sdk.runtime_env == {"POCL_DEVICES": "pthread pthread"}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace('version = "3.0"', 'version = "three"'),
            "tool.devkit.sdk.version = 'three' is not a version",
        ),
        (
            lambda t: t.replace('name = "opencl"', 'name = "open-cl"'),
            "tool.devkit.sdk.name = 'open-cl' must be an identifier",
        ),
        (
            lambda t: t.replace('"usr/include"', '"/usr/include"'),
            "tool.devkit.sdk.include-dirs has '/usr/include', an absolute path",
        ),
        (
            lambda t: t.replace('"opencl-c-headers"', '"OpenCL Headers"'),
            "tool.devkit.sdk.build.x86_64.debian has 'OpenCL Headers'",
        ),
        (lambda t: t.replace("armhf = {", "riscv64 = {"), "tool.devkit.sdk.build.riscv64 names an unknown target"),
        # Debian pins: name[:arch]=version, as apt takes them; nothing apt or a shell would read otherwise
        *(
            (
                lambda t, entry=entry: t.replace('"ocl-icd-opencl-dev"', f'"{entry}"'),
                f"tool.devkit.sdk.build.x86_64.debian has '{entry}', which is not",
            )
            for entry in (
                "ocl-icd-opencl-dev=",
                "ocl-icd-opencl-dev==2.3.1-1",
                "ocl-icd-opencl-dev>=2.3.1",
                "ocl-icd-opencl-dev=2.3.1-1;id",
                "ocl-icd-opencl-dev=$(id)",
                "ocl-icd-opencl-dev=2.3.1 -1",
                "ocl-icd-opencl-dev=v2.3.1",
                "ocl-icd-opencl-dev=1:2:3",
                "ocl-icd-opencl-dev=2.3.1-",
                "-oAPT::Get::AllowUnauthenticated=1",
            )
        ),
        (
            lambda t: t.replace('{ dir = "/opt/opencl" }', '{ dir = "/opt/opencl", sha256 = "x" }'),
            "build.armhf.sha256 is set for a directory",
        ),
        (
            lambda t: t.replace('pocl-opencl-icd"]', 'pocl-opencl-icd"], url = "x"'),
            "tool.devkit.sdk.runtime.x86_64.url is not an SDK source key",
        ),
        (
            lambda t: t.replace('env = { OCL_ICD_VENDORS = "/etc/OpenCL/vendors" }', "env = { DEBUG = 1 }"),
            "tool.devkit.sdk.env",
        ),
        (
            lambda t: t.replace('runtime-env = { POCL_DEVICES = "pthread pthread" }', 'runtime-env = ["x"]'),
            "tool.devkit.sdk.runtime-env = ['x'] must be a table of strings",
        ),
        (lambda t: t.replace('name = "opencl"\n', ""), "tool.devkit.sdk.name is missing"),
        # values that reach generated code, CMake and METADATA: full matches, nothing around them
        (
            lambda t: t.replace(
                'runtime-libs = ["libOpenCL.so.1"]', """runtime-libs = ['lib",__import__("os"),".so']"""
            ),
            'tool.devkit.sdk.runtime-libs has \'lib",__import__("os"),".so\', which is not a library file name',
        ),
        (lambda t: t.replace('version = "3.0"', 'version = " 3.0"'), "tool.devkit.sdk.version = ' 3.0' is not"),
        (lambda t: t.replace('version = "3.0"', 'version = "3.0\\n"'), "tool.devkit.sdk.version = '3.0\\n' is not"),
        (lambda t: t.replace('version = "3.0"', "version = 3.10"), "tool.devkit.sdk.version = 3.1 must be a string"),
        (lambda t: t.replace('headers = ["CL/cl.h"]', 'headers = ["../CL/cl.h"]'), "headers has '../CL/cl.h'"),
        (lambda t: t.replace('libraries = ["OpenCL"]', 'libraries = ["OpenCL;m"]'), "libraries has 'OpenCL;m'"),
        # directories inside the SDK's root only
        (lambda t: t.replace('"usr/include"', '"../../etc"'), "tool.devkit.sdk.include-dirs has '../../etc', which"),
        (lambda t: t.replace('"usr/lib/{triple}"', '"usr/lib/../../.."'), "tool.devkit.sdk.lib-dirs has 'usr/lib/../"),
        # environment: devkit's own build variables and the loader's, the compiler's, Python's refused
        *(
            (
                lambda t, key=key: t.replace("OCL_ICD_VENDORS =", f"{key} ="),
                f"tool.devkit.sdk.env has {key}, which",
            )
            for key in (
                "ON_INFER",
                "CCACHE_DIR",
                "LD_PRELOAD",
                "PATH",
                "PYTHONPATH",
                "DEVKIT_SDK",
                "CMAKE_ARGS",
                "CXX",
                "CFLAGS",
                "SKBUILD_CMAKE_ARGS",
                "OPENCL_SDK_ROOT",
                "PIP_INDEX_URL",
                "Path",
            )
        ),
        (lambda t: t.replace("OCL_ICD_VENDORS =", '"BAD NAME" ='), "tool.devkit.sdk.env has 'BAD NAME', which is not"),
        (lambda t: t.replace("POCL_DEVICES =", "LD_LIBRARY_PATH ="), "tool.devkit.sdk.runtime-env has LD_LIBRARY_PATH"),
        # pip: pinned requirements only, no options, URLs or paths
        *(
            (
                lambda t, entry=entry: t.replace('armhf = { dir = "/opt/opencl" }', f'armhf = {{ pip = ["{entry}"] }}'),
                f"tool.devkit.sdk.build.armhf.pip has '{entry}', which is not",
            )
            for entry in (
                "--index-url=https://evil.example/simple",
                "vendor-sdk>=3.0",
                "vendor-sdk",
                "https://example.com/vendor_sdk-3.0-py3-none-any.whl",
                "./vendor_sdk.whl",
                "vendor-sdk==3.0 --hash=sha256:00",
                "vendor-sdk==3.0;python_version>=3",
            )
        ),
        (
            lambda t: t.replace(
                'armhf = { dir = "/opt/opencl" }',
                'armhf = { pip = ["vendor-sdk==3.0"], hashes = { vendor-sdk = ["md5:00"] } }',
            ),
            "tool.devkit.sdk.build.armhf.hashes.vendor-sdk has 'md5:00', which is not",
        ),
        (
            lambda t: t.replace(
                'armhf = { dir = "/opt/opencl" }',
                f'armhf = {{ pip = ["vendor-sdk==3.0", "other==1.0"], hashes = {{ vendor-sdk = ["sha256:{"ab" * 32}"] }} }}',
            ),
            "tool.devkit.sdk.build.armhf.hashes has no entry for other",
        ),
        (
            lambda t: t.replace('armhf = { dir = "/opt/opencl" }', 'armhf = { dir = "/opt/opencl", hashes = {} }'),
            "tool.devkit.sdk.build.armhf.hashes is set for a dir",
        ),
    ],
)
def test_a_wrong_declaration_names_its_key(edit, message):
    with pytest.raises(DevkitError) as caught:
        parse_sdk(tomllib.loads(edit(OPENCL)))
    assert message in caught.value.problem and caught.value.fix


def test_debian_packages_may_be_pinned_as_apt_takes_them():
    text = OPENCL.replace('"ocl-icd-opencl-dev"', '"ocl-icd-opencl-dev=2.3.1-1"').replace(
        '"opencl-c-headers"', '"opencl-c-headers:arm64=1:3.0~2023.02.06-1+b1"'
    )
    sdk = parse_sdk(tomllib.loads(text))
    assert sdk.build["x86_64"].packages == (
        "opencl-c-headers:arm64=1:3.0~2023.02.06-1+b1",
        "ocl-icd-opencl-dev=2.3.1-1",
        "ocl-icd-libopencl1",
    )


def test_a_target_without_a_source_is_named_when_it_is_built():
    sdk = parse_sdk(tomllib.loads(OPENCL.replace('armhf = { dir = "/opt/opencl" }\n', "")))
    with pytest.raises(DevkitError, match="tool.devkit.sdk.build has no entry for armhf"):
        sdk.build_source(find_recipe("armhf"))


def test_a_local_sdk_archive_is_hashed_again_only_when_it_changed(tmp_path, monkeypatch):
    """Every build checks the archive's sha256 before it runs; a multi-gigabyte SDK that matched
    is hashed once, and again when its size or mtime changes (a replaced or edited file)."""
    import hashlib
    import os

    from devkit.building import sdk

    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    hashed = []
    real = sdk.sha256_file
    monkeypatch.setattr(sdk, "sha256_file", lambda path: hashed.append(path) or real(path))
    archive = tmp_path / "opencl-sdk-3.0.tar.gz"
    archive.write_bytes(b"first")
    first = hashlib.sha256(b"first").hexdigest()
    assert sdk.local_archive_digest(archive, "ab" * 32) == first and len(hashed) == 1
    assert not (tmp_path / "cache").exists()  # a mismatch records nothing
    assert sdk.local_archive_digest(archive, first) == first and len(hashed) == 2
    assert sdk.local_archive_digest(archive, first) == first and len(hashed) == 2  # recorded: not hashed
    archive.write_bytes(b"other")  # same size, new mtime
    os.utime(archive, ns=(1, archive.stat().st_mtime_ns + 1_000_000))
    assert sdk.local_archive_digest(archive, first) == hashlib.sha256(b"other").hexdigest() and len(hashed) == 3
    archive.write_bytes(b"first")
    assert sdk.local_archive_digest(archive, first) == first and len(hashed) == 4
    record = next((tmp_path / "cache" / "sdk-digests").glob("*.json"))
    record.write_text("{not json")  # a damaged record: hashed again, not trusted
    assert sdk.local_archive_digest(archive, first) == first and len(hashed) == 5


def test_pinned_pip_requirements_and_their_hashes():
    text = OPENCL.replace(
        'armhf = { dir = "/opt/opencl" }',
        f'armhf = {{ pip = ["Vendor.SDK==3.0.1"], hashes = {{ "vendor-sdk" = ["sha256:{"ab" * 32}"] }} }}',
    )
    source = parse_sdk(tomllib.loads(text)).build["armhf"]
    assert source.packages == ("Vendor.SDK==3.0.1",)
    assert source.requirements() == [f"Vendor.SDK==3.0.1 --hash=sha256:{'ab' * 32}"]  # matched by normalised name


def test_relative_sdk_paths_are_the_project_s(tmp_path, monkeypatch):
    """dir and archive paths given relative are taken from the project's directory, not from
    wherever devkit happens to run (and ~ is the user's home)."""
    monkeypatch.chdir("/")
    text = OPENCL.replace('dir = "/opt/opencl"', 'dir = "vendor/opencl"').replace(
        "https://example.com/opencl-sdk.tar.gz", "../sdk.tar.gz"
    )
    sdk = parse_sdk(tomllib.loads(text), base=tmp_path / "project")
    assert sdk.build["armhf"].path == str(tmp_path / "project" / "vendor" / "opencl")
    assert sdk.build["aarch64"].path == str(tmp_path / "project" / ".." / "sdk.tar.gz")
    home = parse_sdk(tomllib.loads(text.replace('"vendor/opencl"', '"~/opencl"')), base=tmp_path)
    assert home.build["armhf"].path == str(Path.home() / "opencl")
