import sys

import pytest

from devkit.errors import DevkitError
from devkit.runner import HostRunner, Step, diagnostic_lines


def test_host_runner_returns_output_and_logs(tmp_path):
    log = tmp_path / "step.log"
    out = HostRunner().run(Step("echo", [sys.executable, "-c", "print('hello')"], log=log))
    assert "hello" in out and "hello" in log.read_text()


def test_failure_carries_diagnostics_and_log(tmp_path):
    script = "import sys; print('ok line'); print('foo.cc:3:1: error: expected ;'); sys.exit(3)"
    with pytest.raises(DevkitError) as info:
        HostRunner().run(Step("compile", [sys.executable, "-c", script], log=tmp_path / "l.log"))
    assert "exit code 3" in info.value.problem
    assert info.value.details == "foo.cc:3:1: error: expected ;"
    assert info.value.log == tmp_path / "l.log"


def test_env_none_removes_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_TEST_VAR", "set")
    out = HostRunner().run(Step("env", [sys.executable, "-c", "import os; print(os.environ.get('DEVKIT_TEST_VAR'))"],
                                log=tmp_path / "l", env={"DEVKIT_TEST_VAR": None}))
    assert out.strip() == "None"


def test_cmake_messages_keep_their_continuation_lines():
    lines = ["-- ok", "CMake Error at cmake/FindPaddle.cmake:33 (message):", "  headers are missing", "", "-- done"]
    assert diagnostic_lines(lines) == lines[1:3]
