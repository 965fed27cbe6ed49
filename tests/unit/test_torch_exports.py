"""The kept answers about torch's libraries (building/torch_exports.py): the same answers as reading
the libraries, read from the kept file by the next build, and read again when a library changes or
the file is damaged. A system zlib stands in for torch's libraries: a real ELF file with a GNU hash
table and versioned glibc references, which is all the reading looks at."""

import os
import shutil
from pathlib import Path

import pytest

from devkit.building import torch_exports
from devkit.building.torch_exports import TorchExports

ZLIB = Path("/lib/x86_64-linux-gnu/libz.so.1")


@pytest.fixture
def torch_root(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    assert ZLIB.is_file(), f"{ZLIB} (zlib1g) is what this test reads as a torch library"
    (tmp_path / "torch" / "lib").mkdir(parents=True)
    shutil.copy(ZLIB, tmp_path / "torch" / "lib" / "libtorch_stand_in.so")
    return tmp_path / "torch"


def no_reading(monkeypatch):
    def refuse(_libraries):
        raise AssertionError("read the libraries again")

    monkeypatch.setattr(torch_exports, "_hash_tables", refuse)
    monkeypatch.setattr(torch_exports, "_newest_versions", refuse)


def test_a_second_build_answers_from_the_kept_file(torch_root, monkeypatch):
    first = TorchExports(torch_root)
    assert first.owner("deflate") == "libtorch_stand_in.so" and first.owner("no_such_symbol") == ""
    floor = first.system_floor()
    assert floor.get("GLIBC") is not None
    first.save()

    no_reading(monkeypatch)
    second = TorchExports(torch_root)
    assert second.owner("deflate") == "libtorch_stand_in.so" and second.owner("no_such_symbol") == ""
    assert second.system_floor() == floor


def test_a_changed_library_is_read_again(torch_root, monkeypatch):
    first = TorchExports(torch_root)
    first.owner("deflate")
    first.save()
    library = torch_root / "lib" / "libtorch_stand_in.so"
    os.utime(library, ns=(1, 1))  # another torch unpacked in its place: another modification time

    no_reading(monkeypatch)
    with pytest.raises(AssertionError, match="read the libraries again"):
        TorchExports(torch_root).owner("deflate")


def test_a_damaged_kept_file_is_read_as_none(torch_root):
    first = TorchExports(torch_root)
    first.owner("deflate")
    first.save()
    first.path.write_text('{"format": 1, "floor": {"GLIBC": ["x"]}, "owners": ')

    again = TorchExports(torch_root)
    assert again.owner("deflate") == "libtorch_stand_in.so" and again.system_floor() == first.system_floor()
    again.save()
    assert TorchExports(torch_root).owner("inflate") == "libtorch_stand_in.so"
