"""test-ops' selection: --dtypes names the dtypes of the chosen framework's op checks (torch's
include the integer and complex dtypes Paddle's cases lack), reaches the torch suites, and is refused
in one line where it would be ignored (--framework-src); --suite names the framework's suites."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from devkit.project.frameworks import PADDLE, TORCH, Framework
from devkit.project.recipes import find_recipe
from devkit.util.errors import InputError
from devkit.util.resources import payload_script
from devkit.verify.ops import OpsRequest, parse_selection, parse_suites
from devkit.verify.session import VerifyOptions


def request(framework: Framework, dtypes: str, ops: str = "", framework_src: Path | None = None) -> OpsRequest:
    options = VerifyOptions(find_recipe("x86_64"), framework)
    return OpsRequest(None, None, options.recipe, options, Path("."), None, ops, dtypes, False, ("ops",), framework_src)


def test_dtypes_not_given_leave_the_choice_to_the_suites() -> None:
    assert parse_selection(request(PADDLE, "")) == ("", None)
    assert parse_selection(request(TORCH, " ", ops="add,fft.ifft")) == ("add,fft.ifft", None)


def test_dtypes_are_the_frameworks_own() -> None:
    assert parse_selection(request(TORCH, "int16, complex64,int16")) == ("", ("int16", "complex64"))
    assert parse_selection(request(PADDLE, "float32,bool")) == ("", ("float32", "bool"))
    with pytest.raises(InputError, match=r"complex64 is not a dtype of the PaddlePaddle op checks") as paddle:
        parse_selection(request(PADDLE, "float32,complex64"))
    assert "float32,float64" in (paddle.value.fix or "")
    with pytest.raises(InputError, match=r"float8 is not a dtype of the PyTorch op checks"):
        parse_selection(request(TORCH, "float8"))
    with pytest.raises(InputError, match=r"nothing is not a dtype"):
        parse_selection(request(TORCH, ",,"))


def test_dtypes_with_the_frameworks_own_test_files_are_refused() -> None:
    with pytest.raises(InputError, match=r"--framework-src\) choose theirs") as refused:
        parse_selection(request(TORCH, "float32", framework_src=Path("pytorch")))
    assert refused.value.fix == "drop --dtypes"
    assert parse_selection(request(PADDLE, "", framework_src=Path("Paddle"))) == ("", None)


def test_a_bad_ops_expression_is_one_line() -> None:
    with pytest.raises(InputError, match=r"--ops '\(add' is not a regular expression"):
        parse_selection(request(TORCH, "", ops="(add"))


def test_suites_are_the_frameworks_own() -> None:
    assert parse_suites("grads, ops,grads", TORCH) == ("grads", "ops")
    with pytest.raises(InputError, match=r"grads is not a suite of the PaddlePaddle adapter"):
        parse_suites("ops,grads", PADDLE)


def test_torchs_dtypes_are_those_its_payload_runs() -> None:
    """The host checks --dtypes against TORCH.op_dtypes; the payload (which the host does not import)
    runs ALL_DTYPES: one list, written twice."""
    tree = ast.parse(payload_script("torch", "torch_test_ops").read_text())
    constants = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    device = ast.literal_eval(constants["DEVICE_DTYPES"])
    extra = constants["ALL_DTYPES"]
    assert isinstance(extra, ast.Tuple) and isinstance(extra.elts[0], ast.Starred)
    assert (*device, *(ast.literal_eval(e) for e in extra.elts[1:])) == TORCH.op_dtypes
