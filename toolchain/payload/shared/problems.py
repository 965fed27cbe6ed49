"""How a payload fails in words: its `devkit-problem: TEXT | FIX | KIND` line (devkit's one-line
error, see run/step.py: failure) and pip's unreachable index. Standard library only: devkit
imports it (run/step.py, building/publish.py) and every payload may."""

from __future__ import annotations

import re
import signal
import subprocess
from typing import Any


def run(argv: list[str], **kwargs: Any) -> None:
    print("$ " + " ".join(argv), flush=True)
    subprocess.run(argv, check=True, **kwargs)


class Problem(SystemExit):
    """A failure devkit reports as its one-line error (see run/step.py: failure)."""

    def __init__(self, text: str, fix: str, kind: str = "") -> None:
        super().__init__(1)
        self.text, self.fix, self.kind = text, fix, kind


def problem(text: str, fix: str, kind: str = "") -> Problem:
    """`kind` ("input", "environment"): what devkit's error is when it is not the step's own
    failure (run/step.py: PROBLEM_KINDS)."""
    print(f"devkit-problem: {text} | {fix}" + (f" | {kind}" if kind else ""), flush=True)
    return Problem(text, fix, kind)


# What pip prints when it cannot reach the package index (refused, no route, no DNS, proxy, TLS).
_UNREACHABLE = re.compile(
    r"(Failed to establish a new connection|Connection refused|Max retries exceeded|"
    r"Temporary failure in name resolution|Name or service not known|ProxyError|"
    r"ConnectTimeoutError|Network is unreachable|SSLError|CERTIFICATE_VERIFY_FAILED)"
)
INDEX_FIX = (
    "check the network and pip's index settings (`pip config list`, PIP_INDEX_URL, a proxy's CA bundle); "
    "environments devkit already made are reused without the index"
)


def index_unreachable(pip_output: str) -> str | None:
    """'the package index is unreachable (why)' when pip's output says so."""
    found = _UNREACHABLE.search(pip_output)
    return f"the package index is unreachable ({found.group(1)})" if found else None


def run_pip(argv: list[str]) -> None:
    """Run pip with its output shown as usual; an unreachable index is reported as such."""
    print("$ " + " ".join(argv), flush=True)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in proc.stdout:  # type: ignore[union-attr]
        print(line, end="", flush=True)
        seen.append(line)
    if proc.wait() != 0:
        unreachable = index_unreachable("".join(seen))
        if unreachable:
            raise problem(unreachable, INDEX_FIX, "environment")
        raise subprocess.CalledProcessError(proc.returncode, argv)


def describe_exit(code: int) -> str:
    """A child process's end in words: the signal that killed it, or its exit code."""
    if code < 0:
        try:
            return f"died of {signal.Signals(-code).name}"
        except ValueError:
            return f"died of signal {-code}"
    return f"exited with code {code}"
