"""Verify's frameworks and modes are registries (verify/frameworks/), and the host reads a report's
checks by their kind (verify/report.py): the adapters name the modes they support, the registry's
order says which of a refused pair names the problem, the report directory's name is made of the
modes' suffixes, and a check's record is found by its kind, never by its name or its keys."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from devkit.cli import views
from devkit.project.config_parse import parse_config
from devkit.project.frameworks import FRAMEWORKS, PADDLE, TORCH, Framework
from devkit.project.project import Project
from devkit.project.recipes import find_recipe
from devkit.util.console import err
from devkit.util.errors import InputError, InternalError
from devkit.verify.frameworks import VERIFY_ADAPTERS, VERIFY_MODES, mode_support, verify_adapter
from devkit.verify.report import Report
from devkit.verify.request import project_config, verify_options, verify_report_dir
from devkit.verify.session import VerifyResult
from devkit.verify.verify_modes import ModeRun, VerifyRequest, check_modes

X86 = find_recipe("x86_64")


def refused(request: VerifyRequest, framework: Framework = PADDLE, arch: str = "x86_64") -> InputError:
    recipe = find_recipe(arch)
    options = verify_options(None, recipe, None, framework)
    run = ModeRun(None, None, recipe, request, framework, options, project_config(None), Path("r"))
    with pytest.raises(InputError) as info:
        check_modes(run, VERIFY_MODES, mode_support())
    return info.value


def accepted(request: VerifyRequest, framework: Framework = PADDLE) -> list[str]:
    options = verify_options(None, X86, None, framework)
    run = ModeRun(None, None, X86, request, framework, options, project_config(None), Path("r"))
    return [mode.name for mode in check_modes(run, VERIFY_MODES, mode_support())]


def test_every_mode_is_some_adapters_and_every_adapters_mode_is_registered():
    names = [mode.name for mode in VERIFY_MODES]
    assert len(set(names)) == len(names)
    for framework, modes in mode_support().items():
        assert set(modes) <= set(names), framework
    assert {name for modes in mode_support().values() for name in modes} == set(names)
    # the modes only one framework has are that adapter's
    assert "infer" in mode_support()["paddle"] and "infer" not in mode_support()["torch"]
    assert "compile" in mode_support()["torch"] and "compile" not in mode_support()["paddle"]


def test_each_adapter_is_found_by_its_frameworks_name():
    for name, adapter in VERIFY_ADAPTERS.items():
        assert verify_adapter(FRAMEWORKS[name]) is adapter
    with pytest.raises(InputError, match="devkit has no verification for Other"):
        verify_adapter(replace(PADDLE, name="other", label="Other"))


def test_an_unsupported_mode_names_the_frameworks_that_have_it():
    error = refused(VerifyRequest(compile=True), PADDLE)
    assert error.problem == "--compile checks torch.compile; the PaddlePaddle adapter has no compiler backend"
    assert error.fix == "drop --compile, or use --framework torch"
    error = refused(VerifyRequest(infer=True), TORCH)
    assert error.problem.endswith("the PyTorch adapter has no inference mode") and "--framework paddle" in error.fix


def test_the_first_mode_of_a_refused_pair_in_the_registrys_order_names_the_problem():
    # --amp comes before --infer and --distributed; --infer before --distributed
    assert refused(VerifyRequest(amp="O1", infer=True)).problem.startswith(
        "--amp trains a model on one device; --infer"
    )
    assert refused(VerifyRequest(infer=True, distributed=2)).problem.startswith("--infer is one process")
    error = refused(VerifyRequest(profile=True, distributed=2))
    assert error.problem == "--profile traces a training step of one process; --distributed checks something else"
    assert error.fix == "run `devkit verify --profile` and `devkit verify --distributed` separately"
    # exclusion is declared on one side and holds both ways
    assert refused(VerifyRequest(compile=True, profile=True), TORCH).problem.startswith("--compile checks compiled")


def test_a_mode_that_is_part_of_another_needs_it_and_a_value_is_checked():
    error = refused(VerifyRequest(quant="int8"))
    assert (error.problem, error.fix) == ("--quant verifies quantized inference with Paddle Inference", "add --infer")
    assert "is not a quantization" in refused(VerifyRequest(quant="int4", infer=True)).problem
    assert "is not a PyTorch mixed-precision level" in refused(VerifyRequest(amp="O2"), TORCH).problem
    assert accepted(VerifyRequest(quant="int8", infer=True)) == ["quant", "infer"]
    assert accepted(VerifyRequest(amp="O2", profile=True)) == ["profile", "amp"]
    assert accepted(VerifyRequest()) == []


def test_the_report_directory_is_named_by_the_modes():
    def name(request: VerifyRequest, framework: Framework = PADDLE) -> str:
        return verify_report_dir(None, X86, framework, request).name

    assert name(VerifyRequest()) == "verify-x86_64"
    assert name(VerifyRequest(infer=True, quant="int8")) == "verify-x86_64-int8-infer"
    assert name(VerifyRequest(amp="O1"), TORCH) == "verify-x86_64-torch-amp-O1"
    assert name(VerifyRequest(distributed=2), TORCH) == "verify-x86_64-torch-distributed"
    assert name(VerifyRequest(compile=True), TORCH) == "verify-x86_64-torch-compile"


def test_each_framework_verifies_with_its_own_index_url(tmp_path):
    """[tool.devkit.torch] index-url is where torch comes from, not where Paddle does."""
    config = parse_config(
        {"torch": {"index-url": "https://download.pytorch.org/whl/cpu"}}, name="STPU", device_type="stpu"
    )
    project = Project(tmp_path, "paddle-custom-stpu", "0.1.0", "STPU", "stpu", config)
    assert verify_options(project, X86, None, TORCH).index_url == "https://download.pytorch.org/whl/cpu"
    assert verify_options(project, X86, None, PADDLE).index_url == ""


def _check(name: str, kind: str | None, **record: object) -> dict[str, object]:
    return {"name": name, "passed": True, "detail": "", **({"kind": kind} if kind else {}), **record}


CURVE = {"losses": [2.3, 0.4], "heldout_accuracy": 0.97, "train_seconds": 1.0}


def test_checks_are_read_by_kind_not_by_name():
    training = _check("lenet", "training", device=CURVE, cpu=CURVE, max_curve_abs_diff=0.01)
    report = Report.from_json(
        {
            "device": "stpu",
            "checks": [
                _check("mnist", None, device=CURVE),  # the old name, without a kind: not the training check
                _check("mnist amp O1", "training", passed=False, detail="boom", traceback="..."),  # raised: no record
                training,
                _check("where kernels ran", "fallback", kernels={"conv2d": {"device": 3}}),
                _check("clauses", "contract", clauses=[]),
            ],
            "passed": True,
        }
    )
    trained = report.training()
    assert trained is not None and trained["name"] == "lenet" and trained["device"]["heldout_accuracy"] == 0.97
    fallback = report.fallback()
    assert fallback is not None and fallback["kernels"] == {"conv2d": {"device": 3}}
    assert report.contract() is not None and report.data_parallel() is None and report.inference() == []
    assert [c.name for c in report.of_kind("training")] == ["mnist amp O1", "lenet"]
    assert report.to_json()["checks"][2]["kind"] == "training"  # written back as read


def test_a_kind_outside_the_vocabulary_is_a_devkit_bug():
    with pytest.raises(InternalError, match="'kind' 'curves'"):
        Report.from_json({"checks": [_check("lenet", "curves")], "passed": True})


def test_the_verify_table_names_the_reports_framework_and_runtime(tmp_path):
    """The framework is what the report says (session.finish writes it), not guessed from its keys."""
    report = Report.from_json(
        {"device": "stpu", "framework": "torch", "runtime_version": "2.13.0", "runner": "host", "checks": []}
    )
    with err.capture() as shown:
        views.show_verify(VerifyResult(report, tmp_path / "report.json", None), X86)
    assert "stpu:0, torch 2.13.0 (host)" in shown.get()
