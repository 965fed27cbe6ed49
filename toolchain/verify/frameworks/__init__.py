"""What verification does per framework, behind one protocol (one module per framework: paddle.py,
torch.py), chosen by the framework's name as building/frameworks/ chooses the build's; and the
registry of verify's modes, walked in order by `run_verification` (verify/request.py).
`verify`, `test-ops`, `check-kernels` and the matrix run the same steps for every framework."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ...project.frameworks import Framework
from ...util.errors import InputError
from ..distributed import check_request as check_distributed_request
from ..ops import OpsRequest, OpsResult
from ..session import KernelCheck, VerifyOptions, VerifyResult, wheel_to_check
from ..verify_modes import ModeRun, VerifyMode
from . import paddle, torch


class VerifyAdapter(Protocol):
    @property
    def modes(self) -> tuple[str, ...]:
        """The verify modes (VERIFY_MODES' names) the adapter supports besides plain training."""
        ...

    def train(self, wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
        """`devkit verify`: the checks, and a model trained on the device vs the CPU."""
        ...

    def distributed(self, wheel: Path, options: VerifyOptions, report_dir: Path, ranks: int) -> VerifyResult:
        """--distributed N: the framework's launcher starts its payload once per rank."""
        ...

    def test_ops(self, request: OpsRequest) -> tuple[OpsResult, str]:
        """`devkit test-ops`: the framework's op checks, and the mode the report names them by."""
        ...

    def check_kernels(self, wheel: Path, options: VerifyOptions, report_dir: Path) -> KernelCheck:
        """`devkit check-kernels`: each registered kernel's signature against the framework's."""
        ...


# The registry (a test registers a third framework's adapter here, beside project.frameworks.FRAMEWORKS).
VERIFY_ADAPTERS: dict[str, VerifyAdapter] = {"paddle": paddle.PaddleVerify(), "torch": torch.TorchVerify()}


def verify_adapter(framework: Framework) -> VerifyAdapter:
    try:
        return VERIFY_ADAPTERS[framework.name]
    except KeyError:
        raise InputError(
            f"devkit has no verification for {framework.label}", f"use --framework {' | '.join(VERIFY_ADAPTERS)}"
        ) from None


def mode_support() -> dict[str, tuple[str, ...]]:
    """Framework -> the modes its adapter supports."""
    return {name: adapter.modes for name, adapter in VERIFY_ADAPTERS.items()}


def _amp_level(run: ModeRun) -> None:
    levels = run.framework.amp_levels
    if run.request.amp not in levels:
        raise InputError(
            f"--amp {run.request.amp!r} is not a {run.framework.label} mixed-precision level",
            f"use --amp {' | '.join(levels)}",
        )


AMP = VerifyMode(
    "amp",
    "--amp",
    purpose="trains a model under mixed precision",
    lacks="mixed-precision training",
    scope="trains a model on one device",
    requested=lambda request: bool(request.amp),
    excludes=("infer", "distributed"),
    validate=_amp_level,
    suffix=lambda request: f"-amp-{request.amp}",
)

PROFILE = VerifyMode(
    "profile",
    "--profile",
    purpose="traces a training step with the framework's profiler",
    lacks="profiler",
    scope="traces a training step of one process",
    requested=lambda request: request.profile,
    excludes=("infer", "distributed", "compile"),
)


def _ranks(run: ModeRun) -> None:
    check_distributed_request(run.request.distributed, run.options)


def _run_distributed(run: ModeRun) -> VerifyResult:
    wheel = wheel_to_check(run.project, run.wheel, run.recipe, run.framework)
    return verify_adapter(run.framework).distributed(wheel, run.options, run.report_dir, run.request.distributed)


DISTRIBUTED = VerifyMode(
    "distributed",
    "--distributed",
    purpose="trains data-parallel in N processes",
    lacks="data-parallel training",
    scope="trains in N processes",
    requested=lambda request: request.distributed != 0,
    validate=_ranks,
    suffix=lambda request: "-distributed",
    run=_run_distributed,
)

# In the order they are checked (the first mode of a refused pair names the problem) and their
# suffixes join in the report directory's name.
VERIFY_MODES: tuple[VerifyMode, ...] = (torch.COMPILE, PROFILE, AMP, paddle.QUANT, paddle.INFER, DISTRIBUTED)
