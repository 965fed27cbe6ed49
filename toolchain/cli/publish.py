"""`devkit publish`: upload a project's built wheels (and sdist) to a package index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..building.publish import upload
from ..project.project import load_project
from ..util.console import err
from ..util.errors import InputError
from ..util.urls import is_url
from .options import JsonOpt, ProjectArg, emit_json
from .outputs import PublishOutput


def publish(
    project_dir: ProjectArg = Path("."),
    repository_url: Annotated[
        str,
        typer.Option(
            "--repository-url",
            help="The index's upload URL (e.g. https://pypi.example.com/legacy/). Credentials come from "
            "TWINE_USERNAME / TWINE_PASSWORD or the keyring, never from the command line.",
        ),
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """Check, then upload with twine, every wheel and sdist of this version in PROJECT_DIR/dist/."""
    if not is_url(repository_url, ("http", "https")):
        raise InputError(
            f"--repository-url {repository_url!r} is not an http(s) URL" if repository_url else "no --repository-url",
            "pass your index's upload URL, e.g. --repository-url https://pypi.example.com/legacy/",
        )
    project = load_project(project_dir)
    stem = f"{project.wheel_prefix}{project.version}"
    files = sorted(project.dist_dir.glob(f"{stem}-*.whl")) + sorted(project.dist_dir.glob(f"{stem}.tar.gz"))
    if not files:
        raise InputError(
            f"no wheel of {project.distribution} {project.version} in {project.dist_dir}",
            f"run `devkit build {project.root}` (add --sdist for the source distribution) first",
        )
    upload(files, repository_url, project.log_dir / "publish.log")
    if as_json:
        emit_json(PublishOutput(repository_url, files))
    else:
        for f in files:
            err.print(f"[green]✓[/] uploaded {f.name} to {repository_url}")
