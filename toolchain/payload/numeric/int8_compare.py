"""How an int8 result compares with its simulated-int8 reference, in LSBs of the reference's int8
grid (NumPy arrays, no framework): the engine's checks, the quantized models' float64 spread, the
inference bundle's check."""

from __future__ import annotations

from typing import Any

import numpy as np


def lsb(reference: Any) -> float:
    return float(np.abs(reference).max()) / 127 or 1.0


# Two classes whose simulated-int8 scores are this close may swap places: each output may be off by
# the 1 LSB a rounding tie carries (the mean bound below), so two may move 2 LSB towards each other.
# (Random weights make such near ties common: MobileNetV1's top two, 1.26 LSB apart, swapped.)
TOP1_TIE_LSB = 2.0


def compare(out: Any, reference: Any) -> dict[str, Any]:
    """The engine's output against the simulated int8 one, in LSBs of the output's int8 grid.
    `top1_gap_lsb`: how far below the reference's top score the reference scores the engine's top-1
    class (0 when they agree; within TOP1_TIE_LSB, a tie at int8 resolution)."""
    step = lsb(reference)
    diff = np.abs(out.astype(np.float64) - reference.astype(np.float64))
    top1 = int(np.argmax(out))
    return {
        "max_abs_diff": float(diff.max()),
        "max_lsb": float(diff.max() / step),
        "mean_lsb": float(diff.mean() / step),
        "top1": top1,
        "reference_top1": int(np.argmax(reference)),
        "top1_gap_lsb": float((reference.max() - reference.reshape(-1)[top1]) / step),
    }


def top1_verdict(model: dict[str, Any]) -> tuple[bool, str]:
    """Whether the engine's top-1 holds against the simulated int8 one (the same class, or one tied with
    it within TOP1_TIE_LSB), and how to say it."""
    if model["top1"] == model["reference_top1"]:
        return True, "agrees"
    gap = model["top1_gap_lsb"]
    said = f"is class {model['top1']}, {gap:.2f} LSB below the reference's {model['reference_top1']}"
    tied = gap <= TOP1_TIE_LSB
    return tied, said + (f" (a tie at int8 resolution: <= {TOP1_TIE_LSB:g} LSB)" if tied else ": DIFFERS")
