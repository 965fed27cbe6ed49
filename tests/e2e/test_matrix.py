"""`devkit build --all` and `devkit matrix run`, for real on the host (x86_64 entries);
the full default matrix with containers is in test_containers.py."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import check_json_output, devkit, wheel_name

from devkit.util.errors import ExitCode

pytestmark = pytest.mark.e2e


def test_build_all_reports_each_entry_and_fails_loudly(tmp_path):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    pyproject = project / "pyproject.toml"
    # x86_64 Paddle only; a second Paddle version that has no wheel for this Python makes two entries fail.
    pyproject.write_text(
        pyproject.read_text()
        .replace('targets = ["x86_64", "aarch64", "armhf"]', 'targets = ["x86_64"]')
        .replace('frameworks = ["paddle", "torch"]', 'frameworks = ["paddle"]')
        .replace('x86_64 = ["3.3.1"]', 'x86_64 = ["3.3.1", "2.0.0"]')
    )
    proc = devkit("build", str(project), "--all", "--runner", "host", "--json", check=False)
    assert proc.returncode == ExitCode.INPUT
    assert "2 of 4 matrix entries failed: x86_64-train-paddle2.0.0, x86_64-infer-paddle2.0.0" in proc.stderr
    summary = json.loads(proc.stdout)
    results = {e["id"]: e for e in summary["entries"]}
    assert [e["result"] for e in summary["entries"]] == ["passed", "passed", "failed", "failed"]
    train, infer = results["x86_64-train-paddle3.3.1"], results["x86_64-infer-paddle3.3.1"]
    assert [re.fullmatch(wheel_name("x86_64"), Path(a).name) is not None for a in train["artifacts"]] == [True]
    assert [Path(a).name for a in infer["artifacts"]][1:] == ["paddle-custom-stpu-inference-0.1.0-x86_64.tar.gz"]
    assert re.fullmatch(wheel_name("x86_64"), Path(infer["artifacts"][0]).name)
    for entry in (train, infer):
        assert all(Path(a).is_file() and Path(a).parent.name == entry["id"] for a in entry["artifacts"])
    assert "paddlepaddle==2.0.0 cannot be installed for Python" in results["x86_64-train-paddle2.0.0"]["error"]
    # JUnit: one testcase per entry, failures carry the reason
    suite = ET.parse(project / "reports" / "matrix" / "junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "2"
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["x86_64-train-paddle2.0.0 build", "x86_64-infer-paddle2.0.0 build"]
    assert json.loads((project / "reports" / "matrix" / "report.json").read_text())["passed"] is False


def test_matrix_run_is_what_the_ci_job_runs(built_project):
    """The command in the generated workflow, run locally: builds and verifies one entry."""
    entry = "x86_64-train-paddle3.3.1"
    summary = json.loads(devkit("matrix", "run", entry, str(built_project), "--runner", "host", "--json").stdout)
    check_json_output(["matrix", "run"], summary)  # (stdout was its JSON alone: json.loads took all of it)
    assert summary["passed"] is True
    assert [s["step"] for s in summary["steps"]] == ["build", "verify"]
    report = json.loads((built_project / "reports" / entry / "verify" / "report.json").read_text())
    assert report["passed"] and {c["name"] for c in report["checks"]} >= {"registration", "ops", "mnist"}
    suite = ET.parse(built_project / "reports" / entry / "junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    assert [
        re.fullmatch(wheel_name("x86_64"), p.name) is not None
        for p in (built_project / "dist" / "matrix" / entry).glob("*.whl")
    ] == [True]
