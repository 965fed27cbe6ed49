"""The generated project's conformance/expected-failures.toml, enforced both ways: a listed failure
is expected, an unlisted one fails, a listed case that passes fails ("now passes"); --update-expected
rewrites it keeping the reasons; a bad file is one line naming file:line. And the reports per suite."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import devkit

from devkit.project.frameworks import TORCH
from devkit.project.recipes import find_recipe
from devkit.util.errors import ExitCode, InputError
from devkit.verify.expected import ExpectedFailures, load_expected, toml_string, write_expected
from devkit.verify.ops import OpsRequest, _publish, judge_expected, with_op_suites
from devkit.verify.report import Report
from devkit.verify.session import VerifyOptions, VerifyResult

LISTED = """\
# known gaps of this backend
#   (kept by a rewrite)

[[torch]]
suite = "ops"
case = "as_strided"
dtype = "float32"
reason = "the view's storage offset is dropped"

[[torch]]
suite = "grads"
case = "nn.functional.group_norm"
dtype = "float64"
reason = "no float64 backward"

[[torch]]
suite = "ops"
case = "add"
dtype = "float32"
reason = "was wrong for broadcasts"

[[paddle]]
suite = "ops"
case = "matmul"
dtype = "float16"
reason = "accumulates in float16"
"""


def _results() -> list[dict]:
    return [
        {"case": "as_strided", "dtype": "float32", "kernels": [], "status": "fail", "mismatch": ["out: max |diff| 1"]},
        {"case": "add", "dtype": "float32", "kernels": ["add"], "status": "pass"},
        {"case": "mul", "dtype": "float32", "kernels": ["mul"], "status": "error", "error": "worker died (SIGSEGV)"},
        {"case": "sub", "dtype": "bfloat16", "kernels": ["sub"], "status": "not registered"},
        {"suite": "grads", "case": "nn.functional.relu", "dtype": "float32", "kernels": [], "status": "pass"},
    ]


def _request(project_root: Path | None, update: bool = False) -> OpsRequest:
    options = VerifyOptions(find_recipe("x86_64"), TORCH)
    project = type("P", (), {"root": project_root})() if project_root else None
    return OpsRequest(project, None, options.recipe, options, Path("."), None, "", "", False, update_expected=update)  # type: ignore[arg-type]


def _published(tmp_path: Path, results: list[dict]):
    report = {"mode": "opinfo", "arch": "x86_64", "device": "stpu", "reference": "torch 2.13 CPU", "results": results}
    return _publish(report, tmp_path / "reports")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "conformance" / "expected-failures.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_listed_failures_are_expected_unlisted_ones_fail_and_a_listed_pass_fails(tmp_path):
    _write(tmp_path, LISTED)
    request = _request(tmp_path)
    raw = _published(tmp_path, _results())
    assert not raw.report.passed and {r.case for r in raw.failed} == {"as_strided", "mul"}  # before judging
    result, update = judge_expected(raw, load_expected(tmp_path / "conformance/expected-failures.toml"), request)
    assert update is None
    verdicts = {(r.suite, r.case): r.verdict for r in result.report.results}
    assert verdicts == {
        ("ops", "as_strided"): "expected",
        ("ops", "add"): "now passing",
        ("ops", "mul"): "error",
        ("ops", "sub"): "not registered",
        ("grads", "nn.functional.relu"): "pass",
    }
    assert not result.report.passed and {r.case for r in result.failed} == {"add", "mul"}
    written = json.loads((tmp_path / "reports/report.json").read_text())
    assert written["counts"]["expected"] == 1 and written["counts"]["now passing"] == 1 and not written["passed"]
    assert written["suites"]["grads"]["pass"] == 1 and written["suites"]["ops"]["error"] == 1
    # group_norm's grads entry was not judged (not run), Paddle's belongs to the other framework
    assert written["expected_failures"]["listed"] == 3 and written["expected_failures"]["not_judged"] == 1
    markdown = (tmp_path / "reports/report.md").read_text()
    assert "| ops | 0 | 1 | 1 | 1 | 1 |" in markdown and "| grads | 1 | 0 | 0 | 0 | 0 |" in markdown
    assert "## grads" in markdown and "| as_strided | float32 |  | expected failure | expected: the view's" in markdown
    assert "| add | float32 | add | now passes | now passes: remove it from conformance/expected-failures.toml" in (
        markdown
    )
    suites = ET.parse(tmp_path / "reports/junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["devkit test-ops ops", "devkit test-ops grads"]
    ops = suites[0]
    assert (ops.get("tests"), ops.get("failures"), ops.get("skipped")) == ("4", "2", "2")
    add = ops.find("testcase[@name='add [float32]']")
    assert add is not None and add.find("failure").get("message").startswith("now passes: remove it")
    strided = ops.find("testcase[@name='as_strided [float32]']")
    assert strided is not None and strided.find("skipped").get("message").startswith("expected: the view's")


def test_a_run_with_only_expected_failures_passes_and_without_a_project_nothing_is_expected(tmp_path):
    _write(tmp_path, LISTED)
    results = [r for r in _results() if r["case"] not in ("add", "mul")]
    result, _ = judge_expected(
        _published(tmp_path, results),
        load_expected(tmp_path / "conformance/expected-failures.toml"),
        _request(tmp_path),
    )
    assert result.report.passed and result.report.counts["expected"] == 1
    assert "1 expected failures, 0 now passing" in (tmp_path / "reports/report.md").read_text()
    bare, _ = judge_expected(_published(tmp_path, results), None, _request(None))
    assert not bare.report.passed and [r.case for r in bare.failed] == ["as_strided"]
    with pytest.raises(InputError, match="--update-expected rewrites a project's"):
        from devkit.verify.ops import expected_failures

        expected_failures(_request(None, update=True))


def test_update_expected_keeps_reasons_drops_passes_adds_failures_and_keeps_what_it_did_not_run(tmp_path):
    path = _write(tmp_path, LISTED)
    result, update = judge_expected(
        _published(tmp_path, _results()), load_expected(path), _request(tmp_path, update=True)
    )
    assert update is not None and result.report.passed  # judged against the file it wrote
    assert [e.case for e in update.added] == ["mul"] and [e.case for e in update.removed] == ["add"]
    assert update.kept == 2
    again = load_expected(path)
    by_case = {(e.framework, e.case): e for e in again.entries}
    assert set(by_case) == {
        ("paddle", "matmul"),
        ("torch", "as_strided"),
        ("torch", "mul"),
        ("torch", "nn.functional.group_norm"),
    }
    assert by_case["torch", "as_strided"].reason == "the view's storage offset is dropped"
    assert (
        by_case["torch", "mul"].reason.startswith("worker died (SIGSEGV)")
        and "say why" in by_case["torch", "mul"].reason
    )
    text = path.read_text()
    assert text.startswith("# known gaps of this backend\n#   (kept by a rewrite)\n\n[[paddle]]")
    # a second run changes nothing
    judge_expected(_published(tmp_path, _results()), load_expected(path), _request(tmp_path, update=True))
    assert path.read_text() == text


def test_the_rendered_projects_file_loads_and_strings_round_trip(tmp_path):
    template = Path(__file__).parents[2] / "templates/backend/conformance/expected-failures.toml"
    loaded = load_expected(template)
    assert loaded.header.startswith("# The cases `devkit test-ops` knows to fail")
    # the reference backend's list: short, each entry with a reason someone wrote, in the form a rewrite keeps
    assert len(loaded.entries) <= 12 and not any("--update-expected" in e.reason for e in loaded.entries)
    write_expected(replace(loaded, path=tmp_path / "rewritten.toml"))
    assert (tmp_path / "rewritten.toml").read_text() == template.read_text()
    import tomllib

    for value in ('quote " back \\ tab\t nl\n del\x7f é', "[[torch]]"):
        assert tomllib.loads(f"v = {toml_string(value)}")["v"] == value
    path = tmp_path / "x.toml"
    entries = load_expected(_write(tmp_path, LISTED)).entries
    write_expected(ExpectedFailures(path, entries, ""))
    assert load_expected(path).entries == entries


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ('[[torch]]\nsuite = "ops"\ncase = "add"\ndtype = "float32"\nreason = "x"\nbroken here\n', 6, "not valid TOML"),
        (
            '# c\n\n[[torch]]\nsuite = "ops"\ncase = "add"\ndtype = "float32"\nreasn = "typo"\n',
            7,
            "unknown key 'reasn'",
        ),
        (
            '[[torch]]\nsuite = "ops"\ncase = "a"\ndtype = "float32"\nreason = "r"\n\n[[torch]]\nsuite = "ops"\ncase = "b"\ndtype = "float32"\n',
            7,
            "lacks reason",
        ),
        (
            '[[torch]]\nsuite = "ops"\ncase = "a"\ndtype = "float32"\nreason = ""\n',
            5,
            "reason must be a non-empty string",
        ),
        (
            '[[torch]]\nsuite = "opz"\ncase = "a"\ndtype = "float32"\nreason = "r"\n',
            2,
            "suite 'opz' is not a suite of the PyTorch adapter",
        ),
        (
            '[[paddle]]\nsuite = "grads"\ncase = "a"\ndtype = "float32"\nreason = "r"\n',
            2,
            "suite 'grads' is not a suite of the PaddlePaddle",
        ),
        ('\n[[jax]]\nsuite = "ops"\n', 2, "'jax' is not a framework's list of cases"),
        ('[torch]\nsuite = "ops"\n', 1, "'torch' is not a framework's list of cases"),
        (
            '[[torch]]\nsuite = "ops"\ncase = "a"\ndtype = "float32"\nreason = "r"\n[[torch]]\nsuite = "ops"\ncase = "a"\ndtype = "float32"\nreason = "s"\n',
            6,
            "listed twice (first at line 1)",
        ),
        ('[[torch]]\nsuite = "ops"\ncase = 3\ndtype = "float32"\nreason = "r"\n', 3, "case must be a non-empty string"),
    ],
)
def test_a_bad_file_is_one_line_naming_file_and_line(tmp_path, text, where, words):
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        load_expected(path)
    assert str(caught.value.problem).startswith(f"{path}:{where}: ") and words in caught.value.problem, (
        caught.value.problem
    )
    assert "\n" not in caught.value.problem


def test_test_ops_refuses_a_bad_file_before_it_runs_anything(tmp_path):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    path = project / "conformance/expected-failures.toml"
    rendered = path.read_text()
    path.write_text(rendered + '\n[[torch]]\nsuite = "ops"\ncase = "add"\ndtype = "float32"\nwhy = "x"\n')
    why = len(rendered.splitlines()) + 6  # the line of `why`
    proc = devkit("test-ops", str(project), "--framework", "torch", check=False)
    assert proc.returncode == ExitCode.INPUT, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert f"{path}:{why}: unknown key 'why'" in proc.stderr and len(lines) <= 2, proc.stderr
    proc = devkit("test-ops", "--wheel", str(tmp_path / "x.whl"), "--update-expected", check=False)
    assert proc.returncode == ExitCode.INPUT


def test_verify_summarises_the_last_test_ops_run_per_suite(tmp_path):
    _write(tmp_path, LISTED)
    judge_expected(
        _published(tmp_path, _results()),
        load_expected(tmp_path / "conformance/expected-failures.toml"),
        _request(tmp_path),
    )
    verify_json = tmp_path / "verify/report.json"
    verify_json.parent.mkdir()
    report = Report.from_json({"checks": [{"name": "lenet", "passed": True}], "passed": True})
    verify_json.write_text(json.dumps(report.to_json()))
    result = with_op_suites(VerifyResult(report, verify_json, None), tmp_path / "reports")
    summary = json.loads(verify_json.read_text())["op_suites"]
    assert result.passed and summary == result.report.data["op_suites"]
    assert summary["passed"] is False and summary["suites"]["ops"]["expected"] == 1
    assert summary["suites"]["ops"]["now passing"] == 1 and summary["suites"]["grads"]["pass"] == 1
    assert summary["report"].endswith("reports/report.md") and summary["older_than_wheel"] is False
    assert with_op_suites(replace(result), tmp_path / "none") == result  # no test-ops run: nothing added


def test_the_verify_table_shows_the_op_suites_and_a_torch_report(tmp_path, capsys):
    from devkit.cli import views

    fallback = {"name": "fallback report", "passed": True, "kind": "fallback", "lenet_fallbacks": {}}
    report = Report.from_json(
        {"device": "stpu", "framework": "torch", "runtime_version": "2.13.0", "checks": [fallback], "passed": True}
    )
    _write(tmp_path, LISTED)
    judge_expected(
        _published(tmp_path, _results()),
        load_expected(tmp_path / "conformance/expected-failures.toml"),
        _request(tmp_path),
    )
    verify_json = tmp_path / "report.json"
    verify_json.write_text("{}")
    result = with_op_suites(VerifyResult(report, verify_json, None), tmp_path / "reports")
    assert report.fallback() is None  # torch's record is not Paddle's kernel table
    views.show_verify(result, find_recipe("x86_64"))
    shown = capsys.readouterr().err
    assert "devkit test-ops:" in shown and "now passing" in shown and "grads" in shown
