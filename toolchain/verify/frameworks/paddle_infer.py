"""`devkit verify --infer`, the Paddle adapter's mode: paddle.inference on the device vs CPU per
model (outputs, kernel placement, latency), and the inference bundle's C++ demo against a Paddle
Inference library."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...payload.shared.quant_program import op_counts, qdq_counts
from ...project.config import INFER_MODELS
from ...run.select import host_recipe
from ...run.step import HostRunner, Step
from ...util.archives import extract_tar
from ...util.errors import DevkitError, InputError, VerificationFailure
from ...util.resources import payload_script
from ..report import Check, Report
from ..session import VERIFY_DEFAULTS, PluginSession, VerifyOptions, VerifyResult, finish, plugin_session

INFER_PAYLOAD = payload_script("paddle", "infer_checks")


@dataclass(frozen=True)
class InferOptions:
    models: tuple[str, ...] = VERIFY_DEFAULTS.infer_models
    model_dir: Path | None = None
    warmup: int = VERIFY_DEFAULTS.warmup
    repeats: int = VERIFY_DEFAULTS.repeats
    inference_dir: Path | None = None
    bundle: Path | None = None  # the project's inference bundle, whose C++ demo runs
    quant: str = ""  # int8: each model quantized (QDQ) and checked at levels 0 and 1 (payload/quant_model.py)


def run_infer_verify(wheel: Path, options: VerifyOptions, infer: InferOptions, report_dir: Path) -> VerifyResult:
    """paddle.inference on the device vs CPU for each model: outputs, kernel placement, latency."""
    unknown = [m for m in infer.models if m not in INFER_MODELS]
    if unknown and infer.model_dir is None:
        raise InputError(
            f"unknown inference model {unknown[0]!r}", f"use --model {' | '.join(INFER_MODELS)} or --model-dir"
        )
    if infer.warmup < 0 or infer.repeats < 1:
        raise InputError(
            "--warmup must be >= 0 and --repeats >= 1",
            f"e.g. --warmup {VERIFY_DEFAULTS.warmup} --repeats {VERIFY_DEFAULTS.repeats}",
        )
    if infer.model_dir is not None:
        prefix = _model_prefix(infer.model_dir)  # before a verify environment is made for it
        if infer.quant:
            _check_quantized(prefix)
    checks: list[Check] = []
    with plugin_session(wheel, options, report_dir, (infer.model_dir,) if infer.model_dir else ()) as session:
        runner, work = session.runner, session.work
        if infer.model_dir:
            _load_on_cpu(session, infer.model_dir)
        targets = (
            [("model-dir", ["--model-dir", runner.path(infer.model_dir)])]
            if infer.model_dir
            else [(m, ["--model", m]) for m in infer.models]
        )
        models = []
        for name, model_args in targets:
            check = session.run_check(
                f"inference {name}{' ' + infer.quant if infer.quant else ''} on {options.recipe.name} "
                f"({infer.warmup} warmup, {infer.repeats} repeats)",
                INFER_PAYLOAD,
                [
                    *model_args,
                    "--warmup",
                    str(infer.warmup),
                    "--repeats",
                    str(infer.repeats),
                    "--work",
                    runner.path(work),
                    *(["--quant", infer.quant] if infer.quant else []),
                ],
                f"{Path(name).name}.json",
            )
            label = f"inference {Path(name).name}" + (f" {infer.quant}" if infer.quant else "")
            checks.append(replace(check, name=label))
            models.append(_model_prefix(infer.model_dir) if infer.model_dir else str(work / name / "model"))
        if infer.quant:
            checks.append(Check.from_json(bundle_check(infer, session)))
        checks.append(Check.from_json(cpp_demo(infer, options, models, work, session.log)))
    measured = Report.of(checks).inference()
    report = Report.of(
        checks,
        device=measured[0][1]["device"] if measured else None,
        paddle_version=session.runtime_version,
        runtime_version=session.runtime_version,
        runner=runner.name,
        wheel=str(wheel),
    )
    return finish(report, options, report_dir, session.start, session.log)


# What a user does about a model Paddle cannot take (and what the payload's load says, in short)
MODEL_DIR_FIX = (
    "re-export the model with paddle.jit.save (or paddle.static.save_inference_model) and pass the directory "
    "holding its <name>.json (or .pdmodel) and <name>.pdiparams, and no other model"
)


def _model_prefix(model_dir: Path) -> str:
    """The exported model in a user's --model-dir, checked before anything starts: one program (.json,
    or .pdmodel) with its .pdiparams beside it, neither empty, a .json a PIR program (quant_model)."""
    if not model_dir.is_dir():
        raise InputError(f"--model-dir {model_dir} is not a directory", MODEL_DIR_FIX)
    programs = sorted([*model_dir.glob("*.json"), *model_dir.glob("*.pdmodel")])
    models = [p for p in programs if p.with_suffix(".pdiparams").is_file()]
    if len(models) > 1:
        names = ", ".join(p.name for p in models)
        raise InputError(f"{model_dir} holds {len(models)} models ({names}): verify takes one", MODEL_DIR_FIX)
    if not models:
        unpaired = f" ({', '.join(p.name for p in programs)} without a .pdiparams beside it)" if programs else ""
        raise InputError(f"{model_dir} holds no exported model{unpaired}", MODEL_DIR_FIX)
    program, params = models[0], models[0].with_suffix(".pdiparams")
    empty = next((f for f in (program, params) if f.stat().st_size == 0), None)
    if empty:
        raise InputError(f"{empty} is empty", MODEL_DIR_FIX)
    if program.suffix == ".json":
        try:
            op_counts(program)
        except ValueError as exc:
            raise InputError(f"{program} is not a valid Paddle program ({exc})", MODEL_DIR_FIX) from None
    return str(program.with_suffix(""))


def _load_on_cpu(session: PluginSession, model_dir: Path) -> None:
    """Paddle loads the user's model on the CPU before anything runs on the device: a file it cannot
    read (truncated parameters, a program that is not one) is the user's to fix, said in one line
    naming the file (the payload's devkit-problem line, of kind input)."""
    try:
        session.run_json(
            "load --model-dir on the CPU",
            INFER_PAYLOAD,
            ["--model-dir", session.runner.path(model_dir), "--load-only"],
            "model-dir-load.json",
        )
    except InputError as exc:  # the step's output is that line again: not shown twice
        raise InputError(exc.problem, MODEL_DIR_FIX, log=exc.log) from None


def _check_quantized(prefix: str) -> None:
    """A --model-dir given with --quant holds a QDQ program (quantize_linear and dequantize_linear)."""
    program = next(p for p in (Path(prefix + ".json"), Path(prefix + ".pdmodel")) if p.is_file())
    counts = qdq_counts(program)
    if not all(counts.values()):
        raise InputError(
            f"{program} is not a quantized (QDQ) model: it holds " + ", ".join(f"{n} {op}" for op, n in counts.items()),
            "quantize it with paddle.quantization (PTQ or QAT, then convert) and save it with paddle.jit.save, "
            "or drop --quant",
        )


BUNDLE_CHECK = "bundle int8 check"


def bundle_check(infer: InferOptions, session: PluginSession) -> dict[str, Any]:
    """The inference bundle's own int8 check, as a board runs it: run.sh --check in the session's
    Paddle (on the target, emulated or not) with the plugin from the bundle, against the goldens the
    build machine's Paddle made (building/bundles.py)."""
    if infer.bundle is None:
        why = "no inference bundle: build with `devkit build --infer` first"
        return {
            "name": BUNDLE_CHECK,
            "kind": "deployment",
            "passed": False,
            "not_run": True,
            "detail": f"not run: {why}; not counted as passed",
        }
    unpacked = session.work / "bundle"
    extract_tar(infer.bundle, unpacked, "inference bundle", "rebuild it with devkit build --infer")
    root = next(unpacked.iterdir())
    if not (root / "check" / "check.json").is_file():
        return {
            "name": BUNDLE_CHECK,
            "kind": "deployment",
            "passed": False,
            "detail": f"{infer.bundle.name} has no check/: rebuild it with this devkit's `devkit build --infer`",
        }
    runner = session.runner
    try:
        said = runner.run(
            Step(
                "bundle int8 check (run.sh --check)",
                ["bash", runner.path(root / "run.sh"), "--check"],
                log=session.log,
                cwd=Path(runner.path(session.work)),
                env={**session.options.check_env, "PYTHON": session.python},
                fails_as=VerificationFailure,
            )
        )
    except DevkitError as exc:  # a FAIL exits non-zero: its lines are among the failure's last
        failed = _verdicts(exc.details or "")
        detail = "; ".join(failed) if failed else exc.one_line()
        return {"name": BUNDLE_CHECK, "kind": "deployment", "passed": False, "detail": detail}
    lines = _verdicts(said)
    passed = any(line.startswith("PASS ") for line in lines) and not any(line.startswith("FAIL ") for line in lines)
    return {
        "name": BUNDLE_CHECK,
        "kind": "deployment",
        "passed": passed,
        "detail": "run.sh --check: " + "; ".join(lines),
    }


def _verdicts(output: str) -> list[str]:
    """The PASS / FAIL / SKIP lines the bundle's check prints (its infer.py --check)."""
    return [line for line in output.splitlines() if line.startswith(("PASS ", "FAIL ", "SKIP "))]


def cpp_demo(infer: InferOptions, options: VerifyOptions, models: list[str], work: Path, log: Path) -> dict[str, Any]:
    """Build the bundle's C++ demo against the given Paddle Inference and run it on the device."""
    why = None
    if infer.inference_dir is None:
        why = "no Paddle Inference C++ library was given (--paddle-inference-dir)"
    elif infer.bundle is None:
        why = "no inference bundle: build with `devkit build --infer` first"
    elif not host_recipe().matches(options.recipe.name):
        why = f"the C++ demo runs on the host, which is not {options.recipe.name}"
    if why:
        return {
            "name": "C++ demo",
            "kind": "deployment",
            "passed": False,
            "not_run": True,
            "detail": f"not run: {why}; not counted as passed",
        }
    return _run_cpp_demo(infer, models, work, log)


def _run_cpp_demo(infer: InferOptions, models: list[str], work: Path, log: Path) -> dict[str, Any]:
    # On the host only: the demo links the host's Paddle Inference release.
    runner = HostRunner(fix_hint="see the C++ demo lines in the verify log")
    assert infer.bundle is not None  # cpp_demo runs this only with a bundle
    demo = work / "cpp-demo"
    extract_tar(infer.bundle, demo, "inference bundle", "rebuild it with devkit build --infer")
    root = next(demo.iterdir())
    env = {"PADDLE_INFERENCE_DIR": str(infer.inference_dir), "CUSTOM_DEVICE_ROOT": str(root / "lib")}
    try:
        runner.run(
            Step(
                "configure C++ demo",
                [
                    "cmake",
                    "-S",
                    str(root / "demo" / "cpp"),
                    "-B",
                    str(demo / "build"),
                    f"-DPADDLE_INFERENCE_DIR={infer.inference_dir}",
                ],
                log=log,
                env=env,
                fails_as=VerificationFailure,
            )
        )
        runner.run(
            Step(
                "build C++ demo",
                ["cmake", "--build", str(demo / "build")],
                log=log,
                env=env,
                fails_as=VerificationFailure,
            )
        )
        binary = next((demo / "build").glob("*_infer_demo"))
        outputs = [
            runner.run(
                Step(
                    f"C++ demo {Path(m).parent.name}",
                    [str(binary), m, str(infer.warmup), str(infer.repeats)],
                    log=log,
                    env=env,
                    fails_as=VerificationFailure,
                )
            )
            for m in models
        ]
    except DevkitError as exc:
        return {"name": "C++ demo", "kind": "deployment", "passed": False, "detail": exc.one_line()}
    ok = all("latency over" in out and "top-" in out for out in outputs)
    return {
        "name": "C++ demo",
        "kind": "deployment",
        "passed": ok,
        "detail": " | ".join(out.strip().splitlines()[-2] for out in outputs),
    }
