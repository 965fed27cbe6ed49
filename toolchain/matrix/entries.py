"""The build matrix of a project: frameworks x targets x modes x runtime versions, from [tool.devkit].

`devkit build --all` builds every entry (one lane per target, lanes in parallel);
`devkit matrix run ID` builds and verifies one entry, and is what each CI job runs.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..building.options import BuildRequest
from ..building.plugin import build
from ..project.config import DevkitConfig
from ..project.frameworks import DEFAULT_FRAMEWORK, Framework, find_framework
from ..project.project import Project
from ..project.recipes import Recipe, find_recipe
from ..run.engine import Engine
from ..run.images import builder_spec, ensure_image
from ..run.select import use_container
from ..util.errors import DevkitError, InputError, VerificationFailure
from ..util.fsutil import publish_file, write_atomic
from ..util.outputs import json_value
from ..verify.distributed import runs_distributed
from ..verify.junit import Case, write_junit
from .outputs import EntrySummary, StepsReport, StepSummary


@dataclass(frozen=True)
class Entry:
    recipe: Recipe
    mode: str  # train | infer | distributed | device (targets without a framework runtime)
    version: str | None  # the framework runtime's
    framework: Framework = DEFAULT_FRAMEWORK

    @property
    def id(self) -> str:
        """x86_64-train-paddle3.3.1 (Paddle's ids predate the framework axis), x86_64-torch-train-torch2.13.0."""
        if self.version is None:
            return f"{self.recipe.name}-device"
        return f"{self.recipe.name}{self.framework.tree_suffix}-{self.mode}-{self.framework.name}{self.version}"

    @property
    def infer(self) -> bool:
        return self.mode == "infer"

    def summary(self) -> EntrySummary:
        return EntrySummary(
            id=self.id,
            target=self.recipe.name,
            mode=self.mode,
            framework=self.framework.name,
            version=self.version,
            oci_platform=self.recipe.oci_platform,
            command=f"devkit matrix run {self.id}",
        )


def matrix_entries(config: DevkitConfig) -> list[Entry]:
    entries: list[Entry] = []
    for framework in map(find_framework, config.frameworks):
        for target in config.targets:
            recipe = find_recipe(target)
            pinned = framework.version(recipe)
            if pinned is None:  # no runtime: the device library's tests, once for all frameworks
                if not any(e.recipe == recipe and e.version is None for e in entries):
                    entries.append(Entry(recipe, "device", None))
                continue
            for version in config.versions(framework).get(recipe.name, (pinned,)):
                for mode in config.modes:
                    if mode in framework.modes and (mode != "distributed" or runs_distributed(recipe)):
                        entries.append(Entry(recipe, mode, version, framework))
    return entries


def find_entry(config: DevkitConfig, entry_id: str) -> Entry:
    entries = matrix_entries(config)
    for entry in entries:
        if entry.id == entry_id:
            return entry
    raise InputError(
        f"no matrix entry {entry_id!r} in this project",
        f"use one of: {', '.join(e.id for e in entries)} (see `devkit matrix list`)",
    )


@dataclass
class EntryOutcome:
    entry: Entry
    step: str = "build"
    passed: bool = False
    seconds: float = 0.0
    artifacts: list[Path] = field(default_factory=list)
    error: str = ""
    log: Path | None = None
    failed_as: type[DevkitError] | None = None  # the kind of the failure (the exit code it gives)

    def summary(self) -> StepSummary:
        return StepSummary(
            entry=self.entry.summary(),
            step=self.step,
            result="passed" if self.passed else "failed",
            seconds=round(self.seconds, 1),
            artifacts=self.artifacts,
            error=self.error,
            exit_code=int(self.failed_as.exit_code) if self.failed_as else 0,
            log=self.log,
        )


def build_entry(project: Project, entry: Entry, runner: str) -> EntryOutcome:
    """Build one entry; its artifacts are copied to dist/matrix/ID/ (entries of one target
    share dist/, where the next entry replaces them)."""
    outcome = EntryOutcome(entry)
    start = time.monotonic()
    try:
        request = BuildRequest(entry.recipe, entry.framework, entry.version, runner=runner, infer=entry.infer)
        result = build(project, request.options(project))
        outcome.log = result.log
        target = project.dist_dir / "matrix" / entry.id
        shutil.rmtree(target, ignore_errors=True)
        outcome.artifacts = [publish_file(p, target) for p in (result.artifact, result.bundle) if p]
        outcome.passed = True
    except DevkitError as exc:
        outcome.error, outcome.log, outcome.failed_as = exc.one_line(), exc.log, type(exc)
    outcome.seconds = time.monotonic() - start
    return outcome


def default_jobs() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def build_all(project: Project, entries: list[Entry], runner: str, jobs: int) -> list[EntryOutcome]:
    """Entries of one target run in order in one lane (they share its build cache); lanes run in parallel."""
    lanes: dict[str, list[Entry]] = {}
    for entry in entries:
        lanes.setdefault(entry.recipe.name, []).append(entry)
    _prepare_builder_image(runner, project)

    def run_lane(lane: list[Entry]) -> list[EntryOutcome]:
        return [build_entry(project, e, runner) for e in lane]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(run_lane, lanes.values()))
    by_id = {o.entry.id: o for lane in results for o in lane}
    return [by_id[e.id] for e in entries]


def _prepare_builder_image(runner: str, project: Project) -> None:
    """Build the shared builder image once, before lanes would race to build it."""
    if use_container(runner):
        ensure_image(Engine.connect(), builder_spec(project.config.builder_base), project.log_dir / "images.log")


def write_reports(outcomes: list[EntryOutcome], report_dir: Path, suite: str) -> tuple[Path, Path]:
    """report.json and JUnit XML (one testcase per entry) for CI dashboards."""
    json_path = write_atomic(
        report_dir / "report.json",
        json.dumps(
            json_value(StepsReport(suite, all(o.passed for o in outcomes), [o.summary() for o in outcomes])), indent=2
        )
        + "\n",
    )
    junit_path = write_junit(
        report_dir / "junit.xml",
        suite,
        [
            Case(
                name=f"{o.entry.id} {o.step}",
                classname=f"{suite}.{o.entry.recipe.name}",
                seconds=o.seconds,
                failure=None if o.passed else f"{o.error}\nlog: {o.log}",
                output="\n".join(str(a) for a in o.artifacts),
            )
            for o in outcomes
        ],
    )
    return json_path, junit_path


def failure_of(outcomes: list[EntryOutcome], problem: str, fix: str) -> DevkitError:
    """One error for failed entries, of the first failure's kind (so `build --all` and
    `matrix run` exit as that entry's own command would)."""
    kinds = [o.failed_as for o in outcomes if not o.passed and o.failed_as]
    return (kinds[0] if kinds else VerificationFailure)(problem, fix)
