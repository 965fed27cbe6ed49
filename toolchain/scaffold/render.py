"""`devkit new-backend`: render templates/backend into a plugin project."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .. import DISTRIBUTION, __version__
from ..project.config import DEFAULT_INFERENCE_PASSES, default_targets, setting_line, settings_toml
from ..project.frameworks import TORCH
from ..project.naming import BackendName
from ..project.recipes import build_machine_recipe, find_recipe
from ..util.errors import InputError
from ..util.fsutil import staging_dir
from ..util.resources import resource_dir
from .c_api import STUBS_FILE
from .flavours import Flavour, host_backed

PLUGIN_VERSION = "0.1.0"


@dataclass(frozen=True)
class RenderResult:
    out_dir: Path
    files: tuple[str, ...]


def template_context(backend: BackendName, flavour: Flavour | None = None) -> dict[str, object]:
    return {
        **(flavour or host_backed()).context(),
        "name": backend.name,
        "NAME": backend.upper,
        "device_type": backend.device_type,
        "p": backend.device_type,
        "project_name": backend.project_name,
        "plugin_target": backend.project_name,  # the CMake target: libpaddle-custom-<type>.so
        "plugin_version": PLUGIN_VERSION,
        "inductor_seam": list(TORCH.compiler_seam),
        "paddle_version": build_machine_recipe().runtime_version("paddle") or "",
        "devkit_version": __version__,
        "devkit_distribution": DISTRIBUTION,
        "recipes": [find_recipe(name) for name in default_targets()],
        # [tool.devkit] keys and sections written from the settings model
        "settings_toml": settings_toml,
        "default_inference_passes": DEFAULT_INFERENCE_PASSES,
        "setting_line": setting_line,
    }


def _check_destination(out_dir: Path, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir} exists and is not a directory", "choose another --out")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise InputError(
            f"output directory {out_dir} already exists and is not empty",
            "pass --force to replace it, or choose another --out",
        )


def _template_files(flavour: Flavour) -> dict[str, Path]:
    """Relative path -> template file: the backend's, less what the flavour replaces, plus the
    flavour's own (its top-level _* files are partials the backend's templates include)."""
    backend_root = resource_dir("templates") / "backend"
    files: dict[str, Path] = {}
    for root in (backend_root, flavour.root):
        if root is None:
            continue
        for src in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = src.relative_to(root).as_posix()
            if "__pycache__" in rel or (root != backend_root and (rel == "flavour.toml" or rel.startswith("_"))):
                continue
            if root == backend_root and any(rel.startswith(d + "/") for d in flavour.replaces):
                continue
            if rel.startswith("paddle/engine/") and not flavour.int8_engine:  # (the device library lacks its ops)
                continue
            files[rel] = src
    return files


def render_backend(
    backend: BackendName, out_dir: Path, *, force: bool = False, flavour: Flavour | None = None
) -> RenderResult:
    """Render the backend project into `out_dir`, all or nothing."""
    from ..run.envs import cache_root
    from .compiled_templates import template_environment  # (Jinja: by the command that renders)

    flavour = flavour or host_backed()
    out_dir = out_dir.resolve()
    _check_destination(out_dir, force)
    roots = [str(r) for r in (flavour.root, resource_dir("templates") / "backend") if r is not None]
    env = template_environment(roots, cache_root())  # the flavour's template wins
    context = template_context(backend, flavour)
    written: list[str] = []
    with staging_dir(out_dir, replace=True) as stage:
        for rel, src in _template_files(flavour).items():
            target_rel = env.from_string(rel).render(context) if "{" in rel else rel  # (names with a field)
            text = env.get_template(rel).render(context)
            dest = stage / target_rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
            if os.access(src, os.X_OK):
                dest.chmod(dest.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            written.append(target_rel)
        if flavour.stubs:  # the C API ops the flavour's device library leaves out (c_api.py)
            rel = f"device/{STUBS_FILE}"
            (stage / rel).write_text(env.from_string(flavour.stubs).render(context))
            written.append(rel)
    return RenderResult(out_dir=out_dir, files=tuple(written))
