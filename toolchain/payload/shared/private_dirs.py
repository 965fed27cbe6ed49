"""A directory only this user can use, as devkit's util/fsutil.private_dir makes it, checked where
a payload runs (the standard library only: it may run in a container or under qemu)."""

from __future__ import annotations

import os
import stat


def private_directory(path: str) -> bool:
    """`path` made (0700) if missing; True if it is a directory of this user's that no one else can
    write and not a link. A payload that would load files from it uses it only then."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
