"""File-system steps that never leave half-written output behind."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import EnvironmentProblem


@contextlib.contextmanager
def naming_path(path: Path) -> Iterator[None]:
    """An OSError that names no file (a write(2) on a full disk: "No space left on device") leaves
    naming `path`, so that the one error line says where the space ran out."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            exc.filename = str(path)
        raise


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
        with naming_path(final):
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


def _unique_temp(directory: Path, name: str) -> tuple[int, Path]:
    """A new file beside `name` in `directory` at a name no one else has (O_EXCL, never through a
    link), with the permissions a plain create gives (0666 less the umask)."""
    while True:
        tmp = directory / f".{name}.{secrets.token_hex(6)}.partial"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue


@contextlib.contextmanager
def _replaced(final: Path) -> Iterator[tuple[BinaryIO, Path]]:
    """Yield a temporary file beside `final` to fill; on success it becomes `final` by a rename,
    on any exception it is removed. Two writers of one path each have their own."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _unique_temp(final.parent, final.name)
    try:
        with naming_path(final), os.fdopen(fd, "wb") as f:
            yield f, tmp
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, content: str | bytes) -> Path:
    """Write `path` through a temporary file beside it and a rename: readers see the old file or
    the whole new one, never a half-written one (also when the disk fills up)."""
    with _replaced(path) as (f, _):
        f.write(content.encode() if isinstance(content, str) else content)
    return path


def publish_file(src: Path, dest_dir: Path) -> Path:
    """Copy `src` into `dest_dir` atomically (a temp name on the same file system, then rename);
    a failed copy (a full disk) leaves nothing behind."""
    final = dest_dir / src.name
    with _replaced(final) as (f, tmp), src.open("rb") as source:
        shutil.copyfileobj(source, f)
        f.flush()
        shutil.copystat(src, tmp)  # as copy2: mode and times
    return final


def private_dir(path: Path) -> Path:
    """`path` as a directory only this user can use (made 0700 when missing, or when it is this
    user's and only readable by others). One that is a link, another user's, or that others can
    write to is refused: anyone could have planted a file in it."""
    with contextlib.suppress(FileExistsError):  # (a file or a link there: refused below, by name)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    fix = f"remove {path} (check first what is in it) and run again"
    if not stat.S_ISDIR(info.st_mode):
        raise EnvironmentProblem(f"{path} is a link or a file, not devkit's private directory", fix)
    if info.st_uid != os.getuid():
        raise EnvironmentProblem(f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()})", fix)
    if info.st_mode & 0o022:
        raise EnvironmentProblem(
            f"{path} has mode {info.st_mode & 0o777:04o}; devkit's private directory must be 0700", fix
        )
    if info.st_mode & 0o077:  # yours, and no one else could write in it: made private (an older devkit's 0755)
        os.chmod(path, 0o700)
    return path


@contextlib.contextmanager
def exclusive_lock(path: Path, on_wait: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive lock on `path` (released when the process dies, however it dies).

    When another process holds it, `on_wait` is told who, and this one waits its turn. The lock
    file is opened without following a link and must be a regular file of this user's: a link
    planted there is refused, and the file it points to is neither created nor truncated.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fix = f"remove {path} (another user may have planted it) and run again"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise EnvironmentProblem(f"the lock file {path} is a symbolic link", fix) from None
    with os.fdopen(fd, "r+") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise EnvironmentProblem(f"the lock file {path} is not a regular file of yours", fix)
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
