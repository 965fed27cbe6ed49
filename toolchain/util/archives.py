"""Archives and data files that reach devkit from outside (a user's wheel, a bundle in
dist/, a downloaded wheel): opened with every failure turned into one error naming
the file and what is wrong with it, and unpacked without trusting member names.
"""

from __future__ import annotations

import contextlib
import gzip
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from email.message import Message
from email.parser import Parser
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from ..payload.archive_io import UnsafeArchive, extract_zip, sha256_file, unsafe_zip_member, write_tar_gz
from ..util.errors import DevkitError

__all__ = ["extract_tar", "extract_zip", "sha256_file", "tar_archive", "validate_wheel", "write_tar_gz", "zip_archive"]

# What a damaged archive raises while it is opened or read.
_CORRUPT = (zipfile.BadZipFile, tarfile.TarError, zlib.error, EOFError, UnicodeDecodeError, KeyError, ValueError)


def _require_file(path: Path, what: str, fix: str) -> None:
    if not path.exists():
        raise DevkitError(f"{what} {path} does not exist", fix)
    if not path.is_file():
        raise DevkitError(f"{what} {path} is not a file", fix)


@contextlib.contextmanager
def _opened(opener: Callable[[Path], Any], kind: str, path: Path, what: str, fix: str) -> Iterator[Any]:
    """Open an archive; damage found while it is read (or a hostile member) becomes one DevkitError naming it."""
    _require_file(path, what, fix)
    try:
        with opener(path) as archive:
            yield archive
    except (UnsafeArchive, tarfile.FilterError) as exc:
        raise DevkitError(f"{what} {path} is unsafe to unpack: {exc}", fix) from None
    except (*_CORRUPT, gzip.BadGzipFile) as exc:
        raise DevkitError(
            f"{what} {path} is damaged or not a {kind} archive ({exc or type(exc).__name__})", fix
        ) from None


def zip_archive(path: Path, what: str, fix: str) -> contextlib.AbstractContextManager[zipfile.ZipFile]:
    return _opened(zipfile.ZipFile, "zip", path, what, fix)


def tar_archive(path: Path, what: str, fix: str) -> contextlib.AbstractContextManager[tarfile.TarFile]:
    return _opened(tarfile.open, "tar", path, what, fix)


def extract_tar(path: Path, dest: Path, what: str, fix: str) -> None:
    """Unpack a tar file into `dest` with the `data` filter: absolute names, `..`, links leaving
    `dest` and device files are refused (the first one found is named)."""
    with tar_archive(path, what, fix) as tar:
        members = tar.getmembers()
        for member in members:  # refuse before writing anything
            if member.name.startswith("/"):  # the data filter would quietly strip the "/"
                raise DevkitError(
                    f"{what} {path} is unsafe to unpack: member {member.name!r} has an absolute path", fix
                )
            try:
                tarfile.data_filter(member, str(dest))
            except tarfile.FilterError as exc:
                raise DevkitError(f"{what} {path} is unsafe to unpack: {exc}", fix) from None
        tar.extractall(dest, members=members, filter="data")


def validate_wheel(path: Path, what: str = "wheel") -> None:
    """A wheel a user hands devkit: a file with a wheel's name, an intact zip, and wheel metadata."""
    fix = "pass a wheel built by `devkit build` (rebuild it if it was truncated or edited)"
    _require_file(path, what, fix)
    try:
        parse_wheel_filename(path.name)
    except InvalidWheelFilename as exc:
        raise DevkitError(f"{what} {path} is not named like a wheel ({exc})", fix) from None
    with zip_archive(path, what, fix) as zf:
        damaged = zf.testzip()
        if damaged:
            raise DevkitError(f"{what} {path} is damaged: {damaged} fails its CRC check", fix)
        for info in zf.infolist():
            reason = unsafe_zip_member(info)
            if reason:
                raise DevkitError(f"{what} {path} is unsafe to unpack: {reason}", fix)
        wheel_metadata(zf, path, what, fix)


def wheel_metadata(zf: zipfile.ZipFile, path: Path, what: str, fix: str) -> Message:
    """The wheel's one top-level `<name>.dist-info/METADATA`, parsed."""
    metadata = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if len(metadata) != 1:
        raise DevkitError(f"{what} {path} has no .dist-info/METADATA, so it is not a wheel", fix)
    return Parser().parsestr(zf.read(metadata[0]).decode())
