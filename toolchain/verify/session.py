"""A verification session: the wheel checked before anything is installed, then a fresh
environment on the target with the wheel's pinned Paddle and the wheel, where payload
scripts run; and the report each verification ends with (JSON, its typed form, the plot)."""

from __future__ import annotations

import contextlib
import io
import json
import platform
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..building.frameworks import BUILD_ADAPTERS, build_adapter
from ..project.config import Tolerances, VerifySettings
from ..project.frameworks import DEFAULT_FRAMEWORK, DEFAULT_MODEL, FRAMEWORKS, Framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..project.sdk import SdkSource
from ..run.envs import clone_env, create_env, reference_env, runtime_requirements, verify_root
from ..run.select import verify_runner
from ..run.step import Runner, Step
from ..util.archives import validate_wheel
from ..util.errors import InputError, VerificationFailure
from ..util.fsutil import write_atomic
from ..util.resources import payload_env
from .conformance import PendingConformance, start_conformance, unpack_device_bundle
from .modes import CHECK_MODES, DeviceModes
from .outputs import PaddleKernelsOutput, TorchKernelsOutput
from .report import Check, Report

MIN_TRAINING_STEPS = 20
VERIFY_DEFAULTS = VerifySettings()  # [tool.devkit.verify] defaults: the one place they are written

DEVICE_TRACE = "device-trace.json"  # --profile: the framework's trace of a training step, beside report.json


@dataclass(frozen=True)
class VerifyOptions:
    recipe: Recipe
    framework: Framework = DEFAULT_FRAMEWORK
    index_url: str = ""  # where pip gets torch ([tool.devkit.torch] index-url)
    model: str = VERIFY_DEFAULTS.train_model
    steps: int = VERIFY_DEFAULTS.steps
    data_dir: Path | None = None
    device_type: str | None = None
    runner: str = "auto"
    tolerances: Tolerances = Tolerances()
    modes: DeviceModes = CHECK_MODES
    sdk_runtime: SdkSource | None = None  # [tool.devkit.sdk.runtime] of the target: what verify images install
    sdk_runtime_env: tuple[tuple[str, str], ...] = ()  # [tool.devkit.sdk] runtime-env
    # the project's device bundle (device library + conformance suite), run by the training checks; None: a bare wheel
    device_bundle: Path | None = None
    amp: str = ""  # --amp LEVEL: train under the framework's mixed precision ("": float32)
    compile: bool = False  # --compile: the framework's compiler on the device instead of training
    profile: bool = False  # --profile: the framework's profiler over a training step (device-trace.json)

    @property
    def modes_env(self) -> dict[str, str]:
        """The device's modes, whatever the user's shell says (without a device type, for a bare
        Paddle wheel, its device library's defaults, which are the same), and the environment the
        SDK's runtime is declared to need."""
        return {**dict(self.sdk_runtime_env), **(self.modes.env(self.device_type) if self.device_type else {})}

    def require_training_steps(self) -> None:
        """Training verdicts (loss drop, held-out accuracy) need this many steps at least."""
        if self.steps < MIN_TRAINING_STEPS:
            raise InputError(
                f"--steps {self.steps} is too few to judge training", f"use --steps {MIN_TRAINING_STEPS} or more"
            )

    @property
    def check_env(self) -> dict[str, str | None]:
        return {**CHECK_ENV, **self.modes_env, "DEVKIT_TOLERANCES": json.dumps(asdict(self.tolerances))}


@dataclass(frozen=True)
class VerifyResult:
    report: Report
    report_path: Path
    plot_path: Path | None

    @property
    def passed(self) -> bool:
        return self.report.passed


@dataclass(frozen=True)
class KernelCheck:
    """check-kernels' outcome, said the same way whichever framework's kernels were checked."""

    result: VerifyResult
    summary: PaddleKernelsOutput | TorchKernelsOutput  # its --json
    lines: list[tuple[bool, str]]  # (passed, what) for people
    problem: str  # when it failed: what, and how to fix it
    fix: str


def wheel_to_check(
    project: Project | None, wheel: Path | None, recipe: Recipe, framework: Framework = DEFAULT_FRAMEWORK
) -> Path:
    """The wheel a command was given, else the project's newest wheel of the framework for the target."""
    if wheel is not None:
        return wheel.resolve()
    if project is None:
        raise InputError("no wheel and no project given", "pass a project directory or --wheel")
    return find_wheel(project, recipe, framework).resolve()


def find_wheel(project: Project, recipe: Recipe, framework: Framework = DEFAULT_FRAMEWORK) -> Path:
    prefix = project.wheel_prefix_of(framework)
    wheels = sorted(project.dist_dir.glob(recipe.wheel_glob(prefix)), key=lambda p: p.stat().st_mtime)
    if not wheels:
        flag = "" if framework is project.framework(None) else f" --framework {framework.name}"
        raise InputError(
            f"no {recipe.name} {framework.label} wheel in {project.dist_dir}",
            f"run `devkit build {project.root}{flag} --arch {recipe.name}` first, or pass --wheel",
        )
    return wheels[-1]


def check_wheel(wheel: Path, options: VerifyOptions) -> str:
    """The wheel is the framework's, fits the target and will load (ELF checks only, before
    anything is installed); returns the runtime version it pins."""
    validate_wheel(wheel, "plugin wheel")
    framework = options.framework
    pins = {name: adapter.pinned_in(wheel) for name, adapter in BUILD_ADAPTERS.items()}
    version = pins[framework.name]
    if version is None:
        other = next((FRAMEWORKS[name] for name, pin in pins.items() if pin), None)
        raise InputError(
            f"{wheel.name} is not a {framework.wheel_label}"
            + (
                f": it is a {other.wheel_label} (it requires {other.runtime}=={pins[other.name]})"
                if other
                else f" (it does not require {framework.runtime}==<version>)"
            ),
            f"verify it with --framework {other.name}"
            if other
            else f"pass the wheel `devkit build --framework {framework.name}` wrote (it pins the runtime it was "
            "compiled against)",
        )
    adapter = build_adapter(framework)
    adapter.check_wheel(wheel, options.recipe, version, wheel.name.split("-")[0] + "-")
    # the portability warnings are the build's to say
    adapter.require_abi(wheel, options.recipe, version, None, None, False)
    return version


def fresh_env(
    runner: Runner, work: Path, wheel: Path | None, version: str, log: Path, options: VerifyOptions, links: Path | None
) -> str:
    """A venv with the pinned framework runtime and the wheel (none: the runtime alone), and nothing
    of an earlier verification: a clone of the cached reference env where the runner allows it, else
    a fresh install. `links`: a directory holding the runtime's wheel (pip prefers it to the index)."""
    framework = options.framework
    find_links = runner.path(links) if links else ""
    emulated = runner.key != "host" and not options.recipe.matches(platform.machine())
    reference = reference_env(runner, version, log, framework, options.index_url, links, emulated)
    if reference is None:
        return create_env(
            runner,
            work / "venv",
            [*runtime_requirements(framework, version, options.index_url, find_links)]
            + ([runner.path(wheel)] if wheel else []),
            f"fresh environment ({framework.runtime} {version}{f' + {wheel.name}' if wheel else ''})",
            log,
        )
    clone_env(reference, work / "venv")
    python = f"{runner.path(work / 'venv')}/bin/python"  # as the runner sees it
    if wheel is None:
        return python
    runner.run(
        Step(
            title=f"fresh environment (clone of {framework.runtime} {version}, {reference.name}): install {wheel.name}",
            argv=[python, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", runner.path(wheel)],
            log=log,
            fails_as=VerificationFailure,
        )
    )
    return python


# Paddle must find the plugin where pip put it, not in a leftover CUSTOM_DEVICE_ROOT.
CHECK_ENV = {"FLAGS_enable_api_kernel_fallback": "0", "CUSTOM_DEVICE_ROOT": None}


@dataclass(frozen=True)
class PluginSession:
    """A fresh environment with the wheel's pinned framework runtime and the wheel, where payload scripts run."""

    runner: Runner
    python: str
    work: Path
    log: Path
    runtime_version: str
    options: VerifyOptions
    start: float  # after the wheel checks: what the report's seconds count
    wheel: Path
    report_dir: Path
    conformance: PendingConformance | None = None  # the device's conformance suite, running beside the checks

    def run_json(
        self,
        title: str,
        payload: Path,
        args: list[str],
        out_name: str,
        *,
        device: str | None = None,
        env: dict[str, str | None] | None = None,
    ) -> dict[str, Any]:
        """Run `payload ARGS --out WORK/OUT_NAME [--device TYPE]` and return the JSON it wrote."""
        argv = [self.python, self.runner.path(payload), *args, "--out", self.runner.path(self.work / out_name)]
        device = device or self.options.device_type
        if device:
            argv += ["--device", device]
        self.runner.run(
            Step(
                title=title,
                argv=argv,
                log=self.log,
                cwd=Path(self.runner.path(self.work)),
                env={**payload_env(self.runner.path), **(self.options.check_env if env is None else env)},
                fails_as=VerificationFailure,
            )
        )
        return dict(json.loads((self.work / out_name).read_text()))

    def run_report(self, title: str, payload: Path, args: list[str], out_name: str, **how: Any) -> Report:
        """A payload that writes a report (checks and their verdict), typed as it arrives."""
        return Report.from_json(self.run_json(title, payload, args, out_name, **how))

    def run_check(self, title: str, payload: Path, args: list[str], out_name: str, **how: Any) -> Check:
        """A payload that writes one check, typed as it arrives."""
        return Check.from_json(self.run_json(title, payload, args, out_name, **how))

    def keep(self, name: str) -> Path | None:
        """A file a payload wrote beside its report (e.g. the device trace), moved into the report
        directory; None if it wrote none."""
        written = self.work / name
        return write_atomic(self.report_dir / name, written.read_bytes()) if written.is_file() else None

    def finish(self, report: Report, **fields: Any) -> VerifyResult:
        """finish() for this session's wheel, runner and runtime (`fields`: the caller's), with the
        conformance suite's check first when it ran."""
        if self.conformance is not None:
            check = self.conformance.result()
            report = report.merged([check], before=report.checks[0].name if report.checks else None)
        return finish(
            report,
            self.options,
            self.report_dir,
            self.start,
            self.log,
            wheel=str(self.wheel),
            runner=self.runner.name,
            runtime_version=self.runtime_version,
            **fields,
        )


@contextlib.contextmanager
def plugin_session(
    wheel: Path, options: VerifyOptions, report_dir: Path, inputs: tuple[Path, ...] = (), conformance: bool = False
) -> Iterator[PluginSession]:
    """Check the wheel (before installing anything), then install it in a fresh env on the target;
    with `conformance`, the device bundle's conformance suite runs meanwhile (finish() reports it)."""
    version = check_wheel(wheel, options)
    links = build_adapter(options.framework).find_links(options.recipe, version, options.index_url)
    start = time.monotonic()
    log = fresh_log(report_dir)
    with work_dir() as work:
        mounts = [wheel.parent, *inputs, *([links] if links else [])]
        runner = verify_runner(options.runner, options.recipe, work, mounts, log, options.sdk_runtime, options.compile)
        pending = None
        if conformance and options.device_bundle is not None:
            suite = unpack_device_bundle(options.device_bundle, work / "device-bundle", options.recipe)
            pending = start_conformance(runner, suite, work, report_dir, options.modes_env, options.recipe)
        try:
            python = fresh_env(runner, work, wheel, version, log, options, links)
            yield PluginSession(runner, python, work, log, version, options, start, wheel, report_dir, pending)
        finally:
            if pending is not None:
                pending.pool.shutdown()  # before its work directory goes


def fresh_log(report_dir: Path) -> Path:
    report_dir.mkdir(parents=True, exist_ok=True)
    log = report_dir / "verify.log"
    log.write_text("")
    return log


@contextlib.contextmanager
def work_dir() -> Iterator[Path]:
    """A scratch directory for one verification, removed afterwards."""
    root = verify_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="work-", dir=root) as tmp:
        yield Path(tmp)


def finish(
    report: Report, options: VerifyOptions, report_dir: Path, start: float, log: Path, **fields: Any
) -> VerifyResult:
    """The report completed (the caller's `fields`, e.g. wheel and runner, then the run's), written and plotted."""
    report = report.with_fields(
        **fields,
        framework=options.framework.name,
        arch=options.recipe.name,
        model=options.model,
        modes=options.modes.as_json(),
        seconds=round(time.monotonic() - start, 1),
        log=str(log),
    )
    report_path = write_atomic(report_dir / "report.json", json.dumps(report.to_json(), indent=2))
    plot = plot_losses(report, report_dir / f"{options.model}-loss.png")
    return VerifyResult(report=report, report_path=report_path, plot_path=plot)


def plot_losses(report: Report, path: Path) -> Path | None:
    """The loss curves of the report's training check: device vs CPU, or (--distributed) N
    processes vs one."""
    parallel, trained = report.data_parallel(), report.training()
    if parallel is not None:
        device, ranks, batch = report.device, parallel["ranks"], parallel["batch_size"]
        curves = [
            (f"one process on {device}:0, batch {batch}", parallel["single"]["losses"]),
            (
                f"{ranks} processes on {device}:0..{ranks - 1}, {batch // ranks} each",
                parallel["data_parallel"]["losses"],
            ),
        ]
        title = (
            f"LeNet data parallel on {ranks} {device} devices vs one — max |diff| {parallel['max_curve_abs_diff']:.1e}, "
            f"held-out acc {parallel['data_parallel']['heldout_accuracy']:.3f}"
        )
    elif trained is not None:
        framework = FRAMEWORKS.get(report.framework, DEFAULT_FRAMEWORK)
        cpu = trained["cpu"]
        cpu_label = cpu["trained"]["where"] if "trained" in cpu else f"{framework.label} CPU"
        curves = [(cpu_label, cpu["losses"]), (f"{report.device}:0", trained["device"]["losses"])]
        title = (
            f"{'LeNet' if trained['name'] == DEFAULT_MODEL else trained['name']} on {report.device}:0 vs CPU — "
            f"max |diff| {trained['max_curve_abs_diff']:.1e}, "
            f"held-out acc {trained['device']['heldout_accuracy']:.3f}"
        )
    else:
        return None
    import matplotlib  # (by the report's plot alone: 0.7 s to import here)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    (reference_label, reference), (label, losses) = curves
    ax.plot(reference, label=reference_label, linewidth=2.5, alpha=0.6)
    ax.plot(losses, label=label, linewidth=1.0)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title, fontsize=9)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    return write_atomic(path, png.getvalue())
