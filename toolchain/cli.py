"""The `devkit` command line. Errors are caught here, once, and printed as one line."""

from __future__ import annotations

import json
import sys
import time
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from . import __version__
from .build import BuildOptions, build_wheel, resolve_paddle_version
from .console import err
from .errors import DevkitError
from .naming import parse_backend_name
from .project import load_project
from .recipes import find_recipe
from .render import render_backend
from .runner import HostRunner, Runner
from .verify import VerifyOptions, find_wheel, run_verify

app = typer.Typer(
    help="Scaffold, build and verify PaddlePaddle custom-device plugins.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}


class RunnerChoice(str, Enum):
    auto = "auto"
    host = "host"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"devkit {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show Python tracebacks on errors.")] = False,
) -> None:
    _state["debug"] = debug


def make_runner(choice: RunnerChoice) -> Runner:
    return HostRunner()


def emit_json(payload: dict) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable summary on stdout.")]


@app.command("new-backend")
def new_backend(
    name: Annotated[str, typer.Argument(help="Backend name, e.g. STPU: a letter, then letters, digits or _ (max 32).")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Output directory (default: ./NAME).")] = None,
    device_type: Annotated[Optional[str], typer.Option("--device-type", help="Paddle device type (default: lower-case NAME).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty output directory.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Render a complete, buildable plugin project for a new device."""
    backend = parse_backend_name(name, device_type)
    start = time.monotonic()
    result = render_backend(backend, out or Path(name), force=force)
    seconds = time.monotonic() - start
    if as_json:
        emit_json({"out_dir": str(result.out_dir), "device_type": backend.device_type, "files": list(result.files),
                   "seconds": round(seconds, 4)})
    else:
        err.print(f"[green]✓[/] rendered backend [bold]{backend.name}[/] (device type [bold]{backend.device_type}[/]) "
                  f"into {result.out_dir} — {len(result.files)} files in {seconds * 1000:.0f} ms")
        err.print(f"  next: devkit build {result.out_dir}")


@app.command()
def build(
    project_dir: Annotated[Path, typer.Argument(help="The backend project (default: current directory).")] = Path("."),
    arch: Annotated[str, typer.Option("--arch", help="Target architecture (a recipe name or alias).")] = "x86_64",
    paddle_version: Annotated[Optional[str], typer.Option("--paddle-version", help="Paddle to build against (default: the recipe's pin).")] = None,
    clean: Annotated[bool, typer.Option("--clean", help="Discard the build tree first.")] = False,
    runner: Annotated[RunnerChoice, typer.Option("--runner", help="Where to build.")] = RunnerChoice.auto,
    as_json: JsonOpt = False,
) -> None:
    """Build the plugin wheel into PROJECT_DIR/dist/."""
    project = load_project(project_dir)
    recipe = find_recipe(arch)
    options = BuildOptions(recipe=recipe, paddle_version=resolve_paddle_version(recipe, paddle_version), clean=clean)
    result = build_wheel(project, options, make_runner(runner))
    if as_json:
        emit_json(result.as_dict())
    else:
        what = "nothing recompiled" if result.compiled_files == 0 else f"{result.compiled_files} files compiled"
        err.print(f"[green]✓[/] built {result.wheel} ({result.tag}, paddlepaddle=={result.paddle_version}; "
                  f"{what}; {result.seconds:.1f} s)")


@app.command()
def verify(
    project_dir: Annotated[Optional[Path], typer.Argument(help="The backend project whose dist/ wheel to verify.")] = None,
    wheel: Annotated[Optional[Path], typer.Option("--wheel", help="Verify this wheel instead of a project's.")] = None,
    arch: Annotated[str, typer.Option("--arch", help="Target architecture.")] = "x86_64",
    model: Annotated[str, typer.Option("--model", help="Model to train on the device.")] = "mnist",
    steps: Annotated[int, typer.Option("--steps", help="Training steps.")] = 200,
    data: Annotated[Optional[Path], typer.Option("--data", help="Directory with MNIST idx files.")] = None,
    report_dir: Annotated[Optional[Path], typer.Option("--report-dir", help="Where to write report.json and the plot.")] = None,
    runner: Annotated[RunnerChoice, typer.Option("--runner", help="Where to verify.")] = RunnerChoice.auto,
    as_json: JsonOpt = False,
) -> None:
    """Install the wheel beside the reference Paddle in a fresh env and check it on the device."""
    recipe = find_recipe(arch)
    device_type = None
    if wheel is None:
        project = load_project(project_dir or Path("."))
        wheel = find_wheel(project, recipe)
        device_type = project.device_type
        report_dir = report_dir or project.root / "reports" / f"verify-{recipe.name}"
    report_dir = report_dir or Path("devkit-report") / f"verify-{recipe.name}"
    options = VerifyOptions(recipe=recipe, model=model, steps=steps, data_dir=data, device_type=device_type)
    result = run_verify(wheel.resolve(), options, make_runner(runner), report_dir.resolve())
    if as_json:
        emit_json({"passed": result.passed, "report": str(result.report_path),
                   "plot": str(result.plot_path) if result.plot_path else None,
                   "checks": [{k: c.get(k) for k in ("name", "passed", "detail")} for c in result.report["checks"]]})
    else:
        table = Table(title=f"devkit verify — {result.report.get('device')}:0, paddle {result.report.get('paddle_version')}")
        table.add_column("check")
        table.add_column("result")
        table.add_column("figures")
        for check in result.report["checks"]:
            table.add_row(check["name"], "[green]pass[/]" if check["passed"] else "[red]FAIL[/]", check.get("detail", ""))
        err.print(table)
        err.print(f"report: {result.report_path}" + (f"  plot: {result.plot_path}" if result.plot_path else ""))
    if not result.passed:
        failed = [c["name"] for c in result.report["checks"] if not c["passed"]]
        raise DevkitError(f"verification failed: {', '.join(failed)}", f"see {result.report_path}")


def main() -> None:
    try:
        app(standalone_mode=False)
    except DevkitError as exc:
        if exc.details:
            err.print(exc.details, markup=False, style="dim")
        err.print(f"[red]error:[/] {exc.one_line()}", markup=True)
        if _state["debug"]:
            traceback.print_exc()
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("[red]error:[/] interrupted")
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if _state["debug"]:
            traceback.print_exc()
        err.print(f"[red]error:[/] internal error: {exc}. Fix: rerun with --debug and report the traceback")
        sys.exit(2)
