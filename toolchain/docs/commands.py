"""Each command's reference, from the CLI itself: its usage line, options, --json fields and exit
codes (docs/commands/<command>.md), the index of commands, and the exit codes' table."""

from __future__ import annotations

from typing import Any

import typer

from ..cli.app import app
from ..util import errors
from ..util.errors import ExitCode
from .markdown import cell
from .schema_tables import schema_tables

COMMANDS_DIR = "docs/commands"


def cli_commands() -> dict[str, Any]:
    """Every devkit command by its full name ("build", "matrix run"), from the CLI itself."""
    found: dict[str, Any] = {}

    def walk(command: Any, prefix: str) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            found[prefix] = command
            return
        for name, sub in subcommands.items():
            walk(sub, f"{prefix} {name}".strip())

    walk(typer.main.get_command(app), "")
    return found


def page_name(command: str) -> str:
    """docs/commands/<this>.md: the command's name with its group ("matrix-run")."""
    return command.replace(" ", "-")


def docs_page(command: str) -> str:
    """Where a command's page is, as its --help names it."""
    return f"{COMMANDS_DIR}/{page_name(command)}.md"


def _default(param: Any) -> str:
    value = param.default
    if value is None or value is False or value == "" or callable(value) or param.required:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return f"`{value}`"


def _type_name(param: Any, ctx: Any) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    shown = str(param.display_type(ctx)).strip("<>")
    return shown + (", repeatable" if param.multiple and param.param_type_name == "option" else "")


def options_table(command: Any, name: str) -> str:
    ctx = command.context_class(command, info_name=name)
    lines = ["| option | type | default | environment | what it does |", "| --- | --- | --- | --- | --- |"]
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            shown = (param.metavar or param.name).upper()
            shown = shown if param.required else f"[{shown}]"
        else:
            shown = ", ".join(param.opts + param.secondary_opts)
        env = param.envvar if isinstance(param.envvar, str) else ", ".join(param.envvar or ())
        help_text = (getattr(param, "help", None) or "") + (" Required." if param.required else "")
        lines.append(
            f"| `{shown}` | {cell(_type_name(param, ctx))} | {_default(param)} | "
            f"{f'`{env}`' if env else ''} | {cell(help_text)} |"
        )
    return "\n".join(lines) + "\n"


def usage_line(command: Any, name: str) -> str:
    ctx = command.context_class(command, info_name=f"devkit {name}")
    return " ".join([f"devkit {name}", *command.collect_usage_pieces(ctx)])


def _exit_meanings() -> dict[int, str]:
    meanings = {
        int(errors.ExitCode.OK): "done",
        int(errors.ExitCode.USAGE): "the command line is wrong: an unknown command or option, a missing argument, "
        "a bad option value (the parser's own code); the usage line and one `error:` line",
        int(errors.ExitCode.INTERRUPTED): "Ctrl-C or SIGTERM; no partial output was kept",
    }
    for kind in vars(errors).values():
        if isinstance(kind, type) and issubclass(kind, errors.DevkitError) and kind is not errors.DevkitError:
            meanings[int(kind.exit_code)] = f"`{kind.__name__}`: " + " ".join((kind.__doc__ or "").split())
    return meanings


def exit_code_table() -> str:
    meanings = _exit_meanings()
    lines = ["| code | name | meaning |", "|---|---|---|"]
    lines += [f"| {int(code)} | `{code.name}` | {cell(meanings[int(code)])} |" for code in ExitCode]
    return "\n".join(lines) + "\n"


# The codes a command ends with besides 0, 2 (usage), 3 (a devkit bug), 4 (input), 5 (the machine) and 130:
# 1 where it builds or checks a wheel's fitness (verify, test-ops and check-kernels check its ABI first).
_BUILDS = ("build", "check-abi", "publish", "matrix run", "verify", "test-ops", "check-kernels")
_CHECKS = ("verify", "test-ops", "check-kernels", "matrix run")


def command_exit_codes(name: str) -> str:
    codes = [ExitCode.OK, ExitCode.USAGE, ExitCode.INTERNAL, ExitCode.INPUT, ExitCode.ENVIRONMENT]
    codes += [ExitCode.BUILD_FAILED] if name in _BUILDS else []
    codes += [ExitCode.VERIFICATION_FAILED] if name in _CHECKS else []
    codes.append(ExitCode.INTERRUPTED)
    listed = ", ".join(f"{int(c)} `{c.name}`" for c in sorted(codes))
    return f"Exit codes: {listed} ([what each means](../reference/exit-codes.md)).\n"


def command_reference(name: str) -> str:
    command = cli_commands()[name]
    parts = [
        f"```\n{usage_line(command, name)}\n```\n",
        " ".join((command.help or "").split()) + "\n",
        options_table(command, name),
    ]
    if any("--json" in getattr(p, "opts", ()) for p in command.params):
        parts.append(schema_tables(name))
    parts.append(command_exit_codes(name))
    return "\n".join(parts)


def commands_index(link_prefix: str) -> str:
    lines = ["| command | what it does |", "| --- | --- |"]
    for name, command in cli_commands().items():
        summary = cell((command.help or "").split("\n\n")[0])
        lines.append(f"| [`devkit {name}`]({link_prefix}{page_name(name)}.md) | {summary} |")
    return "\n".join(lines) + "\n"
