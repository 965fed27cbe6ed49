"""[tool.devkit] parsing: defaults, every key checked, errors naming the key; the matrix it yields."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import asdict

import pytest
from conftest import devkit

from devkit.matrix.entries import matrix_entries
from devkit.project.config import DevkitConfig, VerifySettings
from devkit.project.config_parse import parse_config
from devkit.project.frameworks import TORCH
from devkit.util.errors import DevkitError, ExitCode


def parse(table: dict) -> DevkitConfig:
    return parse_config({"name": "STPU", "device-type": "stpu", **table}, name="STPU", device_type="stpu")


def test_defaults_give_the_full_matrix():
    ids = [e.id for e in matrix_entries(parse({}))]
    assert ids == [
        "x86_64-train-paddle3.3.1",
        "x86_64-infer-paddle3.3.1",
        "aarch64-train-paddle3.2.2",
        "aarch64-infer-paddle3.2.2",
        "armhf-device",
    ]


def test_distributed_mode_is_an_entry_per_framework_on_the_native_target():
    config = parse({"frameworks": ["paddle", "torch"], "modes": ["train", "distributed"]})
    ids = [e.id for e in matrix_entries(config)]
    assert ids == [
        "x86_64-train-paddle3.3.1",
        "x86_64-distributed-paddle3.3.1",
        "aarch64-train-paddle3.2.2",
        "armhf-device",
        "x86_64-torch-train-torch2.13.0",
        "x86_64-torch-distributed-torch2.13.0",
        "aarch64-torch-train-torch2.9.1",
    ]
    with pytest.raises(DevkitError, match="tool.devkit.modes"):
        parse({"modes": ["train", "multi-card"]})


def test_framework_axis():
    """torch entries: train only (no inference mode), the recipes' torch pins or [tool.devkit.torch-versions];
    armhf (no runtime of either) builds the device library once."""
    config = parse(
        {
            "frameworks": ["paddle", "torch"],
            "torch-versions": {"armv8": ["2.9.1", "2.8.0"]},
            "torch": {"index-url": "https://download.pytorch.org/whl/cpu"},
        }
    )
    assert [e.id for e in matrix_entries(config)] == [
        "x86_64-train-paddle3.3.1",
        "x86_64-infer-paddle3.3.1",
        "aarch64-train-paddle3.2.2",
        "aarch64-infer-paddle3.2.2",
        "armhf-device",
        "x86_64-torch-train-torch2.13.0",
        "aarch64-torch-train-torch2.9.1",
        "aarch64-torch-train-torch2.8.0",
    ]
    assert config.index_url(TORCH) == "https://download.pytorch.org/whl/cpu"
    assert [e.id for e in matrix_entries(parse({"frameworks": ["torch"], "targets": ["armhf"]}))] == ["armhf-device"]
    for table, message in (
        ({"frameworks": ["paddle", "tensorflow"]}, "tool.devkit.frameworks has 'tensorflow'"),
        ({"torch-versions": {"armhf": ["2.9.1"]}}, "has no PyTorch runtime"),
        ({"torch-versions": {"x86_64": ["latest"]}}, "which is not a version"),
        ({"torch": {"index": "x"}}, "tool.devkit.torch.index is not a devkit setting"),
    ):
        with pytest.raises(DevkitError, match=re.escape(message)):
            parse(table)


def test_values_are_read_and_aliases_resolved():
    config = parse(
        {
            "targets": ["armv8", "x86_64"],
            "modes": ["infer"],
            "jobs": 3,
            "paddle-versions": {"x86_64": ["3.3.1", "3.2.2"]},
            "verify": {"steps": 50, "infer-models": ["resnet50", "mnist"]},
            "tolerances": {"op-rtol": 1e-3, "min-accuracy": 0.9},
        }
    )
    assert config.targets == ("aarch64", "x86_64")
    assert config.jobs == 3 and config.verify.steps == 50 and config.verify.infer_models == ("resnet50", "mnist")
    assert config.tolerances.op_rtol == 1e-3 and config.tolerances.min_accuracy == 0.9
    assert config.tolerances.grad_rtol == 1e-3  # untouched default
    assert [e.id for e in matrix_entries(config)] == [
        "aarch64-infer-paddle3.2.2",
        "x86_64-infer-paddle3.3.1",
        "x86_64-infer-paddle3.2.2",
    ]


@pytest.mark.parametrize(
    "table, key",
    [
        ({"target": ["x86_64"]}, "tool.devkit.target "),
        ({"targets": ["riscv128"]}, "tool.devkit.targets"),
        ({"targets": "x86_64"}, "tool.devkit.targets"),
        ({"modes": ["train", "serve"]}, "tool.devkit.modes"),
        ({"runner": "kubernetes"}, "tool.devkit.runner"),
        ({"jobs": -1}, "tool.devkit.jobs"),
        ({"jobs": True}, "tool.devkit.jobs"),
        ({"verify": {"step": 10}}, "tool.devkit.verify.step "),
        ({"verify": {"steps": "many"}}, "tool.devkit.verify.steps"),
        ({"verify": {"repeats": 0}}, "tool.devkit.verify.repeats"),
        ({"verify": {"infer-models": ["yolo"]}}, "tool.devkit.verify.infer-models"),
        ({"tolerances": {"op-rtol": "tight"}}, "tool.devkit.tolerances.op-rtol"),
        ({"tolerances": {"op_rtol": 1e-4}}, "tool.devkit.tolerances.op_rtol"),
        ({"paddle-versions": {"armhf": ["3.3.1"]}}, "tool.devkit.paddle-versions.armhf"),
        ({"paddle-versions": {"x86_64": ["three"]}}, "tool.devkit.paddle-versions.x86_64"),
        ({"ci": {"python": 3.11}}, "tool.devkit.ci.python"),
        ({"verify": 5}, "tool.devkit.verify"),
        ({"inference-passes": "delete_quant_dequant_linear_op_pass"}, "tool.devkit.inference-passes"),
        ({"inference-passes": ['x", "y']}, "tool.devkit.inference-passes"),  # (a C string literal's escape)
        ({"inference-passes": ["a;b"]}, "tool.devkit.inference-passes"),  # (CMake's list separator)
    ],
)
def test_bad_keys_and_values_name_the_key(table, key):
    with pytest.raises(DevkitError) as info:
        parse(table)
    assert key in info.value.one_line() + " ", info.value.one_line()
    assert info.value.fix


def test_generated_pyproject_states_every_setting(tmp_path):
    """The rendered [tool.devkit] spells out each setting with its default, so users see what they can change."""
    devkit("new-backend", "STPU", "--out", str(tmp_path / "STPU"))
    table = tomllib.loads((tmp_path / "STPU" / "pyproject.toml").read_text())["tool"]["devkit"]
    config = parse_config(table, name="STPU", device_type="stpu")
    # frameworks, paddle-versions and torch-versions spell out the defaults and the recipes' pins
    assert matrix_entries(config) == matrix_entries(parse({"frameworks": ["paddle", "torch"]}))
    assert config.frameworks == ("paddle", "torch") and config.index_url(TORCH) == ""
    for section in ("verify", "tolerances", "ci"):
        assert set(table[section]) == {k.replace("_", "-") for k in config.as_dict()[section]}


def test_config_show_and_errors_through_the_cli(tmp_path):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    shown = json.loads(devkit("config", "show", str(project), "--json").stdout)
    assert shown["device_type"] == "stpu" and shown["matrix"].count("armhf-device") == 1
    assert "x86_64-torch-train-torch2.13.0" in shown["matrix"] and "aarch64-torch-train-torch2.9.1" in shown["matrix"]
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("emulated-steps = 100", "emulated-step = 100"))
    for args in (["config", "show", str(project)], ["build", str(project)], ["matrix", "list", str(project)]):
        proc = devkit(*args, check=False)
        assert proc.returncode == ExitCode.INPUT
        assert re.search(
            r"error: pyproject.toml: tool.devkit.verify.emulated-step is not a devkit setting\. Fix: ", proc.stderr
        ), proc.stderr
        assert not (project / "dist").exists()


def test_flags_override_config(tmp_path):
    """--runner on the command line wins over [tool.devkit] runner."""
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('runner = "auto"', 'runner = "docker"'))
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock", "COLUMNS": "200"}
    # config says docker: with no engine reachable the build fails naming the engine
    proc = subprocess.run(
        [sys.executable, "-m", "devkit", "build", str(project)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == ExitCode.ENVIRONMENT and "no container engine answers" in proc.stderr, proc.stderr
    # the flag overrides it: the host build starts (and is not what this test is about: stop at arg handling)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "devkit",
            "build",
            str(project),
            "--runner",
            "host",
            "--paddle-version",
            "not-a-version",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == ExitCode.INPUT and "--paddle-version 'not-a-version' is not a version" in proc.stderr, (
        proc.stderr
    )


def test_each_default_is_written_once_and_the_project_and_readme_come_from_it(tmp_path):
    """The generated [tool.devkit] sections and the README's table hold the model's values (parsed
    back, not compared as text), and what the verify steps use unset is the model's default."""
    from pathlib import Path

    from devkit.project.config import SETTINGS_SECTIONS, TOP_LEVEL_SETTINGS, settings_markdown
    from devkit.verify.frameworks.paddle_infer import InferOptions
    from devkit.verify.session import VerifyOptions

    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    rendered = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["devkit"]
    for section, model in SETTINGS_SECTIONS.items():
        expected = {k.replace("_", "-"): list(v) if isinstance(v, tuple) else v for k, v in asdict(model()).items()}
        assert rendered[section] == expected, section
    defaults = DevkitConfig(name="STPU", device_type="stpu")
    for name in TOP_LEVEL_SETTINGS:
        value = getattr(defaults, name)
        assert rendered[name.replace("_", "-")] == (list(value) if isinstance(value, tuple) else value), name
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    assert settings_markdown() in page, "docs/configuration.md's settings table differs: python -m devkit.docs_gen"
    verify = VerifySettings()
    options = VerifyOptions(recipe=None)  # type: ignore[arg-type]
    infer = InferOptions()
    assert (options.model, options.steps) == (verify.train_model, verify.steps)
    assert (infer.models, infer.warmup, infer.repeats) == (verify.infer_models, verify.warmup, verify.repeats)
