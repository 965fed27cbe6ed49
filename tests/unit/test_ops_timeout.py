"""test-ops --timeout: it reaches the payload that bounds the work (torch's suite cases, the
framework's own test files), the CLI refuses a bound under a second, and Paddle's op cases, which
run in one process and have no bound, refuse it in one line instead of ignoring it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from devkit.cli.app import app
from devkit.project.frameworks import PADDLE, TORCH
from devkit.project.recipes import find_recipe
from devkit.util.errors import InputError
from devkit.verify import framework_src
from devkit.verify.frameworks import paddle as paddle_verify
from devkit.verify.frameworks import torch as torch_verify
from devkit.verify.ops import OpsRequest
from devkit.verify.session import VerifyOptions


class RecordingSession:
    """Stands in for the plugin session (the environment is not what these tests are about): keeps
    the argv each payload would get."""

    def __init__(self) -> None:
        self.argv: list[str] = []
        self.runner = self
        self.key = "host"
        self.python = "python"
        self.log = Path("log")
        self.work = Path("work")

    def path(self, p: Path) -> str:
        return str(p)

    def run(self, step: Any) -> None:  # install_requirements
        pass

    def run_json(self, title: str, payload: Path, argv: list[str], name: str, **_: Any) -> dict[str, Any]:
        self.argv = argv
        return {}


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> RecordingSession:
    recorded = RecordingSession()

    @contextmanager
    def fake_session(*_: Any, **__: Any) -> Iterator[RecordingSession]:
        yield recorded

    for module in (torch_verify, framework_src):
        monkeypatch.setattr(module, "plugin_session", fake_session)
        monkeypatch.setattr(module, "publish_session_report", lambda report, *_: report)
    return recorded


def request(framework: Any, timeout: float | None, src: Path | None = None) -> OpsRequest:
    options = VerifyOptions(find_recipe("x86_64"), framework, device_type="stpu")
    return OpsRequest(
        None, Path("w.whl"), options.recipe, options, Path("."), None, "", "", False, ("ops",), src, False, timeout
    )


def test_timeout_reaches_the_torch_suites(session: RecordingSession) -> None:
    r = request(TORCH, 7.5)
    torch_verify.run_torch_opinfo(Path("w.whl"), r.options, "", False, Path("."), ("ops",), None, r.timeout)
    assert session.argv[-2:] == ["--timeout", "7.5"]
    torch_verify.run_torch_opinfo(Path("w.whl"), r.options, "", False, Path("."))
    assert "--timeout" not in session.argv  # (the payload's own default)


def test_timeout_reaches_the_framework_src_runner(session: RecordingSession, tmp_path: Path) -> None:
    (tmp_path / "test").mkdir()
    r = request(TORCH, 30.0, tmp_path)
    framework_src.run_source_tests(r, Path("w.whl"), r.options, torch_verify.SOURCE_TESTS, lambda _: {})
    assert session.argv[-2:] == ["--timeout", "30.0"]


def test_paddles_op_cases_refuse_a_timeout() -> None:
    with pytest.raises(InputError, match=r"--timeout bounds torch's suite cases") as refused:
        paddle_verify.test_ops(request(PADDLE, 10.0))
    assert refused.value.fix == "drop --timeout, or add --framework-src DIR"


def test_a_timeout_under_a_second_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["test-ops", "--timeout", "0"])
    assert result.exit_code == 2
    assert "Invalid value for '--timeout'" in result.output and "greater than or equal to 1" in result.output
