"""What PyTorch, and code written for torch.cuda, asks of a device (issue 54), each clause through
torch's public API (see contract.py). A clause whose API the installed torch lacks (the 2.9 of an
aarch64 target) is by design, naming the torch that lacks it."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from contract import UNIMPLEMENTED, Clause, device_library_lacks, refused, run_clauses, soon
from plugin_exports import by_design  # (framework-free: the patterns' match, as the Paddle checks use it)
from records import ContractCheck
from torch_training import lenet


def _lacks(torch: ModuleType, owner: Any, attribute: str, hook: str, api: str, owner_name: str) -> Clause:
    reason = f"torch {torch.__version__} has no {owner_name}.{attribute}"
    return Clause(hook, api, refused(lambda: getattr(owner, attribute), attribute), by_design=reason)


# The kernels LeNet's forward runs (PrivateUse1 registrations, as unimplemented_kernels names them).
LENET_KERNELS = ("convolution_overrideable", "max_pool2d_with_indices", "relu", "addmm", "mm")


def _has_privateuse1_profiler_registry(torch: ModuleType) -> bool:
    """torch/csrc/profiler/standalone/privateuse1_profiler.h, where the adapter registers its
    profiler: shipped from torch 2.13 (the adapter compiles its profiler out without it)."""
    include = Path(str(torch.__file__)).parent / "include"
    return (include / "torch/csrc/profiler/standalone/privateuse1_profiler.h").is_file()


def clauses(torch: ModuleType, device: str) -> list[Clause]:
    mod = getattr(torch, device)
    acc = torch.accelerator
    last = acc.device_count() - 1
    # What the flavour's device library lacks, by design: its random ops (their kernels run on
    # the CPU, from the CPU's generator), and kernels LeNet's forward runs (on the CPU: a capture,
    # which cannot hold host work, is refused then).
    unimplemented = mod.unimplemented_kernels()
    random_on_cpu = bool(by_design(["uniform_"], unimplemented))
    lenet_on_cpu = by_design(LENET_KERNELS, unimplemented)

    def on(*shape: int) -> Any:  # (made on the CPU and copied: verify forbids the CPU fallback)
        return torch.arange(float(torch.Size(shape).numel())).reshape(shape).to(device)

    def counted() -> object:
        before = acc.current_device_index()
        acc.set_device_index(last)
        try:
            return acc.current_device_index() == last and on(2).device.index == last
        finally:
            acc.set_device_index(before)

    def synchronized() -> object:
        y = on(256) * 2
        acc.synchronize()
        return bool(y[-1].item() == 510.0)

    def streams_and_events() -> object:
        stream = torch.Stream(device=device)
        start, end = torch.Event(device=device, enable_timing=True), torch.Event(device=device, enable_timing=True)
        with stream:  # (torch.Stream is its own context: current while inside)
            start.record(stream)
            y = on(64, 64) @ on(64, 64)
            end.record(stream)
        end.synchronize()
        elapsed = start.elapsed_time(end)
        stream.synchronize()
        return elapsed >= 0.0 and soon(stream.query) and bool(y.sum().item() > 0)

    def rng_state() -> object:
        state = mod.get_rng_state()
        first = torch.rand(8, device=device).cpu()
        mod.set_rng_state(state)
        return torch.equal(torch.rand(8, device=device).cpu(), first) and len(mod.get_rng_state_all()) == last + 1

    def fork_rng() -> object:
        with torch.random.fork_rng(devices=range(last + 1), device_type=device):
            inside = torch.rand(8, device=device).cpu()
        return torch.equal(torch.rand(8, device=device).cpu(), inside)

    def seeding() -> object:
        torch.manual_seed(11)
        first = torch.rand(8, device=device).cpu()
        torch.manual_seed(11)
        return torch.equal(torch.rand(8, device=device).cpu(), first) and mod.initial_seed() == 11

    def properties() -> object:
        props = mod.get_device_properties(0)
        return bool(mod.get_device_name(0)) and len(mod.get_device_capability(0)) == 2 and props.total_memory > 0

    def dtypes() -> object:  # (both answers agree; half types where the flavour computes them)
        supported = set(acc.get_device_capability()["supported_dtypes"])
        half = mod.is_bf16_supported()
        return torch.float32 in supported and half == (torch.bfloat16 in supported) == (torch.float16 in supported)

    def memory_statistics() -> object:
        acc.empty_cache()
        before = acc.memory_allocated()
        x = torch.empty(1 << 20, dtype=torch.uint8, device=device)
        grown = acc.memory_allocated() - before >= x.numel() and acc.max_memory_allocated() >= acc.memory_allocated()
        acc.reset_peak_memory_stats()
        return grown and acc.memory_reserved() >= acc.memory_allocated() and bool(acc.memory_stats())

    def profiled_step(trace: Path | None = None) -> list[Any]:
        """The device events of a profiled matmul (its Chrome trace into `trace`)."""
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
        with torch.profiler.profile(activities=activities) as prof:
            (on(32, 32) @ on(32, 32)).relu_()
            acc.synchronize()
        if trace is not None:
            prof.export_chrome_trace(str(trace))
        return [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]

    def profiled() -> object:
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp, "trace.json")
            device_events = profiled_step(trace)
            exported = trace.stat().st_size > 0
        if not device_events:
            (library,) = Path(mod.__file__).parent.glob("_C*.so")  # (the adapter's: it exports the C API)
            lacks = device_library_lacks(str(library), device, "trace_dropped")
            raise AssertionError(lacks or "no device event reached the profiler")
        return exported

    def graphed() -> object:  # a LeNet forward captured on a side stream, replayed on new inputs
        torch.manual_seed(0)
        model = lenet(torch).to(device).eval()
        batches = [torch.rand(8, 1, 28, 28, generator=torch.Generator().manual_seed(s)) for s in range(3)]
        static = batches[0].to(device)
        stream, graph = torch.Stream(device=device), acc.Graph()
        with torch.no_grad(), stream:
            model(static)  # warm-up outside the capture, as torch.cuda.graphs asks
            graph.capture_begin()
            out = model(static)
            graph.capture_end()
        replayed = []
        for batch in batches:
            static.copy_(batch.to(device))
            graph.replay()
            with torch.no_grad():
                replayed.append(torch.equal(out.cpu(), model(batch.to(device)).cpu()))  # bit for bit
        return all(replayed) or f"replay vs eager, per batch: {replayed}"

    found: list[Clause] = [
        Clause(
            "device module, current accelerator",
            f"torch.{device}, torch.accelerator.current_accelerator()",
            lambda: acc.current_accelerator().type == device and mod.is_available(),
        ),
        Clause("device count and index", "torch.accelerator.device_count(), set_device_index()", counted),
        Clause("synchronize", "torch.accelerator.synchronize()", synchronized),
        Clause("streams and timed events", "torch.Stream, torch.Event(enable_timing=True)", streams_and_events),
        Clause("RNG state", f"torch.{device}.get_rng_state/set_rng_state(_all)", rng_state)
        if not random_on_cpu
        else Clause(
            "RNG state",
            f"torch.{device}.get_rng_state/set_rng_state(_all)",
            lambda: len(mod.get_rng_state_all()) == last + 1,
            by_design="the device library has no random ops: their kernels run on the CPU, from its generator",
        ),
        Clause("RNG fork", f"torch.random.fork_rng(device_type={device!r})", fork_rng),
        Clause("seeding", f"torch.manual_seed, torch.{device}.initial_seed()", seeding),
        Clause(
            "device properties",
            f"torch.{device}.get_device_name/_capability/_properties",
            properties,
        ),
        Clause("pinned host memory", "Tensor.pin_memory().is_pinned()", lambda: torch.ones(3).pin_memory().is_pinned()),
        Clause("memory statistics", "torch.accelerator.memory_allocated/reserved/stats", memory_statistics),
        Clause(
            "autocast",
            f"torch.amp.is_autocast_available({device!r})",
            lambda: torch.amp.is_autocast_available(device),
        ),
    ]
    found += [
        Clause("dtype support", "torch.accelerator.get_device_capability(), is_bf16_supported()", dtypes)
        if hasattr(acc, "get_device_capability")
        else _lacks(torch, acc, "get_device_capability", "dtype support", "get_device_capability()", "accelerator"),
        Clause(
            "memory info",
            "torch.accelerator.get_memory_info()",
            lambda: list(acc.get_memory_info()) == list(mod.mem_get_info()),
        )
        if hasattr(acc, "get_memory_info")
        else _lacks(torch, acc, "get_memory_info", "memory info", "get_memory_info()", "accelerator"),
        Clause("profiler", "torch.profiler.profile(activities=[CPU, PrivateUse1])", profiled)
        if _has_privateuse1_profiler_registry(torch)
        else Clause(
            "profiler",
            "torch.profiler.profile(activities=[CPU, PrivateUse1])",
            lambda: profiled_step() == [],
            by_design=f"torch {torch.__version__} has no PrivateUse1 profiler registry (2.13 adds it): CPU events only",
        ),
        Clause("graph capture and replay (LeNet forward)", "torch.accelerator.Graph", graphed)
        if hasattr(acc, "Graph") and not lenet_on_cpu
        else Clause(
            "graph capture and replay (LeNet forward)",
            "torch.accelerator.Graph",
            refused(graphed, "capturing", UNIMPLEMENTED, any_of=True),  # (or the library has no capture)
            by_design=f"LeNet's {', '.join(lenet_on_cpu)} run on the CPU on this flavour: a capture holds no host work",
        )
        if hasattr(acc, "Graph")
        else _lacks(
            torch, acc, "Graph", "graph capture and replay (LeNet forward)", "torch.accelerator.Graph", "accelerator"
        ),
    ]
    return found


def check_contract(torch: ModuleType, device: str) -> ContractCheck:
    return run_clauses(clauses(torch, device))
