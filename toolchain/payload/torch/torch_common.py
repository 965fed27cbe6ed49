"""What the PyTorch adapter's checks share: tolerances (from devkit), logging, error lines."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

from records import DevkitTolerances, Tolerance

Tensor = Any  # a torch.Tensor (torch is absent where devkit is type-checked; the checks take it as a ModuleType)

TOL: DevkitTolerances = json.loads(os.environ.get("DEVKIT_TOLERANCES") or "{}")
if not TOL:
    sys.exit("DEVKIT_TOLERANCES is not set: these checks are run by `devkit verify`, which passes the tolerances")
FORWARD: Tolerance = {"rtol": TOL["op_rtol"], "atol": TOL["op_atol"]}
BACKWARD: Tolerance = {"rtol": TOL["grad_rtol"], "atol": TOL["grad_atol"]}
# Registered kernels the op cases reach only from inside other kernels (the dispatcher calls them
# below a Python dispatch mode), that every case uses, or that compute nothing to compare with
# the CPU (record_stream: the allocator's; the adapter's own tests cover it): exempt from the
# coverage check.
INFRASTRUCTURE = re.compile(
    r"^aten::(empty\.memory_format|empty_strided|_copy_from|_copy_from_and_resize|as_strided|view|"
    r"_reshape_alias|resize_|set_\..*|_local_scalar_dense|record_stream)$"
)


def log(msg: str) -> None:
    print(msg, flush=True)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:400]
