"""`devkit test-ops --gen-golden` records with the runner the project configures, as every other
command does: --runner, else [tool.devkit] runner, else (outside a project) the default."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bad_input import run_cli

from devkit.project.config import DevkitConfig
from devkit.util.errors import EnvironmentProblem, ExitCode
from devkit.verify.frameworks import paddle


@pytest.fixture(scope="module")
def docker_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rendered project whose [tool.devkit] runner is docker, not the default."""
    path = tmp_path_factory.mktemp("golden-runner") / "STPU"
    run_cli(["new-backend", "STPU", "--out", str(path)], expect=0)
    pyproject = path / "pyproject.toml"
    default = f'runner = "{DevkitConfig(name="", device_type="").runner}"'
    assert default in pyproject.read_text()
    pyproject.write_text(pyproject.read_text().replace(default, 'runner = "docker"'))
    return path


@pytest.fixture
def recorded_runner(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The runner gen_golden asks for; the stub stops there (no environment, no Paddle: what
    runs the recording is not what these tests are about)."""
    asked: list[str] = []

    def stub_runner(choice: str, *args: object) -> None:
        asked.append(choice)
        raise EnvironmentProblem("stub runner", "none")

    monkeypatch.setattr(paddle, "verify_runner", stub_runner)
    return asked


@pytest.mark.parametrize(
    "where, args, expected",
    [
        ("project", [], "docker"),  # the project's runner, given as the argument
        ("cwd", [], "docker"),  # the project's runner, the current directory being the project
        ("project", ["--runner", "host"], "host"),  # the command line wins
        ("elsewhere", [], "auto"),  # no project: the default
    ],
)
def test_gen_golden_uses_the_projects_runner(
    docker_project, recorded_runner, tmp_path, monkeypatch, where, args, expected
):
    monkeypatch.chdir(docker_project if where == "cwd" else tmp_path)
    project = [str(docker_project)] if where == "project" else []
    run_cli(["test-ops", *project, "--gen-golden", str(tmp_path / "golden"), *args], expect=ExitCode.ENVIRONMENT)
    assert recorded_runner == [expected]
    assert not (tmp_path / "golden").exists()
