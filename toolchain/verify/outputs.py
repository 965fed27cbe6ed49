"""What `verify`, `test-ops`, `check-kernels` and `check-abi` print with --json (util/outputs.py: the
dataclass is the JSON, its schema generated from it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..util.outputs import output_field

OpsMode = Literal["ops", "golden", "opinfo", "opinfo-all", "framework-src"]
Severity = Literal["error", "warning"]  # building.elf.AbiFinding's


@dataclass(frozen=True)
class CheckSummary:
    """one check's verdict"""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class VerifyOutput:
    """the verification's verdict and its checks"""

    passed: bool
    report: Path = output_field("report.json")
    plot: Path | None = output_field("the loss curves (a training verification)")
    checks: list[CheckSummary] = output_field()


@dataclass(frozen=True)
class OpsOutput:
    """the op cases' verdicts"""

    passed: bool
    mode: OpsMode = output_field(
        "ops: Paddle's cases vs Paddle CPU; golden: vs recorded golden data; opinfo(-all): torch's OpInfos"
    )
    counts: dict[str, int] = output_field("cases by outcome (pass, fail, ...)")
    report: Path = output_field()
    markdown: Path = output_field()
    junit: Path = output_field()
    failed: list[str] = output_field("each failed case, as `case [dtype]`")
    seconds: float | None = output_field()


@dataclass(frozen=True)
class GoldenOutput:
    """with --gen-golden: the golden data recorded"""

    golden_dir: str
    machine: str = output_field("the target it was recorded for")
    cases: int = output_field()
    paddle_version: str = output_field("the Paddle whose CPU computed it")


@dataclass(frozen=True)
class PaddleKernelsOutput:
    """Paddle: the registered kernels' signatures vs Paddle's"""

    passed: bool
    report: Path
    detail: str
    mismatched: list[str] = output_field("each kernel whose signature differs, and how")
    kernels: int = output_field("kernels checked")


@dataclass(frozen=True)
class TorchKernelsOutput:
    """torch: the adapter's kernel checks"""

    passed: bool
    report: Path
    checks: list[CheckSummary]


@dataclass(frozen=True)
class AbiFindingSummary:
    """one problem found"""

    library: str
    problem: str
    fix: str
    severity: Severity = output_field("warning: loads into this runtime, but not everywhere it runs")


@dataclass(frozen=True)
class CheckAbiOutput:
    """the plugin's ABI against the target's runtime"""

    path: Path
    arch: str
    framework: str
    versions: dict[str, str] = output_field(
        "<framework>_version: the runtime checked against", flatten=True, pattern="^[a-z]+_version$"
    )
    ok: bool = output_field("no finding is an error")
    findings: list[AbiFindingSummary] = output_field()
