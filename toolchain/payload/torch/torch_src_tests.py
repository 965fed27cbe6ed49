"""PyTorch's own test files, from a source tree, with the device as the test device, as PyTorch's
OpenReg runs them (test/run_openreg_tests.py): each device-generic file (one that calls
instantiate_device_type_tests) under test/, by pytest, with PYTORCH_TESTING_DEVICE_ONLY_FOR naming
the device, so common_device_type instantiates its tests for the PrivateUse1 test base alone.
Run inside the verify environment by `devkit test-ops --framework torch --framework-src DIR`.

    python torch_src_tests.py --src DIR --device stpu [--tests REGEX] --out src-tests.json
"""

from __future__ import annotations

import argparse
import os
import re
import time
from importlib.metadata import version

from process_exit import exit_without_final_collection
from src_tests import run_files, write_report

# What OpenReg leaves out as not about a device (its "don't care" and "later" directories): whole
# subsystems with tests of their own machinery
SKIPPED_DIRS = frozenset(
    ("cpp_extensions", "distributed", "dynamo", "inductor", "export", "jit", "onnx", "fx", "mobile", "xpu", "lazy")
)
DEVICE_GENERIC = "instantiate_device_type_tests("


def device_generic_files(test_dir: str, pattern: str) -> list[str]:
    """test/'s device-generic files (relative paths), those whose path `pattern` searches."""
    wanted = re.compile(pattern) if pattern else None
    found = []
    for root, dirs, names in os.walk(test_dir):
        rel_dir = os.path.relpath(root, test_dir)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and d not in SKIPPED_DIRS)
        for name in sorted(names):
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if not (name.startswith("test_") and name.endswith(".py")) or (wanted and not wanted.search(rel)):
                continue
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                if DEVICE_GENERIC in f.read():
                    found.append(rel)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--src", required=True, help="PyTorch's source tree (its test/ is read)")
    parser.add_argument("--device", required=True)
    parser.add_argument("--tests", default="", help="regular expression searching the test files' paths under test/")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per test file")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    began = time.monotonic()
    root = os.path.abspath(args.src)
    test_dir = os.path.join(root, "test")
    files = device_generic_files(test_dir, args.tests)
    env = {
        **os.environ,
        "PYTORCH_TESTING_DEVICE_ONLY_FOR": args.device,
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "1",  # the device is there when common_device_type picks test bases
    }
    run = run_files(files, root, test_dir, env, args.timeout)
    # (the runtime's version from its metadata: each test file's process imports it, this one does not)
    about = {
        "framework": "torch",
        "device": args.device,
        "torch_version": version("torch"),
        "reference": f"PyTorch's test files ({args.src}) on {args.device}",
    }
    write_report(args.out, run, began, **about)
    return 0


if __name__ == "__main__":
    exit_without_final_collection(main())
