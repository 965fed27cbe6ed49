"""Locks and temporary files on a shared machine: nothing at a name another user can predict
in /tmp, lock files opened without following links, and atomic writes under unique temporary
names (two writers of one file never clash)."""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import _engine_lock

from devkit.run import images
from devkit.util.errors import DevkitError
from devkit.util.fsutil import exclusive_lock, publish_file, write_atomic


@pytest.fixture
def isolated(tmp_path, monkeypatch) -> Path:
    """Every place devkit could put a lock (its cache, the home cache, the temporary directory) in `tmp_path`."""
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return tmp_path


def _lock_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.lock") if p.is_file()]


def test_image_lock_never_follows_a_planted_link(isolated):
    """Another user plants a link where the image lock goes (the old place was
    /tmp/devkit-images-<uid>/, which anyone can make first): the file it points to is neither
    truncated nor created, and the lock is not taken through it."""
    with images._image_lock("verify-x86_64"):
        pass
    (lock,) = _lock_files(isolated)
    assert not lock.is_relative_to(isolated / "tmp"), f"image lock at a predictable /tmp path: {lock}"
    victim, absent = isolated / "victim.txt", isolated / "absent.txt"
    victim.write_text("precious")
    for target in (victim, absent):
        lock.unlink()
        lock.symlink_to(target)
        with pytest.raises(DevkitError, match="link"), images._image_lock("verify-x86_64"):
            pass
        assert victim.read_text() == "precious" and not absent.exists()


def test_lock_directory_of_another_owner_or_mode_is_refused(isolated):
    with images._image_lock("verify-x86_64"):
        pass
    (lock,) = _lock_files(isolated)
    lock.parent.chmod(0o777)  # as another user's pre-made directory would be: anyone may plant there
    with pytest.raises(DevkitError, match="0700"), images._image_lock("verify-x86_64"):
        pass


def test_exclusive_lock_does_not_truncate_a_linked_file(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "x.lock").symlink_to(victim)
    with pytest.raises(DevkitError, match="link"), exclusive_lock(tmp_path / "x.lock", lambda holder: None):
        pass
    assert victim.read_text() == "precious"


def test_two_writers_of_one_file_do_not_clash(tmp_path):
    """Each write is whole and neither fails (a fixed temporary name let one writer rename or
    delete the other's half-written file)."""
    target, errors = tmp_path / "report.json", []

    def writer(mark: str) -> None:
        try:
            for _ in range(300):
                write_atomic(target, mark * 10_000)
                publish_file(src[mark], tmp_path / "dist")
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(repr(exc))

    src = {}
    for mark in "ab":
        (tmp_path / mark).mkdir()
        src[mark] = tmp_path / mark / "plugin.whl"
        src[mark].write_text(mark * 10_000)
    threads = [threading.Thread(target=writer, args=(m,)) for m in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert target.read_text() in ("a" * 10_000, "b" * 10_000)
    assert (tmp_path / "dist" / "plugin.whl").read_text() in ("a" * 10_000, "b" * 10_000)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == ["plugin.whl"]


def test_atomic_writes_keep_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        assert write_atomic(tmp_path / "r.json", "{}").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old)


def test_the_engine_lock_lets_a_test_have_the_engine_alone_without_starving_it(tmp_path):
    """tests/conftest.py's engine lock: a test that needs the engine alone waits for the shared
    holders, and a shared request arriving after it waits behind it (no starvation)."""
    events: list[str] = []

    def enter(exclusive: bool) -> None:
        with _engine_lock(tmp_path, exclusive):
            events.append("alone" if exclusive else "shared")

    def turnstile_held() -> bool:
        fd = os.open(tmp_path / "engine-turnstile.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    with _engine_lock(tmp_path, exclusive=False):
        alone = threading.Thread(target=enter, args=(True,))
        alone.start()
        for _ in range(500):  # until the exclusive request holds the turnstile, waiting for the engine
            if turnstile_held():
                break
            threading.Event().wait(0.01)
        assert turnstile_held()
        later = threading.Thread(target=enter, args=(False,))
        later.start()
        later.join(0.5)
        assert events == [] and later.is_alive()  # both wait while the first shared holder runs
    alone.join(10)
    later.join(10)
    assert events == ["alone", "shared"]


def test_two_builds_on_a_fresh_cache_make_a_cache_entry_once(tmp_path):
    """The build payload's cache entries (the build tools' venv, a target's unpacked runtime) are
    made by one build while the other waits: two builds at once on a fresh cache (`build --all
    --jobs 2`, two terminals) removed each other's half-made venv (`ensurepip ... returned non-zero
    exit status 1`, seen on a fresh CI run). The lock writes nothing; a link in its place is not followed."""
    from devkit.payload.shared.runtimes import setting_up

    root = tmp_path / "envs" / "host-py311-paddle-none"
    events: list[str] = []

    def make(name: str) -> None:
        with setting_up(root):
            events.append(f"{name} starts")
            time.sleep(0.3)
            events.append(f"{name} ends")

    builds = [threading.Thread(target=make, args=(name,)) for name in ("a", "b")]
    for build in builds:
        build.start()
    for build in builds:
        build.join()
    first, second = events[0][0], events[2][0]
    assert events == [f"{first} starts", f"{first} ends", f"{second} starts", f"{second} ends"]
    assert list(root.parent.iterdir()) == []  # nothing written for the lock
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root.parent.rmdir()
    root.parent.symlink_to(elsewhere)
    with pytest.raises(OSError), setting_up(root):
        pass
