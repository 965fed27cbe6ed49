"""C functions a loaded Paddle plugin exports for devkit, read through ctypes (no Paddle import
here: the caller has loaded Paddle and with it the plugin)."""

from __future__ import annotations

import ctypes
import glob
import os
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _ctypes import CFuncPtr


def plugin_function(device: str, name: str) -> tuple[str, CFuncPtr] | tuple[None, None]:
    """(path, function) of the loaded plugin that exports <device>_<name>, found where Paddle
    looks for plugins (CUSTOM_DEVICE_ROOT, site-packages); (None, None) when none does. A
    devkit plugin is two libraries: the loader Paddle opens and, one directory down, the plugin
    proper it opened (which exports the functions)."""
    roots = [os.environ.get("CUSTOM_DEVICE_ROOT", "")] + [os.path.join(p, "paddle_custom_device") for p in sys.path]
    for root in filter(None, roots):
        found = glob.glob(os.path.join(root, "*.so")) + glob.glob(os.path.join(root, device, "*.so"))
        for path in sorted(found):
            try:
                lib = ctypes.CDLL(path)  # loaded by Paddle (or its loader) already: the same handle
            except OSError:  # one the loader could not open either (it said why)
                continue
            if hasattr(lib, f"{device}_{name}"):
                return path, getattr(lib, f"{device}_{name}")
    return None, None


def unimplemented_kernels(device: str) -> list[str]:
    """Patterns of the kernels the plugin leaves unregistered because its device library lacks
    their ops (empty for the host-backed device, or a plugin without the query)."""
    _path, query = plugin_function(device, "unimplemented_kernels")
    if query is None:
        return []
    query.restype = ctypes.c_char_p
    return [p for p in query().decode().split(",") if p]


def by_design(names: Iterable[str], patterns: list[str]) -> list[str]:
    """The kernels (or ops) among `names` the plugin leaves to Paddle's CPU by design."""
    return [n for n in names if any(re.fullmatch(p, n) for p in patterns)]
