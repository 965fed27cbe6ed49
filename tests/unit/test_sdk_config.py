"""[tool.devkit.sdk] parsed into its settings: the OpenCL declaration of the README, and every
way a declaration can be wrong named by its key."""

from __future__ import annotations

import tomllib

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
    ],
)
def test_a_wrong_declaration_names_its_key(edit, message):
    with pytest.raises(DevkitError) as caught:
        parse_sdk(tomllib.loads(edit(OPENCL)))
    assert message in caught.value.problem and caught.value.fix


def test_a_target_without_a_source_is_named_when_it_is_built():
    sdk = parse_sdk(tomllib.loads(OPENCL.replace('armhf = { dir = "/opt/opencl" }\n', "")))
    with pytest.raises(DevkitError, match="tool.devkit.sdk.build has no entry for armhf"):
        sdk.build_source(find_recipe("armhf"))


def test_a_local_sdk_archive_is_hashed_again_only_when_it_changed(tmp_path, monkeypatch):
    """Every build checks the archive's sha256 before it runs; a multi-gigabyte SDK that matched
    is hashed once, and again when its size or mtime changes (a replaced or edited file)."""
    import hashlib
    import os

    from devkit.build import sdk

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
