"""What both frameworks' distributed checks share (standard library only): the checks' loop,
free ports, and the lost-rank run, both sides of it.

The lost-rank run starts the ranks directly (not through the framework's launcher, which
would stop the others itself when one dies): after a first all_reduce the last rank is killed
(SIGKILL) or stopped (SIGSTOP), then rank 0 issues another all_reduce, which must fail with a
message naming that rank, within the timeout, instead of hanging."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from distributed_records import CollectivesVerdict, LostRankResult, LostRankVerdict, ParallelVerdict, RankResult
from records import CheckKind, CheckRecord, TrainingRun, VerifyReport
from training_verdict import collectives_verdict, failed_check, lost_rank_verdict, parallel_verdict, timed

STALL_TIMEOUT_S = 5  # <NAME>_CCL_TIMEOUT_S of the stalled-rank run
LOST_RANK_HOW = ("killed", "stalled")


def parse_args(doc: str, argv: list[str] | None) -> argparse.Namespace:
    """The driver's and the workers' command line (one parser: the driver starts this file again)."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--device")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--data")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out")
    parser.add_argument("--worker", choices=("train", *LOST_RANK_HOW))
    parser.add_argument("--out-dir")
    return parser.parse_args(argv)


def train_worker_args(args: argparse.Namespace, out_dir: Path) -> list[str]:
    """What the launcher passes each training rank (after the script's path)."""
    return [
        *("--worker", "train", "--out-dir", str(out_dir), "--device", args.device, "--data", args.data),
        *("--steps", str(args.steps), "--seed", str(args.seed), "--batch-size", str(args.batch_size)),
    ]


def drive(
    args: argparse.Namespace,
    script: str,
    report: VerifyReport,
    launch: Callable[[Path], dict[int, RankResult]],
    single: Callable[[], TrainingRun],
    rank_envs: Callable[[], list[dict[str, str]]],
    reference: str,
    max_curve_diff: float,
    log: Callable[[str], None],
) -> None:
    """The checks, in order, into `report`, written to args.out: `launch` runs the training ranks
    under the framework's launcher and returns their results ({rank: {"backend", "collectives",
    "train"}}; the collectives were compared with `reference`); `single` trains one process on
    the whole batch; `rank_envs` gives each rank's environment for the lost-rank runs (what the
    launcher would set)."""
    work = Path(args.out).resolve().parent
    ranks: dict[int, RankResult] = {}

    def collectives() -> CollectivesVerdict:
        ranks.update(launch(work / "ranks"))
        cases = {r: result["collectives"] for r, result in ranks.items()}
        return collectives_verdict(cases, ranks[0]["backend"], reference)

    def data_parallel() -> ParallelVerdict:
        parallel, one = ranks[0]["train"], single()
        return parallel_verdict(parallel, one, args.ranks, args.steps, args.batch_size, max_curve_diff)

    def lost(how: str) -> LostRankVerdict:
        argv = [sys.executable, script, "--worker", how, "--out-dir", str(work / how), "--device", args.device]
        return lost_rank(how, argv, rank_envs(), work / how, args.device)

    run_check(report["checks"], "collectives", "collectives", collectives, log)
    if ranks:
        run_check(report["checks"], "data parallel", "parallel", data_parallel, log)
    for how in LOST_RANK_HOW:
        run_check(report["checks"], f"{how} rank", "lost-rank", partial(lost, how), log)
    report["passed"] = all(c["passed"] for c in report["checks"])
    Path(args.out).write_text(json.dumps(report, indent=2, default=float))
    log("all checks passed" if report["passed"] else "some checks failed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def run_check(
    checks: list[CheckRecord], name: str, kind: CheckKind, check: Callable[[], CheckRecord], log: Callable[[str], None]
) -> None:
    """Append the check's timed result, or a failed check naming the exception."""
    log(f"check {name}")
    try:
        checks.append(timed(check))
    except Exception as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:400]
        checks.append(failed_check(name, kind, detail))


def lost_rank(
    how: str, argv: list[str], rank_envs: list[dict[str, str]], out_dir: Path, device_type: str
) -> LostRankVerdict:
    """Run the ranks (`argv` with `rank_envs[r]` for rank r) through a lost rank; the verdict."""
    out_dir.mkdir(parents=True, exist_ok=True)
    last = len(rank_envs) - 1
    extra = {f"{device_type.upper()}_CCL_TIMEOUT_S": str(STALL_TIMEOUT_S)} if how == "stalled" else {}
    logs = [open(out_dir / f"rank-{r}.log", "w") for r in range(len(rank_envs))]  # noqa: SIM115
    procs = [
        subprocess.Popen(argv, env={**os.environ, **env, **extra}, stdout=log, stderr=subprocess.STDOUT)
        for env, log in zip(rank_envs, logs, strict=True)
    ]
    try:
        deadline = time.monotonic() + 300
        while not all((out_dir / f"ready-{r}").exists() for r in range(len(procs))):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                tail = (out_dir / "rank-0.log").read_text()[-1500:]
                raise RuntimeError(f"the ranks did not get through their first all_reduce: {tail}")
            time.sleep(0.05)
        procs[last].send_signal(signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        if how == "killed":
            procs[last].wait()
        (out_dir / "go").write_text("")
        procs[0].wait(timeout=STALL_TIMEOUT_S + 120)  # bounded: a hang fails the check
        result: LostRankResult = json.loads((out_dir / "rank-0.json").read_text())
        # Paddle's exception carries an error code only; its runtime logs the device's reason
        said = [line.strip() for line in (out_dir / "rank-0.log").read_text().splitlines() if "ccl_" in line]
        if result["error"] and "ccl_" not in result["error"] and said:
            result["error"] += f"; rank 0's log: {said[-1]}"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    return lost_rank_verdict(how, last, result)


def lost_rank_worker(rank: int, world: int, out_dir: Path, all_reduce: Callable[[], None]) -> None:
    """A rank of the lost-rank run; `all_reduce` issues one and waits for it. Does not return."""
    all_reduce()
    Path(out_dir, f"ready-{rank}").write_text("")
    if rank != 0:  # the driver kills or stops the last rank; the others just stay
        time.sleep(3600)
    while not Path(out_dir, "go").exists():
        time.sleep(0.05)
    start = time.perf_counter()
    try:
        all_reduce()
        error = None
    except Exception as exc:
        error = " ".join(str(exc).split())  # Paddle's messages span lines
        error = error[max(0, error.find("ccl_")) :][:600]  # from the device library's op on
    result: LostRankResult = {"rank": rank, "error": error, "seconds": round(time.perf_counter() - start, 2)}
    Path(out_dir, f"rank-{rank}.json").write_text(json.dumps(result))
    os._exit(0)  # a peer is gone: nothing to tear down with it
