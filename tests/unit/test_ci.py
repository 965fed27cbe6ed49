"""`devkit ci`: workflows for both providers validate against the providers' published schemas
(as vendored by check-jsonschema), with one job per matrix entry running `devkit matrix run ID`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import devkit

from devkit.util.errors import ExitCode

SCHEMAS = {"github": "vendor.github-workflows", "gitlab": "vendor.gitlab-ci"}


def validate(path: Path, provider: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", SCHEMAS[provider], str(path)],
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ci") / "STPU"
    devkit("new-backend", "STPU", "--out", str(root))
    return root


def entry_ids(project: Path) -> list[str]:
    return [e["id"] for e in json.loads(devkit("matrix", "list", str(project), "--json").stdout)]


@pytest.mark.parametrize("provider", ["github", "gitlab"])
def test_workflow_validates_against_the_provider_schema(project, provider):
    out = json.loads(devkit("ci", "--provider", provider, str(project), "--json").stdout)
    path = Path(out["path"])
    assert (
        path.relative_to(project).as_posix()
        == {"github": ".github/workflows/devkit.yml", "gitlab": ".gitlab-ci.yml"}[provider]
    )
    proc = validate(path, provider)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out["jobs"] == entry_ids(project)


@pytest.mark.parametrize("provider", ["github", "gitlab"])
def test_the_schema_check_rejects_a_broken_workflow(project, provider, tmp_path):
    """The validation above can fail: the same file with a misspelled job key is rejected."""
    path = Path(
        json.loads(
            devkit(
                "ci", "--provider", provider, str(project), "--json", "--out", str(tmp_path / f"{provider}.yml")
            ).stdout
        )["path"]
    )
    doc = yaml.safe_load(path.read_text())
    if provider == "github":
        doc["jobs"]["matrix"]["runs_on"] = doc["jobs"]["matrix"].pop("runs-on")
    else:
        doc["armhf-device"]["scripts"] = doc["armhf-device"].pop("script")
    path.write_text(yaml.safe_dump(doc))
    assert validate(path, provider).returncode != 0


def test_github_jobs_are_the_matrix_entries(project):
    path = Path(json.loads(devkit("ci", "--provider", "github", str(project), "--json").stdout)["path"])
    job = yaml.safe_load(path.read_text())["jobs"]["matrix"]
    include = job["strategy"]["matrix"]["include"]
    assert [e["id"] for e in include] == entry_ids(project)
    assert {e["target"]: e["qemu"] for e in include} == {"x86_64": "", "aarch64": "arm64", "armhf": "arm"}
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert "devkit matrix run ${{ matrix.id }}" in runs
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and "dist/matrix/${{ matrix.id }}/" in upload["with"]["path"]


def test_gitlab_jobs_are_the_matrix_entries(project):
    path = Path(json.loads(devkit("ci", "--provider", "gitlab", str(project), "--json").stdout)["path"])
    doc = yaml.safe_load(path.read_text())
    jobs = {k: v for k, v in doc.items() if k in entry_ids(project)}
    assert list(jobs) == entry_ids(project)
    for entry_id, job in jobs.items():
        assert job["script"][-1] == f"devkit matrix run {entry_id}"
        assert job["artifacts"]["reports"]["junit"] == f"reports/{entry_id}/junit.xml"
    assert jobs["aarch64-train-paddle3.2.2"]["script"][0] == "devkit images binfmt arm64"
    assert len(jobs["x86_64-train-paddle3.3.1"]["script"]) == 1  # native: no qemu


def test_ci_config_changes_the_workflow(project, tmp_path):
    pyproject = project / "pyproject.toml"
    original = pyproject.read_text()
    try:
        pyproject.write_text(
            re.sub(r'devkit-requirement = ".*"', 'devkit-requirement = "devkit==9.9"', original).replace(
                'targets = ["x86_64", "aarch64", "armhf"]', 'targets = ["armhf"]'
            )
        )
        out = json.loads(
            devkit("ci", "--provider", "gitlab", str(project), "--json", "--out", str(tmp_path / "g.yml")).stdout
        )
        doc = yaml.safe_load(Path(out["path"]).read_text())
        assert out["jobs"] == ["armhf-device"]
        assert doc[".devkit"]["before_script"] == ["python -m pip install 'devkit==9.9'"]
    finally:
        pyproject.write_text(original)


def test_unknown_provider_and_entry_are_one_line_errors(project):
    proc = devkit("ci", "--provider", "jenkins", str(project), check=False)
    assert (
        proc.returncode == ExitCode.INPUT
        and "unknown CI provider 'jenkins'. Fix: use --provider github | gitlab" in proc.stderr
    )
    proc = devkit("matrix", "run", "riscv-train", str(project), check=False)
    assert (
        proc.returncode == ExitCode.INPUT
        and "no matrix entry 'riscv-train'" in proc.stderr
        and "x86_64-train-paddle3.3.1" in proc.stderr
    )


def test_generated_ci_installs_this_devkit(project, tmp_path):
    """The workflow's install step must resolve to this project's own wheel, at the version that wrote it
    (the name `devkit` on PyPI is someone else's)."""
    repo = Path(__file__).resolve().parents[2]
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(repo)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("*.whl")
    out = json.loads(
        devkit("ci", "--provider", "github", str(project), "--json", "--out", str(tmp_path / "w.yml")).stdout
    )
    steps = next(iter(yaml.safe_load(Path(out["path"]).read_text())["jobs"].values()))["steps"]
    install = next(s["run"] for s in steps if s.get("name") == "Install devkit")
    requirement = re.fullmatch(r"python -m pip install '(.+)'", install).group(1)
    report = tmp_path / "report.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--no-deps",
            "--no-index",
            "--find-links",
            str(wheels),
            "--report",
            str(report),
            "-q",
            requirement,
        ],
        check=True,
        capture_output=True,
    )
    (chosen,) = json.loads(report.read_text())["install"]
    from devkit import __version__

    assert chosen["metadata"]["name"] == "accelerator-devkit" and chosen["metadata"]["version"] == __version__
    assert Path(chosen["download_info"]["url"].removeprefix("file://")).name == wheel.name
    entry_points = subprocess.run([sys.executable, "-m", "zipfile", "-l", str(wheel)], capture_output=True, text=True)
    assert "devkit/cli/app.py" in entry_points.stdout  # the wheel carries the devkit command's package
