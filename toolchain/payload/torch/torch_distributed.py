"""`devkit verify --distributed N --framework torch`: the adapter's c10d backend in N processes.

Run as the driver in the verify environment; it starts the ranks itself:

    python torch_distributed.py --device stpu --ranks 2 --data data.npz --steps 200 --out report.json

1. `collectives` and `data parallel`: torchrun starts N ranks (this file with --worker), each on
   device `rank`. Every collective the backend implements, for every reduce op and dtype it
   takes, is compared with the same collective of a gloo group on the CPU; then LeNet trains
   with DistributedDataParallel, each rank on its share of every global batch, and the per-step
   loss (averaged over the ranks) and the held-out accuracy are compared with one process
   training on the whole batch on device 0.
2. `killed rank` / `stalled rank`: N ranks started directly; after a first all_reduce the last
   rank is killed (SIGKILL) or stopped (SIGSTOP), and rank 0's next all_reduce must fail with
   a message naming that rank (exited; did not arrive within the timeout), not hang.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
from distributed_driver import drive, free_port, lost_rank_worker, parse_args, train_worker_args
from distributed_records import CollectiveCase, RankResult
from process_exit import exit_without_final_collection
from records import VerifyReport
from torch_common import TOL, Tensor, first_line, log
from training_verdict import load_data

warnings.filterwarnings("ignore", category=FutureWarning)  # torch 2.10+ renames some collectives
DTYPES = ("float32", "float64", "int32", "int64", "int8", "uint8")  # those gloo has (not int16)
REDUCE_OPS = ("SUM", "PRODUCT", "MAX", "MIN", "AVG")


# ---- worker side (one process per rank) -------------------------------------------------


def collective_cases(torch: ModuleType, dist: ModuleType, device: str, rank: int, world: int) -> list[CollectiveCase]:
    """(case, passed, detail) for each collective, reduce op and dtype against a gloo group on the CPU."""
    gloo = dist.new_group(backend="gloo")
    cases: list[CollectiveCase] = []

    def case(name: str, run: Callable[..., tuple[np.ndarray, np.ndarray]], *args: object) -> None:
        try:
            got, want = run(*args)
            same = bool(np.allclose(got, want, rtol=1e-6, atol=0)) and got.dtype == want.dtype
            cases.append({"case": name, "passed": same, "detail": "" if same else f"{got.tolist()} != {want.tolist()}"})
        except Exception as exc:
            cases.append({"case": name, "passed": False, "detail": first_line(exc)})

    def data(dtype: str, n: int = 6) -> Tensor:
        values = (np.arange(n) % 5 + 1 + rank).astype(dtype)  # small: PRODUCT stays in range
        return torch.from_numpy(values)

    def all_reduce(dtype: str, op: str) -> tuple[np.ndarray, np.ndarray]:
        x = data(dtype)
        on_device, on_cpu = x.to(device), x.clone()
        dist.all_reduce(on_device, op=getattr(dist.ReduceOp, op))
        dist.all_reduce(on_cpu, op=dist.ReduceOp.SUM if op == "AVG" else getattr(dist.ReduceOp, op), group=gloo)
        want = on_cpu / world if op == "AVG" else on_cpu
        return on_device.cpu().numpy(), want.numpy()

    def broadcast(dtype: str, root: int) -> tuple[np.ndarray, np.ndarray]:
        x = data(dtype)
        on_device, on_cpu = x.to(device), x.clone()
        dist.broadcast(on_device, src=root)
        dist.broadcast(on_cpu, src=root, group=gloo)
        return on_device.cpu().numpy(), on_cpu.numpy()

    def all_gather(dtype: str, into_tensor: bool) -> tuple[np.ndarray, np.ndarray]:
        x = data(dtype)
        want = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(want, x, group=gloo)
        if into_tensor:
            out = torch.empty(world * x.numel(), dtype=x.dtype, device=device)
            dist.all_gather_into_tensor(out, x.to(device))
            return out.cpu().numpy(), torch.cat(want).numpy()
        outs = [torch.empty_like(x, device=device) for _ in range(world)]
        dist.all_gather(outs, x.to(device))
        return torch.cat([o.cpu() for o in outs]).numpy(), torch.cat(want).numpy()

    def reduce_scatter(dtype: str, op: str) -> tuple[np.ndarray, np.ndarray]:
        x = data(dtype, 2 * world)
        out = torch.empty(2, dtype=x.dtype, device=device)
        dist.reduce_scatter_tensor(out, x.to(device), op=getattr(dist.ReduceOp, op))
        total = x.clone()
        dist.all_reduce(total, op=dist.ReduceOp.SUM if op == "AVG" else getattr(dist.ReduceOp, op), group=gloo)
        want = total[2 * rank : 2 * rank + 2]
        return out.cpu().numpy(), (want / world if op == "AVG" else want).numpy()

    def send_recv(dtype: str) -> tuple[np.ndarray, np.ndarray]:
        x = data(dtype, 5)
        got = torch.empty_like(x, device=device)
        peer_to, peer_from = (rank + 1) % world, (rank - 1) % world
        if rank % 2 == 0:
            dist.send(x.to(device), peer_to)
            dist.recv(got, peer_from)
        else:
            dist.recv(got, peer_from)
            dist.send(x.to(device), peer_to)
        return got.cpu().numpy(), (x - rank + peer_from).numpy()

    for dtype in DTYPES:
        floating = dtype.startswith("float")
        for op in REDUCE_OPS:
            if op != "AVG" or floating:
                case(f"all_reduce {op} {dtype}", all_reduce, dtype, op)
                case(f"reduce_scatter_tensor {op} {dtype}", reduce_scatter, dtype, op)
        for root in range(world):
            case(f"broadcast root {root} {dtype}", broadcast, dtype, root)
        case(f"all_gather {dtype}", all_gather, dtype, False)
        case(f"all_gather_into_tensor {dtype}", all_gather, dtype, True)
        case(f"send/recv {dtype}", send_recv, dtype)
    try:
        dist.barrier()
        cases.append({"case": "barrier", "passed": True, "detail": ""})
    except Exception as exc:
        cases.append({"case": "barrier", "passed": False, "detail": first_line(exc)})
    return cases


def worker(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    getattr(torch, args.device).set_device(int(os.environ["LOCAL_RANK"]))
    device = f"{args.device}:{os.environ['LOCAL_RANK']}"
    dist.init_process_group()  # no backend named: the one registered for the device
    result: RankResult = {"rank": rank, "device": device, "backend": f"backend {dist.group.WORLD.name()}"}
    if args.worker == "train":
        result["collectives"] = collective_cases(torch, dist, device, rank, world)
        data = load_data(args.data)
        from torch_training import train

        result["train"] = train(torch, device, data, args.steps, args.batch_size, args.seed, world=world)
    else:  # killed / stalled

        def all_reduce() -> None:
            x = torch.ones(4, device=device)
            dist.all_reduce(x)  # waits for the device: a peer's failure is raised here

        lost_rank_worker(rank, world, Path(args.out_dir), all_reduce)
    Path(args.out_dir, f"rank-{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()
    return 0


# ---- driver side -------------------------------------------------------------------------


def run_ranks(args: argparse.Namespace, out_dir: Path) -> dict[int, RankResult]:
    """torchrun with N ranks of this file; the ranks' results."""
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={args.ranks}"]
    argv += [f"--master-port={free_port()}", __file__, *train_worker_args(args, out_dir)]
    log(" ".join(argv[1:5]) + " ...")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"torchrun exited {proc.returncode}: {(proc.stderr or proc.stdout)[-1500:]}")
    return {r: json.loads((out_dir / f"rank-{r}.json").read_text()) for r in range(args.ranks)}


def rank_envs(args: argparse.Namespace) -> list[dict[str, str]]:
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": str(args.ranks)}
    return [{**env, "RANK": str(r), "LOCAL_RANK": str(r)} for r in range(args.ranks)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv)
    if args.worker:
        return worker(args)
    import torch  # the adapter loads with it: a broken one fails here, before any rank starts
    from torch_training import train

    report: VerifyReport = {"framework": "torch", "device": args.device, "distributed": args.ranks, "checks": []}
    report.update({"torch_version": torch.__version__, "paddle_version": None})
    data = load_data(args.data)
    drive(
        args,
        __file__,
        report,
        lambda out_dir: run_ranks(args, out_dir),
        lambda: train(torch, f"{args.device}:0", data, args.steps, args.batch_size, args.seed),
        lambda: rank_envs(args),
        "gloo on the CPU",
        TOL["max_curve_diff"],
        log,
    )
    return 0


if __name__ == "__main__":
    exit_without_final_collection(main())
