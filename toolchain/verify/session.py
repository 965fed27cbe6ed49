"""`devkit verify`: install a plugin wheel next to the reference Paddle in a fresh
environment and check it: registration, tensors, ops vs Paddle CPU, MNIST."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from ..build.abi import require_abi
from ..build.artifacts import check_plugin_wheel, paddle_requirements
from ..project.config import INFER_MODELS, TRAIN_MODELS, Tolerances
from ..verify.datasets import load_dataset
from ..run.envs import cache_root, create_env
from ..util.archives import extract_tar, validate_wheel
from ..util.errors import DevkitError
from ..util.resources import PAYLOAD_DIR
from ..project.project import Project
from ..project.recipes import Recipe
from ..run.step import HostRunner, Runner, Step
from ..run.select import host_recipe, verify_runner

PAYLOAD = PAYLOAD_DIR / "plugin_checks.py"
INFER_PAYLOAD = PAYLOAD_DIR / "infer_checks.py"
FALLBACK_PAYLOAD = PAYLOAD_DIR / "fallback_report.py"


@dataclass(frozen=True)
class VerifyOptions:
    recipe: Recipe
    model: str = "mnist"
    steps: int = 200
    data_dir: Path | None = None
    device_type: str | None = None
    runner: str = "auto"
    tolerances: Tolerances = Tolerances()

    @property
    def check_env(self) -> dict[str, str | None]:
        return {**CHECK_ENV, "DEVKIT_TOLERANCES": json.dumps(asdict(self.tolerances))}


@dataclass(frozen=True)
class VerifyResult:
    report: dict
    report_path: Path
    plot_path: Path | None

    @property
    def passed(self) -> bool:
        return bool(self.report.get("passed"))


def find_wheel(project: Project, recipe: Recipe) -> Path:
    wheels = sorted(project.dist_dir.glob(f"{project.wheel_prefix}*-{recipe.wheel_tag}.whl"),
                    key=lambda p: p.stat().st_mtime)
    if not wheels:
        raise DevkitError(
            f"no {recipe.name} wheel in {project.dist_dir}",
            f"run `devkit build {project.root} --arch {recipe.name}` first, or pass --wheel",
        )
    return wheels[-1]


def pinned_paddle(wheel: Path) -> str:
    for req in paddle_requirements(wheel):
        if str(req.specifier).startswith("=="):
            return str(req.specifier)[2:]
    raise DevkitError(
        f"{wheel.name} does not pin paddlepaddle==<version>",
        "rebuild it with `devkit build` (the plugin must name the Paddle it was compiled against)",
    )


def check_wheel(wheel: Path, options: VerifyOptions) -> str:
    validate_wheel(wheel, "plugin wheel")
    paddle_version = pinned_paddle(wheel)
    check_plugin_wheel(wheel, options.recipe, paddle_version)
    require_abi(wheel, options.recipe, paddle_version)  # before installing anything
    return paddle_version


def fresh_env(runner, work: Path, wheel: Path, paddle_version: str, log: Path) -> str:
    return create_env(runner, work / "venv", [f"paddlepaddle=={paddle_version}", runner.path(wheel)],
                      f"fresh environment (paddlepaddle {paddle_version} + {wheel.name})", log)


# Paddle must find the plugin where pip put it, not in a leftover CUSTOM_DEVICE_ROOT.
CHECK_ENV = {"FLAGS_enable_api_kernel_fallback": "0", "CUSTOM_DEVICE_ROOT": None}


@dataclass(frozen=True)
class PluginSession:
    """A fresh environment with the wheel's pinned Paddle and the wheel, where payload scripts run."""
    runner: Runner
    python: str
    work: Path
    log: Path
    paddle_version: str
    options: VerifyOptions
    start: float   # after the wheel checks: what the report's seconds count

    def run_payload(self, title: str, payload: Path, args: list[str], out_name: str, *, device: str | None = None,
                    env: dict[str, str | None] | None = None) -> dict:
        """Run `payload ARGS --out WORK/OUT_NAME [--device TYPE]` and return the JSON it wrote."""
        argv = [self.python, self.runner.path(payload), *args, "--out", self.runner.path(self.work / out_name)]
        if device or self.options.device_type:
            argv += ["--device", device or self.options.device_type]
        self.runner.run(Step(title=title, argv=argv, log=self.log, cwd=Path(self.runner.path(self.work)),
                             env=self.options.check_env if env is None else env))
        return json.loads((self.work / out_name).read_text())


@contextlib.contextmanager
def plugin_session(wheel: Path, options: VerifyOptions, report_dir: Path,
                   inputs: tuple[Path, ...] = ()) -> Iterator[PluginSession]:
    """Check the wheel (before installing anything), then install it in a fresh env on the target."""
    paddle_version = check_wheel(wheel, options)
    start = time.monotonic()
    log = fresh_log(report_dir)
    with work_dir() as work:
        runner = verify_runner(options.runner, options.recipe, work, [wheel.parent, *inputs], log)
        python = fresh_env(runner, work, wheel, paddle_version, log)
        yield PluginSession(runner, python, work, log, paddle_version, options, start)


def run_verify(wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    if options.model not in TRAIN_MODELS:
        raise DevkitError(f"unknown model {options.model!r}", f"use --model {' | '.join(TRAIN_MODELS)}")
    if options.steps < 20:
        raise DevkitError(f"--steps {options.steps} is too few to judge training", "use --steps 20 or more")
    dataset = load_dataset(options.data_dir)
    battery = options.model != "mnist"
    with plugin_session(wheel, options, report_dir) as session:
        data = session.runner.path(session.work / "data.npz")
        dataset.save(session.work / "data.npz")
        fallback_env = {**options.check_env, "FLAGS_enable_api_kernel_fallback": "1"}
        if battery:
            # First with CPU fallback on (Paddle's default): which kernels the model runs on the device and which
            # fall back; then the checks, which train it with fallback off.
            fallback = session.run_payload(f"fallback report ({options.model}) on {options.recipe.name}",
                                           FALLBACK_PAYLOAD, ["--data", data, "--model", options.model],
                                           "fallback.json", env=fallback_env)
        report = session.run_payload(f"checks on {options.recipe.name} ({options.steps} {options.model} steps)",
                                     PAYLOAD, ["--data", data, "--steps", str(options.steps), "--model", options.model],
                                     "report.json")
        if battery:
            model_check = len(report["checks"]) - (report["checks"][-1].get("name") == options.model)
            report["checks"].insert(model_check, fallback)
            report["passed"] = all(c["passed"] for c in report["checks"])
        elif report.get("device"):
            # With CPU fallback on (Paddle's default): which kernels the model ran on the device, which on CPU.
            report["checks"].append(session.run_payload(
                f"fallback report on {options.recipe.name}", FALLBACK_PAYLOAD, ["--data", data], "fallback.json",
                device=report["device"], env={**options.check_env, "FLAGS_enable_api_kernel_fallback": "1"}))
            report["passed"] = all(c["passed"] for c in report["checks"])
    report.update(wheel=str(wheel), runner=session.runner.name)
    return _finish(report, options, report_dir, session.start, session.log)


def run_check_kernels(wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    """Load the plugin into its pinned Paddle and compare every kernel's signature with Paddle's."""
    with plugin_session(wheel, options, report_dir) as session:
        report = session.run_payload(f"kernel signatures on {options.recipe.name}", PAYLOAD,
                                     ["--only", "kernel-signatures"], "report.json")
    report.update(wheel=str(wheel), runner=session.runner.name)
    return _finish(report, options, report_dir, session.start, session.log)


@dataclass(frozen=True)
class InferOptions:
    models: tuple[str, ...] = ("mnist",)
    model_dir: Path | None = None
    warmup: int = 10
    repeats: int = 30
    inference_dir: Path | None = None
    bundle: Path | None = None   # the project's inference bundle, whose C++ demo runs


def run_infer_verify(wheel: Path, options: VerifyOptions, infer: InferOptions, report_dir: Path) -> VerifyResult:
    """paddle.inference on the device vs CPU for each model: outputs, kernel placement, latency."""
    unknown = [m for m in infer.models if m not in INFER_MODELS]
    if unknown and infer.model_dir is None:
        raise DevkitError(f"unknown inference model {unknown[0]!r}", f"use --model {' | '.join(INFER_MODELS)} or --model-dir")
    if infer.warmup < 0 or infer.repeats < 1:
        raise DevkitError("--warmup must be >= 0 and --repeats >= 1", "e.g. --warmup 10 --repeats 30")
    if infer.model_dir is not None:
        _model_prefix(infer.model_dir)  # before a verify environment is made for it
    checks = []
    with plugin_session(wheel, options, report_dir, (infer.model_dir,) if infer.model_dir else ()) as session:
        runner, work = session.runner, session.work
        targets = [("model-dir", ["--model-dir", runner.path(infer.model_dir)])] if infer.model_dir else \
            [(m, ["--model", m]) for m in infer.models]
        models = []
        for name, model_args in targets:
            check = session.run_payload(
                f"inference {name} on {options.recipe.name} ({infer.warmup} warmup, {infer.repeats} repeats)",
                INFER_PAYLOAD, [*model_args, "--warmup", str(infer.warmup), "--repeats", str(infer.repeats),
                                "--work", runner.path(work)], f"{Path(name).name}.json")
            check["name"] = f"inference {Path(name).name}"
            checks.append(check)
            models.append(_model_prefix(infer.model_dir) if infer.model_dir else str(work / name / "model"))
        checks.append(cpp_demo(infer, options, models, work, session.log))
    report = {"device": checks[0].get("device"), "paddle_version": session.paddle_version, "runner": runner.name,
              "wheel": str(wheel), "checks": checks,
              "passed": all(c["passed"] for c in checks if not c.get("not_run"))}
    return _finish(report, options, report_dir, session.start, session.log)


def _model_prefix(model_dir: Path) -> str:
    """The exported model in a user's --model-dir: a program (.json, or .pdmodel) and its .pdiparams."""
    fix = "pass the directory of <name>.json (or .pdmodel) + <name>.pdiparams, as paddle.jit.save writes them"
    if not model_dir.is_dir():
        raise DevkitError(f"--model-dir {model_dir} is not a directory", fix)
    for program in sorted([*model_dir.glob("*.json"), *model_dir.glob("*.pdmodel")]):
        params = program.with_suffix(".pdiparams")
        if not params.is_file():
            continue
        if program.suffix == ".json":
            try:
                json.loads(program.read_bytes())
            except ValueError as exc:
                raise DevkitError(f"{program} is not a valid Paddle program (JSON: {exc})", fix) from None
        elif program.stat().st_size == 0:
            raise DevkitError(f"{program} is empty", fix)
        if params.stat().st_size == 0:
            raise DevkitError(f"{params} is empty", fix)
        return str(program.with_suffix(""))
    raise DevkitError(f"{model_dir} holds no exported model", fix)


def cpp_demo(infer: "InferOptions", options: VerifyOptions, models: list[str], work: Path, log: Path) -> dict:
    """Build the bundle's C++ demo against the given Paddle Inference and run it on the device."""
    why = None
    if infer.inference_dir is None:
        why = "no Paddle Inference C++ library was given (--paddle-inference-dir)"
    elif infer.bundle is None:
        why = "no inference bundle: build with `devkit build --infer` first"
    elif not host_recipe().matches(options.recipe.name):
        why = f"the C++ demo runs on the host, which is not {options.recipe.name}"
    if why:
        return {"name": "C++ demo", "passed": False, "not_run": True, "detail": f"not run: {why}; not counted as passed"}
    return _run_cpp_demo(infer, models, work, log)


def _run_cpp_demo(infer: "InferOptions", models: list[str], work: Path, log: Path) -> dict:
    # On the host only: the demo links the host's Paddle Inference release.
    runner = HostRunner(fix_hint="see the C++ demo lines in the verify log")
    demo = work / "cpp-demo"
    extract_tar(infer.bundle, demo, "inference bundle", "rebuild it with devkit build --infer")
    root = next(demo.iterdir())
    env = {"PADDLE_INFERENCE_DIR": str(infer.inference_dir), "CUSTOM_DEVICE_ROOT": str(root / "lib")}
    try:
        runner.run(Step("configure C++ demo", ["cmake", "-S", str(root / "demo" / "cpp"), "-B", str(demo / "build"),
                                               f"-DPADDLE_INFERENCE_DIR={infer.inference_dir}"], log=log, env=env))
        runner.run(Step("build C++ demo", ["cmake", "--build", str(demo / "build")], log=log, env=env))
        binary = next((demo / "build").glob("*_infer_demo"))
        outputs = [runner.run(Step(f"C++ demo {Path(m).parent.name}", [str(binary), m, str(infer.warmup),
                                                                          str(infer.repeats)], log=log, env=env))
                   for m in models]
    except DevkitError as exc:
        return {"name": "C++ demo", "passed": False, "detail": exc.one_line()}
    ok = all("latency over" in out and "top-" in out for out in outputs)
    return {"name": "C++ demo", "passed": ok, "detail": " | ".join(out.strip().splitlines()[-2] for out in outputs)}


def run_device_tests(bundle: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    """For targets without a Paddle runtime: run the device library's tests on the target."""
    if not bundle.is_file():
        raise DevkitError(f"device bundle {bundle} does not exist", f"run `devkit build --arch {options.recipe.name}`")
    start = time.monotonic()
    with work_dir() as work:
        extract_tar(bundle, work, "device bundle", f"rebuild it with devkit build --arch {options.recipe.name}")
        log = fresh_log(report_dir)
        tests = sorted(work.glob("*/tests/test_*"))
        if not tests:
            raise DevkitError(f"{bundle.name} holds no test binaries", "rebuild it with devkit build")
        runner = verify_runner(options.runner, options.recipe, work, [], log)
        checks = []
        for test in tests:
            test.chmod(0o755)
            try:
                output = runner.run(Step(title=f"{test.name} on {options.recipe.name}", argv=[runner.path(test)],
                                         log=log))
                passed = True
            except DevkitError as exc:
                output, passed = exc.details, False
            cases = re.findall(r"^(PASS|FAIL) (\S+)$", output, re.M)
            summary = re.findall(r"^(\d+) passed, (\d+) failed$", output, re.M)
            detail = f"{summary[-1][0]} passed, {summary[-1][1]} failed" if summary else "no summary line"
            checks.append({"name": test.name, "passed": passed and bool(summary) and summary[-1][1] == "0",
                           "detail": detail, "cases": [{"case": c, "passed": r == "PASS"} for r, c in cases]})
    report = {"device": None, "paddle_version": None, "bundle": str(bundle), "runner": runner.name,
              "checks": checks, "passed": all(c["passed"] for c in checks),
              "note": f"PaddlePaddle publishes no {options.recipe.name} runtime: the device library's own tests ran"}
    return _finish(report, options, report_dir, start, log)


def fresh_log(report_dir: Path) -> Path:
    report_dir.mkdir(parents=True, exist_ok=True)
    log = report_dir / "verify.log"
    log.write_text("")
    return log


@contextlib.contextmanager
def work_dir() -> Iterator[Path]:
    """A scratch directory for one verification, removed afterwards."""
    root = cache_root() / "verify"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="work-", dir=root) as tmp:
        yield Path(tmp)


def _finish(report: dict, options: VerifyOptions, report_dir: Path, start: float, log: Path) -> VerifyResult:
    report.update(arch=options.recipe.name, model=options.model, seconds=round(time.monotonic() - start, 1),
                  log=str(log))
    report_path = report_dir / "report.json"
    tmp_report = report_dir / ".report.json.partial"
    tmp_report.write_text(json.dumps(report, indent=2))
    tmp_report.replace(report_path)
    plot = plot_losses(report, report_dir / f"{options.model}-loss.png")
    return VerifyResult(report=report, report_path=report_path, plot_path=plot)


def plot_losses(report: dict, path: Path) -> Path | None:
    mnist = next((c for c in report.get("checks", []) if c.get("name") in ("mnist", report.get("model"))
                  and "device" in c), None)
    if mnist is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    ax.plot(mnist["cpu"]["losses"], label="Paddle CPU", linewidth=2.5, alpha=0.6)
    ax.plot(mnist["device"]["losses"], label=f"{report['device']}:0", linewidth=1.0)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(f"{'LeNet' if mnist['name'] == 'mnist' else mnist['name']} on {report['device']}:0 vs CPU — "
                 f"max |diff| {mnist['max_curve_abs_diff']:.1e}, "
                 f"held-out acc {mnist['device']['heldout_accuracy']:.3f}", fontsize=9)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = path.with_name("." + path.name + ".partial.png")
    fig.savefig(tmp)
    plt.close(fig)
    shutil.move(tmp, path)
    return path
