"""Typed reports: the JSON a payload writes, parsed once into frozen dataclasses.

The payloads (payload/*/) run in the target's environment and write plain JSON whose shapes are
payload/shared/records.py's TypedDicts; devkit reads it here and everything after (the CLI's tables,
--json, the matrix, JUnit) uses attributes and a check's typed record, found by the check's kind
(records.CheckKind), never `report["checks"]` searched by name or by the keys a record happens to hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast, get_args

from ..util.errors import InternalError
from .outputs import CheckSummary

# mypy checks records.py as the payloads import it (`records`, on its path: pyproject.toml); devkit
# imports the same file as devkit.payload.shared.records, which mypy must not find a second time.
if TYPE_CHECKING:
    from distributed_records import ParallelVerdict
    from inference_records import InferenceCheck
    from records import (
        CheckKind,
        CheckRecord,
        ContractCheck,
        FallbackReportCheck,
        KernelSignaturesCheck,
        TrainingVerdict,
    )
else:
    from ..payload.shared.records import CheckKind, CheckRecord

CHECK_KINDS: frozenset[str] = frozenset(get_args(CheckKind))


def _no_record() -> CheckRecord:
    """A check devkit makes itself without a payload's record (its fields are the dataclass's)."""
    return cast(CheckRecord, {})


@dataclass(frozen=True)
class Check:
    """One verification check: its verdict, its kind, and its record (the figures behind it)."""

    name: str
    passed: bool
    detail: str = ""
    not_run: bool = False  # e.g. the C++ demo without a Paddle Inference library
    kind: CheckKind | None = None  # None: a record from before checks had kinds
    data: CheckRecord = field(default_factory=_no_record)  # the payload's record, as it wrote it

    @property
    def failed(self) -> bool:
        return not self.passed and not self.not_run

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Check:
        try:
            kind = raw.get("kind")
            if kind is not None and kind not in CHECK_KINDS:
                raise TypeError(f"'kind' {kind!r} (not one of records.CheckKind)")
            return cls(
                name=str(raw["name"]),
                passed=bool(raw["passed"]),
                detail=str(raw.get("detail", "")),
                not_run=bool(raw.get("not_run", False)),
                kind=cast(CheckKind | None, kind),
                data=cast(CheckRecord, dict(raw)),
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
        if self.kind is not None:
            verdict["kind"] = self.kind
        return {**verdict, **self.data, **verdict}  # the verdict first where the payload had none

    def summary(self) -> CheckSummary:
        """What every --json lists of a check."""
        return CheckSummary(self.name, self.passed, self.detail)


@dataclass(frozen=True)
class Report:
    """A verify, check-kernels or device-test report."""

    checks: tuple[Check, ...]
    passed: bool
    device: str | None = None
    runner: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)  # the whole JSON, as written to report.json

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Report:
        checks = tuple(Check.from_json(c) for c in raw.get("checks", []))
        return cls(
            checks=checks,
            passed=bool(raw.get("passed")),
            device=raw.get("device"),
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

    # ---- what the report is about (devkit's fields: session.finish)

    @property
    def framework(self) -> str:
        return str(self.data.get("framework", ""))

    @property
    def runtime_version(self) -> str | None:
        """The framework runtime the checks ran in (None: the device library's tests)."""
        version = self.data.get("runtime_version")
        return str(version) if version else None

    @property
    def ranks(self) -> int:
        """--distributed: the ranks; 0 for one process."""
        return int(self.data.get("distributed") or 0)

    # ---- the checks' typed records, by kind

    def of_kind(self, kind: CheckKind) -> list[Check]:
        return [c for c in self.checks if c.kind == kind]

    def _first(self, kind: CheckKind) -> CheckRecord | None:
        """The record of the first check of `kind` that finished (one that raised has its name,
        verdict and traceback only)."""
        return next((c.data for c in self.of_kind(kind) if "traceback" not in c.data), None)

    def training(self) -> TrainingVerdict | None:
        """The model trained on the device vs the CPU (the first curve: the float32 one, or --amp's)."""
        return cast("TrainingVerdict | None", self._first("training"))

    def data_parallel(self) -> ParallelVerdict | None:
        return cast("ParallelVerdict | None", self._first("parallel"))

    def fallback(self) -> FallbackReportCheck | None:
        """Paddle's fallback report: where each kernel ran (torch's fallback check, of the same kind,
        records the ops that fell back instead: records.TorchFallbackCheck)."""
        return next(
            (cast("FallbackReportCheck", c.data) for c in self.of_kind("fallback") if "kernels" in c.data), None
        )

    def contract(self) -> ContractCheck | None:
        return cast("ContractCheck | None", self._first("contract"))

    def kernel_signatures(self) -> KernelSignaturesCheck | None:
        return cast("KernelSignaturesCheck | None", self._first("kernels"))

    def inference(self) -> list[tuple[str, InferenceCheck]]:
        """--infer: each model's check (its name in the report, its record)."""
        return [(c.name, cast("InferenceCheck", c.data)) for c in self.of_kind("inference") if "latency_ms" in c.data]


FAILED_STATUSES = ("fail", "error")
# An op case's verdict: its status, judged against the project's expected failures (verify/expected.py).
EXPECTED, NOW_PASSING = "expected", "now passing"
FAILING_VERDICTS = (*FAILED_STATUSES, NOW_PASSING)
VERDICTS = ("pass", EXPECTED, "fail", "error", NOW_PASSING, "not registered", "skipped")


@dataclass(frozen=True)
class OpCase:
    """One op-conformance case (test-ops, golden data) in one dtype."""

    case: str
    dtype: str
    kernels: tuple[str, ...]
    status: str  # pass | fail | error | not registered | skipped: what the payload saw
    detail: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    suite: str = "ops"
    expected: str = ""  # listed in the expected failures, for this reason

    @property
    def verdict(self) -> str:
        """The status, but a listed failure is expected and a listed pass now passes (and fails)."""
        if self.expected and self.status in FAILED_STATUSES:
            return EXPECTED
        if self.expected and self.status == "pass":
            return NOW_PASSING
        return self.status

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING_VERDICTS

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> OpCase:
        return cls(
            case=str(raw["case"]),
            dtype=str(raw.get("dtype", "")),
            kernels=tuple(raw.get("kernels", ())),
            status=str(raw["status"]),
            detail=str(raw.get("detail", "")),
            data=dict(raw),
            suite=str(raw.get("suite", "ops")),
            expected=str(raw.get("expected", "")),
        )


def verdict_counts(cases: Iterable[OpCase]) -> dict[str, int]:
    """Cases by verdict, every verdict counted (0 too)."""
    verdicts = [c.verdict for c in cases]
    return {v: verdicts.count(v) for v in VERDICTS}


def counts_line(counts: Mapping[str, int]) -> str:
    """Cases by verdict, for people (report.md, the CLI)."""
    line = f"{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errors"
    if counts.get(EXPECTED) or counts.get(NOW_PASSING):
        line += f", {counts.get(EXPECTED, 0)} expected failures, {counts.get(NOW_PASSING, 0)} now passing"
    return line + f", {counts['not registered']} not registered for the dtype"


@dataclass(frozen=True)
class OpsReport:
    results: tuple[OpCase, ...]
    counts: Mapping[str, int]  # by verdict (VERDICTS)
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
        """The cases that fail the run: unexpected failures, and listed cases that now pass."""
        return [r for r in self.results if r.failed]

    @property
    def suites(self) -> dict[str, list[OpCase]]:
        """The cases by suite, in the order the run met them."""
        by_suite: dict[str, list[OpCase]] = {}
        for r in self.results:
            by_suite.setdefault(r.suite, []).append(r)
        return by_suite
