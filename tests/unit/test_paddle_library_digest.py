"""Paddle's libraries are hashed once per installed file: every build keys the ABI cache by their content."""

from __future__ import annotations

import hashlib

from devkit.building.frameworks import paddle


def test_library_digest_is_recorded_under_the_files_stamp(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    library = tmp_path / "libphi_core.so"
    library.write_bytes(b"first build's bytes")
    digest = paddle._digest(library)
    assert digest == hashlib.blake2b(b"first build's bytes", digest_size=12).hexdigest()
    (record,) = (tmp_path / "cache" / "abi" / "stamps").iterdir()
    assert record.read_text() == digest
    # The next build reads the record, not the file: a record altered by hand is what it returns.
    record.write_text("0" * 24)
    assert paddle._digest(library) == "0" * 24
    # A changed file has another stamp (ctime moves with every write): hashed again.
    library.write_bytes(b"other bytes")
    assert paddle._digest(library) == hashlib.blake2b(b"other bytes", digest_size=12).hexdigest()
    # A damaged record is not trusted.
    for stale in (tmp_path / "cache" / "abi" / "stamps").iterdir():
        stale.write_text("not a digest")
    assert paddle._digest(library) == hashlib.blake2b(b"other bytes", digest_size=12).hexdigest()
