"""Terminal output: progress on stderr (so --json on stdout stays clean)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Protocol, TextIO

from rich.console import Console

err = Console(stderr=True, highlight=False, soft_wrap=True)
_json_stream: TextIO | None = None
_json_written = False


def reserve_stdout_for_json() -> None:
    """With --json, stdout carries the JSON and nothing else, whatever a subprocess prints (pip
    fetching a wheel on first use, a compiler): file descriptor 1 is pointed at stderr for the rest
    of the process and every child it starts, and the JSON goes to a duplicate of the original
    stdout. Once, at the edge: redirecting around single calls raced when matrix lanes ran in threads."""
    global _json_stream
    if _json_stream is not None:
        return
    sys.stdout.flush()
    _json_stream = os.fdopen(os.dup(1), "w")  # not inherited by children (os.dup is non-inheritable)
    os.dup2(2, 1)


def write_json(text: str) -> None:
    """A command's --json output, on stdout."""
    global _json_written
    out = _json_stream or sys.stdout
    out.write(text)
    out.flush()
    _json_written = True


def json_owed() -> bool:
    """--json was asked for and nothing printed yet: a failure is then the command's output."""
    return _json_stream is not None and not _json_written


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
