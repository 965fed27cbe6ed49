"""What the PyTorch adapter's checks share: tolerances (from devkit), logging, error lines."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from records import DevkitTolerances, Tolerance

Tensor = Any  # a torch.Tensor (torch is absent where devkit is type-checked; the checks take it as a ModuleType)

TOL: DevkitTolerances = json.loads(os.environ.get("DEVKIT_TOLERANCES") or "{}")
if not TOL:
    sys.exit("DEVKIT_TOLERANCES is not set: these checks are run by `devkit verify`, which passes the tolerances")
FORWARD: Tolerance = {"rtol": TOL["op_rtol"], "atol": TOL["op_atol"]}
BACKWARD: Tolerance = {"rtol": TOL["grad_rtol"], "atol": TOL["grad_atol"]}
# Kernels every op reaches (allocation, views, copies between devices): the op cases reach them only
# from inside other kernels (the dispatcher calls them below a Python dispatch mode) or they compute
# nothing to compare with the CPU (record_stream: the allocator's; the adapter's own tests cover it).
# By op name, any overload.
ALLOCATION_AND_VIEWS = frozenset(
    {
        *("empty", "empty_strided", "_copy_from", "_copy_from_and_resize", "as_strided", "view", "_reshape_alias"),
        *("resize_", "set_", "_local_scalar_dense", "record_stream"),
    }
)


def op_name(kernel: str) -> str:
    """'aten::add.out' -> 'add'."""
    return kernel.removeprefix("aten::").split(".")[0]


def is_infrastructure(kernel: str) -> bool:
    """Whether a registered aten kernel is one of ALLOCATION_AND_VIEWS: exempt from the coverage check."""
    return kernel.startswith("aten::") and op_name(kernel) in ALLOCATION_AND_VIEWS


def log(msg: str) -> None:
    print(msg, flush=True)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:400]
