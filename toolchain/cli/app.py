"""The `devkit` command line. Errors are caught here, once, and printed as one line."""

from __future__ import annotations

import errno
import json
import signal
import sys
import time
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from .. import __version__
from ..build.plugin import BuildOptions, build, resolve_paddle_version
from ..util.console import err
from ..util.errors import DevkitError
from ..project.naming import parse_backend_name
from ..project.project import load_project
from ..project.recipes import find_recipe
from ..scaffold.render import render_backend
from ..verify.request import VerifyRequest, run_verification
from ..verify.session import find_wheel

# Help texts are plain text: "[tool.devkit]" must not be read as rich markup (it vanished).
app = typer.Typer(
    rich_markup_mode=None,
    help="Scaffold, build and verify PaddlePaddle custom-device plugins.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}


class RunnerChoice(str, Enum):
    auto = "auto"
    docker = "docker"
    host = "host"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"devkit {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show Python tracebacks on errors.")] = False,
) -> None:
    _state["debug"] = debug


def emit_json(payload: dict) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable summary on stdout.")]


@app.command("new-backend")
def new_backend(
    name: Annotated[str, typer.Argument(help="Backend name, e.g. STPU: a letter, then letters, digits or _ (max 32).")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Output directory (default: ./NAME).")] = None,
    device_type: Annotated[Optional[str], typer.Option("--device-type", help="Paddle device type (default: lower-case NAME).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty output directory.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Render a complete, buildable plugin project for a new device."""
    backend = parse_backend_name(name, device_type)
    start = time.monotonic()
    result = render_backend(backend, out or Path(name), force=force)
    seconds = time.monotonic() - start
    if as_json:
        emit_json({"out_dir": str(result.out_dir), "device_type": backend.device_type, "files": list(result.files),
                   "seconds": round(seconds, 4)})
    else:
        err.print(f"[green]✓[/] rendered backend [bold]{backend.name}[/] (device type [bold]{backend.device_type}[/]) "
                  f"into {result.out_dir} — {len(result.files)} files in {seconds * 1000:.0f} ms")
        err.print(f"  next: devkit build {result.out_dir}")


@app.command("build")
def build_command(
    project_dir: Annotated[Path, typer.Argument(help="The backend project (default: current directory).")] = Path("."),
    arch: Annotated[str, typer.Option("--arch", help="Target architecture (a recipe name or alias: x86_64, armv8, armhf, ...).")] = "x86_64",
    paddle_version: Annotated[Optional[str], typer.Option("--paddle-version", help="Paddle to build against (default: the recipe's pin).")] = None,
    clean: Annotated[bool, typer.Option("--clean", help="Discard the build tree first.")] = False,
    runner: Annotated[Optional[RunnerChoice], typer.Option("--runner", help="auto: a container when an engine answers, else the host (default: [tool.devkit] runner).")] = None,
    infer: Annotated[bool, typer.Option("--infer", help="Build with ON_INFER and write an inference bundle next to the wheel.")] = False,
    paddle_inference_dir: Annotated[Optional[Path], typer.Option("--paddle-inference-dir", envvar="PADDLE_INFERENCE_DIR", help="Unpacked Paddle Inference release to link (with --infer).")] = None,
    all_entries: Annotated[bool, typer.Option("--all", help="Build every entry of the [tool.devkit] matrix; write reports/matrix/.")] = False,
    jobs: Annotated[Optional[int], typer.Option("--jobs", min=1, help="With --all: targets built in parallel (default: [tool.devkit] jobs, else CPUs/2).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build the plugin wheel (or, for targets without Paddle, the device library bundle) into PROJECT_DIR/dist/."""
    project = load_project(project_dir)
    runner_choice = runner.value if runner else project.config.runner
    if all_entries:
        return build_matrix(project, runner_choice, jobs, as_json)
    recipe = find_recipe(arch)
    if paddle_inference_dir is not None:
        if not infer:
            raise DevkitError("--paddle-inference-dir applies to inference builds", "add --infer")
        if not (paddle_inference_dir / "paddle" / "lib" / "libpaddle_inference.so").is_file():
            raise DevkitError(f"{paddle_inference_dir} has no paddle/lib/libpaddle_inference.so",
                              "point --paddle-inference-dir at an unpacked Paddle Inference release")
    options = BuildOptions(recipe=recipe, paddle_version=resolve_paddle_version(recipe, paddle_version), clean=clean,
                           runner=runner_choice, infer=infer,
                           inference_dir=paddle_inference_dir.resolve() if paddle_inference_dir else None)
    result = build(project, options)
    if as_json:
        emit_json(result.as_dict())
    else:
        what = "nothing recompiled" if result.compiled_files == 0 else f"{result.compiled_files} files compiled"
        pin = f", paddlepaddle=={result.paddle_version}" if result.paddle_version else ""
        err.print(f"[green]✓[/] built {result.artifact} ({recipe.name}{pin}; {what}; {result.seconds:.1f} s on "
                  f"{result.runner})")
        if result.bundle:
            err.print(f"[green]✓[/] inference bundle {result.bundle}")


def build_matrix(project, runner_choice: str, jobs: int | None, as_json: bool) -> None:
    from ..matrix.entries import build_all, default_jobs, matrix_entries, write_reports

    entries = matrix_entries(project.config)
    jobs = jobs or project.config.jobs or default_jobs()
    err.print(f"building {len(entries)} matrix entries of {project.name} ({jobs} in parallel): "
              + ", ".join(e.id for e in entries))
    start = time.monotonic()
    outcomes = build_all(project, entries, runner_choice, jobs)
    json_path, junit_path = write_reports(outcomes, project.root / "reports" / "matrix", "devkit build --all")
    if as_json:
        emit_json({"passed": all(o.passed for o in outcomes), "report": str(json_path), "junit": str(junit_path),
                   "seconds": round(time.monotonic() - start, 1), "entries": [o.as_dict() for o in outcomes]})
    else:
        table = Table(title=f"devkit build --all — {project.name} ({time.monotonic() - start:.0f} s)")
        for col in ("target", "mode", "paddle", "result", "time", "artifact"):
            table.add_column(col)
        for o in outcomes:
            artifact = "\n".join(a.relative_to(project.root).as_posix() for a in o.artifacts) or o.error
            table.add_row(o.entry.recipe.name, o.entry.mode, o.entry.paddle_version or "-",
                          "[green]pass[/]" if o.passed else "[red]FAIL[/]", f"{o.seconds:.0f} s", artifact)
        err.print(table)
        err.print(f"reports: {json_path}  {junit_path}")
    failed = [o.entry.id for o in outcomes if not o.passed]
    if failed:
        raise DevkitError(f"{len(failed)} of {len(outcomes)} matrix entries failed: {', '.join(failed)}",
                          f"see {json_path} and each entry's log")


@app.command()
def verify(
    project_dir: Annotated[Optional[Path], typer.Argument(help="The backend project whose dist/ wheel to verify.")] = None,
    wheel: Annotated[Optional[Path], typer.Option("--wheel", help="Verify this wheel instead of a project's.")] = None,
    arch: Annotated[str, typer.Option("--arch", help="Target architecture.")] = "x86_64",
    model: Annotated[Optional[str], typer.Option("--model", help="Model to train on the device vs CPU: mnist (LeNet), resnet_bn (ResNet-style CNN, BatchNorm training), transformer (tiny encoder: embedding, layer_norm, attention, gelu, dropout); with --infer, the model to run (default: [tool.devkit.verify]).")] = None,
    steps: Annotated[Optional[int], typer.Option("--steps", help="Training steps (default 200 native, 100 emulated).")] = None,
    data: Annotated[Optional[Path], typer.Option("--data", help="Directory with MNIST idx files.")] = None,
    report_dir: Annotated[Optional[Path], typer.Option("--report-dir", help="Where to write report.json and the plot.")] = None,
    runner: Annotated[Optional[RunnerChoice], typer.Option("--runner", help="Where to verify (default: [tool.devkit] runner, else auto).")] = None,
    infer: Annotated[bool, typer.Option("--infer", help="Verify inference (paddle.inference) instead of training.")] = False,
    model_dir: Annotated[Optional[Path], typer.Option("--model-dir", help="With --infer: a user's exported model.")] = None,
    warmup: Annotated[Optional[int], typer.Option("--warmup", help="With --infer: runs before timing (default 10).")] = None,
    repeats: Annotated[Optional[int], typer.Option("--repeats", help="With --infer: timed runs (default 30).")] = None,
    paddle_inference_dir: Annotated[Optional[Path], typer.Option("--paddle-inference-dir", envvar="PADDLE_INFERENCE_DIR", help="With --infer: Paddle Inference C++ library for the C++ demo.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Install the wheel beside the reference Paddle in a fresh env and check it on the device."""
    recipe = find_recipe(arch)
    project = None if wheel is not None else load_project(project_dir or Path("."))
    settings = VerifyRequest(model=model, steps=steps, data=data, runner=runner.value if runner else None,
                             model_dir=model_dir, warmup=warmup, repeats=repeats, inference_dir=paddle_inference_dir)
    result = run_verification(project, wheel, recipe, settings, infer, report_dir)
    if as_json:
        emit_json({"passed": result.passed, "report": str(result.report_path),
                   "plot": str(result.plot_path) if result.plot_path else None,
                   "checks": [{k: c.get(k) for k in ("name", "passed", "detail")} for c in result.report["checks"]]})
    else:
        print_verify_result(result, recipe)
    if not result.passed:
        failed = [c["name"] for c in result.report["checks"] if not c["passed"] and not c.get("not_run")]
        raise DevkitError(f"verification failed: {', '.join(failed)}", f"see {result.report_path}")


def print_verify_result(result, recipe) -> None:
    where = (f"{result.report['device']}:0, paddle {result.report['paddle_version']}" if result.report.get("device")
             else "device library tests")
    table = Table(title=f"devkit verify — {recipe.name}: {where} ({result.report.get('runner')})")
    table.add_column("check")
    table.add_column("result")
    table.add_column("figures")
    for check in result.report["checks"]:
        status = "[yellow]not run[/]" if check.get("not_run") else "[green]pass[/]" if check["passed"] else "[red]FAIL[/]"
        table.add_row(check["name"], status, check.get("detail", ""))
    latency = [(c["name"], c["latency_ms"]) for c in result.report["checks"] if "latency_ms" in c]
    if latency:
        lat = Table(title="latency (ms) after warmup", show_lines=False)
        for col in ("model", "place", "avg", "min", "max"):
            lat.add_column(col)
        for name, places in latency:
            for place, t in places.items():
                lat.add_row(name, place, f"{t['avg_ms']:.2f}", f"{t['min_ms']:.2f}", f"{t['max_ms']:.2f}")
        err.print(lat)
    fallback = next((c for c in result.report["checks"] if c["name"] == "fallback report"), None)
    if fallback:
        places = Table(title=f"kernels the model ran, with CPU fallback on ({len(fallback['kernels'])})")
        for col in ("kernel", "ran on", "runs"):
            places.add_column(col)
        for kernel, counts in fallback["kernels"].items():
            where = ("[red]CPU (fallback)[/]" if counts.get("cpu_fallback") else
                     result.report["device"] if counts.get("device") else "CPU (CPU inputs)")
            places.add_row(kernel, where, str(sum(counts.values())))
        err.print(places)
    err.print(table)
    err.print(f"report: {result.report_path}" + (f"  plot: {result.plot_path}" if result.plot_path else ""))


matrix_app = typer.Typer(rich_markup_mode=None, help="The project's build matrix ([tool.devkit] targets x modes x Paddle versions).",
                         no_args_is_help=True)
app.add_typer(matrix_app, name="matrix")


@matrix_app.command("list")
def matrix_list(
    project_dir: Annotated[Path, typer.Argument(help="The backend project.")] = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """List the matrix entries and the command each CI job runs."""
    from ..matrix.entries import matrix_entries

    entries = matrix_entries(load_project(project_dir).config)
    if as_json:
        emit_json([e.as_dict() for e in entries])
        return
    table = Table("entry", "target", "mode", "paddle", "command")
    for e in entries:
        table.add_row(e.id, e.recipe.name, e.mode, e.paddle_version or "-", f"devkit matrix run {e.id}")
    err.print(table)


@matrix_app.command("run")
def matrix_run(
    entry_id: Annotated[str, typer.Argument(help="A matrix entry, e.g. x86_64-train-paddle3.3.1 (see `devkit matrix list`).")],
    project_dir: Annotated[Path, typer.Argument(help="The backend project.")] = Path("."),
    runner: Annotated[Optional[RunnerChoice], typer.Option("--runner", help="Where to build and verify (default: [tool.devkit] runner).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build and verify one matrix entry: what each CI job runs. Reports go to reports/ENTRY/."""
    from ..matrix.entries import EntryOutcome, build_entry, find_entry, write_reports

    project = load_project(project_dir)
    entry = find_entry(project.config, entry_id)
    runner_choice = runner.value if runner else project.config.runner
    report_dir = project.root / "reports" / entry.id
    outcomes = [build_entry(project, entry, runner_choice)]
    if outcomes[0].passed:
        err.print(f"[green]✓[/] built {', '.join(a.name for a in outcomes[0].artifacts)}")
        models = project.config.verify.infer_models if entry.infer else (None,)
        for model in models:
            check = EntryOutcome(entry, step=f"verify{' ' + model if model else ''}")
            start = time.monotonic()
            try:
                result = run_verification(project, outcomes[0].artifacts[0] if entry.paddle_version else None,
                                          entry.recipe, VerifyRequest(model=model, runner=runner_choice), entry.infer,
                                          report_dir / (f"verify-{model}" if model else "verify"))
                print_verify_result(result, entry.recipe)
                check.passed = result.passed
                check.error = "" if result.passed else f"verification failed; see {result.report_path}"
                check.artifacts = [result.report_path]
            except DevkitError as exc:
                check.error, check.log = exc.one_line(), exc.log
            check.seconds = time.monotonic() - start
            outcomes.append(check)
    json_path, junit_path = write_reports(outcomes, report_dir, f"devkit matrix run {entry.id}")
    if as_json:
        emit_json({"entry": entry.as_dict(), "passed": all(o.passed for o in outcomes), "report": str(json_path),
                   "junit": str(junit_path), "steps": [o.as_dict() for o in outcomes]})
    failed = [o for o in outcomes if not o.passed]
    if failed:
        raise DevkitError(f"matrix entry {entry.id} failed: {failed[0].error}", f"see {json_path}")
    err.print(f"[green]✓[/] {entry.id}: built and verified; reports in {report_dir}")


@app.command("ci")
def ci_command(
    provider: Annotated[str, typer.Option("--provider", help="github | gitlab")],
    project_dir: Annotated[Path, typer.Argument(help="The backend project (the repository root).")] = Path("."),
    out: Annotated[Optional[Path], typer.Option("--out", help="Where to write (default: .github/workflows/devkit.yml or .gitlab-ci.yml).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a CI workflow with one job per matrix entry (build, verify, upload wheel/bundle/reports)."""
    from ..matrix.ci import write_ci
    from ..matrix.entries import matrix_entries

    project = load_project(project_dir)
    path = write_ci(project, provider, out)
    entries = matrix_entries(project.config)
    if as_json:
        emit_json({"provider": provider, "path": str(path), "jobs": [e.id for e in entries]})
    else:
        err.print(f"[green]✓[/] wrote {path}: {len(entries)} jobs ({', '.join(e.id for e in entries)})")


config_app = typer.Typer(rich_markup_mode=None, help="The project's [tool.devkit] configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
def config_show(
    project_dir: Annotated[Path, typer.Argument(help="The backend project.")] = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Print the resolved configuration (defaults filled in) and its matrix."""
    from ..matrix.entries import matrix_entries

    project = load_project(project_dir)
    config = project.config.as_dict()
    config["matrix"] = [e.id for e in matrix_entries(project.config)]
    if as_json:
        emit_json(config)
        return
    table = Table("key", "value", title=escape(f"[tool.devkit] of {project.root / 'pyproject.toml'}"))
    for key, value in config.items():
        if isinstance(value, dict) and key != "paddle_versions":
            for sub, v in value.items():
                table.add_row(f"{key}.{sub}".replace("_", "-"), json.dumps(v))
        else:
            table.add_row(key.replace("_", "-"), json.dumps(value))
    err.print(table)


@app.command("test-ops")
def test_ops(
    project_dir: Annotated[Optional[Path], typer.Argument(help="The backend project whose dist/ artifact to test.")] = None,
    wheel: Annotated[Optional[Path], typer.Option("--wheel", help="Test this wheel instead of a project's.")] = None,
    arch: Annotated[str, typer.Option("--arch", help="Target architecture.")] = "x86_64",
    ops: Annotated[str, typer.Option("--ops", help="Regular expression: cases whose name or kernels match.")] = "",
    dtypes: Annotated[str, typer.Option("--dtypes", help="Comma-separated dtypes to test.")] = "float32,float64,int64",
    gen_golden: Annotated[Optional[Path], typer.Option("--gen-golden", help="Record golden data with Paddle CPU into this directory.")] = None,
    golden: Annotated[Optional[Path], typer.Option("--golden", help="Check the target's device library against golden data from --gen-golden.")] = None,
    paddle_version: Annotated[Optional[str], typer.Option("--paddle-version", help="With --gen-golden: Paddle to record with (default: this machine's recipe pin).")] = None,
    report_dir: Annotated[Optional[Path], typer.Option("--report-dir", help="Where to write report.json, report.md and junit.xml.")] = None,
    runner: Annotated[Optional[RunnerChoice], typer.Option("--runner", help="Where to run (default: [tool.devkit] runner, else auto).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every registered kernel vs Paddle CPU over shapes and dtypes; or golden data for targets without Paddle."""
    from ..build.plugin import device_bundle_path
    from ..verify.ops import describe_failures, gen_golden as record_golden, parse_selection, run_golden, \
        run_test_ops
    from ..run.select import host_recipe
    from ..verify.request import reports_root, verify_options

    if gen_golden and golden:
        raise DevkitError("--gen-golden and --golden exclude each other", "record on one machine, check on the target")
    if gen_golden:
        version = resolve_paddle_version(host_recipe(), paddle_version)
        summary = record_golden(gen_golden, version, runner.value if runner else "auto",
                                (report_dir or gen_golden.resolve().parent / f".{gen_golden.name}-log"))
        if as_json:
            emit_json(summary)
        else:
            err.print(f"[green]✓[/] recorded {summary['cases']} golden cases with Paddle {summary['paddle_version']} "
                      f"CPU into {summary['golden_dir']}")
        return
    ops, dtype_list = parse_selection(ops, dtypes)
    recipe = find_recipe(arch)
    project = None if wheel is not None else load_project(project_dir or Path("."))
    options = verify_options(project, recipe, runner.value if runner else None)
    mode = "golden" if golden else "ops"
    report_dir = (report_dir or reports_root(project) / f"test-ops-{recipe.name}{'-golden' if golden else ''}").resolve()
    if golden:
        if project is None:
            raise DevkitError("--golden checks a project's device library bundle", "pass the project directory")
        result = run_golden(device_bundle_path(project, recipe), golden, options, report_dir)
    else:
        if not recipe.has_paddle_runtime:
            raise DevkitError(f"{recipe.name} has no Paddle runtime to compare with",
                              f"record golden data on x86_64 (--gen-golden DIR) and check with --arch {recipe.name} --golden DIR")
        result = run_test_ops((wheel or find_wheel(project, recipe)).resolve(), options, ops, dtype_list, report_dir)
    counts = result.report["counts"]
    if as_json:
        emit_json({"passed": result.report["passed"], "mode": mode, "counts": counts,
                   "report": str(report_dir / "report.json"), "markdown": str(report_dir / "report.md"),
                   "junit": str(report_dir / "junit.xml"),
                   "failed": [f"{r['case']} [{r['dtype']}]" for r in result.failed]})
    else:
        table = Table("case", "dtype", "kernels", "result", title=f"devkit test-ops — {recipe.name} ({mode})")
        for r in result.report["results"]:
            status = {"pass": "[green]pass[/]", "fail": "[red]FAIL[/]", "error": "[red]ERROR[/]"}.get(
                r["status"], f"[yellow]{r['status']}[/]")
            table.add_row(r["case"], r["dtype"], ", ".join(r["kernels"]), status)
        err.print(table)
        err.print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errors, "
                  f"{counts['not registered']} not registered; reports in {report_dir} (report.md, junit.xml)")
    if not result.report["passed"]:
        name = project.name if project else "NAME"
        raise DevkitError(f"{len(result.failed) or 'no'} op case(s) failed: {describe_failures(result) or 'no cases ran'}",
                          f"see {report_dir / 'report.md'}; isolate a kernel with {name}_FALLBACK_OPS or "
                          f"{name}_AUTOCOMPARE=1")
    err.print("[green]✓[/] all op cases pass")


@app.command("check-kernels")
def check_kernels(
    project_dir: Annotated[Optional[Path], typer.Argument(help="The backend project whose dist/ wheel to check.")] = None,
    wheel: Annotated[Optional[Path], typer.Option("--wheel", help="Check this wheel instead of a project's.")] = None,
    arch: Annotated[str, typer.Option("--arch", help="Target architecture.")] = "x86_64",
    runner: Annotated[Optional[RunnerChoice], typer.Option("--runner", help="Where to run (default: [tool.devkit] runner, else auto).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Load the plugin into its Paddle and compare each registered kernel's inputs, attributes and outputs with Paddle's."""
    from ..verify.request import reports_root, verify_options
    from ..verify.session import run_check_kernels

    recipe = find_recipe(arch)
    project = None if wheel is not None else load_project(project_dir or Path("."))
    options = verify_options(project, recipe, runner.value if runner else None)
    report_dir = reports_root(project) / f"check-kernels-{recipe.name}"
    result = run_check_kernels((wheel or find_wheel(project, recipe)).resolve(), options, report_dir.resolve())
    check = next((c for c in result.report["checks"] if c["name"] == "kernel signatures"), result.report["checks"][-1])
    if as_json:
        emit_json({"passed": result.passed, "report": str(result.report_path), "detail": check.get("detail"),
                   "mismatched": check.get("mismatched", []), "kernels": len(check.get("kernels", {}))})
    elif result.passed:
        err.print(f"[green]✓[/] {escape(check['detail'])}")
    if not result.passed:
        raise DevkitError(f"kernel signatures differ from Paddle {result.report.get('paddle_version')}: "
                          + ("; ".join(check.get("mismatched", [])) or check.get("detail", "")),
                          "update each named kernel to the declaration in paddle/phi/kernels/ of that Paddle "
                          "and rebuild (the build's signature checks then hold)")


@app.command("check-abi")
def check_abi_command(
    path: Annotated[Path, typer.Argument(help="A plugin wheel or shared library.")],
    arch: Annotated[str, typer.Option("--arch", help="Target architecture it must run on.")] = "x86_64",
    paddle_version: Annotated[Optional[str], typer.Option("--paddle-version", help="Paddle it must load into (default: the wheel's pin, else the recipe's).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check, without loading it, that a plugin links, and matches the target's machine and Paddle."""
    from ..build.abi import check_abi
    from ..verify.session import pinned_paddle

    recipe = find_recipe(arch)
    version = paddle_version or (pinned_paddle(path) if path.suffix == ".whl" and path.is_file() else None) \
        or recipe.paddle_version
    if not version:
        raise DevkitError(f"{recipe.name} has no Paddle runtime to check against", "pass --arch with a Paddle runtime")
    findings = check_abi(path, recipe, version)
    errors = [f for f in findings if f.severity == "error"]
    if as_json:
        emit_json({"path": str(path), "arch": recipe.name, "paddle_version": version, "ok": not errors,
                   "findings": [{"library": f.library, "problem": f.problem, "fix": f.fix, "severity": f.severity}
                                for f in findings]})
    elif not errors:
        err.print(f"[green]✓[/] {path.name}: loads into Paddle {version} on {recipe.name} (machine, symbols, "
                  "build info, device_ext.h)")
    for f in findings:
        err.print(f"{'[red]✗' if f.severity == 'error' else '[yellow]!'}[/] {escape(f.line())}", markup=True)
    if errors:
        raise DevkitError(f"{len(errors)} ABI problem(s) in {path.name}: {errors[0].problem}", errors[0].fix)


images_app = typer.Typer(rich_markup_mode=None, help="Builder and verify container images.", no_args_is_help=True)
app.add_typer(images_app, name="images")


@images_app.command("bootstrap")
def images_bootstrap(
    arch: Annotated[str, typer.Option("--arch", help="Target whose Debian base to make.")] = "x86_64",
    as_json: JsonOpt = False,
) -> None:
    """Make the Debian base image for ARCH offline (debootstrap + import with the right platform)."""
    from ..run.engine import Engine
    from ..run.envs import cache_root
    from ..run.images import bootstrap_base

    recipe = find_recipe(arch)
    start = time.monotonic()
    info = bootstrap_base(Engine.connect(), recipe, cache_root() / "logs" / f"bootstrap-{recipe.name}.log")
    if as_json:
        emit_json({"image": info.tag, "platform": info.platform, "seconds": round(time.monotonic() - start, 1)})


@images_app.command("build")
def images_build(
    arch: Annotated[Optional[list[str]], typer.Option("--arch", help="Targets whose verify image to build (repeatable).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build (or reuse) the builder image and the verify images of the given targets."""
    from ..run.engine import Engine
    from ..run.envs import cache_root
    from ..run.images import builder_spec, ensure_image, verify_spec

    engine = Engine.connect()
    log = cache_root() / "logs" / "images.log"
    specs = [builder_spec(), *(verify_spec(find_recipe(a)) for a in (arch or ["x86_64", "aarch64", "armhf"]))]
    tags = {spec.kind: ensure_image(engine, spec, log) for spec in specs}
    if as_json:
        emit_json(tags)
    else:
        for kind, tag in tags.items():
            err.print(f"{kind}: {tag}")


@images_app.command("list")
def images_list(as_json: JsonOpt = False) -> None:
    """List devkit's images."""
    from ..run.engine import Engine
    from ..run.images import list_images

    infos = list_images(Engine.connect())
    if as_json:
        emit_json([{"tag": i.tag, "platform": i.platform, "size_mb": round(i.size_mb)} for i in infos])
        return
    table = Table("image", "platform", "size")
    for i in infos:
        table.add_row(i.tag, i.platform, f"{i.size_mb:.0f} MB")
    err.print(table)


@images_app.command("binfmt")
def images_binfmt(
    platforms: Annotated[list[str], typer.Argument(help="qemu platforms to register, e.g. arm64 arm.")],
) -> None:
    """Register qemu handlers through the engine (for CI engines you have no shell on, e.g. docker:dind)."""
    from ..run.engine import Engine

    err.print(Engine.connect().install_binfmt(platforms))
    err.print(f"[green]✓[/] qemu handlers for {', '.join(platforms)} registered in the engine's kernel")


@images_app.command("prune")
def images_prune(as_json: JsonOpt = False) -> None:
    """Remove devkit images that the current Dockerfiles no longer produce."""
    from ..run.engine import Engine
    from ..run.images import prune_images

    removed = prune_images(Engine.connect())
    if as_json:
        emit_json({"removed": removed})
    else:
        err.print(f"removed {len(removed)} image(s)" + (": " + ", ".join(removed) if removed else ""))


@app.command()
def doctor(as_json: JsonOpt = False) -> None:
    """Check the container engine, qemu/binfmt, disk space and cross compilers; print the fix for each gap."""
    from ..run.doctor import run_doctor

    findings = run_doctor()
    if as_json:
        emit_json([f.as_dict() for f in findings])
    else:
        table = Table("check", "status", "detail", "fix")
        for f in findings:
            status = "[green]ok[/]" if f.ok else ("[red]missing[/]" if f.required else "[yellow]optional[/]")
            table.add_row(f.name, status, f.detail, "" if f.ok else f.fix)
        err.print(table)
    if any(f.required and not f.ok for f in findings):
        raise DevkitError("some required pieces are missing", "apply the fixes listed above")


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt  # SIGTERM (a cancelled CI job) cleans up like Ctrl-C: no container, no partial artifact


def _usage_error(exc: typer.TyperException) -> None:
    """A mistyped command line: the usage line and one error line naming the mistake, exit 2."""
    message = exc.format_message().strip()
    if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help (rich prints it itself) is the answer
        if message:
            err.print(message, markup=False, highlight=False)
        return
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        err.print(ctx.get_usage(), markup=False, highlight=False)
    command = ctx.command_path if ctx is not None else "devkit"
    message = message.rstrip(".") + ("" if message.endswith(("?", "!")) else ".")
    err.print(f"[red]error:[/] {escape(message)} Fix: see `{escape(command)} --help`", highlight=False)


def _os_problem(exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    fix = {errno.ENOSPC: "free space on that file system (or point DEVKIT_CACHE_DIR / --out elsewhere) and rerun",
           errno.EDQUOT: "free space within your quota and rerun",
           errno.EACCES: "make the path writable for this user, or choose another",
           errno.EROFS: "choose a writable directory"}.get(exc.errno or 0, "check the path and rerun")
    return f"{exc.strerror or exc}{where}. Fix: {fix}"


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        code = app(prog_name="devkit", standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into this return value
            err.print("[red]error:[/] interrupted; no partial output was kept")
        if isinstance(code, int) and code:
            sys.exit(code)
    except DevkitError as exc:
        if exc.details:
            err.print(exc.details, markup=False, style="dim")
        err.print(f"[red]error:[/] {escape(exc.one_line())}", markup=True)
        if _state["debug"]:
            traceback.print_exc()
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("[red]error:[/] interrupted; no partial output was kept")
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors (typer >= 0.29 carries its own click)
        _usage_error(exc)
        sys.exit(exc.exit_code)
    except OSError as exc:  # the machine, not devkit: a full disk, a read-only or vanished directory
        if _state["debug"]:
            traceback.print_exc()
        err.print(f"[red]error:[/] {escape(_os_problem(exc))}", highlight=False)
        sys.exit(1)
    except Exception as exc:
        if _state["debug"]:
            traceback.print_exc()
        err.print(f"[red]error:[/] internal error: {exc}. Fix: rerun with --debug and report the traceback")
        sys.exit(3)
