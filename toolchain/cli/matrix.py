"""`devkit matrix list|run`, `devkit ci` and `devkit config show`: the project's [tool.devkit]."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, cast

import typer

from ..matrix.entries import failure_of, find_entry, matrix_entries
from ..matrix.run import run_entry
from ..project.project import load_project
from ..util.console import err
from ..util.outputs import json_value
from . import views
from .options import JsonOpt, ProjectArg, RunnerOpt, emit_json, runner_name
from .outputs import CiOutput, CiProvider, ConfigShowOutput, MatrixRunOutput


def matrix_list(project_dir: ProjectArg = Path("."), as_json: JsonOpt = False) -> None:
    """List the matrix entries and the command each CI job runs."""
    entries = matrix_entries(load_project(project_dir).config)
    if as_json:
        emit_json([e.summary() for e in entries])
    else:
        views.show_matrix(entries)


def matrix_run(
    entry_id: Annotated[
        str, typer.Argument(help="A matrix entry, e.g. x86_64-train-paddle3.3.1 (see `devkit matrix list`).")
    ],
    project_dir: ProjectArg = Path("."),
    runner: RunnerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Build and verify one matrix entry: what each CI job runs. Reports go to reports/ENTRY/."""
    project = load_project(project_dir)
    entry = find_entry(project.config, entry_id)
    report_dir = project.root / "reports" / entry.id
    run = run_entry(
        project,
        entry,
        runner_name(runner) or project.config.runner,
        report_dir,
        built=lambda o: err.print(f"[green]✓[/] built {', '.join(a.name for a in o.artifacts)}"),
        verified=lambda result: views.show_verify(result, entry.recipe),
    )
    if as_json:
        emit_json(
            MatrixRunOutput(entry.summary(), run.passed, run.report, run.junit, [o.summary() for o in run.outcomes])
        )
    failed = [o for o in run.outcomes if not o.passed]
    if failed:
        raise failure_of(run.outcomes, f"matrix entry {entry.id} failed: {failed[0].error}", f"see {run.report}")
    err.print(f"[green]✓[/] {entry.id}: built and verified; reports in {report_dir}")


def ci_command(
    provider: Annotated[str, typer.Option("--provider", help="github | gitlab")],
    project_dir: Annotated[Path, typer.Argument(help="The backend project (the repository root).")] = Path("."),
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Where to write (default: .github/workflows/devkit.yml or .gitlab-ci.yml)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a CI workflow with one job per matrix entry (build, verify, upload wheel/bundle/reports)."""
    from ..matrix.ci import write_ci  # (PyYAML, for this command only)

    project = load_project(project_dir)
    path = write_ci(project, provider, out)
    entries = matrix_entries(project.config)
    if as_json:
        emit_json(CiOutput(cast(CiProvider, provider), path, [e.id for e in entries]))  # (write_ci checked it)
    else:
        err.print(f"[green]✓[/] wrote {path}: {len(entries)} jobs ({', '.join(e.id for e in entries)})")


def config_show(project_dir: ProjectArg = Path("."), as_json: JsonOpt = False) -> None:
    """Print the resolved configuration (defaults filled in) and its matrix."""
    project = load_project(project_dir)
    shown = ConfigShowOutput(project.config, [e.id for e in matrix_entries(project.config)])
    if as_json:
        emit_json(shown)
    else:
        views.show_config(json_value(shown), project.root / "pyproject.toml")
