"""Typed reports: the JSON a payload writes, parsed once into frozen dataclasses.

The payloads (payload/*.py) run in the target's environment and write plain JSON;
devkit reads it here and everything after (the CLI's tables, --json, the matrix,
JUnit) uses attributes, never `report["checks"]` searched by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..util.errors import InternalError


@dataclass(frozen=True)
class Check:
    """One verification check: its verdict and the figures behind it."""

    name: str
    passed: bool
    detail: str = ""
    not_run: bool = False  # e.g. the C++ demo without a Paddle Inference library
    data: Mapping[str, Any] = field(default_factory=dict)  # the payload's other fields (kernels, latency_ms, ...)

    @property
    def failed(self) -> bool:
        return not self.passed and not self.not_run

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Check:
        try:
            return cls(
                name=str(raw["name"]),
                passed=bool(raw["passed"]),
                detail=str(raw.get("detail", "")),
                not_run=bool(raw.get("not_run", False)),
                data=dict(raw),
            )
        except (KeyError, TypeError) as exc:
            raise InternalError(
                f"a check in the payload's report lacks {exc}", "this is a devkit bug; report it"
            ) from None

    def to_json(self) -> dict[str, Any]:
        """As report.json holds it: the payload's fields, with the verdict as it is now."""
        verdict: dict[str, Any] = {"name": self.name, "passed": self.passed}
        if self.detail or "detail" in self.data:
            verdict["detail"] = self.detail
        return {**verdict, **self.data, **verdict}  # the verdict first where the payload had none

    def summary(self) -> dict[str, Any]:
        """What every --json lists of a check."""
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True)
class Report:
    """A verify, check-kernels or device-test report."""

    checks: tuple[Check, ...]
    passed: bool
    device: str | None = None
    paddle_version: str | None = None
    runner: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)  # the whole JSON, as written to report.json

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Report:
        checks = tuple(Check.from_json(c) for c in raw.get("checks", []))
        return cls(
            checks=checks,
            passed=bool(raw.get("passed")),
            device=raw.get("device"),
            paddle_version=raw.get("paddle_version"),
            runner=raw.get("runner"),
            data=dict(raw),
        )

    @classmethod
    def of(cls, checks: Iterable[Check], **fields: Any) -> Report:
        """A report devkit writes itself (inference, device tests): passed when no check failed."""
        checks = tuple(checks)
        return cls.from_json(
            {**fields, "checks": [c.to_json() for c in checks], "passed": not any(c.failed for c in checks)}
        )

    def to_json(self) -> dict[str, Any]:
        """report.json: the payload's fields in their order, with the checks and verdict as they are now."""
        return {**self.data, "checks": [c.to_json() for c in self.checks], "passed": self.passed}

    def with_fields(self, **fields: Any) -> Report:
        """The report with top-level fields added (what devkit knows and the payload does not)."""
        return Report.from_json({**self.to_json(), **fields})

    def merged(self, extra: Iterable[Check], before: str | None = None) -> Report:
        """With the checks of `extra` whose names it lacks, placed before the check named `before`
        (at the end without one), and passed again from all of them: merged by name, never by
        position."""
        names = {c.name for c in self.checks}
        new = [c for c in extra if c.name not in names]
        at = next((i for i, c in enumerate(self.checks) if c.name == before), len(self.checks))
        checks = (*self.checks[:at], *new, *self.checks[at:])
        return replace(self, checks=checks, passed=all(c.passed for c in checks))

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.failed]


FAILED_STATUSES = ("fail", "error")


@dataclass(frozen=True)
class OpCase:
    """One op-conformance case (test-ops, golden data) in one dtype."""

    case: str
    dtype: str
    kernels: tuple[str, ...]
    status: str  # pass | fail | error | not registered
    detail: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> OpCase:
        return cls(
            case=str(raw["case"]),
            dtype=str(raw.get("dtype", "")),
            kernels=tuple(raw.get("kernels", ())),
            status=str(raw["status"]),
            detail=str(raw.get("detail", "")),
            data=dict(raw),
        )


@dataclass(frozen=True)
class OpsReport:
    results: tuple[OpCase, ...]
    counts: Mapping[str, int]
    passed: bool
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> OpsReport:
        return cls(
            results=tuple(OpCase.from_json(r) for r in raw.get("results", [])),
            counts=dict(raw.get("counts", {})),
            passed=bool(raw.get("passed")),
            data=dict(raw),
        )

    @property
    def failed(self) -> list[OpCase]:
        return [r for r in self.results if r.failed]
