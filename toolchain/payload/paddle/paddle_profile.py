"""verify --profile's child for Paddle (device_trace.py runs it with the op dump on): one LeNet
training step under paddle.profiler with the custom device's target, its Chrome trace exported,
the names of the device kernels the profiler saw printed as a JSON list.

    python paddle_profile.py --device stpu --trace device-trace.json
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import paddle
from device_trace import BEGIN, END, child_arguments, mark
from paddle.profiler import Profiler, ProfilerTarget, export_chrome_tracing
from process_exit import exit_without_final_collection


def main() -> int:
    args = child_arguments(__doc__)

    paddle.set_device(f"{args.device}:0")
    paddle.seed(0)
    model = paddle.vision.models.LeNet()
    optimizer = paddle.optimizer.Adam(parameters=model.parameters())
    r = np.random.RandomState(1)
    images = paddle.to_tensor(r.rand(64, 1, 28, 28).astype("float32"))
    labels = paddle.to_tensor(r.randint(0, 10, (64, 1)).astype("int64"))

    def step() -> None:
        paddle.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
        optimizer.clear_grad()
        paddle.device.synchronize()

    step()  # warm-up: first-use work stays out of the profiled step
    with tempfile.TemporaryDirectory() as out:
        mark(BEGIN)
        with Profiler(
            targets=[ProfilerTarget.CPU, ProfilerTarget.CUSTOM_DEVICE], on_trace_ready=export_chrome_tracing(out)
        ):
            step()
        mark(END)
        (written,) = os.listdir(out)
        Path(args.trace).write_bytes(Path(out, written).read_bytes())
    events = json.loads(Path(args.trace).read_text())["traceEvents"]
    print(json.dumps([e["name"].split("[")[0] for e in events if e.get("cat") == "Kernel"]))
    return 0


if __name__ == "__main__":
    exit_without_final_collection(main())
