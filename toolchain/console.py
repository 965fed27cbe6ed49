"""Terminal output: progress on stderr (so --json on stdout stays clean)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rich.console import Console

err = Console(stderr=True, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def step(title: str) -> Iterator[None]:
    """Show a spinner while a long step runs, then its duration."""
    start = time.monotonic()
    with err.status(f"[bold]{title}[/]…"):
        yield
    err.print(f"[green]✓[/] {title} [dim]({time.monotonic() - start:.1f} s)[/]")
