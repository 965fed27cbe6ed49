"""The private directories devkit keeps loadable things in (kept CPU probes of Inductor, compiled
templates, kept CPU curves): util/fsutil.private_dir on the host refuses, and the payload's
private_directory (where Inductor's kept probes are loaded) passes over, a link, a directory open
to others and a file; each makes a missing one 0700."""

from __future__ import annotations

import os

import pytest
from conftest import payload_module

from devkit.util.errors import EnvironmentProblem
from devkit.util.fsutil import private_dir


def planted(tmp_path, kind: str):
    target = tmp_path / "kept"
    if kind == "link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        target.symlink_to(tmp_path / "elsewhere")
    elif kind == "open to others":
        target.mkdir()
        target.chmod(0o757)  # (others can write in it)
    else:
        target.write_text("")
    return target


def test_a_missing_directory_is_made_private(tmp_path):
    made = private_dir(tmp_path / "a" / "kept")
    assert made.is_dir() and made.stat().st_mode & 0o777 == 0o700
    other = tmp_path / "b"
    assert payload_module("shared", "private_dirs").private_directory(str(other))
    assert other.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("kind", ["link", "open to others", "file"])
def test_a_planted_directory_is_refused_on_the_host_and_passed_over_by_the_payload(tmp_path, kind):
    target = planted(tmp_path, kind)
    with pytest.raises(EnvironmentProblem, match=f"{target}"):
        private_dir(target)
    assert not payload_module("shared", "private_dirs").private_directory(str(target))
    assert os.path.lexists(target)  # (refused, not removed: the fix says to look first)


def test_a_directory_of_yours_only_readable_by_others_is_made_private(tmp_path):
    """As an older devkit left its cache's parents (0755): no one else could write in it."""
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept").chmod(0o755)
    assert private_dir(tmp_path / "kept").stat().st_mode & 0o777 == 0o700
