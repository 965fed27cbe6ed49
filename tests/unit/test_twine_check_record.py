"""twine check (the real one) runs once per file name and core metadata: a wheel rebuilt after a source
edit, with the same name and METADATA, is not checked again; a changed METADATA or name is."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from test_manylinux import make_wheel

from devkit.building.publish import check_index_ready
from devkit.util.errors import DevkitError


def _twine_runs(log: Path) -> int:
    return log.read_text().count("-m twine check") if log.is_file() else 0


def _with_description(wheel: Path, old: bytes, new: bytes) -> None:
    with zipfile.ZipFile(wheel) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist()}
    meta = "paddle_custom_stpu-0.1.0.dist-info/METADATA"
    entries[meta] = entries[meta].replace(old, new)
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)


def test_a_rebuilt_wheel_with_the_same_metadata_is_not_checked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    log = tmp_path / "log"
    library = tmp_path / "libplugin.so"
    library.write_bytes(b"first build")
    check_index_ready([make_wheel(tmp_path, library)], log)
    assert _twine_runs(log) == 1
    library.write_bytes(b"after an edit")  # other bytes in the wheel, the same name and METADATA
    check_index_ready([make_wheel(tmp_path, library)], log)
    assert _twine_runs(log) == 1
    # other metadata: checked again, and a refusal is never recorded
    broken = make_wheel(tmp_path, library)
    _with_description(broken, b"text/markdown\n\n# hi\n", b"text/x-rst\n\n`broken <\n")
    for runs in (2, 3):
        with pytest.raises(DevkitError, match="twine check refuses"):
            check_index_ready([broken], log)
        assert _twine_runs(log) == runs
