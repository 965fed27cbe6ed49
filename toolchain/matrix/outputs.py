"""The matrix's entries and steps as `matrix list`, `matrix run`, `build --all` and reports/*/report.json
write them (util/outputs.py: the dataclass is the JSON, its schema generated from it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..util.outputs import output_field


@dataclass(frozen=True)
class EntrySummary:
    """a matrix entry and the command its CI job runs"""

    id: str
    target: str
    mode: str = output_field("train | infer | distributed | device (a target without a framework runtime)")
    framework: str = output_field("the framework adapter the entry builds")
    version: str | None = output_field("the framework runtime's version; null for a device entry")
    oci_platform: str = output_field("the target's container platform, e.g. linux/arm64")
    command: str = output_field("the devkit command line the CI job runs")


@dataclass(frozen=True)
class StepSummary:
    """one step of an entry (its build, or one verification), with the entry's own fields"""

    entry: EntrySummary = output_field(flatten=True)
    step: str = output_field("build, verify, or verify MODEL (an inference entry verifies each model)")
    result: Literal["passed", "failed"] = output_field()
    seconds: float = output_field()
    artifacts: list[Path] = output_field("the wheel and bundles it made (a build), or its report (a verification)")
    error: str = output_field("the failure's one line; empty when it passed")
    exit_code: int = output_field("the exit code the step's own command would have given (0: it passed)")
    log: Path | None = output_field()


@dataclass(frozen=True)
class StepsReport:
    """reports/<entry or matrix>/report.json"""

    suite: str
    passed: bool
    entries: list[StepSummary]
