"""A host verification with its CPU curve trained in it vs given from devkit's cache, alternated.

    python benchmarks/kept_curves.py PROJECT [--framework paddle torch] [--rounds 3] [--out results.json]

PROJECT: a rendered backend whose wheels are built (dist/). Before each "trained" run the curves
devkit kept for host verifications of that framework and step count are removed from its cache
(`DEVKIT_CACHE_DIR/cpu-curves/`), so that run trains the curve and keeps it; the "kept" run after
it is given that curve. Medians of the `devkit verify` wall time, its CPU time (all its processes) and its mnist
check's wall time.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
from pathlib import Path

from run import devkit  # (the suite's one way to run the CLI: its wall time, and its failure in full)

from devkit.run.envs import cache_root

STEPS = 200  # verify's default


def forget_curves(framework: str) -> int:
    """Remove the kept curves of host verifications of `framework` at STEPS steps; how many."""
    removed = 0
    for path in (cache_root() / "cpu-curves").glob("*.json"):
        try:
            key = json.loads(path.read_text()).get("key", {})
        except (OSError, ValueError, AttributeError):
            continue  # (not a kept curve devkit would use either)
        if (key.get("trainer"), key.get("framework"), key.get("steps")) == ("host", framework, STEPS):
            path.unlink()
            removed += 1
    return removed


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def verify(project: Path, framework: str) -> tuple[float, float, float, str]:
    """Wall seconds of `devkit verify`, its CPU seconds (all its processes), the wall seconds of
    its mnist check, and who trained its CPU curve."""
    cpu = children_cpu()
    seconds, summary = devkit("verify", str(project), "--framework", framework, "--runner", "host")
    cpu = children_cpu() - cpu
    report = json.loads(Path(summary["report"]).read_text())
    mnist = next(c for c in report["checks"] if c["name"] == "mnist")
    return seconds, cpu, mnist["seconds"], mnist["cpu_reference"]


def measure(project: Path, frameworks: list[str], rounds: int) -> dict:
    results: dict = {"rounds": rounds, "steps": STEPS}
    for framework in frameworks:
        runs: dict[str, list[tuple[float, float, float, str]]] = {"trained": [], "kept": []}
        for _ in range(rounds):
            forget_curves(framework)
            runs["trained"].append(verify(project, framework))
            runs["kept"].append(verify(project, framework))
        for kind, expected in (("trained", " in this process"), ("kept", ", kept from ")):
            if not all(expected in run[-1] for run in runs[kind]):  # (the measurement measured what it says)
                raise SystemExit(f"{framework} {kind} runs: {[run[-1] for run in runs[kind]]}")
        results[framework] = {
            kind: {
                "verify_s": statistics.median(run[0] for run in series),
                "verify_cpu_s": statistics.median(run[1] for run in series),
                "mnist_check_s": statistics.median(run[2] for run in series),
            }
            for kind, series in runs.items()
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--framework", nargs="+", default=["paddle", "torch"], choices=("paddle", "torch"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = measure(args.project.resolve(), args.framework, args.rounds)
    text = json.dumps(results, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
