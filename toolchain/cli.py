"""The `devkit` command line. Errors are caught here, once, and printed as one line."""

from __future__ import annotations

import json
import sys
import time
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from . import __version__
from .build import BuildOptions, build, device_bundle_name, resolve_paddle_version
from .bundle import bundle_name as inference_bundle_name
from .console import err
from .errors import DevkitError
from .naming import parse_backend_name
from .project import load_project
from .recipes import find_recipe
from .render import render_backend
from .runners import host_recipe
from .verify import InferOptions, VerifyOptions, find_wheel, run_device_tests, run_infer_verify, run_verify

app = typer.Typer(
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


def inference_bundle(project, recipe) -> Path | None:
    if project is None:
        return None
    path = project.dist_dir / f"{inference_bundle_name(project, recipe)}.tar.gz"
    return path if path.is_file() else None


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
    runner: Annotated[RunnerChoice, typer.Option("--runner", help="auto: a container when an engine answers, else the host.")] = RunnerChoice.auto,
    infer: Annotated[bool, typer.Option("--infer", help="Build with ON_INFER and write an inference bundle next to the wheel.")] = False,
    paddle_inference_dir: Annotated[Optional[Path], typer.Option("--paddle-inference-dir", envvar="PADDLE_INFERENCE_DIR", help="Unpacked Paddle Inference release to link (with --infer).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build the plugin wheel (or, for targets without Paddle, the device library bundle) into PROJECT_DIR/dist/."""
    project = load_project(project_dir)
    recipe = find_recipe(arch)
    if paddle_inference_dir is not None:
        if not infer:
            raise DevkitError("--paddle-inference-dir applies to inference builds", "add --infer")
        if not (paddle_inference_dir / "paddle" / "lib" / "libpaddle_inference.so").is_file():
            raise DevkitError(f"{paddle_inference_dir} has no paddle/lib/libpaddle_inference.so",
                              "point --paddle-inference-dir at an unpacked Paddle Inference release")
    options = BuildOptions(recipe=recipe, paddle_version=resolve_paddle_version(recipe, paddle_version), clean=clean,
                           runner=runner.value, infer=infer,
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


@app.command()
def verify(
    project_dir: Annotated[Optional[Path], typer.Argument(help="The backend project whose dist/ wheel to verify.")] = None,
    wheel: Annotated[Optional[Path], typer.Option("--wheel", help="Verify this wheel instead of a project's.")] = None,
    arch: Annotated[str, typer.Option("--arch", help="Target architecture.")] = "x86_64",
    model: Annotated[str, typer.Option("--model", help="Model to train on the device.")] = "mnist",
    steps: Annotated[Optional[int], typer.Option("--steps", help="Training steps (default 200 native, 100 emulated).")] = None,
    data: Annotated[Optional[Path], typer.Option("--data", help="Directory with MNIST idx files.")] = None,
    report_dir: Annotated[Optional[Path], typer.Option("--report-dir", help="Where to write report.json and the plot.")] = None,
    runner: Annotated[RunnerChoice, typer.Option("--runner", help="Where to verify.")] = RunnerChoice.auto,
    infer: Annotated[bool, typer.Option("--infer", help="Verify inference (paddle.inference) instead of training.")] = False,
    model_dir: Annotated[Optional[Path], typer.Option("--model-dir", help="With --infer: a user's exported model.")] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="With --infer: runs before timing.")] = 10,
    repeats: Annotated[int, typer.Option("--repeats", help="With --infer: timed runs.")] = 30,
    paddle_inference_dir: Annotated[Optional[Path], typer.Option("--paddle-inference-dir", envvar="PADDLE_INFERENCE_DIR", help="With --infer: Paddle Inference C++ library for the C++ demo.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Install the wheel beside the reference Paddle in a fresh env and check it on the device."""
    recipe = find_recipe(arch)
    device_type = None
    project = None
    if wheel is None:
        project = load_project(project_dir or Path("."))
        device_type = project.device_type
        report_dir = report_dir or project.root / "reports" / f"verify-{recipe.name}"
    report_dir = (report_dir or Path("devkit-report") / f"verify-{recipe.name}").resolve()
    native = host_recipe().matches(recipe.name)
    options = VerifyOptions(recipe=recipe, model=model, steps=steps or (200 if native else 100), data_dir=data,
                            device_type=device_type, runner=runner.value)
    if infer:
        if not recipe.has_paddle_runtime:
            raise DevkitError(f"{recipe.name} has no Paddle runtime, so there is no inference to verify",
                              f"run `devkit verify PROJECT --arch {recipe.name}` for its device library tests")
        result = run_infer_verify(
            (wheel or find_wheel(project, recipe)).resolve(), options,
            InferOptions(models=(model,), model_dir=model_dir.resolve() if model_dir else None, warmup=warmup,
                         repeats=repeats, inference_dir=paddle_inference_dir.resolve() if paddle_inference_dir else None,
                         bundle=inference_bundle(project, recipe)),
            report_dir)
    elif not recipe.has_paddle_runtime:
        if project is None:
            raise DevkitError(f"{recipe.name} has no Paddle runtime; its device tests come from a project",
                              f"pass the project directory: devkit verify PROJECT --arch {recipe.name}")
        err.print(f"[yellow]![/] PaddlePaddle publishes no runtime for {recipe.name}: running the device library's "
                  f"tests on {recipe.name}")
        result = run_device_tests(project.dist_dir / f"{device_bundle_name(project, recipe)}.tar.gz", options, report_dir)
    else:
        result = run_verify((wheel or find_wheel(project, recipe)).resolve(), options, report_dir)
    if as_json:
        emit_json({"passed": result.passed, "report": str(result.report_path),
                   "plot": str(result.plot_path) if result.plot_path else None,
                   "checks": [{k: c.get(k) for k in ("name", "passed", "detail")} for c in result.report["checks"]]})
    else:
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
        err.print(table)
        err.print(f"report: {result.report_path}" + (f"  plot: {result.plot_path}" if result.plot_path else ""))
    if not result.passed:
        failed = [c["name"] for c in result.report["checks"] if not c["passed"] and not c.get("not_run")]
        raise DevkitError(f"verification failed: {', '.join(failed)}", f"see {result.report_path}")


@app.command("check-abi")
def check_abi_command(
    path: Annotated[Path, typer.Argument(help="A plugin wheel or shared library.")],
    arch: Annotated[str, typer.Option("--arch", help="Target architecture it must run on.")] = "x86_64",
    paddle_version: Annotated[Optional[str], typer.Option("--paddle-version", help="Paddle it must load into (default: the wheel's pin, else the recipe's).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check, without loading it, that a plugin links, and matches the target's machine and Paddle."""
    from .abi import check_abi
    from .verify import pinned_paddle

    recipe = find_recipe(arch)
    version = paddle_version or (pinned_paddle(path) if path.suffix == ".whl" and path.is_file() else None) \
        or recipe.paddle_version
    if not version:
        raise DevkitError(f"{recipe.name} has no Paddle runtime to check against", "pass --arch with a Paddle runtime")
    findings = check_abi(path, recipe, version)
    if as_json:
        emit_json({"path": str(path), "arch": recipe.name, "paddle_version": version, "ok": not findings,
                   "findings": [{"library": f.library, "problem": f.problem, "fix": f.fix} for f in findings]})
    elif not findings:
        err.print(f"[green]✓[/] {path.name}: loads into Paddle {version} on {recipe.name} (machine, symbols, build info)")
    for f in findings:
        err.print(f"[red]✗[/] {f.line()}", markup=True)
    if findings:
        raise DevkitError(f"{len(findings)} ABI problem(s) in {path.name}", findings[0].fix)


images_app = typer.Typer(help="Builder and verify container images.", no_args_is_help=True)
app.add_typer(images_app, name="images")


@images_app.command("bootstrap")
def images_bootstrap(
    arch: Annotated[str, typer.Option("--arch", help="Target whose Debian base to make.")] = "x86_64",
    as_json: JsonOpt = False,
) -> None:
    """Make the Debian base image for ARCH offline (debootstrap + import with the right platform)."""
    from .engine import Engine
    from .envs import cache_root
    from .images import bootstrap_base

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
    from .engine import Engine
    from .envs import cache_root
    from .images import builder_spec, ensure_image, verify_spec

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
    from .engine import Engine
    from .images import list_images

    infos = list_images(Engine.connect())
    if as_json:
        emit_json([{"tag": i.tag, "platform": i.platform, "size_mb": round(i.size_mb)} for i in infos])
        return
    table = Table("image", "platform", "size")
    for i in infos:
        table.add_row(i.tag, i.platform, f"{i.size_mb:.0f} MB")
    err.print(table)


@images_app.command("prune")
def images_prune(as_json: JsonOpt = False) -> None:
    """Remove devkit images that the current Dockerfiles no longer produce."""
    from .engine import Engine
    from .images import prune_images

    removed = prune_images(Engine.connect())
    if as_json:
        emit_json({"removed": removed})
    else:
        err.print(f"removed {len(removed)} image(s)" + (": " + ", ".join(removed) if removed else ""))


@app.command()
def doctor(as_json: JsonOpt = False) -> None:
    """Check the container engine, qemu/binfmt, disk space and cross compilers; print the fix for each gap."""
    from .doctor import run_doctor

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


def main() -> None:
    try:
        code = app(standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into this return value
            err.print("[red]error:[/] interrupted; no partial output was kept")
        if isinstance(code, int) and code:
            sys.exit(code)
    except DevkitError as exc:
        if exc.details:
            err.print(exc.details, markup=False, style="dim")
        err.print(f"[red]error:[/] {exc.one_line()}", markup=True)
        if _state["debug"]:
            traceback.print_exc()
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("[red]error:[/] interrupted; no partial output was kept")
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if _state["debug"]:
            traceback.print_exc()
        err.print(f"[red]error:[/] internal error: {exc}. Fix: rerun with --debug and report the traceback")
        sys.exit(2)
