"""The vendor's inner loop on a built project: edit one file, rebuild, check the op it holds.

    python benchmarks/edit_loop.py PROJECT     # PROJECT built on the host (devkit build --runner host)

For one device library file (device/src) and one Paddle kernels file (paddle/kernels), each edited
with a change the compiler sees: `devkit build` (seconds and compiler runs: how much one edit
recompiles) and `devkit test-ops --ops relu` on the rebuilt wheel (seconds). Prints one JSON
object; benchmarks/run.py reports it beside the clean and no-op builds of the same run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

# The files a relu fix touches: the device library's op and the Paddle kernel that calls it.
EDITED = {
    "device": Path("device/src/activation_ops.cc"),
    "kernels": Path("paddle/kernels/activation_kernels.cc"),
}
CHECKED_OPS = "relu"


def timed_devkit(*args: str) -> tuple[float, dict]:
    """Run the CLI with --json; wall seconds and its output."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "devkit", *args, "--json"], capture_output=True, text=True, env=os.environ.copy()
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"devkit {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return seconds, json.loads(proc.stdout)


def edit_source(path: Path) -> None:
    """A real change (not a comment, which ccache would see through): a new definition, different each run."""
    path.write_text(
        path.read_text() + f"\nstatic const int devkit_bench_edit = {time.time_ns() % 100000};\n"
        "static const int* devkit_bench_edit_use = &devkit_bench_edit;\n"
    )


def checked(project: Path, runner: str = "host") -> dict:
    """`devkit test-ops --ops relu` on the project's wheel: seconds and the cases' outcome."""
    seconds, result = timed_devkit("test-ops", str(project), "--ops", CHECKED_OPS, "--runner", runner)
    return {"check_s": seconds, "checked_passed": result["passed"], "checked_cases": sum(result["counts"].values())}


def edit_rebuild_check(project: Path, runner: str = "host") -> dict:
    """Per edited file: rebuild seconds and compiler runs, then test-ops on the new wheel (the file restored after)."""
    loop: dict = {"ops": CHECKED_OPS}
    for where, relative in EDITED.items():
        source = project / relative
        original = source.read_text()
        try:
            edit_source(source)
            build_s, built = timed_devkit("build", str(project), "--runner", runner)
            loop[where] = {"file": str(relative), "build_s": build_s, "compiled": built["compiled_files"]}
            loop[where].update(checked(project, runner))
        finally:
            source.write_text(original)
    return loop


def main() -> None:
    project = Path(sys.argv[1]).resolve()
    print(json.dumps(edit_rebuild_check(project), indent=2))


if __name__ == "__main__":
    main()
