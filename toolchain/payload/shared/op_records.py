"""The test-ops reports: one op case in one dtype (op_tests.py, torch_test_ops.py's suites, devkit's
golden checks), op_tests.py's and torch_test_ops.py's JSON, and --gen-golden's summary."""

from __future__ import annotations

from typing import Literal, TypedDict

from records import OpTolerance

OpStatus = Literal["pass", "fail", "error", "not registered", "skipped"]
# Where a case comes from: the framework's op tests / OpInfo forward samples and variants ("ops"),
# OpInfo gradients, torch's module_db and optim_db, and the framework's own test files (--framework-src).
OpSuite = Literal["ops", "grads", "modules", "optims", "framework-src"]


class _OpResultRequired(TypedDict):
    case: str
    dtype: str
    kernels: list[str]
    status: OpStatus


class OpResult(_OpResultRequired, total=False):
    """One op case in one dtype: an entry of a test-ops report's "results" (op_tests.py,
    torch_test_ops.py's suites, and devkit's golden checks)."""

    suite: OpSuite  # absent: "ops"
    detail: str
    error: str
    mismatch: list[str]
    max_abs_diff: dict[str, float]
    shapes: dict[str, list[int]]
    tolerance: OpTolerance
    samples: int  # torch: samples (inputs, steps) the CPU ran
    values: int  # devkit's golden checks
    cpu_by_design: list[str]
    stats: dict[str, float | bool]


class OpTestsReport(TypedDict):
    """op_tests.py's JSON (devkit test-ops, Paddle)."""

    device: str
    paddle_version: str
    ops: str
    dtypes: list[str]
    registered_kernels: dict[str, list[str]]  # kernel -> dtypes
    not_exercised: list[str]
    dtypes_not_exercised: list[str]
    results: list[OpResult]


class GoldenSummary(TypedDict):
    """op_tests.py --gen-golden's JSON."""

    golden_dir: str
    cases: int
    paddle_version: str


class SuiteRun(TypedDict):
    """How one suite of a torch test-ops run ran (its results' verdicts are counted by devkit)."""

    cases: int  # cases run (OpInfos, modules, optimizers), each with its dtypes and variants
    restarts: int  # workers that died or timed out in it
    seconds: float


class OpInfoReport(TypedDict):
    """torch_test_ops.py's JSON (devkit test-ops, torch): the results of every suite run."""

    results: list[OpResult]
    restarts: int  # workers that died or timed out, all suites
    suite_runs: dict[str, SuiteRun]  # by suite name, in the order they ran
    mode: Literal["opinfo", "opinfo-all"]
    framework: str
    device: str
    torch_version: str
    reference: str
    dtypes: list[str]
    seconds_in_env: float
