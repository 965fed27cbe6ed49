"""What Paddle asks of the device through its public API (issue 54): the plugin's
C_DeviceInterface query slots, in the session's built STPU project with Paddle 3.3.1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_e2e import paddle_python

pytestmark = pytest.mark.e2e

PROBES = """
import json, paddle
from paddle.base import core
props = core.get_device_properties("stpu", 1)
print(json.dumps({
    "float16": paddle.amp.is_float16_supported("stpu"),
    "bfloat16": paddle.amp.is_bfloat16_supported("stpu:1"),
    "properties": [props.name, props.major, props.minor, props.total_memory],
}))
"""


def run_with_the_plugin(project: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    """`code` in the Paddle reference runtime with the project's built plugin (and `env`); it must exit 0."""
    plugin_dir = next(project.glob("build/*/paddle/libpaddle-custom-stpu.so")).parent
    proc = subprocess.run(
        [str(paddle_python()), "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "CUSTOM_DEVICE_ROOT": str(plugin_dir), "GLOG_minloglevel": "2", **env},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_paddle_gets_half_precision_and_device_properties_from_the_plugin(built_project):
    proc = run_with_the_plugin(built_project, PROBES, STPU_MEMORY_MB="1024")
    answers = json.loads(proc.stdout.splitlines()[-1])
    assert answers == {"float16": True, "bfloat16": True, "properties": ["STPU", 1, 0, 1024 << 20]}


# One LeNet training step under paddle.profiler, between two markers on stderr, where the device
# library's op dump (STPU_DUMP_OP_ARGS=1) prints each op as it is queued.
PROFILED_STEP = """
import json, os, sys, tempfile
import paddle
from paddle.profiler import Profiler, ProfilerTarget, export_chrome_tracing
paddle.set_device("stpu:0")
model = paddle.vision.models.LeNet()
opt = paddle.optimizer.Adam(parameters=model.parameters())
x, y = paddle.randn([8, 1, 28, 28]), paddle.to_tensor([[i] for i in range(8)])
def step():
    loss = paddle.nn.functional.cross_entropy(model(x), y)
    loss.backward(); opt.step(); opt.clear_grad()
    return loss.numpy()
step()
out = tempfile.mkdtemp()
print("@@ profiled", file=sys.stderr, flush=True)
with Profiler(targets=[ProfilerTarget.CPU, ProfilerTarget.CUSTOM_DEVICE], on_trace_ready=export_chrome_tracing(out)):
    step()
print("@@ done", file=sys.stderr, flush=True)
(trace,) = os.listdir(out)
events = json.load(open(os.path.join(out, trace)))["traceEvents"]
print(json.dumps(sorted(e["name"].split("[")[0] for e in events if e.get("cat") == "Kernel")))
"""


def test_the_profiler_shows_each_op_the_device_ran_in_a_lenet_step(built_project):
    proc = run_with_the_plugin(built_project, PROFILED_STEP, STPU_DUMP_OP_ARGS="1")
    profiled = json.loads(proc.stdout.splitlines()[-1])
    window = proc.stderr.partition("@@ profiled\n")[2].partition("@@ done\n")[0]
    dumped = sorted(line.split(": ")[1].split()[0] for line in window.splitlines() if line.startswith("[STPU] "))
    assert len(dumped) > 50 and {"conv2d_forward", "gemm", "adam_update"} <= set(dumped)
    assert profiled == dumped  # each op the device library queued, once, by its name
