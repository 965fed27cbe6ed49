"""auditwheel's tagging of a wheel, reused when a rebuild changed nothing auditwheel reads.

`auditwheel repair` took 0.7 s of every one-file rebuild (its own ELF analysis, in a process of
its own). What it decides from a plugin wheel is a function of: each library's ELF identity, the
libraries and search paths its dynamic section names, the symbols it imports with their versions,
its GNU property note (the ISA level), and the wheel's other files; the bytes of the code do not
enter. A source edit usually changes only the code, so the rebuilt wheel's tagging is the last
one's, with the libraries' new bytes: the previous tagged wheel is rewritten with those bytes and
their RECORD lines, every zip entry as auditwheel wrote it (tests/unit/test_manylinux.py compares
the result with auditwheel's, byte for byte). Only a tagging that grafted nothing and changed
nothing but WHEEL, RECORD and directory entries is kept for reuse; anything unexpected is a miss,
and auditwheel runs.
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import tempfile
import zipfile
import zlib
from importlib.metadata import version as installed_version
from pathlib import Path

from ..building.elf import LibraryAbi
from ..run.envs import cache_root
from ..util.archives import zip_archive

PT_GNU_PROPERTY = 0x6474E553  # (pyelftools names it, or not, by version)
_LINKING_TAGS = ("DT_NEEDED", "DT_SONAME", "DT_RPATH", "DT_RUNPATH")


def reuse_key(
    wheel: Path, library_bytes: dict[str, bytes], libraries: list[LibraryAbi], arguments: list[str], epoch: str
) -> str | None:
    """A digest of everything auditwheel reads from `wheel` (its libraries' bytes and ABIs given, as
    read once by the caller) and its arguments; None when a library cannot be read here (then
    auditwheel runs)."""
    by_name = {lib.name: lib for lib in libraries}
    h = hashlib.blake2b(digest_size=20)
    for part in (installed_version("auditwheel"), zlib.ZLIB_RUNTIME_VERSION, epoch, *arguments):
        h.update(part.encode() + b"\0")
    with zip_archive(wheel, "wheel", "rebuild it with devkit build") as zf:
        for info in sorted(zf.infolist(), key=lambda i: i.filename):
            h.update(f"{info.filename}\0{info.external_attr}\0".encode())
            if info.filename in by_name:
                view = _linking_view(library_bytes[info.filename], by_name[info.filename])
                if view is None:
                    return None
                h.update(view)
            elif not info.filename.endswith(".dist-info/RECORD"):  # (RECORD: auditwheel writes it again)
                h.update(hashlib.sha256(zf.read(info)).digest())
    return h.hexdigest()


def _linking_view(data: bytes, abi: LibraryAbi) -> bytes | None:
    """The parts of one ELF library auditwheel's decisions depend on."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSegment
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(io.BytesIO(data))
        parts = [data[:16].hex(), str(elf["e_type"]), str(elf["e_machine"]), str(elf["e_flags"])]
        for segment in elf.iter_segments():
            kind = segment["p_type"]
            if isinstance(segment, DynamicSegment):
                for tag in segment.iter_tags():
                    if tag.entry.d_tag in _LINKING_TAGS:  # its value: tag.needed, tag.rpath, ...
                        parts.append(f"{tag.entry.d_tag}={getattr(tag, tag.entry.d_tag[3:].lower())}")
            elif kind in ("PT_GNU_PROPERTY", PT_GNU_PROPERTY):
                parts.append(data[segment["p_offset"] : segment["p_offset"] + segment["p_filesz"]].hex())
    except (ELFError, ValueError, KeyError, AttributeError):
        return None
    parts += sorted(f"{symbol}@{version or ''}" for symbol, version in abi.undefined.items())
    return "\n".join(parts).encode()


def _entry(wheel: Path, key: str) -> Path:
    """Where the tagging kept for `wheel` under `key` is: a directory holding the tagged wheel."""
    return cache_root() / "manylinux-tagging" / wheel.name / key


def reuse_tagging(wheel: Path, library_bytes: dict[str, bytes], key: str, out_dir: Path) -> Path | None:
    """The tagged wheel for `wheel` (its libraries' bytes given) made from the kept tagging under
    `key`, in out_dir; None if none is kept or it does not fit (then auditwheel runs)."""
    kept = next(iter(sorted(_entry(wheel, key).glob("*.whl"))), None)
    if kept is None:
        return None
    try:
        return _rewritten(kept, library_bytes, out_dir)
    except (zipfile.BadZipFile, OSError, KeyError, UnicodeDecodeError, EOFError):  # a damaged cache entry
        shutil.rmtree(kept.parent, ignore_errors=True)
        return None


def _rewritten(kept: Path, libraries: dict[str, bytes], out_dir: Path) -> Path | None:
    """`kept` with `libraries` (by member name) and their RECORD lines, written to out_dir; the key
    covers the bytes of every other member, so those are the kept wheel's."""
    with zipfile.ZipFile(kept) as before:
        record_name = next((n for n in before.namelist() if n.endswith(".dist-info/RECORD")), None)
        if record_name is None:
            return None
        record = before.read(record_name).decode()
        for name, data in libraries.items():
            old = before.read(name)
            line = f"{name},{_record_hash(old)},{len(old)}"
            if record.count(line) != 1:
                return None
            record = record.replace(line, f"{name},{_record_hash(data)},{len(data)}")
        out_dir.mkdir(parents=True, exist_ok=True)
        tagged = out_dir / kept.name
        with zipfile.ZipFile(tagged, "w") as zf:
            for info in before.infolist():
                if info.filename == record_name:
                    data = record.encode()
                else:
                    data = libraries[info.filename] if info.filename in libraries else before.read(info)
                entry = zipfile.ZipInfo(info.filename, info.date_time)
                entry.external_attr, entry.compress_type = info.external_attr, info.compress_type
                zf.writestr(entry, data)
    return tagged


def keep_tagging(wheel: Path, key: str, tagged: Path) -> None:
    """Keep auditwheel's `tagged` wheel for rebuilds of `wheel` with the same key, if it is a pure
    retagging (the previous key's is replaced: one kept per wheel name)."""
    with zipfile.ZipFile(wheel) as raw, zipfile.ZipFile(tagged) as after:
        raw_files = {i.filename for i in raw.infolist() if not i.is_dir()}
        after_files = {i.filename for i in after.infolist() if not i.is_dir()}
        if raw_files != after_files:
            return  # grafted libraries: each build asks auditwheel
        for name in raw_files:
            if not name.endswith((".dist-info/WHEEL", ".dist-info/RECORD")) and raw.read(name) != after.read(name):
                return
    entry = _entry(wheel, key)
    entry.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".keep-"))
    try:
        shutil.copyfile(tagged, staged / tagged.name)
        staged.rename(entry)  # whole, or not at all (another build kept the same one first)
    except OSError:
        pass
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    for other in entry.parent.iterdir():
        if other != entry and not other.name.startswith(".keep-"):
            shutil.rmtree(other, ignore_errors=True)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
