"""`devkit verify / test-ops / check-kernels --framework torch`: the PyTorch adapter's checks in a
fresh environment with its pinned torch (payload/torch/torch_checks.py), and the same report layout
as Paddle's (JSON + the loss plot); --compile, the mode only torch has; --distributed; test-ops as
torch's test databases (OpInfo samples, gradients, modules, optimizers) vs torch's CPU."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

from ...project.frameworks import DEFAULT_MODEL
from ...project.naming import switch_prefix
from ...run.envs import inductor_probes
from ...util.errors import InputError
from ...util.fsutil import private_dir
from ...util.resources import payload_script
from ..cpu_reference import cpu_reference
from ..distributed import run_distributed_verify
from ..framework_src import SourceTests, run_source_tests
from ..ops import OpsRequest, OpsResult, parse_selection, publish_session_report
from ..outputs import TorchKernelsOutput
from ..session import (
    DEVICE_TRACE,
    KernelCheck,
    PluginSession,
    VerifyOptions,
    VerifyResult,
    plugin_session,
    wheel_to_check,
)
from ..verify_modes import ModeRun, VerifyMode

PAYLOAD = payload_script("torch", "torch_checks")
TEST_OPS_PAYLOAD = payload_script("torch", "torch_test_ops")
DISTRIBUTED_PAYLOAD = payload_script("torch", "torch_distributed")
# --framework-src: PyTorch's device-generic test files (they import expecttest and hypothesis through
# torch.testing._internal)
SOURCE_TESTS = SourceTests(
    payload_script("torch", "torch_src_tests"),
    "test",
    ("pytest>=8", "expecttest>=0.2", "hypothesis>=6"),
    "PyTorch's device-generic test files",
)


def torch_env(options: VerifyOptions, session: PluginSession, *, strict: bool) -> dict[str, str | None]:
    """The checks' environment: autoload on (whatever the caller's shell says), with `strict`
    every CPU fallback an error naming the op, and Inductor's caches in the session's own
    directory: not Inductor's default, /tmp/torchinductor_<user> (a name any local user can take
    first), nor the one the adapter makes in the user's home when the variable is unset (at import,
    compiling or not: a check leaves nothing behind there). What is kept is Inductor's probes of
    the CPU, in devkit's cache, per runner: what a new session would compile again to the same
    verdict (the compiler's, not the device's)."""
    prefix = switch_prefix(options.device_type or "")
    return {
        "DEVKIT_TOLERANCES": options.check_env["DEVKIT_TOLERANCES"],
        **options.modes_env,
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "1",
        f"{prefix}_STRICT_FALLBACK": "1" if strict else "0",
        f"{prefix}_FALLBACK_OPS": None,  # a leftover from the user's shell would change what is checked
        "TORCHINDUCTOR_CACHE_DIR": session.runner.path(session.work / "inductor"),
        # ... but for Inductor's probes of the CPU, which devkit keeps (payload/torch/torch_compile.py)
        "DEVKIT_INDUCTOR_PROBES": session.runner.path(private_dir(private_dir(inductor_probes()) / session.runner.key)),
    }


def with_device(options: VerifyOptions, wheel: Path) -> VerifyOptions:
    """A bare wheel names its device: torch_<type>-<version>-...whl."""
    if options.device_type:
        return options
    return replace(options, device_type=wheel.name.split("-")[0].removeprefix("torch_"))


def run_torch_verify(wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    if options.model != DEFAULT_MODEL:
        raise InputError(
            f"--model {options.model} is a Paddle model battery entry; the PyTorch adapter trains LeNet on MNIST",
            "use --model mnist with --framework torch",
        )
    options.require_training_steps()
    options = with_device(options, wheel)
    from ..datasets import load_dataset  # (NumPy, for the commands that train only)

    dataset = load_dataset(options.data_dir)
    with plugin_session(wheel, options, report_dir, conformance=True) as session:
        dataset.save(session.work / "data.npz")
        data = session.runner.path(session.work / "data.npz")
        reference = cpu_reference(options, dataset, session)
        report = session.run_report(
            f"torch checks on {options.recipe.name} ({options.steps} mnist steps, CPU fallback forbidden "
            "but in the fallback report)",
            PAYLOAD,
            ["--data", data, "--steps", str(options.steps), *(["--amp", options.amp] if options.amp else [])]
            + (["--compile"] if options.compile else [])
            + (["--profile", DEVICE_TRACE] if options.profile else [])
            + list(reference.argv),
            "report.json",
            env=torch_env(options, session, strict=True),
        )
        reference.keep(report)
        session.keep(DEVICE_TRACE)
    return session.finish(report)


def run_torch_checks(wheel: Path, options: VerifyOptions, report_dir: Path, only: str, ops: str = "") -> VerifyResult:
    """test-ops (only="ops") and check-kernels (only="kernels") for the torch adapter."""
    options = with_device(options, wheel)
    with plugin_session(wheel, options, report_dir) as session:
        report = session.run_report(
            f"torch {only} checks on {options.recipe.name}",
            PAYLOAD,
            ["--only", only, *(["--ops", ops] if ops else [])],
            "report.json",
            env=torch_env(options, session, strict=True),
        )
    return session.finish(report)


def check_kernels(wheel: Path, options: VerifyOptions, report_dir: Path) -> KernelCheck:
    options = with_device(options, wheel)
    result = run_torch_checks(wheel, options, report_dir, "kernels")
    checks = result.report.checks
    failed = result.report.failed[0] if result.report.failed else None
    prefix = switch_prefix(options.device_type or "")
    return KernelCheck(
        result,
        TorchKernelsOutput(result.passed, result.report_path, [c.summary() for c in checks]),
        [(c.passed, f"{c.name}: {c.detail}") for c in checks],
        f"kernel check failed: {failed.detail if failed else 'no checks ran'}",
        f"see {result.report_path}; isolate a kernel with {prefix}_FALLBACK_OPS or {prefix}_AUTOCOMPARE=1",
    )


def test_ops(r: OpsRequest) -> tuple[OpsResult, str]:
    """torch's test databases (--suite: OpInfo samples and variants, gradients, ...) vs torch CPU
    (with --all, every case)."""
    if r.golden:
        raise InputError("--golden checks the device library, whichever framework", "drop --framework")
    _, dtypes = parse_selection(r)
    wheel = wheel_to_check(r.project, r.wheel, r.recipe, r.options.framework)
    if r.framework_src is not None:  # the tree's test files instead of the wheel's databases
        options = with_device(r.options, wheel)
        env = partial(torch_env, options, strict=False)
        return run_source_tests(r, wheel, options, SOURCE_TESTS, env), "framework-src"
    result = run_torch_opinfo(wheel, r.options, r.ops, r.all_ops, r.report_dir, r.suites, dtypes, r.timeout)
    return result, "opinfo-all" if r.all_ops else "opinfo"


def run_torch_opinfo(
    wheel: Path,
    options: VerifyOptions,
    ops: str,
    all_ops: bool,
    report_dir: Path,
    suites: tuple[str, ...] = ("ops",),
    dtypes: tuple[str, ...] | None = None,
    timeout: float | None = None,
) -> OpsResult:
    """torch's test databases on the device vs torch's CPU (payload/torch/torch_test_ops.py), each
    case bounded (`timeout` seconds; None: the payload's default) in an isolated worker, with the
    CPU fallback allowed; in `dtypes` (None: the device library's, or every dtype with `all_ops`)."""
    options = with_device(options, wheel)
    with plugin_session(wheel, options, report_dir) as session:
        report = session.run_json(
            f"torch {', '.join(suites)} suites on {options.recipe.name}" + (" (all cases)" if all_ops else ""),
            TEST_OPS_PAYLOAD,
            ["--suite", ",".join(suites), *(["--all"] if all_ops else []), *(["--ops", ops] if ops else [])]
            + (["--dtypes", ",".join(dtypes)] if dtypes else [])
            + (["--timeout", str(timeout)] if timeout else []),
            "opinfo.json",
            env=torch_env(options, session, strict=False),
        )
    return publish_session_report(report, wheel, options, session)


def _compile_target(run: ModeRun) -> None:
    """--compile: compiled models of its own, where the target's torch has the seam the adapter targets."""
    framework, recipe = run.framework, run.recipe
    if (run.request.model or DEFAULT_MODEL) != DEFAULT_MODEL:
        raise InputError(
            f"--compile checks compiled models of its own on one process; --model {run.request.model} is another",
            "drop --model",
        )
    version = framework.version(recipe)
    if version is not None and ".".join(version.split(".")[:2]) not in framework.compiler_seam:
        raise InputError(
            f"--compile: the device's Inductor backend needs torch {' or '.join(framework.compiler_seam)} (the seam the "
            f"adapter is written for), and the {recipe.name} reference is torch {version}",
            f"verify --compile on a target with torch {framework.compiler_seam[-1]}; on {recipe.name} compile with "
            'torch.compile(model, backend="aot_eager")',
        )


COMPILE = VerifyMode(
    "compile",
    "--compile",
    purpose="checks torch.compile",
    lacks="compiler backend",
    scope="checks compiled models of its own on one process",
    requested=lambda request: request.compile,
    excludes=("infer", "distributed", "amp"),
    validate=_compile_target,
    suffix=lambda request: "-compile",
)


class TorchVerify:
    """The PyTorch adapter's verify adapter (frameworks.VerifyAdapter)."""

    modes = ("compile", "profile", "amp", "distributed")

    def train(self, wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
        return run_torch_verify(wheel, options, report_dir)

    def distributed(self, wheel: Path, options: VerifyOptions, report_dir: Path, ranks: int) -> VerifyResult:
        # the ranks' environment allows the CPU fallback: data parallelism is what they check
        options = with_device(options, wheel)
        return run_distributed_verify(
            wheel,
            options,
            report_dir,
            ranks,
            DISTRIBUTED_PAYLOAD,
            lambda session: torch_env(options, session, strict=False),
        )

    def test_ops(self, request: OpsRequest) -> tuple[OpsResult, str]:
        return test_ops(request)

    def check_kernels(self, wheel: Path, options: VerifyOptions, report_dir: Path) -> KernelCheck:
        return check_kernels(wheel, options, report_dir)
