"""Paddle's libraries are keyed by content: the sha256 the wheel's RECORD gives a file as installed, else
hashed once per installed file. Every build keys the ABI cache by it."""

from __future__ import annotations

import base64
import hashlib
import time
from pathlib import Path

from devkit.building.frameworks import paddle


def sha256_24(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


def test_library_digest_is_recorded_under_the_files_stamp(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "paddle"  # no wheel RECORD beside it: hashed
    library = root / "libs" / "libphi_core.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"first build's bytes")
    digest = paddle._digest(library, root)
    assert digest == sha256_24(b"first build's bytes")
    (record,) = (tmp_path / "cache" / "abi" / "stamps").iterdir()
    assert record.read_text() == digest
    # The next build reads the record, not the file: a record altered by hand is what it returns.
    record.write_text("0" * 24)
    assert paddle._digest(library, root) == "0" * 24
    # A changed file has another stamp (ctime moves with every write): hashed again.
    library.write_bytes(b"other bytes")
    assert paddle._digest(library, root) == sha256_24(b"other bytes")
    # A damaged record is not trusted.
    for stale in (tmp_path / "cache" / "abi" / "stamps").iterdir():
        stale.write_text("not a digest")
    assert paddle._digest(library, root) == sha256_24(b"other bytes")


def write_after(path: Path, text: str, earlier: Path) -> None:
    """Write path so that its mtime and ctime are later than earlier's (file times are as coarse as the clock tick)."""
    path.write_text(text)
    while (
        path.stat().st_ctime_ns <= earlier.stat().st_ctime_ns or path.stat().st_mtime_ns <= earlier.stat().st_mtime_ns
    ):
        time.sleep(0.002)
        path.write_text(text)


def test_an_installed_library_takes_the_wheels_record_and_a_changed_one_is_hashed(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site-packages"
    root = site / "paddle"
    library = root / "libs" / "libphi_core.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"installed bytes")
    # RECORD's entry is not the file's hash: what the digest is shows which was read.
    recorded = hashlib.sha256(b"what RECORD says").digest()
    entry = f"paddle/libs/libphi_core.so,sha256={base64.urlsafe_b64encode(recorded).decode().rstrip('=')},{len(b'installed bytes')}"
    record = site / "paddlepaddle-3.3.1.dist-info" / "RECORD"
    record.parent.mkdir()
    write_after(record, f"paddle/__init__.py,sha256=AAAA,1\n{entry}\npaddlepaddle-3.3.1.dist-info/RECORD,,\n", library)
    paddle._wheel_record.cache_clear()
    assert paddle._digest(library, root) == recorded.hex()[:24]
    assert not (tmp_path / "cache" / "abi" / "stamps").exists()  # nothing hashed, nothing recorded
    # Changed after the install (same size): RECORD no longer speaks for it.
    library.write_bytes(b"patched! bytes.")
    assert paddle._digest(library, root) == sha256_24(b"patched! bytes.")
    # Another size than RECORD's (RECORD rewritten after it): hashed too.
    library.write_bytes(b"other size")
    write_after(record, f"{entry}\n", library)
    paddle._wheel_record.cache_clear()
    assert paddle._digest(library, root) == sha256_24(b"other size")
