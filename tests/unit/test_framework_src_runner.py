"""test-ops --framework-src's runner without a framework: pytest on plain test files, each file in a
process of its own (payload/shared/src_tests.py), each outcome a result; a process killed by a
signal or a timeout is the test it was in; a file that does not import is one error naming it; the
float64 rule of Paddle's OpTests (payload/paddle/paddle_src_tests.py); a tree without test files is
refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import payload_module

from devkit.util.errors import InputError
from devkit.util.resources import payload_env
from devkit.verify.framework_src import source_tree
from devkit.verify.frameworks.paddle import SOURCE_TESTS as PADDLE_TESTS
from devkit.verify.frameworks.torch import SOURCE_TESTS as TORCH_TESTS

FILES = {
    "test_outcomes.py": """
import os, signal, unittest
class TestOutcomes(unittest.TestCase):
    op_type = "relu"
    def test_right_float32(self): pass
    def test_wrong_int64(self): self.assertEqual(1, 2, "one is not two")
    @unittest.skip("needs CUDA")
    def test_cuda(self): pass
    def test_zz_dies(self): os.kill(os.getpid(), signal.SIGSEGV)
    def test_zzz_never_runs(self): pass
""",
    "test_broken_import.py": "import no_such_module_anywhere\n",
    "test_hangs.py": "import time\ndef test_sleeps():\n    time.sleep(60)\n",
}


def test_each_file_runs_alone_and_each_death_is_the_test_it_was_in(tmp_path: Path) -> None:
    src_tests = payload_module("shared", "src_tests")
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    env = {**os.environ, **payload_env()}
    run = src_tests.run_files(sorted(FILES), str(tmp_path), str(tmp_path), env, timeout=6)
    got = {r["case"].rsplit("::", 1)[-1]: r for r in run.results}
    assert {k: r["status"] for k, r in got.items()} == {
        "test_broken_import.py": "error",
        "test_right_float32": "pass",
        "test_wrong_int64": "fail",
        "test_zz_dies": "error",
        "test_sleeps": "error",
    }, run.results
    assert "No module named 'no_such_module_anywhere'" in got["test_broken_import.py"]["error"]
    assert "one is not two" in got["test_wrong_int64"]["detail"]
    assert got["test_wrong_int64"]["dtype"] == "int64" and got["test_right_float32"]["kernels"] == ["relu"]
    assert got["test_zz_dies"]["error"] == "the process died of SIGSEGV in this test"
    assert got["test_sleeps"]["error"] == "the process timed out after 6 s in this test"
    assert run.skipped == {"needs CUDA": 1}
    assert all(r["suite"] == "framework-src" for r in run.results)
    assert not list(tmp_path.glob("**/__pycache__")) and not (tmp_path / ".pytest_cache").exists()


def test_a_checks_dtypes_are_read_from_its_input_arrays() -> None:
    """Paddle's OpTest inputs: an array, an (array, lod) pair, or a duplicable input's list of
    (name, array); a class's dtype attribute does not count (some named float32 feed float64)."""
    paddle_src_tests = payload_module("paddle", "paddle_src_tests")
    inputs = {
        "X": np.zeros(2, np.float32),
        "Y": (np.zeros(2, np.int64), [[0, 2]]),
        "Z": [("z0", np.zeros(1, np.float64)), ("z1", np.zeros(1, np.uint16))],
        "axis": 1,
    }
    assert paddle_src_tests.input_dtypes(inputs) == ["float32", "int64", "float64", "uint16"]
    assert paddle_src_tests.input_dtypes(None) == []


@pytest.mark.parametrize("tests", [TORCH_TESTS, PADDLE_TESTS], ids=["torch", "paddle"])
def test_a_tree_without_the_test_files_is_refused_in_one_line(tmp_path: Path, tests: object) -> None:
    with pytest.raises(InputError) as raised:
        source_tree(tmp_path, tests)  # type: ignore[arg-type]
    assert f"{tmp_path / tests.tests_dir} is not a directory" in str(raised.value)  # type: ignore[attr-defined]
    assert "the root of the framework's source checkout" in raised.value.fix


def test_the_files_each_framework_runs_are_found_by_their_shape() -> None:
    """torch: the files that instantiate device-type tests; Paddle: legacy_test's files of OpTests;
    --ops (the payloads' --tests) searches their paths."""
    torch_src_tests = payload_module("torch", "torch_src_tests")
    paddle_src_tests = payload_module("paddle", "paddle_src_tests")
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "framework-src"
    torch_tests, legacy = str(fixtures / "torch" / "test"), str(fixtures / "paddle" / "test" / "legacy_test")
    assert torch_src_tests.device_generic_files(torch_tests, "") == ["test_device_generic.py"]
    assert torch_src_tests.device_generic_files(torch_tests, "host|dropout") == []
    assert paddle_src_tests.op_test_files(legacy, "") == ["test_activation_op.py"]
    assert paddle_src_tests.op_test_files(legacy, "elementwise") == []
