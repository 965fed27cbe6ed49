"""`devkit matrix run ID`: build one matrix entry and verify it, as each CI job does."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..project.project import Project
from ..util.errors import DevkitError, VerificationFailure
from ..verify.request import VerifyRequest, run_verification
from ..verify.session import VerifyResult
from .entries import Entry, EntryOutcome, build_entry, write_reports


@dataclass(frozen=True)
class EntryRun:
    outcomes: list[EntryOutcome]  # the build, then one verification per model
    report: Path
    junit: Path

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)


def run_entry(
    project: Project,
    entry: Entry,
    runner: str,
    report_dir: Path,
    built: Callable[[EntryOutcome], None] = lambda outcome: None,
    verified: Callable[[VerifyResult], None] = lambda result: None,
) -> EntryRun:
    """Build the entry; when that passes, verify it (training, each inference model, or the device
    tests). `built` and `verified` present each step as it finishes. Reports go to `report_dir`."""
    outcomes = [build_entry(project, entry, runner)]
    if outcomes[0].passed:
        built(outcomes[0])
        models = project.config.verify.infer_models if entry.infer else (None,)
        for model in models:
            check = EntryOutcome(entry, step=f"verify{' ' + model if model else ''}")
            start = time.monotonic()
            try:
                result = run_verification(
                    project,
                    outcomes[0].artifacts[0] if entry.version else None,
                    entry.recipe,
                    VerifyRequest(
                        model=model,
                        runner=runner,
                        framework=entry.framework.name,
                        distributed=2 if entry.mode == "distributed" else 0,
                    ),
                    entry.infer,
                    report_dir / (f"verify-{model}" if model else "verify"),
                )
                verified(result)
                check.passed = result.passed
                check.error = "" if result.passed else f"verification failed; see {result.report_path}"
                check.failed_as = None if result.passed else VerificationFailure
                check.artifacts = [result.report_path]
            except DevkitError as exc:
                check.error, check.log, check.failed_as = exc.one_line(), exc.log, type(exc)
            check.seconds = time.monotonic() - start
            outcomes.append(check)
    json_path, junit_path = write_reports(outcomes, report_dir, f"devkit matrix run {entry.id}")
    return EntryRun(outcomes, json_path, junit_path)
