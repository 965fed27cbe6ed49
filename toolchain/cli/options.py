"""Arguments and options that several commands take, each declared once, and the
helpers every command uses to read them."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ..project.config import RunnerChoice
from ..project.frameworks import FRAMEWORKS
from ..project.project import Project, load_project
from ..project.recipes import Recipe, find_recipe
from ..run.select import host_recipe
from ..util.console import reserve_stdout_for_json, write_json
from ..util.outputs import json_value

ProjectArg = Annotated[Path, typer.Argument(help="The backend project (default: current directory).")]
ArtifactProjectArg = Annotated[
    Path | None, typer.Argument(help="The backend project whose dist/ artifact to use (default: current directory).")
]
WheelOpt = Annotated[Path | None, typer.Option("--wheel", help="Use this wheel instead of a project's.")]
ArchOpt = Annotated[
    str | None,
    typer.Option(
        "--arch",
        help="Target architecture: a recipe name or alias (x86_64, armv8, armhf, ...). Default: this machine's.",
        show_default=False,
    ),
]
RunnerOpt = Annotated[
    RunnerChoice | None,
    typer.Option(
        "--runner",
        help="auto: a container when an engine answers, else the host; docker; host (default: [tool.devkit] runner).",
    ),
]
PaddleVersionOpt = Annotated[
    str | None, typer.Option("--paddle-version", help="Paddle to build or check against (default: the recipe's pin).")
]
FrameworkOpt = Annotated[
    str | None,
    typer.Option(
        "--framework",
        help="The adapter to act on, by framework name (default: the first of [tool.devkit] frameworks, paddle "
        "in a generated project).",
    ),
]
PaddleInferenceDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--paddle-inference-dir",
        envvar="PADDLE_INFERENCE_DIR",
        help="An unpacked Paddle Inference release (with --infer): linked by the build, used by verify's C++ demo.",
    ),
]
ReportDirOpt = Annotated[Path | None, typer.Option("--report-dir", help="Where to write the reports.")]


def _json_requested(value: bool) -> bool:
    if value:
        reserve_stdout_for_json()
    return value


JsonOpt = Annotated[
    bool, typer.Option("--json", callback=_json_requested, help="Print a machine-readable summary on stdout.")
]


def runner_name(runner: RunnerChoice | None) -> str | None:
    """The --runner value, or None for "from [tool.devkit]"."""
    return runner.value if runner else None


def project_unless_wheel(project_dir: Path | None, wheel: Path | None) -> Project | None:
    """The project a command works on, unless it was given a bare wheel."""
    return None if wheel is not None else load_project(project_dir or Path("."))


def emit_json(payload: object) -> None:
    write_json(json.dumps(json_value(payload), indent=2) + "\n")


def target_recipe(arch: str | None) -> Recipe:
    """The recipe --arch names; without --arch, this machine's."""
    return find_recipe(arch) if arch is not None else host_recipe()


class WithRuntimeVersions:
    """A command whose `versions` parameter takes each registered framework's --<name>-version
    (framework name -> the version asked for, or None). typer reads the signature when it builds
    the command line, so the options are the registry's at that moment: a framework registered in
    project/frameworks.py has its option without a line here."""

    def __init__(self, command: Callable[..., None]) -> None:
        self.command = command
        self.__name__ = command.__name__
        self.__doc__ = command.__doc__

    def _parameters(self) -> list[inspect.Parameter]:
        own = inspect.signature(self.command, eval_str=True).parameters.values()
        options = [
            inspect.Parameter(
                f"{name}_version",
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[
                    str | None,
                    typer.Option(
                        f"--{name}-version",
                        help=f"{framework.label} to build or check against (default: the recipe's pin).",
                    ),
                ],
            )
            for name, framework in FRAMEWORKS.items()
        ]
        at = next(i for i, p in enumerate(own) if p.name == "versions")
        kept = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p.name != "versions"]
        return kept[:at] + options + kept[at:]

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.Signature(self._parameters())

    @property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]
        return {p.name: p.annotation for p in self._parameters()}

    def __call__(self, **values: Any) -> None:
        versions = {name: values.pop(f"{name}_version", None) for name in FRAMEWORKS}
        self.command(**values, versions=versions)
