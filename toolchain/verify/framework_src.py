"""`devkit test-ops --framework-src DIR`: the framework's own test files, from its source tree, with
the device as the test device (PyTorch's device-generic tests as OpenReg runs them; Paddle's
legacy_test OpTests on the custom place as PaddleCustomDevice's backends run them). The tree is
read in place, never written; the test tools those files need (pytest, ...) are installed into this
session's environment alone. Each test is a result of suite "framework-src" in test-ops' report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from subprocess import list2cmdline

from ..run.step import Step
from ..util.errors import EnvironmentProblem, InputError
from .ops import OpsRequest, OpsResult, publish_session_report
from .session import PluginSession, VerifyOptions, plugin_session


@dataclass(frozen=True)
class SourceTests:
    """How one framework's own tests run: the payload, where the files are, what they import."""

    payload: Path
    tests_dir: str  # the test files' directory under the tree, e.g. test/legacy_test
    requirements: tuple[str, ...]  # pip requirements of the test files beyond the runtime
    what: str  # for people: "PyTorch's device-generic test files"


def source_tree(src: Path, tests: SourceTests) -> Path:
    """--framework-src DIR, checked: a directory holding the framework's test files."""
    root = src.expanduser().resolve()
    if not (root / tests.tests_dir).is_dir():
        raise InputError(
            f"--framework-src {src}: {root / tests.tests_dir} is not a directory, so {root} is no source tree "
            f"with {tests.what}",
            f"pass the root of the framework's source checkout (the directory holding {tests.tests_dir}/)",
        )
    return root


def run_source_tests(
    r: OpsRequest,
    wheel: Path,
    options: VerifyOptions,
    tests: SourceTests,
    env: Callable[[PluginSession], dict[str, str | None]],
) -> OpsResult:
    """The tree's test files (those whose path --ops searches) in a fresh env with the wheel."""
    assert r.framework_src is not None
    root = source_tree(r.framework_src, tests)
    with plugin_session(wheel, options, r.report_dir, inputs=(root,)) as session:
        install_requirements(session, tests.requirements)
        report = session.run_json(
            f"{tests.what} from {root} on {options.recipe.name}",
            tests.payload,
            ["--src", session.runner.path(root), *(["--tests", r.ops] if r.ops else [])]
            + (["--timeout", str(r.timeout)] if r.timeout else []),
            "src-tests.json",
            env=env(session),
        )
    return publish_session_report(report, wheel, options, session)


def install_requirements(session: PluginSession, requirements: tuple[str, ...]) -> None:
    """The test files' own imports, into the session's environment (never the cached reference env)."""
    session.runner.run(
        Step(
            title=f"test tools for the framework's own tests: pip install {list2cmdline(requirements)}",
            argv=[session.python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
            log=session.log,
            fails_as=EnvironmentProblem,  # (an index out of reach, not the device)
        )
    )
