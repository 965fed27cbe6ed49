"""Which sources of a build tree compile alone, out of their unity batch: those edited since the
tree was first built. A unity batch recompiles whole for an edit of any file in it (the device
library's batch of 8 ops at -O3: 21 s); once out, the edited file recompiles alone on its next
edits. The build passes the list to CMake (DEVKIT_SOLO_SOURCES, paths from the project root;
cmake/preamble.cmake), which reconfigures on every devkit build. A tree built from nothing (first
build, --clean) starts with every file in its batch again. Standard library only: runs where the
build runs.

Which files are alone only decides how they are grouped into compiler runs, never whether one
runs: ninja still rebuilds whatever an edit touches, so a wrong record costs time, not correctness.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

RECORD = "devkit-sources.json"  # in the build tree
SOURCE_DIRS = ("device", "paddle", "pytorch", "tests")  # below the project root
SUFFIXES = (".c", ".cc", ".cpp")
# A name CMake's list and the preamble's check take as it is (no ';', no '..', no spaces)
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*(/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)*")


def source_digests(project: Path) -> dict[str, str]:
    """sha256 of each C/C++ source under the project's source folders, by its path from the root."""
    digests = {}
    for folder in SOURCE_DIRS:
        for path in sorted((project / folder).rglob("*")):
            name = path.relative_to(project).as_posix()
            if path.suffix in SUFFIXES and _PLAIN_NAME.fullmatch(name) and path.is_file():
                digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def solo_sources(project: Path, build: Path) -> list[str]:
    """The sources to compile alone in `build` (a tree of `project`): those edited since the tree's
    first build, or added since, plus those already alone; the record updated for the next build."""
    current = source_digests(project)
    record = build / RECORD
    solo: set[str] = set()
    if (build / "CMakeCache.txt").is_file():  # else a tree built from nothing: every file in its batch
        try:
            known = json.loads(record.read_text())
            digests, before = dict(known["digests"]), set(known["solo"])
        except (OSError, ValueError, KeyError, TypeError):  # no usable record: nothing known edited
            digests, before = dict(current), set()
        solo = {name for name in current if name in before or digests.get(name) != current[name]}
    build.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=build, prefix=f".{RECORD}.", delete=False) as tmp:
        json.dump({"digests": current, "solo": sorted(solo)}, tmp)
    os.replace(tmp.name, record)
    return sorted(solo)


def solo_env(project: Path, build: Path) -> dict[str, str]:
    """The build's environment entry for CMake, with a line for the log when any file is alone."""
    solo = solo_sources(project, build)
    if solo:
        print(f"compiled alone (edited since this build tree was made): {', '.join(solo)}", flush=True)
    return {"DEVKIT_SOLO_SOURCES": ";".join(solo)}
