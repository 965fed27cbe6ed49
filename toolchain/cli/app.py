"""The `devkit` command line: the app, its commands, and the error edge.

Every error is caught here, once: a DevkitError prints as one line with its fix
(exit 1), a mistyped command line as the usage line and one error line (exit 2),
a machine problem (a full disk) as one line naming the path (exit 1).
"""

from __future__ import annotations

import errno
import signal
import sys
import traceback
from types import FrameType
from typing import Annotated, NoReturn, cast

import typer
from rich.markup import escape

from .. import __version__
from ..util.console import err, json_owed
from ..util.errors import DevkitError, EnvironmentProblem, ExitCode, InternalError
from ..util.outputs import ErrorDetail, ErrorKind, ErrorOutput
from . import build, images, matrix, publish, scaffold, verify
from .options import emit_json

# Help texts are plain text: "[tool.devkit]" must not be read as rich markup (it vanished).
app = typer.Typer(
    rich_markup_mode=None,
    help="Scaffold, build and verify accelerator plugins for PaddlePaddle and PyTorch.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
matrix_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="The project's build matrix ([tool.devkit] frameworks x targets x modes x runtime versions).",
)
config_app = typer.Typer(rich_markup_mode=None, help="The project's [tool.devkit] configuration.", no_args_is_help=True)
images_app = typer.Typer(rich_markup_mode=None, help="Builder and verify container images.", no_args_is_help=True)

app.command("new-backend")(scaffold.new_backend)
app.command("build")(build.build_command)
app.command("verify")(verify.verify)
app.command("test-ops")(verify.test_ops)
app.command("check-kernels")(verify.check_kernels)
app.command("check-abi")(verify.check_abi)
app.command("publish")(publish.publish)
app.add_typer(matrix_app, name="matrix")
matrix_app.command("list")(matrix.matrix_list)
matrix_app.command("run")(matrix.matrix_run)
app.command("ci")(matrix.ci_command)
app.add_typer(config_app, name="config")
config_app.command("show")(matrix.config_show)
app.add_typer(images_app, name="images")
images_app.command("bootstrap")(images.images_bootstrap)
images_app.command("build")(images.images_build)
images_app.command("list")(images.images_list)
images_app.command("binfmt")(images.images_binfmt)
images_app.command("prune")(images.images_prune)
app.command("doctor")(images.doctor)

# Each command's --help names its page of the documentation (docs/commands/, one per command;
# tests/unit/test_docs.py holds every page to the command line).
app.info.epilog = "Docs: docs/index.md in devkit's repository; each command's page is docs/commands/<command>.md."
for _group, _prefix in ((app, ""), (matrix_app, "matrix-"), (config_app, "config-"), (images_app, "images-")):
    for _command in _group.registered_commands:
        _command.epilog = f"Docs: docs/commands/{_prefix}{_command.name}.md"

_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"devkit {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show Python tracebacks on errors.")] = False,
) -> None:
    _state["debug"] = debug


def _terminate(signum: int, frame: FrameType | None) -> None:
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


def _os_problem(exc: OSError) -> EnvironmentProblem:
    where = f" ({exc.filename})" if exc.filename else ""
    fix = {
        errno.ENOSPC: "free space on that file system (or point DEVKIT_CACHE_DIR / --out elsewhere) and rerun",
        errno.EDQUOT: "free space within your quota and rerun",
        errno.EACCES: "make the path writable for this user, or choose another",
        errno.EROFS: "choose a writable directory",
    }.get(exc.errno or 0, "check the path and rerun")
    return EnvironmentProblem(f"{exc.strerror or exc}{where}", fix)


def _fail(exc: DevkitError) -> NoReturn:
    """The one error line (with --json and no summary printed yet, also the error object on stdout:
    a --json caller always gets JSON), then the exit code of the error's kind."""
    if exc.details:
        err.print(exc.details, markup=False, style="dim")
    err.print(f"[red]error:[/] {escape(exc.one_line())}", markup=True)
    if _state["debug"]:
        traceback.print_exc()
    if json_owed():
        kind = cast(ErrorKind, exc.exit_code.name.lower())
        log = str(exc.log) if exc.log else None
        emit_json(ErrorOutput(ErrorDetail(kind, int(exc.exit_code), exc.problem, exc.fix, log, exc.one_line())))
    sys.exit(exc.exit_code)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        code = app(prog_name="devkit", standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into this return value
            err.print("[red]error:[/] interrupted; no partial output was kept")
        if isinstance(code, int) and code:
            sys.exit(code)
    except DevkitError as exc:
        _fail(exc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("[red]error:[/] interrupted; no partial output was kept")
        sys.exit(ExitCode.INTERRUPTED)
    except typer.TyperException as exc:  # usage errors (typer >= 0.29 carries its own click)
        _usage_error(exc)
        sys.exit(exc.exit_code)
    except OSError as exc:  # the machine, not devkit: a full disk, a read-only or vanished directory
        _fail(_os_problem(exc))
    except Exception as exc:
        _fail(InternalError(f"internal error: {exc}", "rerun with --debug and report the traceback"))
