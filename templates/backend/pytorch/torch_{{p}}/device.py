"""torch.{{ device_type }}: devices, memory statistics, streams, seeds and the CPU-fallback counters."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

_ops = torch.ops.{{ p }}
# c10::DeviceType::PrivateUse1, what torch.Stream(device_type=...) takes
_PRIVATEUSE1 = 20


def _index(device=None) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "{{ device_type }}":
        raise ValueError(f"expected a {{ device_type }} device, got {device}")
    return current_device() if device.index is None else device.index


def is_available() -> bool:
    return device_count() > 0


def device_count() -> int:
    return int(_ops.device_count())


def current_device() -> int:
    return torch.accelerator.current_device_index() if _accelerator_is_us() else 0


def _accelerator_is_us() -> bool:
    acc = torch.accelerator.current_accelerator() if hasattr(torch, "accelerator") else None
    return acc is not None and acc.type == "{{ device_type }}"


def set_device(device) -> None:
    index = _index(device)
    if _accelerator_is_us():
        torch.accelerator.set_device_index(index)
    elif index != 0:
        raise ValueError(f"{{ device_type }}:{index} does not exist")


class device:  # noqa: N801 - mirrors torch.cuda.device; torch.load places tensors with it
    """Context manager making `device` the current {{ device_type }} device."""

    def __init__(self, device) -> None:
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self) -> None:
        self.previous = current_device()
        if self.index >= 0 and self.index != self.previous:
            set_device(self.index)

    def __exit__(self, *exc) -> bool:
        if self.index >= 0 and self.index != self.previous:
            set_device(self.previous)
        return False


def synchronize(device=None) -> None:
    """Waits for all work queued on the device, on every stream."""
    _ops.synchronize(_index(device))


def is_initialized() -> bool:
    return True


# torch.utils.checkpoint saves and restores the device's generator state only when the device
# module says it is initialised (it reads this attribute, as torch.cuda's): without it the
# recomputed forward pass draws other random numbers, and the gradients silently differ.
_initialized = True


def _is_in_bad_fork() -> bool:  # torch.manual_seed asks before seeding us
    return False


def _lazy_init() -> None:  # torch calls this on device modules before using them
    pass


@dataclass(frozen=True)
class DeviceProperties:
    """What torch.cuda.get_device_properties() gives, as far as the device library tells it."""

    name: str
    total_memory: int  # the device library's capacity ({{ NAME }}_MEMORY_MB on the host-backed device)
    multi_processor_count: int  # the host-backed device computes on the host's cores
    major: int
    minor: int


def get_device_properties(device=None) -> DeviceProperties:
    index = _index(device)
    major, minor = get_device_capability(index)
    return DeviceProperties(get_device_name(index), mem_get_info(index)[1], os.cpu_count() or 1, major, minor)


def get_device_name(device=None) -> str:
    """The device library has no name query: every {{ device_type }} device is "{{ NAME }}"."""
    _index(device)  # (a device that does not exist still raises)
    return "{{ NAME }}"


def get_device_capability(device=None) -> tuple[int, int]:
    """(the device library's API version, 0): the device has no compute capability of its own."""
    _index(device)
    return int(_ops.device_api_version()), 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the device computes bfloat16 (its kernels are registered for it)."""
    return {{ "True" if half_precision else "False" }}


# ---- random numbers --------------------------------------------------------------------
def manual_seed(seed: int) -> None:
    _ops.manual_seed(int(seed), current_device())


def manual_seed_all(seed: int) -> None:
    for d in range(device_count()):
        _ops.manual_seed(int(seed), d)


def initial_seed() -> int:
    return int(_ops.initial_seed(current_device()))


def seed() -> None:
    """Seeds the current device's generator with a non-deterministic number."""
    _ops.seed(current_device())


def seed_all() -> None:
    for d in range(device_count()):
        _ops.seed(d)


def get_rng_state(device="{{ device_type }}") -> torch.Tensor:
    """The device's generator state (a CPU uint8 tensor): torch.random.fork_rng and
    torch.utils.checkpoint save it and set it back to draw the same numbers again."""
    return _ops.get_rng_state(_index(device))


def set_rng_state(new_state: torch.Tensor, device="{{ device_type }}") -> None:
    _ops.set_rng_state(new_state, _index(device))


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(d) for d in range(device_count())]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for d, state in enumerate(new_states):
        set_rng_state(state, d)


# ---- memory (the caching allocator's accounting) -------------------------------------------
def memory_stats(device=None) -> dict[str, int]:
    """The caching allocator's counters for the device, with torch.cuda.memory_stats()' keys
    (allocated_bytes: blocks in use by tensors; reserved_bytes: held from the device library,
    in use or cached; num_device_alloc: calls into the device library)."""
    names, values = _ops.memory_stats(_index(device))
    return dict(sorted(zip(names, (int(v) for v in values))))


def memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None) -> None:
    _ops.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device=None) -> None:
    _ops.reset_accumulated_memory_stats(_index(device))


def empty_cache() -> None:
    """Gives the memory the allocator caches (not what tensors use) back to the device library."""
    _ops.empty_cache()


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device as the device library counts them (cached memory is not free)."""
    free, total = _ops.mem_get_info(_index(device))
    return int(free), int(total)


# ---- streams and events ----------------------------------------------------------------
def Stream(device=None, priority: int = 0) -> torch.Stream:  # noqa: N802 - mirrors torch.cuda.Stream
    return torch.Stream(device=torch.device("{{ device_type }}", _index(device)), priority=priority)


def Event(enable_timing: bool = False) -> torch.Event:  # noqa: N802 - mirrors torch.cuda.Event
    return torch.Event(device=torch.device("{{ device_type }}", current_device()), enable_timing=enable_timing)


def stream(stream: torch.Stream) -> torch.Stream:
    """`with torch.{{ device_type }}.stream(s):` makes s the current stream (as torch.cuda.stream)."""
    return stream


def current_stream(device=None) -> torch.Stream:
    index = _index(device)
    return torch.Stream(
        stream_id=int(_ops.current_stream_id(index)),
        device_index=index,
        device_type=_PRIVATEUSE1,
    )


def library_stream_id(stream: torch.Stream) -> int:
    """The device library's id of `stream`: what its op trace ({{ NAME }}_DUMP_OP_ARGS) prints as stream=<id>."""
    return int(_ops.library_stream_id(stream.device_index, stream.stream_id))


# ---- mixed precision -------------------------------------------------------------------
def get_amp_supported_dtype() -> list[torch.dtype]:
    """What torch.autocast("{{ device_type }}") may cast to (torch asks the device module)."""
    return [{{ "torch.float16, torch.bfloat16" if half_precision else "" }}]


# ---- CPU fallback --------------------------------------------------------------------
def fallback_counts() -> dict[str, int]:
    """Ops that ran on the CPU because they have no {{ device_type }} kernel, with how often."""
    names, counts = _ops.fallback_counts()
    return dict(zip(names, counts))


def reset_fallback_counts() -> None:
    _ops.reset_fallback_counts()


@contextlib.contextmanager
def strict_fallback(enabled: bool) -> Iterator[None]:
    """Within the block, a CPU fallback raises (enabled) or runs (not), whatever
    {{ NAME }}_STRICT_FALLBACK said at load; the setting before it comes back after."""
    previous = bool(_ops.set_strict_fallback(enabled))
    try:
        yield
    finally:
        _ops.set_strict_fallback(previous)


def unimplemented_kernels() -> list[str]:
    """Patterns of the aten ops left to the CPU because the device library lacks them (empty
    for the host-backed device): their fallbacks are by design, any other is a missing kernel."""
    return list(_ops.unimplemented_kernels())


def routed_to_cpu() -> list[str]:
    """The aten ops registered for {{ device_type }} only to send them to the CPU fallback (their
    kernel for every backend is a composite the backend fallback would never see): no device kernel."""
    return [f"aten::{op}" for op in _ops.routed_to_cpu()]


def registered_kernels() -> list[str]:
    """The aten ops with a {{ device_type }} kernel (after {{ NAME }}_FALLBACK_OPS), sorted."""
    return sorted(torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))


# ---- torch.compile ---------------------------------------------------------------------
# What Inductor looks up on the device module (torch/_inductor/codegen/common.py), imported
# on first use: Inductor is heavy, and most programs never compile.
_INDUCTOR_NAMES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")


def __getattr__(name: str) -> Any:
    if name in _INDUCTOR_NAMES:
        from . import _inductor

        return getattr(_inductor, name)
    raise AttributeError(f"module torch.{{ device_type }} has no attribute {name!r}")
