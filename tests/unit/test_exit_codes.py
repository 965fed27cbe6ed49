"""Exit codes by kind: what CI branches on (README: Exit codes). The bad-input catalogue asserts
the code of every wrong input; here the kinds themselves, how a failed step picks its kind, and
that no code raises the base class (which would leave its kind to chance)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import devkit
from devkit.run.step import HostRunner, Step
from devkit.util import errors
from devkit.util.errors import (
    BuildFailure,
    DevkitError,
    EnvironmentProblem,
    ExitCode,
    InputError,
    InternalError,
    VerificationFailure,
)

PACKAGE = Path(devkit.__file__).resolve().parent
README = Path(__file__).resolve().parents[2] / "README.md"
KINDS = [InputError, EnvironmentProblem, BuildFailure, VerificationFailure, InternalError]


def test_each_kind_has_its_own_code_and_the_readme_lists_every_code():
    codes = [kind.exit_code for kind in KINDS]
    assert len(set(codes)) == len(codes) and ExitCode.USAGE not in codes and ExitCode.OK not in codes
    table = dict(re.findall(r"^\| (\d+) \| `(\w+)` \|", README.read_text(), re.M))
    assert {int(code) for code in table} == {int(code) for code in ExitCode}, table
    assert all(ExitCode(int(code)).name == name for code, name in table.items()), table


def test_no_code_raises_the_base_class():
    """Every error devkit constructs names its kind; `except DevkitError` stays fine."""
    bare = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "templates" in path.relative_to(PACKAGE).parts:  # Jinja templates of generated projects
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "DevkitError":
                bare.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert bare == [], f"raise a kind from devkit.util.errors instead of DevkitError at {bare}"
    assert all(issubclass(kind, DevkitError) for kind in KINDS)
    defined = {v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, DevkitError)}
    assert defined == {DevkitError, *KINDS}


@pytest.mark.parametrize("kind", [BuildFailure, VerificationFailure])
def test_a_failed_step_fails_as_its_kind_and_an_unreachable_index_as_the_machine(tmp_path, kind):
    failing = f"import sys; print({'devkit-problem: the sum is wrong | fix the kernel'!r}); sys.exit(1)"
    with pytest.raises(DevkitError) as info:
        HostRunner().run(Step("checks", [sys.executable, "-c", failing], log=tmp_path / "a.log", fails_as=kind))
    assert type(info.value) is kind and info.value.problem == "checks: the sum is wrong"
    unreachable = (
        "import sys; print('Failed to establish a new connection: [Errno 111] Connection refused'); sys.exit(1)"
    )
    with pytest.raises(DevkitError) as info:
        HostRunner().run(Step("pip", [sys.executable, "-c", unreachable], log=tmp_path / "b.log", fails_as=kind))
    assert type(info.value) is EnvironmentProblem and "package index is unreachable" in info.value.problem


def test_a_payload_names_the_kind_of_its_problem_and_a_fix_may_hold_a_bar(tmp_path):
    def run(line: str) -> DevkitError:
        script = f"import sys; print({line!r}); sys.exit(1)"
        with pytest.raises(DevkitError) as info:
            HostRunner().run(Step("build", [sys.executable, "-c", script], log=tmp_path / "c.log"))
        return info.value

    named = run("devkit-problem: paddlepaddle==2.0.0 cannot be installed | choose a version pip lists | input")
    assert type(named) is InputError and named.fix == "choose a version pip lists"
    unnamed = run("devkit-problem: the build left no library | use --framework paddle | torch")
    assert type(unnamed) is BuildFailure and unnamed.fix == "use --framework paddle | torch"
