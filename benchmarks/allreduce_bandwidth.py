"""All-reduce bandwidth of the PyTorch adapter's c10d backend against gloo, in one torchrun job.

Runs under torchrun in an environment with torch and the adapter wheel (benchmarks/run.py makes
one). Rank 0 prints one JSON object: for each buffer size, the bytes per second of a float32 SUM
all-reduce on the device (the "<type>ccl" backend, device tensors, each call waited for) and of
gloo on CPU tensors, measured alternately in the same processes.

    python -m torch.distributed.run --nproc-per-node 2 allreduce_bandwidth.py DEVICE [--mb 1,64] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist


def seconds_per_call(tensor: torch.Tensor, group, repeats: int) -> float:
    dist.all_reduce(tensor, group=group)  # warm: files, pages, the first message
    best = float("inf")
    for _ in range(repeats):
        dist.barrier(group=group)
        start = time.perf_counter()
        dist.all_reduce(tensor, group=group)  # waits for the result (Work.wait)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device")
    parser.add_argument("--mb", default="1,64", help="buffer sizes in MiB, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    getattr(torch, args.device).set_device(local)
    dist.init_process_group()  # the device's backend
    gloo = dist.new_group(backend="gloo")
    results = {"ranks": dist.get_world_size(), "backend": dist.group.WORLD.name(), "sizes": []}
    for mb in (int(m) for m in args.mb.split(",")):
        n = mb * (1 << 20) // 4
        on_device = torch.ones(n, device=f"{args.device}:{local}")
        on_cpu = torch.ones(n)
        device_s = gloo_s = float("inf")
        for _ in range(2):  # alternately: this VM's speed drifts
            device_s = min(device_s, seconds_per_call(on_device, None, args.repeats))
            gloo_s = min(gloo_s, seconds_per_call(on_cpu, gloo, args.repeats))
        bytes_ = n * 4
        results["sizes"].append(
            {"mib": mb, "device_bytes_per_s": bytes_ / device_s, "gloo_bytes_per_s": bytes_ / gloo_s}
        )
    if dist.get_rank() == 0:
        print(json.dumps(results), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
