"""Archives devkit writes and unpacks (standard library only: the build payload imports
it inside containers, devkit imports it on the host).

Written archives are reproducible: the same files give the same bytes, whatever
the checkout path, the files' times, owners or umask (entries sorted, times set to
SOURCE_DATE_EPOCH or a fixed date, owner root, modes 0644/0755, no gzip timestamp).

A member with an absolute name, a `..` component, or a link (zip files carry
symlinks in their Unix mode bits) could write outside the target directory:
such an archive is refused whole, before anything is written.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath


class UnsafeArchive(ValueError):
    """An archive member that would land outside the target directory."""


def unsafe_zip_member(info: zipfile.ZipInfo) -> str | None:
    """Why extracting `info` would be unsafe, or None."""
    name = info.filename
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        return f"member {name!r} has an absolute path"
    if ".." in path.parts:
        return f"member {name!r} leaves the target directory (..)"
    if stat.S_ISLNK(info.external_attr >> 16):
        return f"member {name!r} is a symbolic link"
    return None


def extract_zip(zf: zipfile.ZipFile, dest: Path, members: list[str] | None = None) -> None:
    """Extract `members` (default: all) of `zf` into `dest`; raise UnsafeArchive before writing anything."""
    chosen = [zf.getinfo(m) for m in members] if members is not None else zf.infolist()
    for info in chosen:
        reason = unsafe_zip_member(info)
        if reason:
            raise UnsafeArchive(reason)
    zf.extractall(dest, chosen)


# 1980-01-01, the earliest time a zip can hold: the same date in wheels and tarballs.
DEFAULT_EPOCH = 315532800


def reproducible_epoch() -> int:
    return int(os.environ.get("SOURCE_DATE_EPOCH") or DEFAULT_EPOCH)


def write_tar_gz(src: Path, archive: Path, arcname: str) -> Path:
    """Pack directory `src` as `arcname/` into `archive` (.tar.gz), byte for byte reproducibly."""
    epoch = reproducible_epoch()
    paths = [src, *sorted(src.rglob("*"), key=lambda p: p.relative_to(src).as_posix())]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in paths:
            rel = path.relative_to(src).as_posix()
            info = tar.gettarinfo(str(path), arcname=arcname if rel == "." else f"{arcname}/{rel}")
            info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "", ""
            executable = info.isdir() or bool(info.mode & stat.S_IXUSR)
            info.mode = 0o755 if executable else 0o644
            if info.isfile():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    with archive.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(buf.getvalue())
    return archive


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
