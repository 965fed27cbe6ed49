"""CPU curves kept between verifications.

A training check compares the device's loss curve with the framework's CPU curve for the same
weights, batches and optimizer. That curve depends on nothing the vendor edits: the runtime
release, the data, the run's settings, devkit's training code and the processor that computed it.
Training it again is half of a host verification's training check (LeNet, 200 steps: 2.6 s of
4.8), so it is kept in devkit's cache after a verification whose training check passed, under all
of those and the runner that trained it, and given to the next verification that needs the same
one. The report then says where it came from
("paddle 3.3.1 CPU on x86_64, kept from 2026-11-30 21:40 UTC").

Only a curve from this user's private directory is used, read without following links, whole and
of the run's length; anything else is passed over and the curve is trained again (and kept again).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import platform
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from ..run.envs import cache_root
from ..util.errors import EnvironmentProblem
from ..util.fsutil import private_dir, write_atomic
from ..util.resources import PAYLOAD_DIR

if TYPE_CHECKING:
    from .datasets import Dataset
    from .report import Report

KEPT_LIMIT = 1 << 20  # bytes: a curve of thousands of steps is far less
# What a CPU computes with depends on its instruction sets (the framework's kernels pick by them).
CPU_FIELDS = ("vendor_id", "model name", "flags", "CPU implementer", "CPU part", "Features", "isa")


@dataclass(frozen=True)
class CurveKey:
    """Everything a CPU curve depends on: two verifications with the same key train the same curve."""

    trainer: str  # where it is trained: the verification's runner ("host", a container image), or "native"
    framework: str
    runtime: str  # the release that trains it
    arch: str  # the recipe it is trained on
    steps: int
    dataset: str  # digest of the data
    payload: str  # digest of devkit's payload scripts (the model, its initial weights, the optimizer)
    cpu: str  # digest of this machine's processor

    @property
    def file_name(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:32] + ".json"


def curve_key(trainer: str, framework: str, runtime: str, arch: str, steps: int, dataset: Dataset) -> CurveKey | None:
    """The key of a curve trained on this machine; None where the processor cannot be told."""
    cpu = processor_digest()
    if cpu is None:
        return None
    return CurveKey(trainer, framework, runtime, arch, steps, dataset_digest(dataset), payload_digest(), cpu)


@functools.cache
def processor_digest() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    first = text.split("\n\n", 1)[0]
    fields = sorted(line for line in first.splitlines() if line.split(":", 1)[0].strip() in CPU_FIELDS)
    return hashlib.sha256("\n".join([platform.machine(), *fields]).encode()).hexdigest()[:16] if fields else None


@functools.cache
def payload_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(PAYLOAD_DIR.rglob("*.py")):
        digest.update(str(path.relative_to(PAYLOAD_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def dataset_digest(dataset: Dataset) -> str:
    digest = hashlib.sha256(dataset.source.encode())
    for array in (dataset.x_train, dataset.y_train, dataset.x_test, dataset.y_test):
        digest.update(f"{array.dtype}{array.shape}".encode() + array.tobytes())
    return digest.hexdigest()[:16]


def curves_dir() -> Path | None:
    """devkit's private directory of kept curves; None (nothing kept or read) if it is not private."""
    try:
        return private_dir(cache_root() / "cpu-curves")
    except (EnvironmentProblem, OSError):
        return None


def kept_curve(key: CurveKey) -> dict[str, Any] | None:
    """The curve kept under `key`, as a --cpu-reference file holds it (its `where` saying it was
    kept, and when); None if there is none or it is not whole."""
    directory = curves_dir()
    if directory is None:
        return None
    try:
        fd = os.open(directory / key.file_name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # none kept, a link, or unreadable
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_size > KEPT_LIMIT:
            return None
        try:
            kept = json.loads(f.read())
        except (UnicodeDecodeError, ValueError):
            return None
    if not isinstance(kept, dict) or kept.get("key") != asdict(key) or not isinstance(kept.get("kept"), str):
        return None
    curve = kept.get("curve")
    if not whole_curve(curve, key.steps):
        return None
    where = str(curve["trained"]["where"]).partition(" CPU")[0]
    return {**curve, "trained": {**curve["trained"], "where": f"{where} CPU on {key.arch}, kept from {kept['kept']}"}}


def whole_curve(curve: object, steps: int) -> TypeGuard[dict[str, Any]]:
    """A CPU curve as the payload writes it: `steps` finite losses, a held-out accuracy, who trained it."""
    if not isinstance(curve, dict):
        return False
    losses, accuracy, trained = curve.get("losses"), curve.get("heldout_accuracy"), curve.get("trained")
    return (
        isinstance(losses, list)
        and len(losses) == steps
        and all(isinstance(x, (int, float)) and math.isfinite(x) for x in losses)
        and isinstance(accuracy, (int, float))
        and 0.0 <= accuracy <= 1.0
        and isinstance(trained, dict)
        and isinstance(trained.get("where"), str)
        and trained.get("steps") == steps
    )


def keep_curve(key: CurveKey, report: Report) -> Path | None:
    """Keep the CPU curve of the report's training check when that check passed (the device's
    curve stayed close to it, so it is the framework's CPU's and not a broken process's) and it
    was trained for this verification, not given to it. Returns where it was kept."""
    mnist = next((c for c in report.checks if c.name == "mnist"), None)
    if mnist is None or not mnist.passed:
        return None
    curve = mnist.data.get("cpu")
    if not whole_curve(curve, key.steps) or ", kept from " in curve["trained"]["where"]:
        return None
    directory = curves_dir()
    if directory is None:
        return None
    record = {"key": asdict(key), "kept": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "curve": curve}
    try:
        return write_atomic(directory / key.file_name, json.dumps(record))
    except OSError:  # a full or read-only disk: the next verification trains it again
        return None
