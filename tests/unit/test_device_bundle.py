"""The device bundle a build writes beside its wheel: made again only when what it packs changed."""

from __future__ import annotations

import importlib
import os
import sys
import tarfile

import pytest

from devkit.util.resources import PAYLOAD_DIR


@pytest.fixture
def build_plugin(monkeypatch):
    monkeypatch.syspath_prepend(str(PAYLOAD_DIR / "shared"))
    sys.modules.pop("build_plugin", None)
    return importlib.import_module("build_plugin")


@pytest.fixture
def tree(tmp_path):
    """A project with one device header and a build tree with the library and its tests."""
    (tmp_path / "project" / "device" / "include").mkdir(parents=True)
    (tmp_path / "project" / "device" / "include" / "stpu_device.h").write_text("int stpu_init(void);\n")
    build = tmp_path / "project" / "build" / "x"
    (build / "device").mkdir(parents=True)
    (build / "device" / "libstpu_device.a").write_bytes(b"!<arch>\n")
    for name in ("test_stpu_device", "golden_stpu_device"):
        (build / name).write_bytes(b"\x7fELF test")
        (build / name).chmod(0o755)
    return tmp_path / "project", build


def bundle(build_plugin, project, build, out):
    out.mkdir(exist_ok=True)
    return build_plugin.bundle_device_library(project, build, out, "stpu-device-0.1.0-x86_64", "x86_64")


def members(archive):
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_a_rebuild_that_changed_nothing_it_packs_takes_the_kept_bundle(build_plugin, tree, tmp_path, monkeypatch):
    project, build = tree
    first = bundle(build_plugin, project, build, tmp_path / "out1")

    def packed_again(*args):
        raise AssertionError("the bundle was packed again")

    monkeypatch.setattr(build_plugin, "write_tar_gz", packed_again)
    second = bundle(build_plugin, project, build, tmp_path / "out2")
    assert second.read_bytes() == first.read_bytes()
    assert set(members(second)) == {
        "stpu-device-0.1.0-x86_64/README.txt",
        "stpu-device-0.1.0-x86_64/include/stpu_device.h",
        "stpu-device-0.1.0-x86_64/lib/libstpu_device.a",
        "stpu-device-0.1.0-x86_64/tests/golden_stpu_device",
        "stpu-device-0.1.0-x86_64/tests/test_stpu_device",
    }


@pytest.mark.parametrize("change", ["test binary", "header", "epoch", "target"])
def test_a_change_to_what_it_packs_makes_it_again(build_plugin, tree, tmp_path, monkeypatch, change):
    project, build = tree
    first = bundle(build_plugin, project, build, tmp_path / "out1")
    write_tar_gz, packed = build_plugin.write_tar_gz, []
    monkeypatch.setattr(build_plugin, "write_tar_gz", lambda *a: packed.append(a) or write_tar_gz(*a))
    target = "x86_64"
    if change == "test binary":  # relinked after a device library edit: new bytes, new time
        (build / "test_stpu_device").write_bytes(b"\x7fELF test, rebuilt")
    elif change == "header":
        header = project / "device" / "include" / "stpu_device.h"
        header.write_text("int stpu_init(int flags);\n")
        os.utime(header, ns=(1, 1))
    elif change == "epoch":
        monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    else:
        target = "aarch64"
    out = tmp_path / "out2"
    out.mkdir()
    again = build_plugin.bundle_device_library(project, build, out, "stpu-device-0.1.0-x86_64", target)
    assert len(packed) == 1 and again.read_bytes() != first.read_bytes()
    if change == "test binary":
        assert members(again)["stpu-device-0.1.0-x86_64/tests/test_stpu_device"] == b"\x7fELF test, rebuilt"


def test_a_damaged_key_is_no_key(build_plugin, tree, tmp_path):
    project, build = tree
    first = bundle(build_plugin, project, build, tmp_path / "out1")
    (build / ".devkit-device-bundle.tar.gz").write_bytes(b"half a bundle")
    (build / ".devkit-device-bundle.tar.gz.key").write_text("{")
    second = bundle(build_plugin, project, build, tmp_path / "out2")
    assert second.read_bytes() == first.read_bytes()  # packed again, the same bytes
    (build / ".devkit-device-bundle.tar.gz").write_bytes(b"half a bundle")
    (build / ".devkit-device-bundle.tar.gz.key").write_bytes(b"\xff\xfe not text")
    third = bundle(build_plugin, project, build, tmp_path / "out3")
    assert third.read_bytes() == first.read_bytes()
