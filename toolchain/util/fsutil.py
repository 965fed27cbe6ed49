"""File-system steps that never leave half-written output behind."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def staging_dir(final: Path, *, replace: bool) -> Iterator[Path]:
    """Yield an empty directory beside `final`; on success it becomes `final`.

    On any exception the staging directory is removed and `final` is untouched.
    With `replace`, an existing `final` is swapped out only after the new
    content is complete.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        yield stage
        if final.exists():
            if not replace:
                raise FileExistsError(final)
            old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
            os.replace(final, old / final.name)
            os.replace(stage, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(stage, final)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def write_atomic(path: Path, content: str | bytes) -> Path:
    """Write `path` through a temporary file beside it and a rename: readers see the old file or
    the whole new one, never a half-written one (also when the disk fills up)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.partial"
    try:
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            tmp.write_text(content)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def publish_file(src: Path, dest_dir: Path) -> Path:
    """Copy `src` into `dest_dir` atomically (a temp name on the same file system, then rename);
    a failed copy (a full disk) leaves nothing behind."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest_dir / f".{src.name}.partial"
    try:
        shutil.copy2(src, tmp)
        final = dest_dir / src.name
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final


@contextlib.contextmanager
def exclusive_lock(path: Path, on_wait: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive lock on `path` (released when the process dies, however it dies).

    When another process holds it, `on_wait` is told who, and this one waits its turn.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            on_wait(f.read().strip() or "another process")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        try:
            yield
        finally:
            f.truncate(0)
