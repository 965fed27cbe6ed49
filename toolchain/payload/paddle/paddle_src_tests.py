"""Paddle's own op tests, from a source tree, on the custom place, as PaddleCustomDevice's
metax_gpu and iluvatar_gpu backends run them (tools/unittest_runner): each test/legacy_test file built
on OpTest, by pytest from that directory (op_test.py and its helpers import each other by plain
name), with CPU kernel fallback off (FLAGS_enable_api_kernel_fallback=0, so a kernel the plugin lacks
fails instead of running on the CPU) and float64 tests skipped (a custom device need not have it).
Run inside the verify environment by `devkit test-ops --framework-src DIR`.

    python paddle_src_tests.py --src DIR --device stpu [--tests REGEX] --out src-tests.json

This module is also the pytest plugin `-p paddle_src_tests` of each file's process. Paddle's OpTest
checks the places its build has (`_get_places`: the CPU, CUDA), never a custom one, so once the
file's tests are collected the plugin puts OpTest on the custom place: `_get_places` gives it, and
`check_output_with_place` / `check_grad_with_place` called with the CPU's place run on it instead.
Whether a check is float64 is read from its input arrays when it runs (a class's dtype attribute
does not say: OpTests named float32 feed float64 data), and the dtype reported is theirs.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import time
import unittest
from importlib.metadata import version
from typing import Any

from process_exit import exit_without_final_collection
from src_tests import run_files, write_report

OP_TEST = re.compile(r"^from op_test import|^import op_test", re.M)


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


PLACE_VARIABLE = "DEVKIT_CUSTOM_DEVICE"  # the device type the checks run on
WIDE = {"float64", "complex128"}  # what a custom device need not have: skipped, as PaddleCustomDevice does


def input_dtypes(inputs: Any) -> list[str]:
    """The dtypes of an OpTest's input arrays: `inputs` maps names to an array, a (array, lod)
    pair, or a list of (name, array) for a duplicable input."""
    found: list[str] = []

    def visit(value: Any) -> None:
        dtype = getattr(value, "dtype", None)
        if dtype is not None and hasattr(value, "shape"):
            found.append(str(dtype))
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)

    for value in (inputs or {}).values():
        visit(value)
    return found


def skip_float64(test: Any) -> list[str]:
    """Skip the check of a test whose inputs hold float64 (or complex128) data; else their dtypes."""
    dtypes = input_dtypes(getattr(test, "inputs", None))
    wide = sorted(WIDE.intersection(dtypes))
    if wide:
        raise unittest.SkipTest(f"float64 skipped on the custom device ({'/'.join(wide)} inputs)")
    return dtypes


def on_the_device(op_test: type, place: Any) -> None:
    """OpTest's checks on `place` (see the module's docstring). A float64 check is skipped where it
    runs on its place: OpTest's check_output has by then named the class's op_type, which its
    tearDownClass requires."""
    import paddle

    def to_device(check: Any) -> Any:
        def checked(self: Any, given: Any, *args: Any, **kwargs: Any) -> Any:
            dtypes = skip_float64(self)
            floating = [d for d in dtypes if d.startswith(("float", "complex", "uint16"))]
            self.devkit_dtype = next(iter(floating or dtypes), None)
            return check(self, place if isinstance(given, paddle.CPUPlace) else given, *args, **kwargs)

        return checked

    op_test._get_places = lambda self, *args, **kwargs: [place]  # type: ignore[attr-defined]
    for name in ("check_output_with_place", "check_grad_with_place"):
        if hasattr(op_test, name):
            setattr(op_test, name, to_device(getattr(op_test, name)))


def pytest_collection_finish(session: Any) -> None:
    """After collection, when the test files have imported op_test (by plain name, from their directory)."""
    op_test = getattr(sys.modules.get("op_test"), "OpTest", None)
    if op_test is None:
        return
    import paddle

    device = os.environ.get(PLACE_VARIABLE) or paddle.device.get_all_custom_device_type()[0]
    on_the_device(op_test, paddle.CustomPlace(device, 0))
    if any(main_enables_static(getattr(item, "fspath", "")) for item in session.items[:1]):
        paddle.enable_static()


def main_enables_static(path: Any) -> bool:
    """Whether a test file's `if __name__ == "__main__":` block calls paddle.enable_static() (as
    most of legacy_test's do before unittest.main: its tests start from static mode, and pytest,
    which imports the file as a module, would leave them in dynamic mode)."""
    try:
        with open(str(path), encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return any("enable_static" in ast.unparse(statement) for statement in node.body)
    return False


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
        PLACE_VARIABLE: args.device,
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
    exit_without_final_collection(main())
