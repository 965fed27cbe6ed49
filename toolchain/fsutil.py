"""File-system steps that never leave half-written output behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


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


def publish_file(src: Path, dest_dir: Path) -> Path:
    """Copy `src` into `dest_dir` atomically (a temp name on the same file system, then rename)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest_dir / f".{src.name}.partial"
    shutil.copy2(src, tmp)
    final = dest_dir / src.name
    os.replace(tmp, final)
    return final
