"""The cached reference env is whole or absent: made in a staging directory beside it, stamped,
then renamed into place; and what the host's pip leaves for an emulated target is put where the
target's own pip would have put it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename

from devkit.project.frameworks import PADDLE
from devkit.run import envs
from devkit.run.step import HostRunner
from devkit.util.errors import EnvironmentProblem


def _made_until(fail: bool):
    """create_env as far as it writes files into the venv it is given; then it fails, or not."""

    def create_env(runner, root, packages, title, log, warm_imports=(), stand_ins=()):
        (root / "lib" / "python3.11" / "site-packages" / "paddle").mkdir(parents=True)
        (root / "bin").mkdir()
        (root / "pyvenv.cfg").write_text(f"command = python -m venv {root}\n")
        if fail:
            raise EnvironmentProblem("reference environment: install paddlepaddle failed", "see the log")
        return str(root / "bin" / "python")

    return create_env


def test_an_interrupted_reference_env_leaves_nothing_taken_as_made(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(envs, "create_env", _made_until(fail=True))
    with pytest.raises(EnvironmentProblem):
        envs.reference_env(HostRunner(), "3.3.1", tmp_path / "log", PADDLE)
    made = tmp_path / "host" / "reference-envs"
    assert [p.name for p in made.iterdir() if not p.name.endswith(".lock")] == []


def test_a_reference_env_is_moved_into_place_stamped_and_naming_its_place(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path))
    made = tmp_path / "host" / "reference-envs"
    leftover = made / ".py311-paddle-3.3.1.x1y2.partial"  # a killed devkit's staging directory
    leftover.mkdir(parents=True)
    monkeypatch.setattr(envs, "create_env", _made_until(fail=False))
    root = envs.reference_env(HostRunner(), "3.3.1", tmp_path / "log", PADDLE)
    assert root is not None and root.parent == made
    assert json.loads((root / envs.REFERENCE_MARKER).read_text()) == {"paddlepaddle": "3.3.1"}
    assert (root / "pyvenv.cfg").read_text() == f"command = python -m venv {root}\n"
    assert not list(made.glob("*.partial"))
    # made once: the next verification takes it as it is
    monkeypatch.setattr(envs, "create_env", _made_until(fail=True))
    assert envs.reference_env(HostRunner(), "3.3.1", tmp_path / "log", PADDLE) == root


def test_scripts_and_data_of_the_hosts_pip_move_into_the_venv_scripts_headed_for_its_python(tmp_path):
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "bin").mkdir(parents=True)
    (venv / "bin").mkdir()
    script = site / "bin" / "torchrun"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom torch.run import main\nsys.exit(main())\n")
    script.chmod(0o755)
    long_header = f"#!/bin/sh\n'''exec' \"{sys.executable}\" \"$0\" \"$@\"\n' '''\nimport sys\n"
    (site / "bin" / "f2py").write_text(long_header)
    (site / "bin" / "paddle").write_text("#!/bin/bash\necho paddle\n")  # a wheel's own script keeps its header
    info = site / "torch-2.9.1.dist-info"
    info.mkdir()
    (site / "share" / "man" / "man1").mkdir(parents=True)
    (site / "share" / "man" / "man1" / "isympy.1").write_text(".TH isympy\n")
    (info / "RECORD").write_text("bin/torchrun,sha256=x,10\ntorch/__init__.py,sha256=y,20\nshare/man/man1/isympy.1,,\n")
    envs._move_scripts(site, venv, "/reference-envs/aarch64-torch-2.9.1/bin/python")
    assert not (site / "bin").exists()
    moved = venv / "bin" / "torchrun"
    assert moved.read_text().startswith("#!/reference-envs/aarch64-torch-2.9.1/bin/python\nimport sys\n")
    assert os.access(moved, os.X_OK)
    assert (venv / "bin" / "f2py").read_text() == "#!/reference-envs/aarch64-torch-2.9.1/bin/python\nimport sys\n"
    assert (venv / "bin" / "paddle").read_text() == "#!/bin/bash\necho paddle\n"
    assert (venv / "share" / "man" / "man1" / "isympy.1").is_file() and not (site / "share").exists()
    record = (info / "RECORD").read_text().splitlines()
    assert record[0] == "../../../bin/torchrun,sha256=x,10" and record[2] == "../../../share/man/man1/isympy.1,,"


def test_the_target_pip_env_reads_no_pip_config_of_the_host(monkeypatch):
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    env = envs.target_pip_env()
    assert env["PIP_FIND_LINKS"] is None and env["PIP_CONFIG_FILE"] == os.devnull
    cert = env.get("PIP_CERT")
    assert cert is None or Path(cert).is_file()  # the host's CA bundle, not the container's path for it


def test_only_what_was_asked_for_is_marked_requested_as_the_targets_pip_marks_it(tmp_path):
    site = tmp_path / "site-packages"
    for dist in ("typing_extensions-4.16.0", "numpy-2.4.6", "pip-23.0.1"):
        (site / f"{dist}.dist-info").mkdir(parents=True)
        (site / f"{dist}.dist-info" / "REQUESTED").write_text("")
    installed = {parse_wheel_filename(f"{d}-py3-none-any.whl")[0] for d in ("typing_extensions-4.16.0", "numpy-2.4.6")}
    envs._mark_requested(site, installed, ["--index-url", "https://example.org/simple", "numpy"])
    assert (site / "numpy-2.4.6.dist-info" / "REQUESTED").exists()  # asked for
    assert not (site / "typing_extensions-4.16.0.dist-info" / "REQUESTED").exists()  # a dependency
    assert (site / "pip-23.0.1.dist-info" / "REQUESTED").exists()  # not this install's


def test_warming_writes_the_bytecode_of_modules_that_import_a_stood_in_module(tmp_path, monkeypatch):
    """torch's OpInfo database imports expecttest, which verify environments lack: the reference
    environment imports it once with a stand-in, so every verify environment cloned from it has its
    bytecode."""
    absent = "devkit_test_absent_module"  # (expecttest may be installed here)
    (tmp_path / "opinfo_like.py").write_text(f"import {absent}\n\nclass Case({absent}.TestCase):\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # as verify images set it: warming writes anyway
    log = tmp_path / "log"
    with pytest.raises(EnvironmentProblem):  # without the stand-in, the import fails
        envs.warm_bytecode(HostRunner(), sys.executable, ("opinfo_like",), "warm", log)
    envs.warm_bytecode(HostRunner(), sys.executable, ("opinfo_like",), "warm", log, stand_ins=(absent,))
    assert [p.name.split(".")[0] for p in (tmp_path / "__pycache__").glob("*.pyc")] == ["opinfo_like"]
