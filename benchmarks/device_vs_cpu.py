"""Runs inside an environment with paddlepaddle and the plugin wheel installed (benchmarks/run.py
makes one). Prints one JSON object: op dispatch time, LeNet training step time (and under AMP O1) and the
device memory high-water mark, on the plugin's device and on Paddle's CPU place, measured alternately in one process.

    python device_vs_cpu.py DEVICE [--ops N] [--steps N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# verify's checks: the same LeNet, and fallback off so every op runs on the device
PAYLOAD = Path(__file__).resolve().parents[1] / "toolchain" / "payload"
sys.path[:0] = [str(PAYLOAD / folder) for folder in ("paddle", "shared", "numeric")]
from check_common import F, np, paddle  # noqa: E402
from mnist import LeNet  # noqa: E402
from paddle_amp import amp_step  # noqa: E402


def dispatch_us(place: str, n: int) -> float:
    """Mean microseconds per op for a chain of tiny element-wise ops (dispatch dominates)."""
    paddle.set_device(place)
    x = paddle.ones([16], dtype="float32")
    one = paddle.ones([16], dtype="float32")
    for _ in range(50):  # warm up kernel selection and allocator
        x = x + one
    float(x[0])  # the warm-up's queued work done before the clock starts
    start = time.perf_counter()
    for _ in range(n):
        x = x + one
    float(x[0])  # wait for the result
    return (time.perf_counter() - start) / n * 1e6


def train_step_ms(place: str, steps: int, batch: int = 64, amp: str = "") -> float:
    """One LeNet step (Adam); with `amp` (O1), under auto_cast(float16) and a GradScaler."""
    paddle.set_device(place)
    paddle.seed(0)
    model = LeNet()
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    scaler = paddle.amp.GradScaler(init_loss_scaling=1024.0)
    rng = np.random.RandomState(0)
    x = paddle.to_tensor(rng.uniform(0, 1, (batch, 1, 28, 28)).astype("float32"))
    y = paddle.to_tensor(rng.randint(0, 10, (batch, 1)).astype("int64"))

    def step():
        if amp:
            return amp_step(model, opt, scaler, x, y, amp)  # verify --amp's step
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    for _ in range(3):
        loss = step()
    float(loss)  # the warm-up's queued work done before the clock starts
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    float(loss)
    return (time.perf_counter() - start) / steps * 1e3


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("device")
    p.add_argument("--ops", type=int, default=5000)
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    result = {"paddle": paddle.__version__}
    # alternate the places so drift on a noisy machine hits both
    d1, c1 = dispatch_us(args.device, args.ops), dispatch_us("cpu", args.ops)
    d2, c2 = dispatch_us(args.device, args.ops), dispatch_us("cpu", args.ops)
    result["dispatch_us"] = {"device": min(d1, d2), "cpu": min(c1, c2)}
    result["train_step_ms"] = {
        "device": train_step_ms(args.device, args.steps),
        "cpu": train_step_ms("cpu", args.steps),
    }
    # mixed precision on the device (O1, float16) against the float32 figures above
    result["amp_train_step_ms"] = {"device": train_step_ms(args.device, args.steps, amp="O1")}
    # the device memory high-water mark: what Paddle's allocator held from the device
    result["peak_device_memory_mb"] = paddle.device.max_memory_reserved(f"{args.device}:0") / 2**20
    print(json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
