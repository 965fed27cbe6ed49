"""What every framework's checks share (NumPy and the standard library only): the verify data
set as written by devkit, the verdict on a model trained on the device and on the CPU from the
same weights and batches, and each check's time."""

from __future__ import annotations

import argparse
import json
import platform
import time
import traceback
from collections.abc import Callable, Mapping
from typing import TypedDict, TypeVar

import numpy as np
from distributed_records import (
    CollectiveCase,
    CollectivesVerdict,
    LostRankResult,
    LostRankVerdict,
    ParallelCriteria,
    ParallelVerdict,
)
from records import (
    CheckKind,
    CheckRecord,
    CpuCurve,
    RunSettings,
    TrainingCriteria,
    TrainingRun,
    TrainingVerdict,
    VerifyReport,
)

Check = TypeVar("Check", bound=CheckRecord)


class Dataset(TypedDict):
    """The .npz `devkit verify` writes."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str


def add_training_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of every payload that trains a model: the data devkit wrote, the run's settings
    (devkit passes them; the defaults are for running a payload by hand), the CPU curve trained
    natively (cpu_reference.py), and where the report goes."""
    parser.add_argument("--data", help=".npz with x_train, y_train, x_test, y_test, source")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--cpu-reference", help="mnist: the CPU curve, trained natively (cpu_reference.py)")
    parser.add_argument("--out", required=True)


def failed_check(name: str, kind: CheckKind, detail: str) -> CheckRecord:
    """A check that raised (called in its `except`): the error's first line, and the end of the
    traceback for report.json."""
    return {"name": name, "kind": kind, "passed": False, "detail": detail, "traceback": traceback.format_exc()[-3000:]}


def write_report(report: VerifyReport, out: str) -> int:
    """The report with its verdict (every check passed), written where devkit reads it. Returns the
    payload's exit code: 0, as the report, not the exit code, carries pass or fail."""
    report["passed"] = all(c["passed"] for c in report["checks"])
    with open(out, "w") as f:
        json.dump(report, f, indent=2, default=float)
    print("all checks passed" if report["passed"] else "some checks failed", flush=True)
    return 0


def timed(check: Callable[[], Check]) -> Check:
    """The check's result with the seconds it took (reports show where a verify's time goes,
    under qemu above all)."""
    start = time.perf_counter()
    result = check()
    result["seconds"] = round(time.perf_counter() - start, 2)
    return result


def load_data(path: str | None) -> Dataset | None:
    """The .npz `devkit verify` writes: x_train, y_train, x_test, y_test and its source."""
    if not path:
        return None
    with np.load(path) as npz:
        data: Dataset = {
            "x_train": npz["x_train"],
            "y_train": npz["y_train"],
            "x_test": npz["x_test"],
            "y_test": npz["y_test"],
            "source": str(npz["source"]),
        }
    return data


def require_data(data: Dataset | None, what: str) -> Dataset:
    """`data`, which `what` trains on: without --data, it fails saying so."""
    if data is None:
        raise ValueError(f"{what} needs --data (the digits .npz devkit verify writes)")
    return data


def cpu_reference(train_cpu: Callable[[], TrainingRun], runtime: str, run: RunSettings, path: str | None) -> CpuCurve:
    """The CPU curve a training check compares the device's with: `train_cpu()` here, or read from
    `path` (an emulated target's, trained natively by a framework's cpu_reference script), which must be of the same
    `run` (steps, batch_size, seed)."""
    if not path:
        return {**train_cpu(), "trained": {"where": f"{runtime} CPU in this process", **run}}
    with open(path) as f:
        cpu: CpuCurve = json.load(f)
    trained = cpu.get("trained", {})
    if any(trained.get(k) != v for k, v in run.items()):
        raise ValueError(f"the CPU reference {path} was trained with {trained}, this run needs {run}")
    return cpu


def trained_natively(cpu: TrainingRun, runtime: str, run: RunSettings) -> CpuCurve:
    return {**cpu, "trained": {"where": f"{runtime} CPU on {platform.machine()} (native)", **run}}


# A framework's LeNet on the CPU: (the run, "<framework> <version>") for the data and run settings
TrainOnCpu = Callable[[Dataset | None, RunSettings], tuple[TrainingRun, str]]


def cpu_reference_main(train: TrainOnCpu, description: str, argv: list[str] | None = None) -> int:
    """A framework's cpu_reference script: `--data D --steps N [--batch-size B] [--seed S] --out F`,
    the curve `train` gives, written to F as an emulated target's checks read it (cpu_reference)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    run: RunSettings = {"steps": args.steps, "batch_size": args.batch_size, "seed": args.seed}
    cpu, runtime = train(load_data(args.data), run)
    with open(args.out, "w") as f:
        json.dump(trained_natively(cpu, runtime, run), f)
    return 0


def training_verdict(
    name: str,
    dev: TrainingRun,
    cpu: CpuCurve,
    criteria: TrainingCriteria,
    data: Dataset,
    steps: int,
    batch: int,
    seed: int,
) -> TrainingVerdict:
    """The check's report: the loss drop on the device (mean of the first vs the last steps), its
    held-out accuracy and the largest per-step loss difference to CPU, against `criteria`
    (min_loss_drop_fraction, min_heldout_accuracy, max_curve_abs_diff)."""
    window = max(1, min(10, steps // 4))
    first, last = float(np.mean(dev["losses"][:window])), float(np.mean(dev["losses"][-window:]))
    drop = 1.0 - last / first if first > 0 else 0.0
    curve_diff = float(np.max(np.abs(np.array(dev["losses"]) - np.array(cpu["losses"]))))
    passed = (
        drop >= criteria["min_loss_drop_fraction"]
        and dev["heldout_accuracy"] >= criteria["min_heldout_accuracy"]
        and curve_diff <= criteria["max_curve_abs_diff"]
    )
    return {
        "name": name,
        "kind": "training",
        "passed": bool(passed),
        "detail": (
            f"loss {first:.3f} -> {last:.3f} (drop {drop:.0%}), held-out accuracy "
            f"{dev['heldout_accuracy']:.3f} (cpu {cpu['heldout_accuracy']:.3f}), "
            f"max |loss diff vs cpu| {curve_diff:.2e}"
        ),
        "criteria": criteria,
        "dataset": data["source"],
        "steps": steps,
        "batch_size": batch,
        "seed": seed,
        "loss_drop_fraction": drop,
        "max_curve_abs_diff": curve_diff,
        "device": dev,
        "cpu": cpu,
        "cpu_reference": cpu["trained"]["where"],  # who trained the CPU curve (cpu_reference())
    }


def collectives_verdict(ranks: Mapping[int, list[CollectiveCase]], backend: str, reference: str) -> CollectivesVerdict:
    """`ranks`: each rank's list of {case, passed, detail}; one check over all of them."""
    failed = [f"rank {r}: {c['case']}: {c['detail']}" for r, cases in ranks.items() for c in cases if not c["passed"]]
    cases = ranks[0]
    return {
        "name": "collectives",
        "kind": "collectives",
        "passed": not failed and bool(cases),
        "detail": f"{len(cases)} cases on {len(ranks)} ranks ({backend}) vs {reference}: "
        + ("all match" if not failed else f"{len(failed)} differ, first: {failed[0]}"),
        "cases": cases,
        "failed": failed,
    }


def parallel_verdict(
    parallel: TrainingRun, single: TrainingRun, ranks: int, steps: int, batch: int, max_curve_diff: float
) -> ParallelVerdict:
    """Data-parallel training on `ranks` devices against one process on the whole batch: the
    per-step loss within `max_curve_diff`, the held-out accuracy within 0.01."""
    diff = float(np.max(np.abs(np.array(parallel["losses"]) - np.array(single["losses"]))))
    acc_diff = abs(parallel["heldout_accuracy"] - single["heldout_accuracy"])
    criteria: ParallelCriteria = {"max_curve_abs_diff": max_curve_diff, "max_accuracy_diff": 0.01}
    return {
        "name": "data parallel",
        "kind": "parallel",
        "passed": bool(diff <= max_curve_diff and acc_diff <= criteria["max_accuracy_diff"]),
        "detail": f"LeNet on {ranks} devices x {batch // ranks} vs one process x {batch}: max |loss diff| {diff:.2e}, "
        f"held-out accuracy {parallel['heldout_accuracy']:.3f} vs {single['heldout_accuracy']:.3f}",
        "criteria": criteria,
        "steps": steps,
        "batch_size": batch,
        "ranks": ranks,
        "max_curve_abs_diff": diff,
        "data_parallel": parallel,
        "single": single,
    }


def lost_rank_verdict(how: str, last: int, result: LostRankResult) -> LostRankVerdict:
    """Rank 0's collective after rank `last` was killed or stopped: it must fail naming that rank
    (exited; waited the timeout), not hang."""
    error = result.get("error") or ""
    said = f"rank {last}" in error and ("exited" in error if how == "killed" else "_CCL_TIMEOUT_S" in error)
    return {
        "name": f"{how} rank",
        "kind": "lost-rank",
        "passed": bool(said),
        "detail": f"rank {last} {'killed' if how == 'killed' else 'stopped'}: rank 0's all_reduce failed after "
        f"{result['seconds']} s: {error}"
        if error
        else f"rank 0's all_reduce did NOT fail with rank {last} {how}",
        "error": error,
        "seconds_to_error": result["seconds"],
    }
