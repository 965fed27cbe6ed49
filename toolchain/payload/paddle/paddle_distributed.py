"""`devkit verify --distributed N` (Paddle): the plugin's xccl runtime slots in N processes.

Run as the driver in the verify environment; it starts the ranks itself:

    python paddle_distributed.py --device stpu --ranks 2 --data data.npz --steps 200 --out report.json

1. `collectives` and `data parallel`: paddle.distributed.launch starts N ranks (this file with
   --worker), each on device `rank`. Every collective, reduce op and dtype is compared with
   NumPy on the ranks' inputs (which every rank can make); then LeNet trains in
   paddle.DataParallel, each rank on its share of every global batch, against one process on
   the whole batch on device 0 (the per-step loss averaged over the ranks, the held-out accuracy).
2. `killed rank` / `stalled rank`: distributed_driver.py, the ranks started with the
   environment the launcher would give them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from distributed_driver import drive, free_port, lost_rank_worker, parse_args, train_worker_args
from distributed_records import CollectiveCase, RankResult
from process_exit import exit_without_final_collection
from records import VerifyReport
from training_verdict import load_data

DTYPES = ("float32", "float64", "int32", "int64")
# (not AVG: Paddle 3.3's all_reduce AVG asks for NCCL's version, which a build without CUDA lacks)
REDUCE_OPS = ("SUM", "PROD", "MAX", "MIN")


def collective_cases(
    paddle: ModuleType, dist: ModuleType, np: ModuleType, rank: int, world: int
) -> list[CollectiveCase]:
    """Each collective, reduce op and dtype against NumPy. (Its arrays are Any here: `np` is a
    module passed in.)"""
    cases: list[CollectiveCase] = []

    def case(name: str, run: Callable[..., tuple[Any, Any]], *args: object) -> None:
        try:
            got, want = run(*args)
            same = got.dtype == want.dtype and bool(np.allclose(got, want, rtol=1e-6, atol=0))
            cases.append({"case": name, "passed": same, "detail": "" if same else f"{got.tolist()} != {want.tolist()}"})
        except Exception as exc:
            cases.append({"case": name, "passed": False, "detail": " ".join(str(exc).split())[:400]})

    def values(dtype: str, r: int, n: int = 6) -> Any:
        return (np.arange(n) % 5 + 1 + r).astype(dtype)  # small: PROD stays in range

    def reduce(op: str, dtype: str, n: int = 6) -> Any:
        parts = np.stack([values(dtype, r, n) for r in range(world)])
        return {"SUM": np.sum, "PROD": np.prod, "MAX": np.max, "MIN": np.min}[op](parts, axis=0).astype(dtype)

    def all_reduce(dtype: str, op: str) -> tuple[Any, Any]:
        x = paddle.to_tensor(values(dtype, rank))
        dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
        return x.numpy(), reduce(op, dtype)

    def reduce_to(dtype: str, op: str, root: int) -> tuple[Any, Any]:
        x = paddle.to_tensor(values(dtype, rank))
        dist.reduce(x, dst=root, op=getattr(dist.ReduceOp, op))
        return (x.numpy(), reduce(op, dtype)) if rank == root else (x.numpy(), values(dtype, rank))

    def reduce_scatter(dtype: str, op: str) -> tuple[Any, Any]:
        blocks = [paddle.to_tensor(values(dtype, rank, 2 * world)[2 * b : 2 * b + 2]) for b in range(world)]
        out = paddle.empty([2], dtype=dtype)
        dist.reduce_scatter(out, blocks, op=getattr(dist.ReduceOp, op))
        return out.numpy(), reduce(op, dtype, 2 * world)[2 * rank : 2 * rank + 2]

    def broadcast(dtype: str, root: int) -> tuple[Any, Any]:
        x = paddle.to_tensor(values(dtype, rank))
        dist.broadcast(x, src=root)
        return x.numpy(), values(dtype, root)

    def all_gather(dtype: str) -> tuple[Any, Any]:
        gathered: list[Any] = []
        dist.all_gather(gathered, paddle.to_tensor(values(dtype, rank)))
        return np.concatenate([t.numpy() for t in gathered]), np.concatenate([values(dtype, r) for r in range(world)])

    def send_recv(dtype: str) -> tuple[Any, Any]:
        got = paddle.empty([5], dtype=dtype)
        to, source = (rank + 1) % world, (rank - 1) % world
        mine = paddle.to_tensor(values(dtype, rank, 5))
        if rank % 2 == 0:
            dist.send(mine, dst=to)
            dist.recv(got, src=source)
        else:
            dist.recv(got, src=source)
            dist.send(mine, dst=to)
        return got.numpy(), values(dtype, source, 5)

    for dtype in DTYPES:
        for op in REDUCE_OPS:
            case(f"all_reduce {op} {dtype}", all_reduce, dtype, op)
            case(f"reduce_scatter {op} {dtype}", reduce_scatter, dtype, op)
        for root in range(world):
            case(f"broadcast root {root} {dtype}", broadcast, dtype, root)
            case(f"reduce SUM to {root} {dtype}", reduce_to, dtype, "SUM", root)
        case(f"all_gather {dtype}", all_gather, dtype)
        case(f"send/recv {dtype}", send_recv, dtype)
    try:
        dist.barrier()
        cases.append({"case": "barrier", "passed": True, "detail": ""})
    except Exception as exc:
        cases.append({"case": "barrier", "passed": False, "detail": str(exc)[:400]})
    return cases


def worker(args: argparse.Namespace) -> int:
    from check_common import np, paddle  # first: it sets Paddle's flags
    from mnist import train

    dist = paddle.distributed
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    device = paddle.get_device()
    if args.worker == "train":
        result: RankResult = {"rank": rank, "device": device, "backend": "xccl runtime slots"}
        result["collectives"] = collective_cases(paddle, dist, np, rank, world)
        result["train"] = train(device, load_data(args.data), args.steps, args.batch_size, args.seed, world=world)
        Path(args.out_dir, f"rank-{rank}.json").write_text(json.dumps(result, default=float))
        return 0

    def all_reduce() -> None:
        x = paddle.ones([4], dtype="float32")
        dist.all_reduce(x)
        float(x.sum())  # waits for the device: a peer's failure is raised here

    lost_rank_worker(rank, world, Path(args.out_dir), all_reduce)
    return 0


def launcher_env(device: str, ranks: int) -> list[dict[str, str]]:
    """Each rank's environment as paddle.distributed.launch sets it (one node)."""
    endpoints = [f"127.0.0.1:{free_port()}" for _ in range(ranks)]
    common = {
        "PADDLE_MASTER": f"127.0.0.1:{free_port()}",
        "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
        "PADDLE_TRAINERS_NUM": str(ranks),
        "PADDLE_GLOBAL_SIZE": str(ranks),
        "PADDLE_LOCAL_SIZE": str(ranks),
        "PADDLE_NNODES": "1",
        "PADDLE_DISTRI_BACKEND": "xccl",
        "PADDLE_XCCL_BACKEND": device,
    }
    return [
        {
            **common,
            "PADDLE_TRAINER_ID": str(r),
            "PADDLE_GLOBAL_RANK": str(r),
            "PADDLE_LOCAL_RANK": str(r),
            "PADDLE_RANK_IN_NODE": str(r),
            "PADDLE_CURRENT_ENDPOINT": endpoints[r],
            f"FLAGS_selected_{device}s": str(r),
        }
        for r in range(ranks)
    ]


def run_ranks(args: argparse.Namespace, out_dir: Path) -> dict[int, RankResult]:
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "paddle.distributed.launch", "--devices", ",".join(map(str, range(args.ranks)))]
    argv += ["--log_dir", str(out_dir / "log"), __file__, *train_worker_args(args, out_dir)]
    print(" ".join(argv[1:6]) + " ...", flush=True)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        logs = "".join(p.read_text()[-1500:] for p in sorted((out_dir / "log").glob("workerlog.*")))
        raise RuntimeError(f"paddle.distributed.launch exited {proc.returncode}: {logs or proc.stdout[-1500:]}")
    return {r: json.loads((out_dir / f"rank-{r}.json").read_text()) for r in range(args.ranks)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv)
    if args.worker:
        return worker(args)
    from check_common import _TOL, log, paddle
    from mnist import train

    args.device = args.device or (paddle.device.get_all_custom_device_type() or ["(no custom device)"])[0]
    report: VerifyReport = {"framework": "paddle", "device": args.device, "distributed": args.ranks, "checks": []}
    report["paddle_version"] = paddle.__version__
    data = load_data(args.data)
    drive(
        args,
        __file__,
        report,
        lambda out_dir: run_ranks(args, out_dir),
        lambda: train(f"{args.device}:0", data, args.steps, args.batch_size, args.seed),
        lambda: launcher_env(args.device, args.ranks),
        "NumPy",
        _TOL["max_curve_diff"],
        log,
    )
    return 0


if __name__ == "__main__":
    exit_without_final_collection(main())
