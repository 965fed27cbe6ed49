"""What Paddle asks of a custom device (issue 54), each clause through Paddle's public API (see
contract.py). By design where Paddle's own Python stops a custom device before the plugin is
asked: the reason names where."""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import paddle
from contract import UNIMPLEMENTED, Clause, device_library_lacks, refused, run_clauses, soon
from paddle.base import core
from paddle.device.cuda import graphs
from paddle.device.cuda.graphs import CUDAGraph
from paddle.profiler import Profiler, ProfilerTarget, export_chrome_tracing
from plugin_exports import by_design, plugin_function
from records import ContractCheck

custom_device_module = importlib.util.find_spec("paddle.device.custom_device") is not None

# The kernels LeNet's forward runs.
LENET_KERNELS = ("conv2d", "pool2d", "relu", "matmul", "add")


def clauses(device: str, half_precision: bool, unimplemented: list[str]) -> list[Clause]:
    """`half_precision`: the plugin registers float16/bfloat16 kernels; `unimplemented`: the
    patterns of the kernels its device library lacks (they run on the CPU by design)."""
    random_on_cpu = bool(by_design(["uniform"], unimplemented))
    lenet_on_cpu = by_design(LENET_KERNELS, unimplemented)

    def on(*shape: int) -> paddle.Tensor:  # (a copy onto the device: no kernel of its own)
        return paddle.to_tensor(np.arange(np.prod(shape), dtype="float32").reshape(shape))

    def counted() -> object:
        devices = paddle.device.get_available_custom_device() or []
        before = paddle.device.get_device()
        paddle.device.set_device(f"{device}:{len(devices) - 1}")
        try:
            moved = (
                paddle.device.get_device() == f"{device}:{len(devices) - 1}"
                and on(2).place.custom_device_id() == len(devices) - 1
            )
        finally:
            paddle.device.set_device(before)
        return bool(devices) and paddle.device.device_count() == len(devices) and moved

    def synchronized() -> object:
        y = on(256) * 2
        paddle.device.synchronize(f"{device}:0")
        return float(y[-1]) == 510.0

    def streams() -> object:
        stream = paddle.device.Stream(device=f"{device}:0")
        with paddle.device.stream_guard(stream):
            y = on(64, 64) @ on(64, 64)
        stream.synchronize()
        return soon(stream.query) and float(y.sum()) > 0

    def timed_events() -> object:
        start = paddle.device.Event(enable_timing=True)
        start.record()
        return start.elapsed_time(start)

    def rng_state() -> object:
        paddle.device.set_device(f"{device}:0")
        state = paddle.get_rng_state()  # (the current device's: Paddle 3.2 fails on a device name)
        first = paddle.rand([8]).numpy()
        paddle.set_rng_state(state)
        return bool((paddle.rand([8]).numpy() == first).all())

    def seeding() -> object:
        paddle.seed(11)
        first = paddle.rand([8]).numpy()
        paddle.seed(11)
        return bool((paddle.rand([8]).numpy() == first).all())

    def half_supported() -> object:
        return paddle.amp.is_float16_supported(f"{device}:0") and paddle.amp.is_bfloat16_supported(f"{device}:0")

    def public_properties() -> object:
        props = paddle.device.get_device_properties(f"{device}:0")
        return bool(props.name) and props.total_memory > 0

    def properties() -> object:
        refused(public_properties, "gpgpu")()
        props = core.get_device_properties(device, 0)
        return bool(props.name) and props.total_memory > 0

    try:  # (Paddle 3.3 answers it for two custom devices by name only; 3.2 for every one)
        public_properties_answer = public_properties() is True
    except RuntimeError:
        public_properties_answer = False

    # Memory statistics: Paddle 3.3's paddle.device.custom_device, 3.2's paddle.device.
    memory = importlib.import_module("paddle.device.custom_device") if custom_device_module else paddle.device

    def memory_statistics() -> object:
        where = f"{device}:0"
        memory.empty_cache()
        before = memory.memory_allocated(where)
        x = paddle.empty([1 << 20], dtype="uint8")
        grown = memory.memory_allocated(where) - before >= x.size
        peak = memory.max_memory_allocated(where) >= memory.memory_allocated(where)
        return grown and peak and memory.memory_reserved(where) >= memory.memory_allocated(where)

    def profiled() -> object:
        targets = [ProfilerTarget.CPU, ProfilerTarget.CUSTOM_DEVICE]
        with tempfile.TemporaryDirectory() as out:
            with Profiler(targets=targets, on_trace_ready=export_chrome_tracing(out)):
                (on(32, 32) @ on(32, 32)).numpy()
            (written,) = os.listdir(out)
            events = json.loads(Path(out, written).read_text())["traceEvents"]
        if not any(e.get("cat") == "Kernel" for e in events):
            library, _ = plugin_function(device, "trace_dropped")
            lacks = device_library_lacks(library, device, "trace_dropped") if library else ""
            raise AssertionError(lacks or "no device kernel reached the profiler's trace")
        return True

    def graphed() -> object:  # a LeNet forward captured, replayed on new inputs
        paddle.seed(0)
        model = paddle.vision.models.LeNet()
        model.eval()
        r = np.random.RandomState(0)
        batches = [r.rand(8, 1, 28, 28).astype("float32") for _ in range(3)]
        static = paddle.to_tensor(batches[0])
        graph = CUDAGraph(place=paddle.CustomPlace(device, 0))
        with paddle.no_grad():
            model(static)  # warm-up outside the capture
            try:
                graph.capture_begin()
            except OSError as error:  # (Paddle keeps the error code only: the library's words, if it lacks capture)
                library, _ = plugin_function(device, "stream_is_capturing")
                capturing = (None, ctypes.byref(ctypes.c_int()))
                lacks = device_library_lacks(library, device, "stream_is_capturing", *capturing) if library else ""
                raise RuntimeError(lacks or str(error)) from error
            try:
                out = model(static)
            finally:
                graph.capture_end()
            try:
                replayed = []
                for batch in batches:
                    paddle.assign(paddle.to_tensor(batch), static)  # new input, in the captured input's memory
                    graph.replay()
                    replayed.append(bool((out.numpy() == model(paddle.to_tensor(batch)).numpy()).all()))
            finally:
                graph.reset()  # (before the interpreter exits: Paddle aborts on a live graph then)
        return all(replayed) or f"replay vs eager, per batch: {replayed}"

    name, api = "graph capture and replay (LeNet forward)", "paddle.device.cuda.graphs.CUDAGraph(place=CustomPlace)"
    if not graphs.is_cuda_graph_supported():
        graph_clause = Clause(
            name,
            api,
            refused(lambda: CUDAGraph(place=paddle.CustomPlace(device, 0)), "compiled with NVIDIA GPU"),
            by_design=f"Paddle {paddle.__version__} captures graphs in CUDA builds only (3.3 adds custom devices: "
            "paddle/device/cuda/graphs.py)",
        )
    elif lenet_on_cpu:  # (Paddle keeps the refused host copy's error code only; or the library has no capture)
        graph_clause = Clause(
            name,
            api,
            refused(graphed, "CustomDevice error", UNIMPLEMENTED, any_of=True),
            by_design=f"LeNet's {', '.join(lenet_on_cpu)} run on the CPU on this flavour: a capture holds no host work",
        )
    else:
        graph_clause = Clause(name, api, graphed)
    return [
        Clause(
            "registration",
            "paddle.device.get_all_custom_device_type(), is_compiled_with_custom_device()",
            lambda: (
                device in (paddle.device.get_all_custom_device_type() or [])
                and paddle.device.is_compiled_with_custom_device(device)
            ),
        ),
        Clause("device count and index", "paddle.device.device_count(), set_device(), current_device()", counted),
        Clause("synchronize", "paddle.device.synchronize()", synchronized),
        Clause("streams", "paddle.device.Stream, stream_guard, Stream.query()", streams),
        Clause(
            "timed events",
            "paddle.device.Event(enable_timing=True).elapsed_time()",
            refused(timed_events, "elapsed_time"),
            by_design=f"Paddle {paddle.__version__}'s CustomDeviceEvent has no elapsed_time (paddle/device/__init__.py, class Event)",
        ),
        Clause("RNG state", "paddle.get_rng_state/set_rng_state()", rng_state)
        if not random_on_cpu
        else Clause(
            "RNG state",
            "paddle.get_rng_state/set_rng_state()",
            lambda: bool(paddle.get_rng_state()),
            by_design="the device library has no random ops: their kernels run on the CPU, from its generator",
        ),
        Clause("seeding", "paddle.seed()", seeding),
        Clause("float16/bfloat16 support", "paddle.amp.is_float16_supported/is_bfloat16_supported", half_supported)
        if half_precision
        else Clause(
            "float16/bfloat16 support",
            "paddle.amp.is_float16_supported/is_bfloat16_supported",
            lambda: (
                not paddle.amp.is_float16_supported(f"{device}:0")
                and not paddle.amp.is_bfloat16_supported(f"{device}:0")
            ),
            by_design="the device library computes no float16/bfloat16 (flavour.toml half-precision): both say False",
        ),
        Clause("device properties", "paddle.device.get_device_properties()", public_properties)
        if public_properties_answer
        else Clause(
            "device properties",
            "paddle.device.get_device_properties()",
            properties,
            by_design=f"Paddle {paddle.__version__}'s Python answers it only for metax_gpu and iluvatar_gpu "
            "(paddle/device/custom_device.py); the plugin's slot answers paddle.base.core.get_device_properties",
        ),
        Clause(
            "memory statistics",
            "paddle.device.custom_device.memory_allocated/max_memory_allocated/memory_reserved/empty_cache",
            memory_statistics,
        ),
        Clause(
            "pinned host memory",
            "Tensor.pin_memory()",
            refused(lambda: paddle.ones([3]).cpu().pin_memory(), "CUDAPinnedPlace"),
            by_design=f"Paddle {paddle.__version__} pins host memory only in its CUDA builds (paddle/fluid/pybind/place.cc)",
        ),
        Clause("profiler", "paddle.profiler.Profiler(targets=[CPU, CUSTOM_DEVICE])", profiled),
        graph_clause,
    ]


def check_contract(device: str, half_precision: bool, unimplemented: list[str]) -> ContractCheck:
    return run_clauses(clauses(device, half_precision, unimplemented))
