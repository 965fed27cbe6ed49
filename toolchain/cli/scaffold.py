"""`devkit new-backend`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from ..project.naming import parse_backend_name
from ..scaffold.flavours import load_flavour
from ..scaffold.render import render_backend
from ..util.console import err
from .options import JsonOpt, emit_json
from .outputs import NewBackendOutput


def new_backend(
    name: Annotated[str, typer.Argument(help="Backend name, e.g. STPU: a letter, then letters, digits or _ (max 32).")],
    out: Annotated[Path | None, typer.Option("--out", help="Output directory (default: ./NAME).")] = None,
    device_type: Annotated[
        str | None, typer.Option("--device-type", help="Paddle device type (default: lower-case NAME).")
    ] = None,
    sdk: Annotated[
        str | None,
        typer.Option(
            "--sdk",
            help="Device library flavour: one devkit ships (opencl), or your flavour's directory (flavour.toml "
            "and the templates it adds or replaces); default: the host-backed device.",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty output directory.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Render a complete, buildable plugin project for a new device."""
    backend = parse_backend_name(name, device_type)
    flavour = load_flavour(sdk)
    start = time.monotonic()
    result = render_backend(backend, out or Path(name), force=force, flavour=flavour)
    seconds = time.monotonic() - start
    if as_json:
        emit_json(
            NewBackendOutput(
                out_dir=result.out_dir,
                device_type=backend.device_type,
                sdk=flavour.name or None,
                files=list(result.files),
                seconds=round(seconds, 4),
            )
        )
    else:
        err.print(
            f"[green]✓[/] rendered backend [bold]{backend.name}[/] (device type [bold]{backend.device_type}[/]) "
            f"into {result.out_dir} — {len(result.files)} files in {seconds * 1000:.0f} ms"
        )
        err.print(f"  next: devkit build {result.out_dir}")
