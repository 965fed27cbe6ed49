"""Archives unpacked without trusting them, on any Python devkit runs on: devkit validates every
member itself (links resolved lexically through the archive's own links, special files, caps on
members and bytes) before it writes anything, then writes with its own loop that never follows
a link on disk. Python 3.11.7's `data` filter is bypassed by the CVE-2025-4517 archive below."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_bad_input import run_cli, snapshot

from devkit.payload.shared import archive_io
from devkit.util.archives import extract_tar, extract_zip
from devkit.util.errors import DevkitError, ExitCode


def _tar(path: Path, members: list[tuple[str, str, str | bytes]]) -> Path:
    """(name, kind, link target or content) -> a tar.gz at `path`; kinds: file dir symlink hardlink chr."""
    with tarfile.open(path, "w:gz") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.type = {
                "file": tarfile.REGTYPE,
                "dir": tarfile.DIRTYPE,
                "symlink": tarfile.SYMTYPE,
                "hardlink": tarfile.LNKTYPE,
                "chr": tarfile.CHRTYPE,
            }[kind]
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data if isinstance(data, bytes) else data.encode()))
            else:
                info.linkname = str(data)
                tar.addfile(info)
    return path


def cve_2025_4517_members(dest: Path, hardlink: bool = True) -> list[tuple[str, str, str | bytes]]:
    """The public PoC's shape (CPython's test_realpath_limit_attack): a chain of directory links whose
    resolved path exceeds PATH_MAX, so os.path.realpath stops expanding; a link at its end back to the
    top; `escape` through it to the parent of `dest`; then a hard link to and a file written through it."""
    steps = "abcdefghijklmnop"
    component = "d" * ((os.pathconf(dest.parent, "PC_PATH_MAX") - len(str(dest)) - 1) // (len(steps) + 1))
    members: list[tuple[str, str, str | bytes]] = []
    path = ""
    for step in steps:
        members += [(os.path.join(path, component), "dir", ""), (os.path.join(path, step), "symlink", component)]
        path = os.path.join(path, component)
    linkpath = os.path.join(*steps, "l" * 254)
    members += [
        (linkpath, "symlink", os.path.join(*[".."] * len(steps))),
        ("escape", "symlink", os.path.join(linkpath, "..")),
        *([("flaglink", "hardlink", "escape/flag"), ("flaglink", "file", b"overwritten")] if hardlink else []),
        ("escape/newfile", "file", b"new"),
    ]
    return members


@pytest.fixture
def outer(tmp_path) -> Path:
    """A directory holding the destination and a file an archive must never reach."""
    (tmp_path / "flag").write_text("original")
    return tmp_path


def _refused(archive: Path, dest: Path, outer: Path, message: str) -> None:
    with pytest.raises(DevkitError) as caught:
        extract_tar(archive, dest, "device bundle", "rebuild it")
    assert "is unsafe to unpack" in caught.value.problem and message in caught.value.problem, caught.value.problem
    assert (outer / "flag").read_text() == "original" and not (outer / "newfile").exists()
    assert not dest.exists() or not any(dest.iterdir()), "wrote into the destination before refusing"


@pytest.mark.parametrize(
    ("hardlink", "message"), [(True, "not a regular file earlier"), (False, "below the symbolic link")]
)
def test_cve_2025_4517_symlink_chain_past_path_max_is_refused(outer, hardlink, message):
    dest = outer / "dest"
    archive = _tar(outer / "poc.tar.gz", cve_2025_4517_members(dest, hardlink))
    _refused(archive, dest, outer, message)


def test_link_resolved_through_a_shallower_link_is_refused(outer):
    """`x -> l/..` stays inside lexically, but `l` resolves to the top, so `x` is the parent."""
    dest = outer / "dest"
    members = [("d1/d2/d3/l", "symlink", "../../.."), ("d1/d2/d3/x", "symlink", "l/.."), ("d1/f", "file", b"x")]
    _refused(_tar(outer / "chain.tar.gz", members), dest, outer, "'d1/d2/d3/x' -> 'l/..' leaves the destination")


def test_member_written_through_an_earlier_link_is_refused(outer):
    dest = outer / "dest"
    members = [("lib", "dir", ""), ("up", "symlink", "lib/.."), ("up/newfile", "file", b"new")]
    _refused(_tar(outer / "through.tar.gz", members), dest, outer, "'up/newfile' lies below the symbolic link 'up'")


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([("dev/null", "chr", "")], "is a device file or FIFO"),
        ([("a", "file", b"x"), ("h", "hardlink", "../outside")], "leaves the destination (..)"),
        ([("h", "hardlink", "s"), ("s", "symlink", "a")], "not a regular file earlier in the archive"),
        ([("a", "file", b"x"), ("a", "symlink", "b")], "appears twice"),
        ([("a", "file", b"x"), ("a/b", "file", b"y")], "lies below the file 'a'"),
        ([("abs", "symlink", "/etc/passwd")], "points to an absolute path"),
        ([("", "symlink", ".")], "has an empty name"),
    ],
    ids=["device", "hardlink-out", "hardlink-to-link", "duplicate", "below-file", "absolute-link", "empty-name"],
)
def test_unsafe_members_are_refused_before_writing(outer, members, message):
    dest = outer / "dest"
    _refused(_tar(outer / "bad.tar.gz", [("first", "file", b"x"), *members]), dest, outer, message)


def test_member_and_byte_caps(outer, monkeypatch):
    dest = outer / "dest"
    monkeypatch.setattr(archive_io, "MAX_MEMBERS", 3)
    archive = _tar(outer / "many.tar.gz", [(f"f{i}", "file", b"x") for i in range(4)])
    _refused(archive, dest, outer, "more than 3 members")
    monkeypatch.setattr(archive_io, "MAX_MEMBERS", 100)
    monkeypatch.setattr(archive_io, "MAX_BYTES", 1000)
    archive = _tar(outer / "big.tar.gz", [("a", "file", b"x" * 600), ("b", "file", b"y" * 600)])
    _refused(archive, dest, outer, "more than 1000 bytes")
    zipped = outer / "big.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a", b"\0" * 2000)  # a bomb by declared size, in miniature
    with zipfile.ZipFile(zipped) as zf, pytest.raises(archive_io.UnsafeArchive, match="more than 1000 bytes"):
        extract_zip(zf, dest)
    assert not dest.exists() or not any(dest.iterdir())


def test_a_sound_archive_unpacks_with_links_modes_and_hard_links(outer):
    dest = outer / "dest"
    members = [
        ("./", "dir", ""),
        ("sdk/lib/libx.so.1", "file", b"\x7fELF"),
        ("sdk/lib/libx.so", "symlink", "libx.so.1"),
        ("sdk/lib64", "symlink", "lib"),
        ("sdk/include/x.h", "file", b"int x;\n"),
        ("sdk/include/same.h", "hardlink", "sdk/include/x.h"),
        ("sdk/bin/tool", "symlink", "../lib/libx.so"),
    ]
    extract_tar(_tar(outer / "ok.tar.gz", members), dest, "SDK archive", "fix")
    assert (dest / "sdk/lib64/libx.so").read_bytes() == b"\x7fELF"
    assert os.readlink(dest / "sdk/bin/tool") == "../lib/libx.so"
    assert (dest / "sdk/include/same.h").stat().st_ino == (dest / "sdk/include/x.h").stat().st_ino


def test_a_file_on_disk_is_never_written_through_a_link_already_in_the_destination(outer):
    dest = outer / "dest"
    dest.mkdir()
    (dest / "sdk").symlink_to(outer)  # left by something else: devkit's writer must not follow it
    with pytest.raises(DevkitError, match="a link or a file on disk"):
        extract_tar(_tar(outer / "ok.tar.gz", [("sdk/newfile", "file", b"new")]), dest, "SDK archive", "fix")
    assert not (outer / "newfile").exists()


def test_cli_refuses_the_cve_bundle_with_one_line(tmp_path, monkeypatch):
    """`devkit verify --arch armhf` unpacks the project's device bundle: the PoC in its place is
    refused with one error line, and nothing is written inside the work directory or beside it."""
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    project = tmp_path / "STPU"
    run_cli(["new-backend", "STPU", "--out", str(project)], expect=0)
    name = "paddle-custom-stpu-device-0.1.0-armhf"
    bundle = project / "dist" / f"{name}.tar.gz"
    bundle.parent.mkdir()
    work_parent = tmp_path / "cache" / "verify"  # verify unpacks into a work-XXXXXXXX directory here
    work_parent.mkdir(parents=True)
    (work_parent / "flag").write_text("original")
    poc = cve_2025_4517_members(work_parent / "work-abcdefgh")
    _tar(bundle, [(f"{name}/tests/test_stpu_device", "file", b"\x7fELF"), *poc])
    before = snapshot(tmp_path)
    code, _, err = run_cli(["verify", str(project), "--arch", "armhf"])
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == ExitCode.INPUT and len(errors) == 1 and "is unsafe to unpack" in errors[0] and "Fix:" in errors[0], (
        err
    )
    assert "Traceback" not in err
    assert (work_parent / "flag").read_text() == "original" and not (work_parent / "newfile").exists()
    written = [k for k in snapshot(tmp_path) if k not in before and not Path(k).is_dir()]
    assert not written, written


def test_sdk_archive_stamp_is_not_trusted_after_an_edit_with_mtime_restored(tmp_path, monkeypatch):
    """A local SDK archive that matched its sha256 is not hashed again while it is unchanged; an
    owner who edits it and sets its mtime back (os.utime) cannot restore its ctime."""
    import hashlib
    import time

    from devkit.building import sdk

    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    archive = tmp_path / "opencl-sdk-3.0.tar.gz"
    archive.write_bytes(b"genuine")
    genuine = hashlib.sha256(b"genuine").hexdigest()
    assert sdk.local_archive_digest(archive, genuine) == genuine  # hashed, recorded
    before = archive.stat()
    time.sleep(0.05)  # past the file system's coarse clock tick
    with archive.open("r+b") as f:
        f.write(b"altered")  # same size
    os.utime(archive, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert archive.stat().st_mtime_ns == before.st_mtime_ns and archive.stat().st_size == before.st_size
    assert sdk.local_archive_digest(archive, genuine) == hashlib.sha256(b"altered").hexdigest()


def test_an_sdk_archive_is_unpacked_from_the_file_that_was_hashed(tmp_path, monkeypatch):
    """Hashed, then opened again by path, a local archive could be swapped in between (another
    process of the owner, a shared download directory): the sha256 held, the swapped archive was
    unpacked. devkit hashes and unpacks one open file; a swap after the hash is never read."""
    import hashlib
    import io

    from devkit.building import sdk
    from devkit.project.recipes import find_recipe
    from devkit.project.sdk import SdkSettings, SdkSource

    def archive(name: str, data: bytes) -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w:gz") as tar:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        return out.getvalue()

    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    genuine, swapped = archive("include/CL/cl.h", b"// genuine\n"), archive("include/CL/cl.h", b"// swapped\n")
    path = tmp_path / "opencl-sdk-3.0.tar.gz"
    path.write_bytes(genuine)
    hashed = sdk.local_archive_digest

    def hash_then_swap(*args: object, **kwargs: object) -> str:
        digest = hashed(*args, **kwargs)  # type: ignore[arg-type]
        (tmp_path / "swap").write_bytes(swapped)
        os.replace(tmp_path / "swap", path)
        return digest

    monkeypatch.setattr(sdk, "local_archive_digest", hash_then_swap)
    source = SdkSource("archive", "build.x86_64", str(path), hashlib.sha256(genuine).hexdigest())
    stage = tmp_path / "stage"
    stage.mkdir()
    sdk._unpack_archive(source, SdkSettings("opencl", "3.0"), find_recipe("x86_64"), None, stage, tmp_path / "log")  # type: ignore[arg-type]
    assert (stage / "include" / "CL" / "cl.h").read_bytes() == b"// genuine\n"
    assert path.read_bytes() == swapped  # (the swap happened)
