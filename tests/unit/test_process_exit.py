"""How a payload process ends (payload/shared/process_exit.py): with its exit code, its atexit
handlers run, its unflushed output written, and every object frozen while the interpreter shuts
down, so that shutdown's garbage collections pass them over (a collectable cycle stays)."""

from __future__ import annotations

import os
import subprocess
import sys

from devkit.util.resources import payload_env

SCRIPT = """
import atexit, gc, sys
from process_exit import exit_without_final_collection

class Cycle:
    def __del__(self):
        sys.stdout.write(" collected")

def at_exit():
    sys.stdout.write(f" atexit frozen={gc.get_freeze_count() > 0}")

atexit.register(at_exit)
cycle = Cycle()
cycle.me = cycle
del cycle
sys.stdout.write("written")  # (not flushed)
exit_without_final_collection(CODE)
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("CODE", code)],
        capture_output=True,
        text=True,
        env={**os.environ, **payload_env()},
        timeout=60,
    )


def test_the_code_the_atexit_handlers_and_the_output_survive_and_cycles_are_not_collected() -> None:
    proc = run("3")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "written atexit frozen=True", proc.stdout


def test_a_message_ends_as_sys_exit_ends_it() -> None:
    proc = run("'devkit: no device'")
    assert proc.returncode == 1 and proc.stderr == "devkit: no device\n", proc.stderr
