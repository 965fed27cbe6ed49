"""Verify environments: a clone of the cached reference env (paddlepaddle only) per verification,
isolated from the reference and from every other verification."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from devkit.run.envs import clone_env, reference_env
from devkit.run.step import HostRunner, Step

pytestmark = pytest.mark.e2e

TYPES = "import paddle; print(paddle.device.get_all_custom_device_type())"


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_ino for p in root.rglob("*") if p.is_file()}


def test_a_clone_gets_the_plugin_and_the_reference_never_does(built_project, tmp_path):
    (wheel,) = built_project.glob("dist/*.whl")
    log = tmp_path / "log"
    runner = HostRunner()
    reference = reference_env(runner, "3.3.1", log)
    assert reference is not None
    before = _files(reference)
    first = clone_env(reference, tmp_path / "first")
    runner.run(Step("install", [first, "-m", "pip", "install", "--no-deps", "-q", str(wheel)], log=log))
    second = clone_env(reference, tmp_path / "second")
    assert subprocess.run([first, "-c", TYPES], capture_output=True, text=True).stdout.strip() == "['stpu']"
    assert subprocess.run([second, "-c", TYPES], capture_output=True, text=True).stdout.strip() == "[]"
    assert _files(reference) == before  # same files, same inodes: nothing written into the reference
    assert not list(reference.glob("lib/python3*/site-packages/paddle_custom_device"))
