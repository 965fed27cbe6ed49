"""What every framework's checks share (NumPy and the standard library only): the verify data
set as written by devkit, the verdict on a model trained on the device and on the CPU from the
same weights and batches, and each check's time."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def timed(check: Callable[[], dict]) -> dict:
    """The check's result with the seconds it took (reports show where a verify's time goes,
    under qemu above all)."""
    start = time.perf_counter()
    result = check()
    result["seconds"] = round(time.perf_counter() - start, 2)
    return result


def load_data(path: str | None) -> dict | None:
    """The .npz `devkit verify` writes: x_train, y_train, x_test, y_test and its source."""
    if not path:
        return None
    with np.load(path) as npz:
        data = {k: npz[k] for k in ("x_train", "y_train", "x_test", "y_test")}
        data["source"] = str(npz["source"])
    return data


def training_verdict(
    name: str, dev: dict, cpu: dict, criteria: dict, data: dict, steps: int, batch: int, seed: int
) -> dict:
    """The check's report: the loss drop on the device (mean of the first vs the last steps), its
    held-out accuracy and the largest per-step loss difference to CPU, against `criteria`
    (min_loss_drop_fraction, min_heldout_accuracy, max_curve_abs_diff)."""
    window = max(1, min(10, steps // 4))
    first, last = float(np.mean(dev["losses"][:window])), float(np.mean(dev["losses"][-window:]))
    drop = 1.0 - last / first if first > 0 else 0.0
    curve_diff = float(np.max(np.abs(np.array(dev["losses"]) - np.array(cpu["losses"]))))
    passed = (
        drop >= criteria["min_loss_drop_fraction"]
        and dev["heldout_accuracy"] >= criteria["min_heldout_accuracy"]
        and curve_diff <= criteria["max_curve_abs_diff"]
    )
    return {
        "name": name,
        "passed": bool(passed),
        "detail": (
            f"loss {first:.3f} -> {last:.3f} (drop {drop:.0%}), held-out accuracy "
            f"{dev['heldout_accuracy']:.3f} (cpu {cpu['heldout_accuracy']:.3f}), "
            f"max |loss diff vs cpu| {curve_diff:.2e}"
        ),
        "criteria": criteria,
        "dataset": data["source"],
        "steps": steps,
        "batch_size": batch,
        "seed": seed,
        "loss_drop_fraction": drop,
        "max_curve_abs_diff": curve_diff,
        "device": dev,
        "cpu": cpu,
    }
