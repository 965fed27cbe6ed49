"""torch.compile onto the {{ device_type }} device: the classes Inductor's device seam looks up.

Inductor finds a PrivateUse1 backend through its device module (torch.{{ device_type }}): the
names Scheduling, PythonWrapperCodegen, CppWrapperCodegen and WrapperFxCodegen
(torch/_inductor/codegen/common.py, init_backend_registration). device.py hands them out from
here on first use, so `import torch` stays as fast as without Inductor; importing this module
registers the device's DeviceOpOverrides (what the generated Python writes for the current
stream, device guard and synchronize) and dynamo's DeviceInterface. No torch code is patched.

Who runs what:
- Scheduling: Inductor's C++ code generator writes and compiles each fused kernel for the host
  CPU (the reference device computes on it), and every kernel gets an entry point
  `{{ p }}_entry(void* const* args)` the device library can call. A vendor's own code generator
  (a Triton backend, a graph compiler) replaces this class: VENDOR below marks the place.
- PythonWrapperCodegen: where Inductor's generated Python would call a kernel, it calls
  launch(): torch.ops.{{ p }}.launch_kernel queues the kernel on the device's current stream,
  in order with eager kernels, and the device library's worker runs it against its own view of
  device memory. The op takes a handle torch.ops.{{ p }}.load_kernel gave out for the compiled
  module (never an address): the C++ side opens the module and finds its entry point itself.
  The host never gets a readable pointer; a kernel's errors surface at the next synchronising
  call, like any queued work.
- matmul, convolution, the ops without a lowering and the ops the device computes better than
  the generated loops (max pooling: _inductor_extern.py) stay aten calls (Inductor's extern
  kernels): the device's eager kernels.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._dynamo import device_interface
from torch._inductor import config, decomposition
from torch._inductor.codegen import common, wrapper
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.cpp_utils import DTYPE_TO_CPP
from torch._inductor.utils import Placeholder
from torch._inductor.virtualized import V

from . import _build_info, _inductor_extern

DEVICE_TYPE = "{{ device_type }}"
# The torch releases whose Inductor seam this module was written and verified against.
SEAM_TORCH = ({% for seam in inductor_seam %}"{{ seam }}", {% endfor %})
# Whether the device library runs compiled kernels ({{ p }}_launch_kernel): the flavour decides.
COMPILED_KERNELS = {{ "True" if compiled_kernels else "False" }}
_ops = torch.ops.{{ p }}


def refusal() -> str | None:
    """Why Inductor cannot target the device in this build, in one line (None: it can)."""
    fallback = 'compile with torch.compile(model, backend="aot_eager") (graphs captured, eager device kernels)'
    if not COMPILED_KERNELS:
        return f"this {{ device_type }} device library (its flavour) cannot launch compiled kernels: {fallback}"
    seam = ".".join(_build_info.TORCH_VERSION.split(".")[:2])
    if seam not in SEAM_TORCH:
        return (
            f"torch.compile's Inductor backend on {{ device_type }} needs torch {' or '.join(SEAM_TORCH)} (the "
            f"device seam it was written for), and this plugin is built for torch {_build_info.TORCH_VERSION}: "
            f"{fallback}"
        )
    return None


# ---- kernels --------------------------------------------------------------------------
_ARG_KINDS = {"const int64_t": "i", "int64_t": "i", "const float": "f", "float": "f", "const double": "d", "double": "d"}


def _kind(arg_type: str) -> str:
    """The launch kind of a C argument type Inductor declares: b(uffer), i(nt64), f(loat32), d(ouble)."""
    if arg_type.rstrip().endswith("*"):
        return "b"
    if arg_type in _ARG_KINDS:
        return _ARG_KINDS[arg_type]
    raise RuntimeError(f"an Inductor kernel takes a {arg_type!r}, which {{ p }}_launch_kernel cannot pass")


_ENTRY_SOURCE = """
// The {{ device_type }} device library calls this on a stream's worker ({{ p }}_launch_kernel):
// buffers are its views of device memory, values point at copies.
template <typename T>
static inline T {{ p }}_arg(void* a) {
  if constexpr (std::is_pointer_v<T>) return static_cast<T>(a);
  else return *static_cast<const std::remove_cv_t<T>*>(a);
}
extern "C" __attribute__((visibility("default"))) void {{ p }}_entry(void* const* args) { @KERNEL@(@PARAMS@); }
// What load_kernel reads: the kinds of the entry's arguments, which launch_kernel checks a launch against.
extern "C" __attribute__((visibility("default"), used)) const char {{ p }}_entry_kinds[] = "@KINDS@";
"""


def _entry_source(arg_types: list[str]) -> str:
    """The kernel's device entry point: unpacks the library's argument array into its parameters."""
    params = ", ".join(f"{{ p }}_arg<{t}>(args[{i}])" for i, t in enumerate(arg_types))
    kinds = "".join(_kind(t) for t in arg_types)
    return (
        _ENTRY_SOURCE.replace("@KERNEL@", str(Placeholder.KERNEL_NAME))
        .replace("@PARAMS@", params)
        .replace("@KINDS@", kinds)
    )


class Scheduling(CppScheduling):
    """Inductor's C++ scheduling, each kernel given the device entry point.

    VENDOR: a device with its own compiler replaces this class (and launch()'s argument
    handling, if its kernels take other arguments): subclass TritonScheduling or a scheduling
    of your own here, and have your runtime's launch take the generated binaries.
    """

    def __init__(self, scheduler: Any) -> None:
        reason = refusal()
        if reason:
            raise RuntimeError(reason)
        super().__init__(scheduler)

    # The device runs a kernel on its stream's one worker, as it runs an eager op: a kernel that
    # forked OpenMP threads would take the host cores the program queueing the work runs on (the
    # LeNet step measured 34 CPU-ms with them, 19.5 without: benchmarks/torch_vs_cpu.py). So the
    # device's kernels are generated for one thread; Inductor's CPU kernels are left as they are.
    def codegen_node(self, node: Any) -> None:
        with config.patch({"cpp.threads": 1}):
            super().codegen_node(node)

    def codegen_template(self, *args: Any, **kwargs: Any) -> Any:
        with config.patch({"cpp.threads": 1}):
            return super().codegen_template(*args, **kwargs)

    def flush(self) -> None:
        with config.patch({"cpp.threads": 1}):
            super().flush()

    def define_kernel(self, src_code: str, nodes: Any, kernel_args: Any = None) -> str:
        args = self.kernel_group.args if kernel_args is None else kernel_args
        _, _, arg_types = args.cpp_argdefs(DTYPE_TO_CPP)
        return super().define_kernel(src_code + _entry_source(arg_types), nodes, kernel_args)


# ---- the generated Python ---------------------------------------------------------------
class _LaunchOnDevice:
    """Kernel calls of the generated Python become launch() calls on the device's queue."""

    def write_header(self) -> None:
        super().write_header()  # type: ignore[misc]
        self.imports.writeline(f"from torch_{{ p }}._inductor import launch as {{ p }}_launch")  # type: ignore[attr-defined]

    def _generate_kernel_call_helper(self, kernel_name: str, call_args: list[Any], **kwargs: Any) -> None:
        device = kwargs.get("device") or V.graph.get_current_device_or_throw()
        if kwargs.get("triton", True) or device.type != DEVICE_TYPE:
            return super()._generate_kernel_call_helper(kernel_name, call_args, **kwargs)  # type: ignore[misc]
        kinds = "".join(_kind(t) for t in kwargs["arg_types"])
        # the arguments split by kind here, once, not at every launch: buffers, ints, floats
        lists = [", ".join(a for a, k in zip(call_args, kinds, strict=True) if k in group) for group in ("b", "i", "fd")]
        split = ", ".join(f"[{arguments}]" for arguments in lists)
        self.writeline(f"{{ p }}_launch({kernel_name}, {kernel_name!r}, {device.index}, {kinds!r}, {split})")  # type: ignore[attr-defined]
        return None

    def make_allocation(self, name: str, device: Any, dtype: Any, shape: Any, stride: Any, *args: Any, **kw: Any) -> str:
        # Inductor guards the current device only around GPU types' code and allocates on the
        # current device: the device's buffers are allocated on their card by name instead.
        line = super().make_allocation(name, device, dtype, shape, stride, *args, **kw)  # type: ignore[misc]
        if device.type != DEVICE_TYPE or device.index is None:
            return line
        return line.replace(f"device='{DEVICE_TYPE}'", f"device='{DEVICE_TYPE}:{device.index}'", 1)


class PythonWrapperCodegen(_LaunchOnDevice, wrapper.PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph: bool, subgraph_name: Any, parent_wrapper: Any, partition_signatures: Any = None) -> Any:
        if is_subgraph:
            return SubgraphPythonWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return PythonWrapperCodegen()


class SubgraphPythonWrapperCodegen(_LaunchOnDevice, wrapper.SubgraphPythonWrapperCodegen):
    pass


class CppWrapperCodegen:
    """cpp_wrapper and AOTInductor: torch 2.13 has no C++ wrapper for PrivateUse1 devices."""

    supports_caching = False  # (what Inductor asks before it creates one)

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "torch.compile with cpp_wrapper and AOTInductor (torch._inductor.aoti_compile_and_package) are not "
            "supported on {{ device_type }} (torch 2.13 has no C++ wrapper for PrivateUse1 devices): use the "
            "default Python wrapper (torch.compile(model))"
        )


class WrapperFxCodegen(CppWrapperCodegen):
    """Inductor's FX wrapper (config fx_wrapper): not supported either."""

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "torch.compile's FX wrapper (torch._inductor.config.fx_wrapper) is not supported on {{ device_type }}: "
            "use the default Python wrapper"
        )


# ---- launching --------------------------------------------------------------------------
# kernel (the compiled module's function) -> the handle load_kernel gave out for its module
_handles: dict[Any, int] = {}


def _handle_of(kernel: Any) -> int:
    handle = _handles.get(kernel)
    if handle is None:  # the module Inductor compiled and loaded, opened once more by the adapter
        handle = _handles[kernel] = int(_ops.load_kernel(kernel.__self__.__file__))
    return handle


_launch_kernel = _ops.launch_kernel.default  # (the overload itself: one lookup less per launch)


def launch(kernel: Any, name: str, device: int | None, kinds: str, buffers: list, ints: list, floats: list) -> None:
    """Queues a compiled kernel on `device`'s current stream (what the generated Python calls, its
    arguments split by kind: 5.2 us of host time a launch where splitting them here took 8.4)."""
    index = torch.{{ device_type }}.current_device() if device is None else device
    _launch_kernel(_handle_of(kernel), name, index, kinds, buffers, ints, floats)


def raw_stream(device_index: int) -> int:
    """The current stream's id on the device (what generated code calls get_raw_stream)."""
    return int(_ops.current_stream_id(device_index))


# ---- what the generated Python writes for the device ------------------------------------
class DeviceOpOverrides(common.DeviceOpOverrides):
    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from torch_{{ p }}._inductor import raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        return f"torch.{{ device_type }}.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.{{ device_type }}.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.{{ device_type }}.device({device_idx})"

    def current_stream(self) -> str:
        return "torch.{{ device_type }}.current_stream()"


# ---- dynamo's view of the device ----------------------------------------------------------
class DeviceInterface(device_interface.DeviceInterface):
    device = torch.{{ device_type }}.device  # type: ignore[assignment]
    Event = torch.Event  # type: ignore[assignment]
    Stream = torch.Stream  # type: ignore[assignment]

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch.{{ device_type }}.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch.{{ device_type }}.current_device()

        @staticmethod
        def get_device_properties(device: Any = None) -> Any:
            return DeviceInterface.get_device_properties(device)

    current_device = staticmethod(torch.{{ device_type }}.current_device)
    set_device = staticmethod(torch.{{ device_type }}.set_device)
    device_count = staticmethod(torch.{{ device_type }}.device_count)
    is_available = staticmethod(torch.{{ device_type }}.is_available)
    current_stream = staticmethod(torch.{{ device_type }}.current_stream)
    synchronize = staticmethod(torch.{{ device_type }}.synchronize)
    get_raw_stream = staticmethod(raw_stream)
    stream = staticmethod(torch.{{ device_type }}.stream)

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        torch.accelerator.set_stream(stream)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return DeviceInterface.exchange_device(device)

    @staticmethod
    def exchange_device(device: int) -> int:
        previous = torch.{{ device_type }}.current_device()
        if device >= 0 and device != previous:
            torch.{{ device_type }}.set_device(device)
        return previous

    @classmethod
    def get_device_properties(cls, device: Any = None) -> Any:
        return torch.{{ device_type }}.get_device_properties(device)

    @staticmethod
    def get_compute_capability(device: Any = None) -> str:
        return ""

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return {{ "True" if half_precision else "False" }}

    @staticmethod
    def memory_allocated(device: Any = None) -> int:
        return torch.{{ device_type }}.memory_allocated(device)

    @staticmethod
    def is_triton_capable(device: Any = None) -> bool:
        return False


# Inductor's scheduler reorders and reindexes loops for every device but "cpu" as if its
# kernels were SIMD (Triton-style) ones, and skips that only for "cpu": on C++ kernels the
# reindexing fails (scheduler.py, _try_reindex_pointwise_for_reduction reads their loop groups
# as SIMD ones). The device runs the C++ scheduling, so it gets what "cpu" gets. (They are only
# consulted for devices that are not "cpu": CPU compiles are unchanged. A vendor whose
# Scheduling is SIMD-based deletes these lines.)
config.loop_ordering_after_fusion = False
config.loop_reindexing_after_fusion = False
config.loop_index_inversion_in_fusion = False

_inductor_extern.skip_decompositions(decomposition)  # (done already if the adapter registered itself)
_inductor_extern.lower_as_extern()
common.register_device_op_overrides(DEVICE_TYPE, DeviceOpOverrides())
device_interface.register_interface_for_device(DEVICE_TYPE, DeviceInterface)
for _index in range(torch.{{ device_type }}.device_count()):
    device_interface.register_interface_for_device(f"{DEVICE_TYPE}:{_index}", DeviceInterface)
