"""The CLI's contract: one-line errors with a fix, non-zero exit, --json, --version."""

import json
import subprocess
import sys

import pytest
from conftest import devkit

from devkit.util.errors import ExitCode


def test_version():
    proc = devkit("--version")
    assert proc.stdout.strip().startswith("devkit ")


def test_the_cli_starts_without_the_heavy_libraries():
    """Every devkit command, `--help` included, starts the CLI: the docker SDK (with requests),
    NumPy, Jinja2 and pyelftools are imported by the commands that use them, not at start-up
    (together they took 0.37 s of a 0.85 s start on this project's CI machine)."""
    probe = "import sys, devkit.cli.app; print(' '.join(sorted(set(m.split('.')[0] for m in sys.modules))))"
    loaded = set(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    )
    assert "typer" in loaded and {"docker", "requests", "numpy", "jinja2", "elftools"}.isdisjoint(loaded), loaded


@pytest.mark.parametrize("command", ["new-backend", "build", "verify"])
def test_help_on_every_command(command):
    assert "Usage" in devkit(command, "--help").stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["new-backend", "int"], "C/C++ keyword"),
        (["new-backend", "9abc"], "must start with a letter"),
        (["new-backend", ""], "is empty"),
        (["new-backend", "gpu"], "already used by Paddle"),
        (["new-backend", "X" * 40], "more than 32"),
    ],
)
def test_bad_names_fail_with_one_line(tmp_path, args, message):
    proc = devkit(*args, "--out", str(tmp_path / "out"), check=False)
    assert proc.returncode == ExitCode.INPUT
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0] and "Fix:" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_existing_output_dir_needs_force(tmp_path):
    out = tmp_path / "STPU"
    out.mkdir()
    (out / "keep").write_text("1")
    proc = devkit("new-backend", "STPU", "--out", str(out), check=False)
    assert proc.returncode == ExitCode.INPUT and "--force" in proc.stderr
    assert (out / "keep").exists()
    devkit("new-backend", "STPU", "--out", str(out), "--force")
    assert not (out / "keep").exists()


def test_new_backend_json(tmp_path):
    proc = devkit("new-backend", "STPU", "--out", str(tmp_path / "p"), "--json")
    summary = json.loads(proc.stdout)
    assert summary["device_type"] == "stpu" and "CMakeLists.txt" in summary["files"]


def test_build_rejects_non_project(tmp_path):
    proc = devkit("build", str(tmp_path), check=False)
    assert proc.returncode == ExitCode.INPUT and "not a backend project" in proc.stderr


def test_build_rejects_unknown_arch(tmp_path):
    devkit("new-backend", "STPU", "--out", str(tmp_path / "p"))
    proc = devkit("build", str(tmp_path / "p"), "--arch", "sparc", check=False)
    assert proc.returncode == ExitCode.INPUT and "unknown target architecture 'sparc'" in proc.stderr


def test_build_rejects_bad_paddle_version(tmp_path):
    devkit("new-backend", "STPU", "--out", str(tmp_path / "p"))
    proc = devkit("build", str(tmp_path / "p"), "--paddle-version", "latest", check=False)
    assert proc.returncode == ExitCode.INPUT and "is not a version" in proc.stderr


def test_verify_without_wheel_says_build_first(tmp_path):
    devkit("new-backend", "STPU", "--out", str(tmp_path / "p"))
    proc = devkit("verify", str(tmp_path / "p"), check=False)
    assert proc.returncode == ExitCode.INPUT and "devkit build" in proc.stderr


def test_debug_shows_traceback(tmp_path):
    proc = devkit("--debug", "new-backend", "int", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == ExitCode.INPUT and "Traceback" in proc.stderr


@pytest.mark.parametrize(
    "args, usage, message",
    [
        (["buld"], "Usage: devkit [OPTIONS] COMMAND", "No such command 'buld'. Did you mean 'build'?"),
        (["new-backend"], "Usage: devkit new-backend", "Missing argument"),
        (["build", "--jobs", "0", "."], "Usage: devkit build", "Invalid value for '--jobs'"),
        (["build", "--frobnicate"], "Usage: devkit build", "No such option: --frobnicate"),
        (["verify", "--runner", "cloud"], "Usage: devkit verify", "Invalid value for '--runner'"),
        (["matrix", "lst"], "Usage: devkit matrix", "No such command 'lst'"),
    ],
)
def test_usage_errors_print_usage_and_one_error_line(args, usage, message):
    """Through the installed console script, with the typer a fresh install resolves (no click of its own)."""
    proc = devkit(*args, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert len(lines) == 2 and lines[0].startswith(usage), proc.stderr
    assert lines[1].startswith("error: ") and message in lines[1] and "Fix: see `devkit" in lines[1]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_installed_dependencies_are_consistent_and_declared():
    """`pip check` is clean, and every third-party module devkit imports is a declared dependency."""
    import ast
    import subprocess
    import sys
    import tomllib
    from importlib.metadata import packages_distributions
    from pathlib import Path

    from packaging.requirements import Requirement

    check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    root = Path(__file__).resolve().parents[2]
    declared = {
        Requirement(r).name.lower()
        for r in tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    providers = packages_distributions()
    stdlib = set(sys.stdlib_module_names)
    missing = set()
    for source in (root / "toolchain").glob("*.py"):  # payload/ runs in the target's own env
        for node in ast.walk(ast.parse(source.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                else []
            )
            for top in {n.split(".")[0] for n in names} - stdlib:
                if not {d.lower() for d in providers.get(top, [])} & declared:
                    missing.add(f"{source.name}: {top}")
    assert not missing, f"imported but not declared in pyproject.toml: {sorted(missing)}"


def test_help_keeps_bracketed_text():
    """`[tool.devkit]` in a help text is text, not rich markup (it used to vanish)."""
    text = " ".join(devkit("build", "--help").stdout.split())
    assert "(default: [tool.devkit] runner)" in text
    assert "mnist (LeNet), resnet_bn" in " ".join(devkit("verify", "--help").stdout.split())
