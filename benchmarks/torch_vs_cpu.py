"""Runs inside an environment with torch and the PyTorch adapter wheel installed (benchmarks/run.py
makes one). Prints one JSON object: tiny-op dispatch time, a small tensor's allocation round trip, LeNet
training step time and the device memory high-water mark of those steps, on the
adapter's device and on torch's CPU, measured alternately in one process.

    python torch_vs_cpu.py DEVICE [--ops N] [--steps N] [--no-compile]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path

import torch

# verify's LeNet (payload/torch_training.py)
PAYLOAD = Path(__file__).resolve().parents[1] / "toolchain" / "payload"
sys.path[:0] = [str(PAYLOAD / folder) for folder in ("torch", "shared", "numeric")]
from torch_training import lenet  # noqa: E402


def dispatch_us(device: str, n: int) -> float:
    """Mean microseconds per op for a chain of tiny element-wise ops (dispatch dominates)."""
    x = torch.ones(16, device=device)
    one = torch.ones(16, device=device)
    for _ in range(50):
        x = x + one
    x.cpu()  # the warm-up's queued work done before the clock starts
    start = time.perf_counter()
    for _ in range(n):
        x = x + one
    x.cpu()  # wait for the result
    return (time.perf_counter() - start) / n * 1e6


def empty_us(device: str, n: int) -> float:
    """Mean microseconds to make and free a small tensor (the allocator's round trip)."""
    for _ in range(50):
        torch.empty(4, device=device)
    start = time.perf_counter()
    for _ in range(n):
        torch.empty(4, device=device)
    return (time.perf_counter() - start) / n * 1e6


def train_step_ms(device: str, steps: int, batch: int = 64, amp: bool = False, compiled: bool = False) -> float:
    """One LeNet step (Adam); with `amp`, under torch.autocast(float16) and a GradScaler; with
    `compiled`, the model through torch.compile (its compile is in the warm-up steps, not timed)."""
    torch.manual_seed(0)
    model = lenet(torch).to(device)
    run = torch.compile(model) if compiled else model
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device, init_scale=1024.0, enabled=amp)
    x = torch.rand(batch, 1, 28, 28).to(device)
    y = torch.randint(0, 10, (batch,)).to(device)

    def step():
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=amp):
            loss = torch.nn.functional.cross_entropy(run(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for _ in range(3):
        loss = step()
    loss.item()  # the warm-up's queued work done before the clock starts (on an asynchronous
    # device it would otherwise be timed with the steps: 8.6 against 5.7 ms a step over 5 steps)
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    loss.item()
    return (time.perf_counter() - start) / steps * 1e3


def graph_host_us(device: str, steps: int) -> dict[str, float] | None:
    """Host microseconds per step of a small MLP forward (64 -> 128 -> 128 -> 10, batch 32):
    eager dispatch vs replaying it captured with torch.accelerator.Graph (one queue item). The
    device's own time is the same work either way, so the clock stops before synchronising."""
    if not hasattr(torch.accelerator, "Graph"):
        return None  # (torch without graph capture: aarch64's 2.9)
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    model = model.to(device)
    x = torch.rand(32, 64).to(device)
    graph, side = torch.accelerator.Graph(), torch.Stream(device=device)
    with torch.no_grad():
        with side:
            model(x)  # warm-up outside the capture
            graph.capture_begin()
            model(x)
            graph.capture_end()
        figures = {}
        for name, step in (("eager", lambda: model(x)), ("replay", graph.replay)):
            for _ in range(10):
                step()
            torch.accelerator.synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                step()
            figures[name] = (time.perf_counter() - start) / steps * 1e6
            torch.accelerator.synchronize()
    graph.reset()
    return figures


def profiled_step_ms(device: str, steps: int) -> dict[str, float]:
    """The LeNet step with torch.profiler recording the CPU and the device, against none."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
    off = train_step_ms(device, steps)
    with torch.profiler.profile(activities=activities):
        on = train_step_ms(device, steps)
    return {"off": min(off, train_step_ms(device, steps)), "on": on}


def compile_s(device: str, batch: int = 64) -> float:
    """Seconds of a LeNet training step's first call under torch.compile: tracing, code generation
    and the C++ compiler (cold in a fresh TORCHINDUCTOR_CACHE_DIR; from its cache the next time)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.compile(lenet(torch).to(device))
    x, y = torch.rand(batch, 1, 28, 28).to(device), torch.randint(0, 10, (batch,)).to(device)
    start = time.perf_counter()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    getattr(torch, device).synchronize()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("device")
    p.add_argument("--ops", type=int, default=5000)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile's figures out")
    args = p.parse_args()
    result: dict = {"torch": torch.__version__}
    # alternate the devices so drift on a noisy machine hits both
    d1, c1 = dispatch_us(args.device, args.ops), dispatch_us("cpu", args.ops)
    d2, c2 = dispatch_us(args.device, args.ops), dispatch_us("cpu", args.ops)
    result["dispatch_us"] = {"device": min(d1, d2), "cpu": min(c1, c2)}
    e1, c1 = empty_us(args.device, args.ops), empty_us("cpu", args.ops)
    e2, c2 = empty_us(args.device, args.ops), empty_us("cpu", args.ops)
    result["empty_us"] = {"device": min(e1, e2), "cpu": min(c1, c2)}
    module = getattr(torch, args.device)
    module.reset_peak_memory_stats()
    s1, t1 = train_step_ms(args.device, args.steps), train_step_ms("cpu", args.steps)
    s2, t2 = train_step_ms(args.device, args.steps), train_step_ms("cpu", args.steps)
    result["train_step_ms"] = {"device": min(s1, s2), "cpu": min(t1, t2)}
    # the device memory high-water mark of those steps: what the allocator held from the device
    result["peak_device_memory_mb"] = module.max_memory_reserved() / 2**20
    # mixed precision on the device (autocast float16 + GradScaler) against the float32 figures above
    result["amp_train_step_ms"] = {"device": train_step_ms(args.device, args.steps, amp=True)}
    # graph capture (host time of a replay vs eager dispatch) and the profiler's cost on the device
    g1, g2 = graph_host_us(args.device, args.ops // 5), graph_host_us(args.device, args.ops // 5)
    if g1 and g2:
        result["graph_host_us"] = {k: min(g1[k], g2[k]) for k in g1}
    result["profiled_train_step_ms"] = profiled_step_ms(args.device, args.steps)
    # torch.compile (Inductor): the compile, cold then from Inductor's cache (benchmarks/run.py gives
    # each run a fresh cache directory), and the compiled step against the eager one above
    if not args.no_compile:
        importlib.import_module("torch._inductor.compile_fx")  # imported before the clock starts
        result["compile_s"] = {"cold": compile_s(args.device), "cached": compile_s(args.device)}
        result["compiled_train_step_ms"] = {"device": train_step_ms(args.device, args.steps, compiled=True)}
    result["fallbacks"] = dict(getattr(torch, args.device).fallback_counts())
    print(json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)  # (as device_vs_cpu.py: the figures are out; no interpreter teardown to wait for)


if __name__ == "__main__":
    main()
