"""Terminal output: progress on stderr (so --json on stdout stays clean)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Protocol

from rich.console import Console

err = Console(stderr=True, highlight=False, soft_wrap=True)


class LiveStatus(Protocol):
    def update(self, status: str) -> None: ...


class _SilentStatus:
    def update(self, status: str) -> None:
        pass


@contextlib.contextmanager
def status(text: str) -> Iterator[LiveStatus]:
    """A live spinner on the main thread; silence on worker threads (parallel matrix
    lanes), where concurrent live displays would clash. Logs hold the detail either way."""
    if threading.current_thread() is threading.main_thread():
        with err.status(text) as live:
            yield live
    else:
        yield _SilentStatus()


@contextlib.contextmanager
def step(title: str) -> Iterator[None]:
    """Show a spinner while a long step runs, then its duration."""
    start = time.monotonic()
    with status(f"[bold]{title}[/]…"):
        yield
    err.print(f"[green]✓[/] {title} [dim]({time.monotonic() - start:.1f} s)[/]")
