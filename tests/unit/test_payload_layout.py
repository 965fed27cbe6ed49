"""The payloads' layout rules, read from the sources (ast): the host (toolchain/ outside payload/)
imports payload.shared alone; shared/ imports only the standard library and its siblings; numeric/
adds NumPy and no framework; paddle/ never imports torch (nor a torch/ module) and torch/ never
Paddle; no import circle among the payloads; no payload file outside the four folders; none over
400 lines; every framework script ends through process_exit. (A payload imports its siblings by
plain name: its own folder, then shared/ and numeric/, which devkit puts on PYTHONPATH:
util/resources.py payload_env.)"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

TOOLCHAIN = Path(__file__).resolve().parents[2] / "toolchain"
PAYLOAD = TOOLCHAIN / "payload"
FOLDERS = ("shared", "numeric", "paddle", "torch")
# The folders whose modules a script in each folder imports by plain name: its own, then those on
# every payload's PYTHONPATH (shared/ and numeric/ themselves see less)
SEES = {
    "shared": ("shared",),
    "numeric": ("numeric", "shared"),
    "paddle": ("paddle", "shared", "numeric"),
    "torch": ("torch", "shared", "numeric"),
}
# Outside the standard library, what each folder may import (besides the payloads it sees)
ALLOWED = {
    "shared": set(),
    "numeric": {"numpy"},
    "paddle": {"numpy", "paddle"},
    "torch": {"numpy", "torch", "expecttest"},
}
MAX_LINES = 400


def imports(source: Path) -> Iterator[tuple[int, str]]:
    """(level, dotted name) of each import in `source`, function-local ones too; `from . import x`
    and `from pkg import x` give pkg.x as well as pkg (x may be a module)."""
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            yield from ((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            yield node.level, base
            yield from ((node.level, f"{base}.{alias.name}".lstrip(".")) for alias in node.names)


def modules(folder: str) -> dict[str, Path]:
    return {path.stem: path for path in (PAYLOAD / folder).glob("*.py") if path.stem != "__init__"}


def visible(folder: str) -> dict[str, str]:
    """Plain module name -> the folder it comes from, as a script in `folder` finds it."""
    found: dict[str, str] = {}
    for where in SEES[folder]:
        for name in modules(where):
            found.setdefault(name, where)
    return found


def test_the_host_imports_only_payload_shared() -> None:
    # (a host module may name a shared module by its plain name for types: mypy sees the payloads so)
    plain = {name for folder in FOLDERS if folder != "shared" for name in modules(folder)}
    wrong = []
    for source in TOOLCHAIN.rglob("*.py"):
        if PAYLOAD in source.parents:
            continue
        package = source.relative_to(TOOLCHAIN.parent).with_suffix("").parts[:-1]
        for level, name in imports(source):
            absolute = ".".join([*package[: len(package) - level + 1], name]) if level else name
            parts = absolute.split(".")
            if not level and parts[0] in plain:
                wrong.append(f"{source.relative_to(TOOLCHAIN)}: {absolute}")
            # (`from ..payload import shared` also names `..payload` alone: allowed)
            if parts[0] in ("toolchain", "devkit") and parts[1:2] == ["payload"] and parts[2:3] not in ([], ["shared"]):
                wrong.append(f"{source.relative_to(TOOLCHAIN)}: {absolute}")
    assert not wrong, f"host modules import payloads outside payload/shared: {sorted(set(wrong))}"


def test_each_folder_imports_what_it_may() -> None:
    stdlib = set(sys.stdlib_module_names)
    others = {"paddle": set(modules("torch")), "torch": set(modules("paddle"))}
    wrong = []
    for folder in FOLDERS:
        seen = visible(folder)
        for name, source in modules(folder).items():
            for level, imported in imports(source):
                top = imported.split(".")[0]
                if level:  # relative: a sibling in the same folder (the host's view of shared/)
                    if top and top not in modules(folder):
                        wrong.append(f"{folder}/{name}: .{imported}")
                    continue
                if top in seen or top in stdlib or top in ALLOWED[folder]:
                    continue
                wrong.append(f"{folder}/{name}: {imported}")
            if folder in others:
                for level, imported in imports(source):
                    if not level and imported.split(".")[0] in others[folder]:
                        wrong.append(f"{folder}/{name}: {imported} (the other framework's)")
    assert not wrong, f"payload imports outside their folder's rules: {sorted(set(wrong))}"


def test_no_import_circle_among_the_payloads() -> None:
    graph: dict[str, set[str]] = {}
    for folder in FOLDERS:
        seen = visible(folder)
        for name, source in modules(folder).items():
            tops = {imported.split(".")[0] for level, imported in imports(source) if not level}
            graph[name] = {top for top in tops if top in seen and top != name}
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for after in sorted(graph.get(node, ())):
            if state.get(after) == 1:
                circles.append(" -> ".join([*path[path.index(after) :], after]))
            elif after not in state:
                visit(after, [*path, after])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not circles, f"payload import circles: {circles}"


def test_every_payload_is_in_a_folder_and_short() -> None:
    flat = sorted(p.name for p in PAYLOAD.glob("*.py") if p.name != "__init__.py")
    assert not flat, f"payloads outside {FOLDERS}: {flat}"
    long = sorted(
        f"{path.relative_to(PAYLOAD)}: {n}"
        for path in PAYLOAD.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    )
    assert not long, f"payload modules over {MAX_LINES} lines: {long}"


def main_block(source: Path) -> ast.If | None:
    """A script's `if __name__ == "__main__":` block, if it has one."""
    for node in ast.parse(source.read_text(), str(source)).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'":
            return node
    return None


def test_every_framework_script_ends_without_the_final_collection() -> None:
    # (a script run with torch or Paddle loaded; the interpreter's own ending walks all they hold)
    wrong = []
    for folder in ("paddle", "torch"):
        for name, source in modules(folder).items():
            block = main_block(source)
            if block is None:
                continue
            last = block.body[-1]
            if not (
                isinstance(last, ast.Expr)
                and isinstance(last.value, ast.Call)
                and ast.unparse(last.value.func) == "exit_without_final_collection"
            ):
                wrong.append(f"{folder}/{name}: {ast.unparse(last)}")
    assert not wrong, f"framework scripts that end otherwise than process_exit.exit_without_final_collection: {wrong}"
