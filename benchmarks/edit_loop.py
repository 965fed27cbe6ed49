"""The vendor's inner loop on a built project: edit one file, rebuild, check the op it holds.

    python benchmarks/edit_loop.py PROJECT [--frameworks paddle,torch] [--no-clean]

First a clean build without ccache (the baseline, and a build tree made from nothing: every file in
its unity batch); then, for one device library file (device/src) and one adapter kernels file
(paddle/kernels, pytorch/csrc), each edited twice with a change the compiler sees: `devkit build`
(seconds and compiler runs: how much one edit recompiles) and `devkit test-ops --ops relu` on the
rebuilt wheel (seconds). The first edit takes the file out of its batch (the rest of the batch
recompiles once, beside it); the next edits recompile the file alone: the loop's steady state.
Prints one JSON object; benchmarks/run.py reports the loop beside the clean and no-op builds of its run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

# The files a relu fix touches: the device library's op and the adapter's kernel that calls it.
EDITED = {
    "paddle": {"device": Path("device/src/activation_ops.cc"), "kernels": Path("paddle/kernels/activation_kernels.cc")},
    "torch": {"device": Path("device/src/activation_ops.cc"), "kernels": Path("pytorch/csrc/activation.cpp")},
}
CHECKED_OPS = {"paddle": "relu", "torch": "nn.functional.relu"}
EDITS = 2  # the first takes the file out of its unity batch; the second is the loop's steady state


def timed_devkit(*args: str, env: dict[str, str] | None = None) -> tuple[float, dict]:
    """Run the CLI with --json; wall seconds and its output."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "devkit", *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"devkit {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return seconds, json.loads(proc.stdout)


def edit_source(path: Path) -> None:
    """A real change (not a comment, which ccache would see through): a new definition, different each time."""
    stamp = time.time_ns()
    path.write_text(
        path.read_text() + f"\nstatic const long devkit_bench_edit_{stamp} = {stamp % 100000};\n"
        f"static const long* devkit_bench_edit_use_{stamp} = &devkit_bench_edit_{stamp};\n"
    )


def rebuilt(project: Path, framework: str = "paddle", runner: str = "host") -> dict:
    """`devkit build`: seconds, compiler runs and the objects they made (from the build's log)."""
    seconds, built = timed_devkit("build", str(project), "--framework", framework, "--runner", runner)
    objects = re.findall(r"Building (?:C|CXX) object (\S+)", Path(built["log"]).read_text())
    return {"build_s": seconds, "compiled": built["compiled_files"], "objects": objects}


def checked(project: Path, framework: str = "paddle", runner: str = "host") -> dict:
    """`devkit test-ops --ops relu` on the project's wheel: seconds and the cases' outcome."""
    seconds, result = timed_devkit(
        "test-ops", str(project), "--framework", framework, "--ops", CHECKED_OPS[framework], "--runner", runner
    )
    return {"check_s": seconds, "checked_passed": result["passed"], "checked_cases": sum(result["counts"].values())}


def edit_rebuild_check(project: Path, framework: str = "paddle", runner: str = "host") -> dict:
    """Per edited file, per edit: rebuild seconds and compiler runs, then test-ops on the new wheel
    (the file restored after; its last edit's object stays in the tree until the next build)."""
    loop: dict = {"ops": CHECKED_OPS[framework]}
    for where, relative in EDITED[framework].items():
        source = project / relative
        original = source.read_text()
        edits = []
        try:
            for _ in range(EDITS):
                edit_source(source)
                edits.append({**rebuilt(project, framework, runner), **checked(project, framework, runner)})
        finally:
            source.write_text(original)
        loop[where] = {"file": str(relative), "edits": edits}
    return loop


def clean_build(project: Path, framework: str = "paddle", runner: str = "host") -> dict:
    """The baseline: the build tree discarded, no compiler cache."""
    seconds, built = timed_devkit(
        "build", str(project), "--framework", framework, "--runner", runner, "--clean", env={"CCACHE_DISABLE": "1"}
    )
    return {"clean_s": seconds, "clean_compiled": built["compiled_files"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", type=Path)
    parser.add_argument("--frameworks", default="paddle", help="comma-separated: paddle, torch")
    parser.add_argument("--no-clean", action="store_true", help="skip the clean baseline build (the tree as it is)")
    args = parser.parse_args()
    project = args.project.resolve()
    results = {}
    for framework in args.frameworks.split(","):
        baseline = {} if args.no_clean else clean_build(project, framework)
        results[framework] = {**baseline, **edit_rebuild_check(project, framework)}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
