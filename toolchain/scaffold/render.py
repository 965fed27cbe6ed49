"""`devkit new-backend`: render templates/backend into a plugin project."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import jinja2

from .. import DISTRIBUTION, __version__
from ..project.config import default_targets
from ..project.naming import BackendName
from ..project.recipes import find_recipe
from ..util.errors import DevkitError
from ..util.fsutil import staging_dir
from ..util.resources import resource_dir

PLUGIN_VERSION = "0.1.0"
HOST_RECIPE = "x86_64"


@dataclass(frozen=True)
class RenderResult:
    out_dir: Path
    files: tuple[str, ...]


def template_context(backend: BackendName) -> dict[str, object]:
    return {
        "name": backend.name,
        "NAME": backend.upper,
        "device_type": backend.device_type,
        "p": backend.device_type,
        "project_name": backend.project_name,
        "plugin_target": backend.project_name,  # the CMake target: libpaddle-custom-<type>.so
        "plugin_version": PLUGIN_VERSION,
        "paddle_version": find_recipe(HOST_RECIPE).paddle_version or "",
        "devkit_version": __version__,
        "devkit_distribution": DISTRIBUTION,
        "recipes": [find_recipe(name) for name in default_targets()],
    }


def _check_destination(out_dir: Path, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise DevkitError(f"{out_dir} exists and is not a directory", "choose another --out")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise DevkitError(
            f"output directory {out_dir} already exists and is not empty",
            "pass --force to replace it, or choose another --out",
        )


def render_backend(backend: BackendName, out_dir: Path, *, force: bool = False) -> RenderResult:
    """Render the backend project into `out_dir`, all or nothing."""
    out_dir = out_dir.resolve()
    _check_destination(out_dir, force)
    template_root = resource_dir("templates") / "backend"
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_root)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    context = template_context(backend)
    written: list[str] = []
    with staging_dir(out_dir, replace=True) as stage:
        for src in sorted(p for p in template_root.rglob("*") if p.is_file()):
            rel = src.relative_to(template_root).as_posix()
            if "__pycache__" in rel:
                continue
            target_rel = env.from_string(rel).render(context)
            text = env.get_template(rel).render(context)
            dest = stage / target_rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
            if os.access(src, os.X_OK):
                dest.chmod(dest.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            written.append(target_rel)
    return RenderResult(out_dir=out_dir, files=tuple(written))
