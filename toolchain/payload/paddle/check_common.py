"""What every payload check shares: Paddle imported with CPU fallback off, the tolerances
devkit passes, logging and comparison helpers. Standard library, NumPy and Paddle only:
these modules run in the target's verify environment, next to each other (sys.path)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

# Every check runs with CPU fallback off: an op without a device kernel must fail
# loudly instead of silently running on the host. (fallback_report.py imports this
# module with fallback on, to list what falls back.)
os.environ.setdefault("FLAGS_enable_api_kernel_fallback", "0")
os.environ.setdefault("GLOG_minloglevel", "2")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.nn as nn  # noqa: E402
import paddle.nn.functional as F  # noqa: E402
from records import DevkitTolerances, Tolerance, TrainingCriteria  # noqa: E402

# The check modules take Paddle from here, so it is imported after the flags above.
__all__ = ["BACKWARD_TOL", "FORWARD_TOL", "MNIST_CRITERIA", "F", "Tensor", "log", "nn", "np", "paddle", "tolerances"]

Tensor = Any  # a paddle.Tensor (Paddle has no types, and is absent where devkit is type-checked)


def tolerances() -> DevkitTolerances:
    """The project's [tool.devkit.tolerances], resolved by devkit and passed whole: payloads hold no defaults."""
    raw = os.environ.get("DEVKIT_TOLERANCES")
    if not raw:
        sys.exit("DEVKIT_TOLERANCES is not set: these checks are run by `devkit verify`, which passes the tolerances")
    tol: DevkitTolerances = json.loads(raw)
    return tol


_TOL = tolerances()
FORWARD_TOL: Tolerance = {"rtol": _TOL["op_rtol"], "atol": _TOL["op_atol"]}
BACKWARD_TOL: Tolerance = {"rtol": _TOL["grad_rtol"], "atol": _TOL["grad_atol"]}
# MNIST acceptance: stated here and copied into the report.
MNIST_CRITERIA: TrainingCriteria = {
    "min_loss_drop_fraction": _TOL["min_loss_drop"],  # mean of the last 10 losses <= half the first 10
    "min_heldout_accuracy": _TOL["min_accuracy"],
    "max_curve_abs_diff": _TOL["max_curve_diff"],  # per-step |loss_device - loss_cpu|
}


def log(msg: str) -> None:
    print(msg, flush=True)


# float16 results agree to one unit in the last place: the float -> half conversions of Paddle's
# wheel and of a plugin compiled apart may round a tie differently (measured on aarch64).
HALF_TOL: Tolerance = {"rtol": 2.0**-10, "atol": 2.0**-24}


def _compare(a: np.ndarray, b: np.ndarray, tol: Tolerance) -> tuple[bool, float]:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, float("inf")
    if a.size == 0:
        return True, 0.0
    if a.dtype == np.float16:
        tol = {"rtol": max(tol["rtol"], HALF_TOL["rtol"]), "atol": max(tol["atol"], HALF_TOL["atol"])}
    wide = np.complex128 if np.iscomplexobj(a) else np.float64  # (complex: both parts compared)
    diff = float(np.max(np.abs(a.astype(wide) - b.astype(wide))))
    return bool(np.allclose(a, b, **tol)), diff


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("C++ Traceback", "-----", "0 ", "1 ", "2 ")) and "Error" in line:
            return line[:400]
    return (text.splitlines() or [type(exc).__name__])[0][:400]
