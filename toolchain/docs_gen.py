"""The documentation's generated parts, written from the code so that they cannot drift.

A page holds hand-written prose and generated blocks between two markers, an HTML comment in
Markdown (``<!-- generated: NAME -->`` ... ``<!-- end generated -->``) and a Jinja comment in the
generated project's README template (``{# generated: NAME #}`` ... ``{# end generated #}``). This
module computes each block (every command's options and ``--json`` schema from the CLI itself, the
settings from their model, the exit codes from the error kinds, the generated project's layout,
the error catalogue from the sources) and rewrites the blocks in place; a command without its
page gets one. ``tests/unit/test_docs.py`` fails when a committed file differs from what this
writes now.

    python -m devkit.docs_gen [REPO]     # rewrite the generated blocks (REPO: default .)
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import typer

from .cli.app import app
from .project.config import settings_markdown
from .project.recipes import Recipe, all_recipes
from .util import errors
from .util.errors import ExitCode
from .util.schema import load_schema

REGENERATE = "python -m devkit.docs_gen"  # (after reinstalling devkit: bash compile.sh test --co -q)

BLOCK = re.compile(
    r"(?P<open>(?:<!--|\{#) generated: (?P<name>[\w:-]+) (?:-->|#\})\n)(?P<body>.*?)"
    r"(?P<close>(?:<!--|\{#) end generated (?:-->|#\}))",
    re.S,
)
# The files whose blocks are generated, besides every page under docs/.
EXTRA_FILES = ("README.md", "templates/backend/README.md")
COMMANDS_DIR = "docs/commands"


# ---------------------------------------------------------------- the command line


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


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped, no text a Markdown renderer takes for HTML."""
    parts = re.split(r"(``.*?``|`[^`]*`)", " ".join(text.split()).replace("|", "\\|"))
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;").replace(">", "&gt;") for p in parts)


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
            f"| `{shown}` | {_cell(_type_name(param, ctx))} | {_default(param)} | "
            f"{f'`{env}`' if env else ''} | {_cell(help_text)} |"
        )
    return "\n".join(lines) + "\n"


def usage_line(command: Any, name: str) -> str:
    ctx = command.context_class(command, info_name=f"devkit {name}")
    return " ".join([f"devkit {name}", *command.collect_usage_pieces(ctx)])


# ---------------------------------------------------------------- --json schemas


def _schema_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_schema_type(alt) for alt in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind)


def _object_of(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema inside `schema` (itself, an array's items, an anyOf's object), if any."""
    if schema.get("type") == "object" or "properties" in schema:
        return schema
    if schema.get("type") == "array":
        return _object_of(schema.get("items", {}))
    for alt in schema.get("anyOf", []):
        found = _object_of(alt)
        if found is not None:
            return found
    return None


def _schema_rows(schema: dict[str, Any], prefix: str) -> Iterator[tuple[str, str, str, bool]]:
    """(field, type, description, required) for each field of an object schema, depth first."""
    required = set(schema.get("required", ()))
    children: list[tuple[str, dict[str, Any], bool]] = [
        (name, sub, name in required) for name, sub in schema.get("properties", {}).items()
    ]
    children += [(f"<{pattern}>", sub, False) for pattern, sub in schema.get("patternProperties", {}).items()]
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        children.append(("<key>", extra, False))
    for name, sub, is_required in children:
        path = f"{prefix}{name}"
        yield path, _schema_type(sub), sub.get("description", ""), is_required
        inner = _object_of(sub)
        if inner is not None:
            yield from _schema_rows(inner, path + ("[]." if sub.get("type") == "array" else "."))


def _forms(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The shapes the output takes: the alternatives of a top-level oneOf/anyOf, $refs resolved."""
    if "$ref" in schema:
        return _forms(root["$defs"][schema["$ref"].removeprefix("#/$defs/")], root)
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    if alternatives and "properties" not in schema:
        return [form for alt in alternatives for form in _forms(alt, root)]
    return [schema]


def schema_tables(name: str) -> str:
    """The --json output's fields as tables (one per shape the output takes)."""
    schema = load_schema(page_name(name))
    forms = _forms(schema, schema)
    out: list[str] = []
    for index, form in enumerate(forms, 1):
        if len(forms) > 1:
            out.append(f"Form {index}: {form.get('description', '')}".rstrip(": ") + "\n")
        out += ["| field | type | required | meaning |", "| --- | --- | --- | --- |"]
        for path, kind, text, required in _schema_rows(form, ""):
            out.append(f"| `{path}` | {_cell(kind)} | {'yes' if required else ''} | {_cell(text)} |")
        out.append("")
    source = f"`toolchain/schemas/{page_name(name)}.json`"
    return f"With `--json`, stdout holds one JSON object, described by {source}:\n\n" + "\n".join(out)


# ---------------------------------------------------------------- recipes


def recipes_table() -> str:
    """Every target devkit ships a recipe for (recipes/*.toml): one row per key, one column per target."""
    recipes = all_recipes()
    lines = ["| key | " + " | ".join(f"`{r.name}`" for r in recipes) + " |", "| --- |" + " --- |" * len(recipes)]
    for key in (f.name for f in fields(Recipe) if f.name != "name"):
        lines.append(f"| `{key}` | " + " | ".join(_cell(_shown(getattr(r, key))) for r in recipes) + " |")
    return "\n".join(lines) + "\n"


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {'yes' if v is True else 'no' if v is False else v}" for k, v in value.items())
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


# ---------------------------------------------------------------- exit codes


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
    lines += [f"| {int(code)} | `{code.name}` | {_cell(meanings[int(code)])} |" for code in ExitCode]
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
        summary = _cell((command.help or "").split("\n\n")[0])
        lines.append(f"| [`devkit {name}`]({link_prefix}{page_name(name)}.md) | {summary} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the generated project's layout


@dataclass(frozen=True)
class LayoutRow:
    path: str
    what: str


# One row per top-level entry of a rendered project and per entry of device/, cmake/ and tests/
# (tests/unit/test_docs.py renders one and fails on an entry without its row). Paths are the host-backed
# project's; <type> is the device type, lower case.
LAYOUT = (
    LayoutRow(
        "device/",
        "the framework-independent **device library**: devices, memory, copies, streams and "
        "events, collectives and the compute ops, behind one C API; both adapters link it",
    ),
    LayoutRow(
        "device/include/", "`<type>_device.h`, the device library's **C API** (status codes, `<type>_error_detail()`)"
    ),
    LayoutRow(
        "device/core/",
        "what every flavour keeps: status and dtype names, float16/bfloat16 storage "
        "(`half_types.h`), the op-name patterns both adapters match (`op_patterns.cc`)",
    ),
    LayoutRow(
        "device/src/",
        "the implementation: host-backed here (`device.cc`, `memory.cc`, `streams.cc`, `tracer.cc`, "
        "`collectives.cc`, one `<family>_ops.cc` per op family, `debug.cc`). **Replace these bodies "
        "with calls into your SDK**; an SDK flavour renders its own",
    ),
    LayoutRow(
        "device/CMakeLists.txt",
        "the device library's build, shared by both adapters (and the SDK checks of `[tool.devkit.sdk]`)",
    ),
    LayoutRow(
        "device/sdk.cmake",
        "a flavour's additions to the device library's build: its SDK when built "
        "without devkit, its own sources (rendered for a flavour with an SDK, such as `--sdk opencl`)",
    ),
    LayoutRow(
        "runtime/",
        "the Paddle **runtime adapter**: `runtime.cc` fills Paddle's `C_DeviceInterface` "
        "with device-library calls; `loader.cc` is the library Paddle opens, which opens the plugin "
        "proper and reports a missing SDK runtime in one line",
    ),
    LayoutRow(
        "kernels/",
        "the Paddle **kernels adapter**: `PD_REGISTER_PLUGIN_KERNEL` kernels, one "
        "`<family>_kernels.cc` per op family, each signature checked against Paddle's at compile time",
    ),
    LayoutRow(
        "engine/",
        "the **int8 engine** (Paddle Custom Engine) and its PIR pass `<type>_int8_engine_pass`, "
        "which hands quantized convolutions, matmuls, adds, concats and softmaxes to the device's int8 "
        "ops; rendered when the device library has them",
    ),
    LayoutRow(
        "inference/",
        "what the inference bundle (`devkit build --infer`) ships besides the libraries: "
        "`demo/cpp` and `demo/python` (the int8 check too) and `run.sh`",
    ),
    LayoutRow(
        "pytorch/",
        "the **PyTorch adapter** (its own `pyproject.toml`, wheel `torch_<type>`): device "
        "guard, caching allocator, hooks, aten kernels on the same device library, the CPU fallback, "
        "the c10d backend, `torch.compile` support, and its tests",
    ),
    LayoutRow("cmake/", "CMake modules both builds include"),
    LayoutRow(
        "cmake/FindPaddle.cmake",
        "finds the installed `paddlepaddle`'s headers and libraries; configure fails naming the missing piece",
    ),
    LayoutRow(
        "cmake/preamble.cmake",
        "the preamble both adapters' builds include: C++17, reproducible "
        "paths, unity builds, ccache, the sanitizer switch, the device library",
    ),
    LayoutRow(
        "build_support/",
        "`framework_pin.py`: pins each wheel to the exact framework release it was compiled against, at build time",
    ),
    LayoutRow("tests/", "the project's own tests"),
    LayoutRow(
        "tests/conformance/",
        "the device library's **conformance suite** (`test_<type>_device`): every "
        "flavour's cases through the C API, by area, and the golden-data checker",
    ),
    LayoutRow("tests/flavour/", "this device library's own conformance cases; a flavour brings its own"),
    LayoutRow("tests/python/", "pytest tests of the installed Paddle plugin against Paddle's CPU"),
    LayoutRow("CMakeLists.txt", "the Paddle plugin's build (`ON_INFER`, `WITH_TESTING`, `WITH_PADDLE`)"),
    LayoutRow(
        "pyproject.toml", "the wheel (scikit-build-core) and `[tool.devkit]`: targets, modes, frameworks, settings"
    ),
    LayoutRow("compile.sh", "build without devkit: configure, build, run the device tests, make the wheel"),
    LayoutRow("README.md", "this page"),
)
LAYOUT_DIRS = ("device", "cmake", "tests")  # folders whose entries get rows of their own


def layout_entries(project: Path) -> list[str]:
    """The entries of a rendered project that need a row: its top level and LAYOUT_DIRS' entries."""
    entries = []
    for entry in sorted(project.iterdir()):
        entries.append(entry.name + ("/" if entry.is_dir() else ""))
        if entry.is_dir() and entry.name in LAYOUT_DIRS:
            entries += [f"{entry.name}/{e.name}" + ("/" if e.is_dir() else "") for e in sorted(entry.iterdir())]
    return entries


def layout_table() -> str:
    lines = ["| path | what it is |", "| --- | --- |"]
    lines += [f"| `{row.path}` | {_cell(row.what)} |" for row in LAYOUT]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the error catalogue

KINDS = ("InputError", "EnvironmentProblem", "BuildFailure", "VerificationFailure", "InternalError")


@dataclass(frozen=True)
class Refusal:
    module: str
    kind: str
    problem: str
    fix: str


def _text(node: ast.expr | None, constants: dict[str, ast.expr]) -> str:
    """A message as the user reads it: the module's string constants filled in, each computed
    part shown as <what it is>."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.Name) and node.id in constants:
        return _text(constants[node.id], constants)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else f"<{_placeholder(v)}>" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left, constants) + _text(node.right, constants)
    return f"<{ast.unparse(node)}>"


def _placeholder(value: ast.expr) -> str:
    inner = value.value if isinstance(value, ast.FormattedValue) else value
    return ast.unparse(inner)


def _string_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """A module's top-level NAME = "text" (or f-string, or a sum of them) assignments."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        text = isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        if text or isinstance(node.value, ast.JoinedStr | ast.BinOp):
            found[node.targets[0].id] = node.value
    return found


# A payload reports a problem as `problem(text, fix, kind)` (payload/build_plugin.py), which the step
# that ran it raises as that kind (devkit.run.step.PROBLEM_KINDS), by default as the build's own.
_PAYLOAD_KINDS = {"input": "InputError", "environment": "EnvironmentProblem", "": "BuildFailure"}


def _refusal(node: ast.Call, module: str, constants: dict[str, ast.expr]) -> Refusal | None:
    if not isinstance(node.func, ast.Name):
        return None
    args: list[ast.expr | None] = [*node.args, None, None, None]
    fix = next((k.value for k in node.keywords if k.arg == "fix"), args[1])
    if node.func.id in KINDS:
        return Refusal(module, node.func.id, _text(args[0], constants), _text(fix, constants))
    if node.func.id == "problem" and "/payload/" in module:
        kind = _PAYLOAD_KINDS.get(_text(args[2], constants), "BuildFailure")
        return Refusal(module, kind, _text(args[0], constants), _text(fix, constants))
    return None


def refusals(package: Path) -> list[Refusal]:
    """Every error devkit constructs, by module: kind, problem and fix (AST of its sources)."""
    found: list[Refusal] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] == "templates":
            continue
        tree = ast.parse(path.read_text(), str(path))
        constants = _string_constants(tree)
        for node in ast.walk(tree):
            refusal = _refusal(node, "toolchain/" + rel.as_posix(), constants) if isinstance(node, ast.Call) else None
            if refusal is not None:
                found.append(refusal)
    return sorted(found, key=lambda r: (r.module, r.problem))


def _code(text: str) -> str:
    text = " ".join(text.split())
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def troubleshooting_catalogue() -> str:
    by_kind: dict[str, list[Refusal]] = {}
    for refusal in refusals(Path(__file__).resolve().parent):
        by_kind.setdefault(refusal.kind, []).append(refusal)
    out = []
    for kind in KINDS:
        code = getattr(errors, kind).exit_code
        out += [f"### {kind}: exit {int(code)} `{code.name}`\n", "| problem | fix | raised in |", "| --- | --- | --- |"]
        out += [
            f"| {_cell(_code(r.problem))} | {_cell(r.fix or '(in the problem)')} | `{r.module}` |"
            for r in by_kind.get(kind, [])
        ]
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- the blocks and the files


def benchmark_results(root: Path) -> str:
    """What benchmarks/run.py last wrote (results/*.md), the full run first."""
    results = sorted((root / "benchmarks" / "results").glob("*.md"), key=lambda p: (p.stem != "full", p.stem))
    return "\n".join(f"### `{p.name}`\n\n{p.read_text().strip()}\n" for p in results)


def block(name: str, file: str, root: Path) -> str:
    """The generated text of block `name` in `file` (a path relative to the repository `root`)."""
    if name.startswith("command:"):
        return command_reference(_command_of(name))
    simple = {
        "settings": settings_markdown,
        "exit-codes": exit_code_table,
        "layout": layout_table,
        "recipes": recipes_table,
        "errors": troubleshooting_catalogue,
    }
    if name in simple:
        return simple[name]()
    if name == "benchmarks":
        return benchmark_results(root)
    if name == "commands":
        return commands_index("docs/commands/" if not file.startswith("docs/") else _relative_commands(file))
    raise ValueError(f"{file}: unknown generated block {name!r}")


def _command_of(name: str) -> str:
    wanted = name.removeprefix("command:")
    for command in cli_commands():
        if page_name(command) == wanted:
            return command
    raise ValueError(f"no devkit command is documented as {wanted!r}")


def _relative_commands(file: str) -> str:
    depth = len(Path(file).parent.relative_to("docs").parts)
    return "../" * depth + "commands/" if depth else "commands/"


def _new_page(command: str) -> str:
    return (
        f"# devkit {command}\n\n<!-- generated: command:{page_name(command)} -->\n<!-- end generated -->\n\n"
        "## What it writes\n\n(to be written)\n"
    )


def rewrite(text: str, file: str, root: Path) -> str:
    def fill(match: re.Match[str]) -> str:
        return match["open"] + block(match["name"], file, root) + match["close"]

    return BLOCK.sub(fill, text)


def generated_files(root: Path) -> dict[str, str]:
    """Each file with generated blocks, relative to `root`, as this devkit would write it."""
    files = sorted(p.relative_to(root).as_posix() for p in (root / "docs").rglob("*.md"))
    files += [f for f in EXTRA_FILES if (root / f).exists()]
    current = {f: (root / f).read_text() for f in files}
    for command in cli_commands():
        current.setdefault(docs_page(command), _new_page(command))
    return {f: rewrite(text, f, root) for f, text in current.items() if BLOCK.search(text)}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0] if args else ".").resolve()
    if not (root / "docs").is_dir():
        print(f"error: {root} has no docs/ directory. Fix: run this in devkit's repository", file=sys.stderr)
        return 4
    changed = []
    for rel, text in generated_files(root).items():
        path = root / rel
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(rel)
    print("\n".join(f"wrote {rel}" for rel in changed) or "the generated docs are current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
