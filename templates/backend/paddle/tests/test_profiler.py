"""paddle.profiler on {{ device_type }}: the plugin's profiler slots hand the device library's trace to
Paddle, so each device op of a training step shows with its time, on its stream, under the
operator that queued it (ProfilerTarget.CUSTOM_DEVICE is among Paddle's default targets
whenever a custom device is loaded: without the slots every Profiler() failed)."""

import gc
import json

import numpy as np
import paddle
from paddle.profiler import Profiler, ProfilerTarget, export_chrome_tracing

# {{ NAME }}'s clock is aligned with Paddle's to well under a microsecond; the trace rounds to 1 ns.
CLOCK_SLACK_US = 2.0


def profiled_training_step(tmp_path, summary=False, **profiler_args):
    """The chrome trace's complete events of one profiled LeNet training step (after a warm-up)."""
    paddle.set_device("{{ device_type }}:0")
    paddle.seed(0)
    model = paddle.vision.models.LeNet()
    opt = paddle.optimizer.Adam(parameters=model.parameters())
    rng = np.random.default_rng(0)
    x = paddle.to_tensor(rng.standard_normal((4, 1, 28, 28), dtype="float32"))
    y = paddle.to_tensor(rng.integers(0, 10, (4, 1)))

    def step():
        loss = paddle.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss.numpy()  # (waits for the step's queued work)

    step()
    with Profiler(on_trace_ready=export_chrome_tracing(str(tmp_path)), **profiler_args) as prof:
        step()
    if summary:
        prof.summary()
    del prof  # (Paddle allows one profiler at a time: the next test's is made only once this one is gone)
    gc.collect()
    (trace,) = tmp_path.glob("*.json")
    return [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]


def device_events(events):
    return [e for e in events if e["cat"] in ("Kernel", "Memcpy", "Memset")]


def untraced(stderr):
    return "device library records no trace" in stderr


def test_each_device_op_of_a_training_step_shows_with_its_time_under_its_operator(tmp_path, capfd):
    events = profiled_training_step(tmp_path, targets=[ProfilerTarget.CPU, ProfilerTarget.CUSTOM_DEVICE])
    ran = device_events(events)
{%- if sdk_flavour %}
    if untraced(capfd.readouterr().err):  # this flavour's device library has no tracer: CPU events only
        assert ran == [] and any(e["cat"] == "Operator" for e in events)
        return
{%- endif %}
    enqueues = {e["args"]["correlation id"]: e for e in events if e["cat"] == "CudaRuntime"}
    operators = [e for e in events if e["cat"] in ("Operator", "DygraphKernelLaunch")]
    (step,) = (e for e in events if e["cat"] == "ProfileStep")
    under_operators = set()
    for run in ran:
        enqueue = enqueues[run["args"]["correlation id"]]  # each run is tied to its enqueue
        assert run["pid"] != enqueue["pid"] and run["tid"] == run["args"]["stream"]  # a device row per stream
        assert run["dur"] >= 0
        # on one clock: it ran after it was queued and before the step's wait for it returned
        assert step["ts"] <= enqueue["ts"] and enqueue["ts"] - CLOCK_SLACK_US <= run["ts"], run
        assert run["ts"] + run["dur"] <= step["ts"] + step["dur"] + CLOCK_SLACK_US, run
        # queued inside an operator (on the step's thread): the summary counts its time there. (Paddle
        # queues some fills outside any operator: zeroed gradients)
        if any(op["tid"] == enqueue["tid"] and op["ts"] <= enqueue["ts"] <= op["ts"] + op["dur"] for op in operators):
            under_operators.add(run["name"].split("[")[0])
{%- if not sdk_flavour %}
    assert {"conv2d_forward", "conv2d_backward", "gemm", "adam_update"} <= under_operators, under_operators
{%- else %}
    assert len(under_operators) >= 5, under_operators
{%- endif %}


def test_the_default_profiler_summarizes_the_device_kernels(tmp_path, capfd):
    # Profiler() profiles every custom device by default
    events = profiled_training_step(tmp_path, summary=True)
    out = capfd.readouterr()
    assert "Overview Summary" in out.out
{%- if sdk_flavour %}
    if not device_events(events):  # (no tracer: the first test saw it said so)
        return
{%- endif %}
    assert "Kernel Summary" in out.out and device_events(events)
    assert out.err.count("records no trace") == 0
