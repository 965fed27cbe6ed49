"""Paddle's own op tests, from a source tree, on the custom place, as PaddleCustomDevice's
metax_gpu and iluvatar_gpu backends run them (tools/unittest_runner): each test/legacy_test file built
on OpTest, by pytest from that directory (op_test.py and its helpers import each other by plain
name), with CPU kernel fallback off (FLAGS_enable_api_kernel_fallback=0, so a kernel the plugin lacks
fails instead of running on the CPU) and float64 tests skipped (a custom device need not have it).
Run inside the verify environment by `devkit test-ops --framework-src DIR`.

    python paddle_src_tests.py --src DIR --device stpu [--tests REGEX] --out src-tests.json

This module is also the pytest plugin `-p paddle_src_tests` of each file's process: its setup hook
skips a test whose class (up to OpTest) uses float64 in the definitions it runs with.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
import time
import unittest
from importlib.metadata import version
from typing import Any

from src_tests import run_files, write_report

OP_TEST = re.compile(r"^from op_test import|^import op_test", re.M)
FLOAT64 = re.compile(r"float64|np\.double\b")


def op_test_files(test_dir: str, pattern: str) -> list[str]:
    """legacy_test's files of OpTests (they import op_test), those whose name `pattern` searches."""
    wanted = re.compile(pattern) if pattern else None
    found = []
    for name in sorted(os.listdir(test_dir)):
        if not (name.startswith("test_") and name.endswith(".py")) or (wanted and not wanted.search(name)):
            continue
        with open(os.path.join(test_dir, name), encoding="utf-8", errors="replace") as f:
            if OP_TEST.search(f.read()):
                found.append(name)
    return found


def float64_definition(cls: type) -> str | None:
    """The first of the class's public definitions, as the class resolves them (an override in a
    subclass replaces its base's), that mentions float64; classes from OpTest up are the harness."""
    seen: set[str] = set()
    for owner in inspect.getmro(cls):
        if owner is object or owner.__name__ == "OpTest":
            return None
        for name, value in vars(owner).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if FLOAT64.search(_text_of(value)):
                return f"{owner.__name__}.{name}"
    return None


def _text_of(value: Any) -> str:
    """A function's source (a property's accessors', a static or class method's), else the value's repr."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    functions = [value.fget, value.fset] if isinstance(value, property) else [value]
    if all(inspect.isfunction(f) or f is None for f in functions):
        try:
            return "\n".join(inspect.getsource(f) for f in functions if f is not None)
        except (OSError, TypeError):
            return ""
    try:
        return repr(value)
    except Exception:
        return ""


def pytest_runtest_setup(item: Any) -> None:
    cls = getattr(item, "cls", None)
    where = float64_definition(cls) if cls is not None else None
    if where:
        # (pytest reports unittest's SkipTest as a skip)
        raise unittest.SkipTest(f"float64 skipped on the custom device ({where})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--src", required=True, help="Paddle's source tree (its test/legacy_test is read)")
    parser.add_argument("--device", default="", help="the device type (a bare wheel: the one it registers)")
    parser.add_argument("--tests", default="", help="regular expression searching the test files' names")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test file")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    began = time.monotonic()
    root = os.path.abspath(args.src)
    test_dir = os.path.join(root, "test", "legacy_test")
    here = os.path.dirname(os.path.abspath(__file__))
    env = {
        **os.environ,
        "FLAGS_enable_api_kernel_fallback": "0",
        "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]),
    }
    run = run_files(op_test_files(test_dir, args.tests), root, test_dir, env, args.timeout, ["paddle_src_tests"])
    # (the runtime's version from its metadata: each test file's process imports it, this one does not)
    about = {
        "framework": "paddle",
        "device": args.device,
        "paddle_version": version("paddlepaddle"),
        "reference": f"Paddle's op tests ({args.src}) on {args.device}",
    }
    write_report(args.out, run, began, **about)
    return 0


if __name__ == "__main__":
    sys.exit(main())
