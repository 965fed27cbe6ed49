"""Archives devkit writes and unpacks (standard library only: the build payload imports
it inside containers, devkit imports it on the host).

Written archives are reproducible: the same files give the same bytes, whatever
the checkout path, the files' times, owners or umask (entries sorted, times set to
SOURCE_DATE_EPOCH or a fixed date, owner root, modes 0644/0755, no gzip timestamp).

Unpacking trusts no member and no Python's `tarfile` filter (before 3.11.13/3.12.11/3.13.4
its `data` filter is bypassed by a chain of links longer than PATH_MAX, CVE-2025-4517): every
member is checked first, against a model of the tree the archive makes, and an archive with one
bad member is refused whole before anything is written. Refused: absolute names, `..` in a name,
an empty name, a name twice (but directories), a member below a link or a file, a link whose target
(resolved lexically from its directory, through the archive's own links, as the kernel would)
leaves the destination, a hard link to anything but an earlier regular file, devices and FIFOs,
links in zip files, more than MAX_MEMBERS members or MAX_BYTES bytes (sizes as declared: a
member never yields more). The writer then opens every directory without following links, so
a link already on disk is never written through either.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO

# Caps well above what devkit unpacks (paddlepaddle's wheel unpacks to ~1 GB; a vendor SDK can be several).
MAX_MEMBERS = 200_000
MAX_BYTES = 8 << 30
MAX_LINK_HOPS = 40  # links followed while resolving one target (the kernel's MAXSYMLINKS)
_KINDS = ("file", "dir", "symlink", "hardlink")


class UnsafeArchive(ValueError):
    """An archive member that could write outside the target directory (or too much)."""


def unsafe_zip_member(info: zipfile.ZipInfo) -> str | None:
    """Why extracting `info` would be unsafe on its own, or None."""
    name = info.filename
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        return f"member {name!r} has an absolute path"
    if ".." in path.parts:
        return f"member {name!r} leaves the target directory (..)"
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        return f"member {name!r} is a symbolic link"
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return f"member {name!r} is a device file or FIFO"
    return None


def _parts(name: str, what: str = "member") -> tuple[str, ...]:
    if name.startswith("/"):
        raise UnsafeArchive(f"{what} {name!r} has an absolute path")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise UnsafeArchive(f"{what} {name!r} leaves the destination (..)")
    return parts


class _Tree:
    """The tree an archive makes, checked as a whole before anything is written."""

    def __init__(self) -> None:
        self.kinds: dict[tuple[str, ...], str] = {}
        self.links: dict[tuple[str, ...], str] = {}
        self.members = 0
        self.size = 0

    def add(self, name: str, kind: str, target: str = "", size: int = 0) -> tuple[str, ...]:
        self.members += 1
        self.size += size
        if self.members > MAX_MEMBERS:
            raise UnsafeArchive(f"it has more than {MAX_MEMBERS} members (devkit's cap on one archive)")
        if self.size > MAX_BYTES:
            cap = f"{MAX_BYTES / (1 << 30):g} GiB" if MAX_BYTES >= 1 << 30 else f"{MAX_BYTES} bytes"
            raise UnsafeArchive(f"it unpacks to more than {cap} (devkit's cap on one archive)")
        if kind not in _KINDS:
            raise UnsafeArchive(f"{name!r} is a device file or FIFO")
        if not name or "\0" in name:
            raise UnsafeArchive(f"a member has an empty name ({name!r})")
        parts = _parts(name)
        if not parts:
            if kind != "dir":
                raise UnsafeArchive(f"{name!r} would replace the destination itself")
            return parts
        known = self.kinds.get(parts)
        if known is not None and not (known == kind == "dir"):
            raise UnsafeArchive(f"{name!r} appears twice")
        if kind == "hardlink" and self.kinds.get(_parts(target, f"hard link {name!r} to")) != "file":
            raise UnsafeArchive(f"hard link {name!r} points to {target!r}, not a regular file earlier in the archive")
        if kind == "symlink":
            if not target or "\0" in target:
                raise UnsafeArchive(f"link {name!r} has an empty target")
            if target.startswith("/"):
                raise UnsafeArchive(f"link {name!r} points to an absolute path ({target!r})")
            self.links[parts] = target
        self.kinds[parts] = kind
        return parts

    def check(self) -> None:
        """What only the whole archive tells: members below links or files, links leaving it."""
        for parts in self.kinds:
            for depth in range(1, len(parts)):
                above = self.kinds.get(parts[:depth])
                if above not in (None, "dir"):
                    kind = "symbolic link" if above == "symlink" else above
                    raise UnsafeArchive(f"{'/'.join(parts)!r} lies below the {kind} {'/'.join(parts[:depth])!r}")
        for parts, target in self.links.items():
            if self._resolve(parts[:-1], target, [0]) is None:
                raise UnsafeArchive(f"link {'/'.join(parts)!r} -> {target!r} leaves the destination")

    def _resolve(self, base: tuple[str, ...], target: str, hops: list[int]) -> tuple[str, ...] | None:
        """Where `target`, read in directory `base`, leads (None: outside), following the archive's links."""
        path = list(base)
        for part in target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not path:
                    return None
                path.pop()
                continue
            path.append(part)
            link = self.links.get(tuple(path))
            if link is not None:
                hops[0] += 1
                if hops[0] > MAX_LINK_HOPS or link.startswith("/"):
                    return None  # a loop, or too long a chain to reason about: refused as leaving
                resolved = self._resolve(tuple(path[:-1]), link, hops)
                if resolved is None:
                    return None
                path = list(resolved)
        return tuple(path)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class _Writer:
    """Creates members below `dest` through directory descriptors opened without following links."""

    def __init__(self, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        self.root = os.open(str(dest), _DIR_FLAGS)
        self.cached: tuple[tuple[str, ...], int] | None = None

    def close(self) -> None:
        if self.cached:
            os.close(self.cached[1])
        os.close(self.root)

    def _walk(self, parts: tuple[str, ...]) -> int:
        """A new descriptor of directory `parts` below the destination, made where missing."""
        fd = os.dup(self.root)
        try:
            for part in parts:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                try:
                    inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:  # ELOOP, ENOTDIR: a link or a file was there before
                    raise UnsafeArchive(f"{'/'.join(parts)!r} is a link or a file on disk ({exc.strerror})") from None
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        return fd

    def directory(self, parts: tuple[str, ...]) -> int:
        """The descriptor of directory `parts`, kept for the next member (most share a directory)."""
        if self.cached is None or self.cached[0] != parts:
            fd = self._walk(parts)
            if self.cached:
                os.close(self.cached[1])
            self.cached = (parts, fd)
        return self.cached[1]

    def _replace(self, parts: tuple[str, ...], make: Callable[[str, int], None]) -> None:
        parent = self.directory(parts[:-1])
        try:
            make(parts[-1], parent)
        except FileExistsError:  # left by an earlier unpacking: replaced, never followed
            os.unlink(parts[-1], dir_fd=parent)
            make(parts[-1], parent)

    def file(self, parts: tuple[str, ...], source: IO[bytes], mode: int | None, mtime: float | None) -> None:
        """A regular file with `source`'s bytes; `mode` None: 0666 less the umask."""

        def make(name: str, parent: int) -> None:
            fd = os.open(name, _NEW_FILE, 0o666 if mode is None else 0o600, dir_fd=parent)
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
                out.flush()  # (before the times are set: a later write would move mtime to now)
                if mode is not None:
                    os.fchmod(fd, mode)
                if mtime is not None:
                    os.utime(fd, (mtime, mtime))

        self._replace(parts, make)

    def symlink(self, parts: tuple[str, ...], target: str) -> None:
        self._replace(parts, lambda name, parent: os.symlink(target, name, dir_fd=parent))

    def hardlink(self, parts: tuple[str, ...], target: tuple[str, ...]) -> None:
        source_dir = self._walk(target[:-1])
        try:
            if not stat.S_ISREG(os.stat(target[-1], dir_fd=source_dir, follow_symlinks=False).st_mode):
                raise UnsafeArchive(f"hard link {'/'.join(parts)!r} points to {'/'.join(target)!r}, not a file")
            self._replace(
                parts,
                lambda name, parent: os.link(
                    target[-1], name, src_dir_fd=source_dir, dst_dir_fd=parent, follow_symlinks=False
                ),
            )
        finally:
            os.close(source_dir)


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.isreg():
        return "file"
    if member.isdir():
        return "dir"
    return "symlink" if member.issym() else "hardlink" if member.islnk() else "special"


def extract_tar_members(tar: tarfile.TarFile, dest: Path, strip_top: bool = False) -> None:
    """Unpack `tar` into `dest`: every member checked first (UnsafeArchive), then written by devkit.
    `strip_top`: the first component of every name (and hard link target) is dropped, as the
    archive of a directory a container engine sends holds it under the directory's own name."""
    tree, members = _Tree(), []
    member = tar.next()
    while member is not None:  # one at a time, so that a million-member archive stops at the cap
        kind = _tar_kind(member)
        name, target = member.name, member.linkname
        if strip_top:
            name, target = name.partition("/")[2], target.partition("/")[2] if kind == "hardlink" else target
        if name or not strip_top:  # (the top directory itself is the destination)
            parts = tree.add(name, kind, target, member.size if kind == "file" else 0)
            members.append((member, kind, parts, target))
        member = tar.next()
    tree.check()
    writer = _Writer(dest)
    try:
        for member, kind, parts, target in members:
            if not parts:
                continue
            if kind == "dir":
                writer.directory(parts)
            elif kind == "file":
                mode = (member.mode & 0o755) | 0o600  # no set-id bits, nothing writable by others
                source = tar.extractfile(member)
                if source is None:  # not for a regular member; for the type checker
                    raise UnsafeArchive(f"{member.name!r} has no data")
                writer.file(parts, source, mode, member.mtime)
            elif kind == "symlink":
                writer.symlink(parts, target)
            else:
                writer.hardlink(parts, _parts(target))
    finally:
        writer.close()


def check_zip_members(infos: list[zipfile.ZipInfo]) -> list[tuple[zipfile.ZipInfo, str, tuple[str, ...]]]:
    """Each member with its kind and path, or UnsafeArchive for the first that is unsafe."""
    tree, plan = _Tree(), []
    for info in infos:
        reason = unsafe_zip_member(info)
        if reason:
            raise UnsafeArchive(reason)
        kind = "dir" if info.is_dir() else "file"
        plan.append((info, kind, tree.add(info.filename, kind, size=info.file_size)))
    tree.check()
    return plan


def extract_zip(zf: zipfile.ZipFile, dest: Path, members: list[str] | None = None) -> None:
    """Extract `members` (default: all) of `zf` into `dest`; raise UnsafeArchive before writing anything."""
    plan = check_zip_members([zf.getinfo(m) for m in members] if members is not None else zf.infolist())
    writer = _Writer(dest)
    try:
        for info, kind, parts in plan:
            if kind == "dir":
                writer.directory(parts)
            elif parts:
                with zf.open(info) as source:  # yields at most the declared size, CRC checked
                    writer.file(parts, source, None, None)
    finally:
        writer.close()


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
    # Level 6 (gzip's own default), not Python's 9: on a device bundle (6.1 MB of objects and test
    # binaries) 0.23 s instead of 0.91 s, 0.7 % larger; the bundle is remade on every rebuild.
    archive.write_bytes(gzip.compress(buf.getvalue(), compresslevel=6, mtime=0))
    return archive


def sha256_file(path: Path | IO[bytes]) -> str:
    """The sha256 of a file, or of what is left to read of an open one."""
    if not isinstance(path, Path):
        digest = hashlib.sha256()
        for block in iter(lambda: path.read(1 << 20), b""):
            digest.update(block)
        return digest.hexdigest()
    with path.open("rb") as f:
        return sha256_file(f)
