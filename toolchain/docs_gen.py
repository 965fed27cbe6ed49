"""The documentation's generated parts, written from the code so that they cannot drift.

A page holds hand-written prose and generated blocks between two markers, an HTML comment in
Markdown (``<!-- generated: NAME -->`` ... ``<!-- end generated -->``) and a Jinja comment in the
generated project's README template (``{# generated: NAME #}`` ... ``{# end generated #}``). This
module computes each block (every command's options and ``--json`` schema from the CLI itself, the
settings from their model, the exit codes from the error kinds, the generated project's layout,
the error catalogue from the sources: devkit/docs/, one module each) and rewrites the blocks in
place; a command without its page gets one. It also writes the shipped --json schemas
(toolchain/schemas/, generated from the outputs' dataclasses: cli/schemas.py).
``tests/unit/test_docs.py`` and ``tests/unit/test_schemas.py`` fail when a committed file
differs from what this writes now.

    python -m devkit.docs_gen [REPO]     # rewrite the generated blocks and the --json schemas (REPO: default .)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .cli.schemas import write_schemas
from .docs.catalogue import troubleshooting_catalogue
from .docs.commands import cli_commands, command_reference, commands_index, docs_page, exit_code_table, page_name
from .docs.markdown import cell
from .docs.recipes import recipes_table
from .project.config import settings_markdown

REGENERATE = "python -m devkit.docs_gen"  # (after reinstalling devkit: bash compile.sh test --co -q)

BLOCK = re.compile(
    r"(?P<open>(?:<!--|\{#) generated: (?P<name>[\w:-]+) (?:-->|#\})\n)(?P<body>.*?)"
    r"(?P<close>(?:<!--|\{#) end generated (?:-->|#\}))",
    re.S,
)
# The files whose blocks are generated, besides every page under docs/.
EXTRA_FILES = ("README.md", "templates/backend/README.md")


# ---------------------------------------------------------------- the generated project's layout


@dataclass(frozen=True)
class LayoutRow:
    path: str
    what: str


# One row per top-level entry of a rendered project and per entry of device/, paddle/, cmake/ and tests/
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
        "paddle/",
        "the **Paddle adapter** (its build `paddle/CMakeLists.txt`; its wheel `paddle_custom_<type>` builds "
        "from the project's root, whose `pyproject.toml` carries it, so that its sdist holds the device library)",
    ),
    LayoutRow(
        "paddle/runtime/",
        "the Paddle **runtime adapter**: `runtime.cc` fills Paddle's `C_DeviceInterface` "
        "with device-library calls; `loader.cc` is the library Paddle opens, which opens the plugin "
        "proper and reports a missing SDK runtime in one line",
    ),
    LayoutRow(
        "paddle/kernels/",
        "the Paddle **kernels adapter**: `PD_REGISTER_PLUGIN_KERNEL` kernels, one "
        "`<family>_kernels.cc` per op family, each signature checked against Paddle's at compile time",
    ),
    LayoutRow(
        "paddle/engine/",
        "the **int8 engine** (Paddle Custom Engine) and its PIR pass `<type>_int8_engine_pass`, "
        "which hands quantized convolutions, matmuls, adds, concats and softmaxes to the device's int8 "
        "ops; rendered when the device library has them",
    ),
    LayoutRow(
        "paddle/inference/",
        "what the inference bundle (`devkit build --infer`) ships besides the libraries: "
        "`demo/cpp` and `demo/python` (the int8 check too) and `run.sh`",
    ),
    LayoutRow(
        "paddle/cmake/",
        "`FindPaddle.cmake`: finds the installed `paddlepaddle`'s headers and libraries; configure fails "
        "naming the missing piece",
    ),
    LayoutRow("paddle/tests/", "pytest tests of the installed Paddle plugin against Paddle's CPU"),
    LayoutRow(
        "paddle/CMakeLists.txt",
        "the Paddle plugin's build (`ON_INFER`), added by the root `CMakeLists.txt` or built on its own",
    ),
    LayoutRow(
        "pytorch/",
        "the **PyTorch adapter** (its own `pyproject.toml`, wheel `torch_<type>`): device "
        "guard, caching allocator, hooks, aten kernels on the same device library, the CPU fallback, "
        "the c10d backend, `torch.compile` support, and its tests",
    ),
    LayoutRow("cmake/", "CMake modules both builds include"),
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
    LayoutRow(
        "conformance/",
        "`expected-failures.toml`: the `devkit test-ops` cases known to fail, each with its reason; a listed "
        "case that passes fails too, `test-ops --update-expected` rewrites it",
    ),
    LayoutRow(
        "CMakeLists.txt",
        "adds the parts: the device library and its tests (`WITH_TESTING`), `paddle/` (`WITH_PADDLE`, "
        "default on) and `pytorch/` (`WITH_TORCH`, default off)",
    ),
    LayoutRow(
        "pyproject.toml",
        "the Paddle plugin's wheel (scikit-build-core, from the root) and `[tool.devkit]`: targets, modes, "
        "frameworks, settings",
    ),
    LayoutRow("compile.sh", "build without devkit: configure, build, run the device tests, make the wheel"),
    LayoutRow("README.md", "this page"),
)
LAYOUT_DIRS = ("device", "paddle", "cmake", "tests")  # folders whose entries get rows of their own


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
    lines += [f"| `{row.path}` | {cell(row.what)} |" for row in LAYOUT]
    return "\n".join(lines) + "\n"


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
    changed = [str(p.relative_to(root)) for p in write_schemas(root / "toolchain" / "schemas")]
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
