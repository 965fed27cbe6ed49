"""`bash compile.sh` from nothing: a new clone of this checkout, empty caches, the main job timed by phase.

    python benchmarks/first_contact.py [--runs 3] [--installers auto,pip]

Each run clones the checkout's HEAD into a new temporary directory and runs `bash compile.sh` there
with empty devkit, pip, uv and ccache caches (its own XDG_CACHE_HOME), the page cache dropped first
when this runs as root (else kept, and said so). The phases come from the times compile.sh's lines
appear: set-up (venv, devkit installed, new-backend) until "rendered backend", build until "built",
verify the rest. `--installers`: compile.sh's INSTALLER per series, run alternately (auto: uv where
pip's settings allow; pip: the installer before uv), so the two are compared within one run.
Prints one JSON object: per installer, every run and the median run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKS = (("setup_s", "rendered backend"), ("build_s", "✓ built"))


def drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:  # not root: the page cache stays (the figures then flatter the first run less)
        return False


def one_run(installer: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="first-contact-") as tmp:
        clone, cache = Path(tmp) / "devkit", Path(tmp) / "cache"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
        env.update(
            XDG_CACHE_HOME=str(cache),
            PIP_CACHE_DIR=str(cache / "pip"),
            UV_CACHE_DIR=str(cache / "uv"),
            CCACHE_DIR=str(cache / "ccache"),
            INSTALLER=installer,
        )
        env.pop("DEVKIT_CACHE_DIR", None)
        dropped = drop_page_cache()
        start = time.perf_counter()
        proc = subprocess.Popen(
            ["bash", "compile.sh"], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        seen: dict[str, float] = {}
        tail: list[str] = []
        for line in proc.stdout:
            now = time.perf_counter() - start
            tail = [*tail[-40:], line]
            for name, mark in MARKS:
                if mark in line and name not in seen:
                    seen[name] = now
        total = time.perf_counter() - start
        if proc.wait() != 0 or len(seen) != len(MARKS):
            raise SystemExit(f"compile.sh ({installer}) failed:\n{''.join(tail)}")
    return {
        "total_s": total,
        "setup_s": seen["setup_s"],
        "build_s": seen["build_s"] - seen["setup_s"],
        "verify_s": total - seen["build_s"],
        "page_cache_dropped": dropped,
    }


def measure(runs: int, installers: list[str]) -> dict:
    series: dict[str, list[dict]] = {installer: [] for installer in installers}
    for _ in range(runs):
        for installer in installers:  # alternated: a drift of the machine hits every series
            series[installer].append(one_run(installer))
    result = {}
    for installer, done in series.items():
        median = statistics.median(r["total_s"] for r in done)
        result[installer] = {"runs": done, "median": min(done, key=lambda r: abs(r["total_s"] - median))}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--installers", default="auto,pip", help="compile.sh INSTALLER values, comma-separated")
    args = parser.parse_args()
    print(json.dumps(measure(args.runs, args.installers.split(","))))


if __name__ == "__main__":
    main()
