"""Runs inside an environment with torch and the PyTorch adapter wheel installed (benchmarks/run.py
makes one). Prints one JSON object: the LeNet training step (Adam, batch 64) with the model and the
optimizer's step under torch.compile (Inductor) against the same step eager, on the adapter's device
and on torch's CPU, in wall and process-CPU milliseconds per step, the two alternated in rounds within one process
(a noisy machine's drift hits both; each figure is the median of its rounds).

    python compiled_vs_eager.py DEVICE [--steps N] [--rounds N] [--profile] [--eager-optimizer]

--eager-optimizer compiles the model only (Adam's step stays eager: about 190 device ops a step).

--profile adds where the device's time goes: its time per kernel (torch.profiler's device
events), eager and compiled, summed per step.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

# verify's LeNet (payload/torch_training.py)
PAYLOAD = Path(__file__).resolve().parents[1] / "toolchain" / "payload"
sys.path[:0] = [str(PAYLOAD / folder) for folder in ("torch", "shared", "numeric")]
from torch_training import lenet  # noqa: E402

BATCH = 64


def training_step(device: str, compiled: bool, optimizer: bool = True) -> Callable[[], Any]:
    """One LeNet step (Adam) on `device`, its model (and the optimizer's step, if `optimizer`)
    through torch.compile when `compiled`; warmed up (the compile is not timed) and its queued
    work finished."""
    torch.manual_seed(0)
    model = lenet(torch).to(device)
    run = torch.compile(model) if compiled else model
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    update = torch.compile(opt.step) if compiled and optimizer else opt.step
    x = torch.rand(BATCH, 1, 28, 28).to(device)
    y = torch.randint(0, 10, (BATCH,)).to(device)

    def step() -> Any:
        loss = torch.nn.functional.cross_entropy(run(x), y)
        opt.zero_grad()
        loss.backward()
        update()
        return loss

    for _ in range(3):
        step()
    step().item()
    return step


def timed(step: Callable[[], Any], steps: int) -> tuple[float, float]:
    """Wall and process-CPU milliseconds per step (the device's workers are threads of this
    process: their CPU time is in the second figure)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        loss = step()
    loss.item()  # the queued work done before the clock stops
    return (time.perf_counter() - wall) / steps * 1e3, (time.process_time() - cpu) / steps * 1e3


def compare(device: str, steps: int, rounds: int, optimizer: bool = True) -> dict[str, Any]:
    """Eager and compiled steps on `device`, alternated `rounds` times: medians, their ratio and
    the lowest and highest ratio of one round's pair (the machine's noise)."""
    steppers = {"eager": training_step(device, False), "compiled": training_step(device, True, optimizer)}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in steppers}
    for _ in range(rounds):
        for name, step in steppers.items():
            samples[name].append(timed(step, steps))
    figures: dict[str, Any] = {}
    for clock, i in (("wall_ms", 0), ("cpu_ms", 1)):
        eager, compiled = (statistics.median(s[i] for s in samples[name]) for name in ("eager", "compiled"))
        per_round = [c[i] / e[i] for e, c in zip(samples["eager"], samples["compiled"], strict=True)]
        figures[clock] = {"eager": eager, "compiled": compiled, "ratio": compiled / eager}
        figures[clock]["round_ratios"] = [min(per_round), max(per_round)]
    return figures


def device_time_per_kernel(device: str, compiled: bool, steps: int, optimizer: bool = True) -> dict[str, float]:
    """The device's microseconds per step by kernel name (torch.profiler's PrivateUse1 events)."""
    step = training_step(device, compiled, optimizer)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
    with torch.profiler.profile(activities=activities) as profile:
        timed(step, steps)
    kernels: dict[str, float] = {}
    for event in profile.events():
        if event.device_type == torch.autograd.DeviceType.PrivateUse1:
            kernels[event.name] = kernels.get(event.name, 0.0) + event.device_time / steps
    return dict(sorted(kernels.items(), key=lambda item: -item[1]))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("device")
    p.add_argument("--steps", type=int, default=20, help="steps per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cpu", action="store_true", help="also torch's CPU device, compiled vs eager")
    p.add_argument("--profile", action="store_true", help="also the device's time per kernel")
    p.add_argument("--eager-optimizer", action="store_true", help="compile the model only, Adam's step eager")
    args = p.parse_args()
    importlib.import_module("torch._inductor.compile_fx")  # imported before any clock starts
    result: dict[str, Any] = {"torch": torch.__version__, "steps": args.steps, "rounds": args.rounds}
    optimizer = not args.eager_optimizer
    result["optimizer_compiled"] = optimizer
    result["device"] = compare(args.device, args.steps, args.rounds, optimizer)
    if args.cpu:
        result["cpu"] = compare("cpu", args.steps, args.rounds, optimizer)
    if args.profile:
        result["device_us_per_kernel"] = {
            name: device_time_per_kernel(args.device, compiled, args.steps, optimizer)
            for name, compiled in (("eager", False), ("compiled", True))
        }
    result["fallbacks"] = dict(getattr(torch, args.device).fallback_counts())
    print(json.dumps(result), flush=True)
    os._exit(0)  # (as torch_vs_cpu.py: the figures are out; no interpreter teardown to wait for)


if __name__ == "__main__":
    main()
