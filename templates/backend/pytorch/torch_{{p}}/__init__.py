"""{{ NAME }} device plugin for PyTorch: the "{{ device_type }}" device (PrivateUse1).

`import torch` loads it through the "torch.backends" entry point (_autoload; set
TORCH_DEVICE_BACKEND_AUTOLOAD=0 to stop that); `import torch_{{ p }}` does the same.
Python reaches the C++ library only through torch.ops.{{ p }}.* (TORCH_LIBRARY), so the
wheel serves every Python 3 version.
"""

from __future__ import annotations

import os
import sys

from . import _build_info

__version__ = _build_info.PLUGIN_VERSION
_loaded = False


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def _mismatch_message(found_torch: str, detail: str = "") -> str:
    built = _build_info.TORCH_VERSION
    message = (
        f"torch-{{ p }} {_build_info.PLUGIN_VERSION} was built for torch {built}, but torch {found_torch} "
        f"is installed. Install the matching torch (pip install torch=={built}) or rebuild the "
        f"plugin against this one (devkit build --framework torch)."
    )
    return message + (f"\n{detail}" if detail else "")


def check_torch_version(found_torch: str) -> None:
    """Raise the RuntimeError import gives when `found_torch` is not the torch we were built for."""
    if _public(found_torch) != _build_info.TORCH_VERSION:
        raise RuntimeError(_mismatch_message(found_torch))


def _load_library(torch) -> bool:
    """False when the vendor SDK's runtime is missing or another version: one line, and torch
    goes on without the device (CPU work must not break because a driver is not installed)."""
    library = os.path.join(os.path.dirname(__file__), "_C.so")
    try:
        torch.ops.load_library(library)
    except OSError as error:  # missing symbols, wrong libstdc++, ...: say which package and why
        reason = str(error.__cause__ or error)  # torch's own OSError wraps the dynamic loader's
        missing = next((lib for lib in _build_info.SDK_RUNTIME_LIBS if f"{lib}:" in reason), None)
        sdk = _build_info.SDK
        if missing is None and not sdk:
            raise RuntimeError(_mismatch_message(torch.__version__, f"loading {library} failed: {reason}")) from error
        if missing:
            found = f"{missing} could not be loaded"
            if "version `" in reason:  # "libX.so.1: version `X_2.0' not found": older than the one built against
                found = f"the {missing} found is of another version"
            what = f"it needs the {sdk} runtime, and {found} ({reason})"
            libs = _build_info.SDK_RUNTIME_LIBS
            provides = ", ".join(libs[:-1]) + (" and " if len(libs) > 1 else "") + libs[-1]
            fix = f"Install the {sdk} runtime (the driver package, which provides {provides}) to use it"
        else:  # a symbol the installed runtime (or torch) lacks: the versions differ
            what = f"the plugin library could not be loaded ({reason})"  # the reason names it
            fix = (
                f"It was built for the {sdk} runtime and torch {_build_info.TORCH_VERSION}: install those, or "
                "rebuild the plugin against what is installed (devkit build --framework torch)"
            )
        print(
            f"torch-{{ p }}: the {{ device_type }} device is unavailable: {what}. {fix}; torch works without it "
            "on the CPU.",
            file=sys.stderr,
        )
        return False
    return True


def _register(torch) -> None:
    from . import _autograd_exit, _inductor_cache, _inductor_extern
    from . import device as device_module

    _inductor_cache.use_private_caches()  # before anything compiles: /tmp/torchinductor_<user> is anyone's to take
    _inductor_extern.install()  # before anything compiles: pooling on the device stays the device's kernels

    torch.utils.rename_privateuse1_backend("{{ device_type }}")
    torch._register_device_module("{{ device_type }}", device_module)
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
    torch.ops.{{ p }}.skipped_kernels()  # prints what {{ NAME }}_FALLBACK_OPS removed, once
    _autograd_exit.install(torch)  # a backward's device thread must not outlive Python's finalization
    if torch.distributed.is_available():
        from . import distributed

        distributed.register()


def _autoload() -> None:
    """Entry point torch calls at import; cheap and idempotent."""
    global _loaded
    if _loaded:
        return
    import torch  # `import torch_{{ p }}` first: torch's own import runs this entry point

    if _loaded:
        return
    check_torch_version(torch.__version__)
    if _load_library(torch):
        _register(torch)
    _loaded = True


_autoload()
