"""Archives and data files that reach devkit from outside (a user's wheel, a bundle in
dist/, a downloaded wheel): opened with every failure turned into one error naming
the file and what is wrong with it, and unpacked without trusting member names.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from email.message import Message
from email.parser import Parser
from pathlib import Path
from typing import Any, BinaryIO

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from ..payload.shared.archive_io import (
    UnsafeArchive,
    check_zip_members,
    extract_tar_members,
    extract_zip,
    sha256_file,
    write_tar_gz,
)
from ..util.errors import InputError

__all__ = [
    "extract_tar",
    "extract_zip",
    "open_regular",
    "sha256_file",
    "tar_archive",
    "validate_wheel",
    "write_tar_gz",
    "zip_archive",
]

# What a damaged archive raises while it is opened or read.
_CORRUPT = (zipfile.BadZipFile, tarfile.TarError, zlib.error, EOFError, UnicodeDecodeError, KeyError, ValueError)


def _require_file(path: Path, what: str, fix: str) -> None:
    if not path.exists():
        raise InputError(f"{what} {path} does not exist", fix)
    if not path.is_file():
        raise InputError(f"{what} {path} is not a file", fix)


@contextlib.contextmanager
def _opened(
    opener: Callable[[Path], Any], kind: str, path: Path, what: str, fix: str, on_disk: bool = True
) -> Iterator[Any]:
    """Open an archive; damage found while it is read (or a hostile member) becomes one DevkitError
    naming it. `on_disk` False: the opener reads a stream `path` only names."""
    if on_disk:
        _require_file(path, what, fix)
    try:
        with opener(path) as archive:
            yield archive
    except UnsafeArchive as exc:
        raise InputError(f"{what} {path} is unsafe to unpack: {exc}", fix) from None
    except (*_CORRUPT, gzip.BadGzipFile) as exc:
        raise InputError(
            f"{what} {path} is damaged or not a {kind} archive ({exc or type(exc).__name__})", fix
        ) from None


def zip_archive(path: Path, what: str, fix: str) -> contextlib.AbstractContextManager[zipfile.ZipFile]:
    return _opened(zipfile.ZipFile, "zip", path, what, fix)


def tar_archive(path: Path, what: str, fix: str) -> contextlib.AbstractContextManager[tarfile.TarFile]:
    return _opened(tarfile.open, "tar", path, what, fix)


def extract_tar(
    path: Path, dest: Path, what: str, fix: str, fileobj: BinaryIO | None = None, strip_top: bool = False
) -> None:
    """Unpack a tar file (or `fileobj`, already open on it) into `dest` with devkit's own checks and
    writer (payload/archive_io.py), whatever this Python's `tarfile` filter lets through: an unsafe
    member, or too many or too large ones, refuse the archive whole (the first one found is named).
    `strip_top`: the archive holds one directory whose contents go into `dest`."""
    opener = tarfile.open if fileobj is None else functools.partial(tarfile.open, fileobj=fileobj)
    with _opened(opener, "tar", path, what, fix, on_disk=fileobj is None) as tar:
        extract_tar_members(tar, dest, strip_top)


@contextlib.contextmanager
def open_regular(path: Path, what: str, fix: str) -> Iterator[BinaryIO]:
    """`path` (links in it resolved now) opened once, without following a link at its end, and
    refused unless it is a regular file: what is hashed is then what is read (nothing swaps it)."""
    resolved = path.expanduser().resolve()
    try:
        fd = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be opened: {exc.strerror}", fix) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{what} {path} is not a file", fix)
        yield f


def validate_wheel(path: Path, what: str = "wheel") -> None:
    """A wheel a user hands devkit: a file with a wheel's name, an intact zip, and wheel metadata."""
    fix = "pass a wheel built by `devkit build` (rebuild it if it was truncated or edited)"
    _require_file(path, what, fix)
    try:
        parse_wheel_filename(path.name)
    except InvalidWheelFilename as exc:
        raise InputError(f"{what} {path} is not named like a wheel ({exc})", fix) from None
    with zip_archive(path, what, fix) as zf:
        damaged = zf.testzip()
        if damaged:
            raise InputError(f"{what} {path} is damaged: {damaged} fails its CRC check", fix)
        check_zip_members(zf.infolist())  # its member names become paths (bundles, target runtimes)
        wheel_metadata(zf, path, what, fix)


def wheel_metadata(zf: zipfile.ZipFile, path: Path, what: str, fix: str) -> Message:
    """The wheel's one top-level `<name>.dist-info/METADATA`, parsed."""
    metadata = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if len(metadata) != 1:
        raise InputError(f"{what} {path} has no .dist-info/METADATA, so it is not a wheel", fix)
    return Parser().parsestr(zf.read(metadata[0]).decode())
