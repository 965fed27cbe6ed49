"""Where a generated project keeps its parts, and the one-line refusal of an older layout.

Projects rendered before the Paddle adapter moved into paddle/ (beside pytorch/) had it at the
project's root: CMakeLists.txt built the Paddle plugin, and runtime/, kernels/, engine/,
inference/, cmake/FindPaddle.cmake and tests/python/ lay beside device/. devkit builds and
checks the adapter where it is now, so it refuses such a project in one line naming the move.
"""

from __future__ import annotations

from pathlib import Path

from ..util.errors import InputError

PADDLE_DIR = "paddle"  # the Paddle adapter's directory in a project
MIGRATION_FIX = (
    "move it: mkdir -p paddle/cmake; git mv runtime kernels inference paddle/ (engine/ too if you have it); "
    "git mv cmake/FindPaddle.cmake paddle/cmake/; git mv tests/python paddle/tests; then take CMakeLists.txt, "
    "paddle/CMakeLists.txt and cmake/preamble.cmake from a freshly rendered project (devkit new-backend NAME "
    "--out /tmp/x), carrying over your own edits of the old CMakeLists.txt (its README.md: 'Moving to paddle/')"
)


def check_layout(root: Path) -> None:
    """Refuse a project whose Paddle adapter is still at its root (runtime/ there, no paddle/)."""
    if (root / "runtime").is_dir() and not (root / PADDLE_DIR).is_dir():
        raise InputError(
            f"{root} has the Paddle adapter at its root (runtime/, kernels/), where devkit now expects it in "
            "paddle/ beside pytorch/",
            MIGRATION_FIX,
        )
