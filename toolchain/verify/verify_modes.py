"""What `devkit verify` was asked, and its modes as data: each mode (--amp, --profile, --infer, ...)
says which modes it needs and excludes and how it runs; `run_verification` walks the registry
(verify/frameworks/) instead of checking flags pairwise. A framework's adapter names the modes it
supports; the modes only one framework has are written in that framework's module."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..project.config import DevkitConfig
from ..project.frameworks import Framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..util.errors import InputError
from .modes import CHECK_MODES, DeviceModes
from .session import VerifyOptions, VerifyResult


@dataclass(frozen=True)
class VerifyRequest:
    """Command-line values; None means "from [tool.devkit]"."""

    model: str | None = None
    steps: int | None = None
    data: Path | None = None
    runner: str | None = None
    model_dir: Path | None = None
    warmup: int | None = None
    repeats: int | None = None
    inference_dir: Path | None = None
    framework: str | None = None  # --framework; None: the project's first, or what a bare wheel is
    modes: DeviceModes = CHECK_MODES  # --modes
    distributed: int = 0  # --distributed N: data parallel on N devices in N processes
    amp: str = ""  # --amp LEVEL: train under mixed precision
    quant: str = ""  # --quant DTYPE: quantized inference
    compile: bool = False  # --compile: torch.compile (Inductor) on the device
    profile: bool = False  # --profile: the framework's profiler over a training step: the device trace
    infer: bool = False  # --infer: the framework's inference runtime instead of training


@dataclass(frozen=True)
class ModeRun:
    """One verification, as its modes see it: to check their values, and to run it."""

    project: Project | None
    wheel: Path | None
    recipe: Recipe
    request: VerifyRequest
    framework: Framework
    options: VerifyOptions
    config: DevkitConfig
    report_dir: Path


def _accepted(run: ModeRun) -> None:
    """A mode whose flag takes no value, or whose value its run checks."""


def _no_suffix(request: VerifyRequest) -> str:
    return ""


@dataclass(frozen=True)
class VerifyMode:
    name: str  # in messages and the tests
    flag: str  # its command-line option
    purpose: str  # what it verifies: "--compile checks torch.compile"
    lacks: str  # what an adapter without it has none of: "the PyTorch adapter has no <lacks>"
    scope: str  # why it runs alone: "--amp trains a model on one device"
    requested: Callable[[VerifyRequest], bool]
    requires: tuple[str, ...] = ()  # modes it is part of (--quant of --infer)
    excludes: tuple[str, ...] = ()  # modes it cannot run with (either side may say so)
    validate: Callable[[ModeRun], None] = _accepted  # its value, against the framework and target
    suffix: Callable[[VerifyRequest], str] = _no_suffix  # of the report directory
    # how it runs, when it replaces the training run (--infer, --distributed); None: the training
    # run (or the mode that does replace it) reads the mode from the options
    run: Callable[[ModeRun], VerifyResult] | None = None

    def refuse_unsupported(self, framework: Framework, supporting: list[str]) -> InputError:
        return InputError(
            f"{self.flag} {self.purpose}; the {framework.label} adapter has no {self.lacks}",
            f"drop {self.flag}, or use --framework {' | '.join(supporting)}" if supporting else f"drop {self.flag}",
        )

    def refuse_without(self, missing: list[VerifyMode]) -> InputError:
        return InputError(f"{self.flag} {self.purpose}", f"add {' and '.join(m.flag for m in missing)}")

    def refuse_with(self, others: list[VerifyMode]) -> InputError:
        flags = " and ".join(m.flag for m in others)
        return InputError(
            f"{self.flag} {self.scope}; {flags} {'checks' if len(others) == 1 else 'check'} something else",
            f"run `devkit verify {self.flag}` and `devkit verify {flags}` separately",
        )

    def conflicts(self, other: VerifyMode) -> bool:
        return other.name in self.excludes or self.name in other.excludes


def check_modes(
    run: ModeRun, registry: tuple[VerifyMode, ...], support: Mapping[str, tuple[str, ...]]
) -> list[VerifyMode]:
    """The requested modes, in the registry's order, each supported by the framework's adapter
    (`support`: framework -> the names of the modes its adapter supports), with the modes it needs
    and none it excludes, and its value valid; the first that is not refuses the request in one line."""
    requested = [mode for mode in registry if mode.requested(run.request)]
    for mode in requested:
        if mode.name not in support.get(run.framework.name, ()):
            raise mode.refuse_unsupported(
                run.framework, [name for name, names in support.items() if mode.name in names]
            )
        missing = [m for m in registry if m.name in mode.requires and m not in requested]
        if missing:
            raise mode.refuse_without(missing)
        conflicting = [other for other in requested if other is not mode and mode.conflicts(other)]
        if conflicting:
            raise mode.refuse_with(conflicting)
        mode.validate(run)
    return requested
