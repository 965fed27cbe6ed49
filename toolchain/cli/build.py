"""`devkit build`, one target or (--all) the whole [tool.devkit] matrix."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from ..building.options import BuildRequest
from ..building.plugin import build
from ..matrix.entries import build_all, default_jobs, failure_of, matrix_entries, write_reports
from ..project.project import Project, load_project
from ..util.console import err
from ..util.errors import InputError
from . import views
from .options import (
    ArchOpt,
    FrameworkOpt,
    JsonOpt,
    PaddleInferenceDirOpt,
    ProjectArg,
    RunnerOpt,
    WithRuntimeVersions,
    emit_json,
    runner_name,
    target_recipe,
)
from .outputs import BuildMatrixOutput, BuildOutput


def _build_command(
    project_dir: ProjectArg = Path("."),
    arch: ArchOpt = None,
    framework: FrameworkOpt = None,
    versions: dict[str, str | None] | None = None,  # --<framework>-version, by framework name
    clean: Annotated[bool, typer.Option("--clean", help="Discard the build tree first.")] = False,
    runner: RunnerOpt = None,
    infer: Annotated[
        bool, typer.Option("--infer", help="Build with ON_INFER and write an inference bundle next to the wheel.")
    ] = False,
    paddle_inference_dir: PaddleInferenceDirOpt = None,
    sdist: Annotated[
        bool,
        typer.Option("--sdist", help="Also write the source distribution (python -m build --sdist) to dist/."),
    ] = False,
    all_entries: Annotated[
        bool, typer.Option("--all", help="Build every entry of the [tool.devkit] matrix; write reports/matrix/.")
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", min=1, help="With --all: targets built in parallel (default: [tool.devkit] jobs, else CPUs/2)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build the plugin wheel of one framework (or, for targets without its runtime, the device library
    bundle) into PROJECT_DIR/dist/."""
    project = load_project(project_dir)
    runner_choice = runner_name(runner) or project.config.runner
    if all_entries:
        return build_matrix(project, runner_choice, jobs, as_json)
    adapter = project.framework(framework)
    recipe = target_recipe(arch)
    versions = versions or {}
    other = [name for name, value in versions.items() if value and name != adapter.name]
    if other:
        raise InputError(
            f"--{other[0]}-version does not apply to a {adapter.label} build", f"use --{adapter.name}-version"
        )
    options = BuildRequest(
        recipe=recipe,
        framework=adapter,
        version=versions.get(adapter.name),
        clean=clean,
        runner=runner_choice,
        infer=infer,
        inference_dir=paddle_inference_dir,
        sdist=sdist,
    ).options(project)
    result = build(project, options)
    if as_json:
        emit_json(BuildOutput.of(result))
    else:
        views.show_build(result)


build_command = WithRuntimeVersions(_build_command)


def build_matrix(project: Project, runner_choice: str, jobs: int | None, as_json: bool) -> None:
    entries = matrix_entries(project.config)
    jobs = jobs or project.config.jobs or default_jobs()
    err.print(
        f"building {len(entries)} matrix entries of {project.name} ({jobs} in parallel): "
        + ", ".join(e.id for e in entries)
    )
    start = time.monotonic()
    outcomes = build_all(project, entries, runner_choice, jobs)
    json_path, junit_path = write_reports(outcomes, project.root / "reports" / "matrix", "devkit build --all")
    if as_json:
        emit_json(
            BuildMatrixOutput(
                passed=all(o.passed for o in outcomes),
                report=json_path,
                junit=junit_path,
                seconds=round(time.monotonic() - start, 1),
                entries=[o.summary() for o in outcomes],
            )
        )
    else:
        views.show_build_matrix(project, outcomes, time.monotonic() - start)
        err.print(f"reports: {json_path}  {junit_path}")
    failed = [o.entry.id for o in outcomes if not o.passed]
    if failed:
        raise failure_of(
            outcomes,
            f"{len(failed)} of {len(outcomes)} matrix entries failed: {', '.join(failed)}",
            f"see {json_path} and each entry's log",
        )
