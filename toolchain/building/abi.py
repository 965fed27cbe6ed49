"""`devkit check-abi`'s shared steps: will this plugin load into that runtime? Decided from
the ELF files alone, before anything is installed or loaded.

Here: reading a wheel's (or one file's) libraries, the findings raised or said as one line, and
the error for a runtime pip could not get. What each framework checks (its version strings, its
libraries' exports) is its module's: building/frameworks/paddle.py, building/frameworks/torch.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.markup import escape

from ..payload.shared.problems import Problem
from ..project.config import DEFAULT_BUILDER_BASE
from ..project.recipes import Recipe
from ..util.archives import validate_wheel, zip_archive
from ..util.console import err
from ..util.errors import BuildFailure, DevkitError, EnvironmentProblem, InputError
from .elf import AbiFinding, LibraryAbi, read_library


def uses_cxx11_abi(symbols: Iterable[str]) -> bool:
    """Whether mangled names use the C++11 std::string ABI."""
    return any("__cxx11" in s for s in symbols)


def libraries_in(path: Path) -> list[tuple[str, bytes]]:
    if not path.is_file():  # stat, never open: opening a FIFO would wait for a writer
        problem = "is not a regular file" if path.exists() else "does not exist"
        raise InputError(f"{path} {problem}", "pass a plugin wheel or shared library")
    if path.suffix == ".whl":
        validate_wheel(path, "plugin wheel")
        with zip_archive(path, "plugin wheel", "pass a plugin wheel built by devkit") as zf:
            libs = [(n, zf.read(n)) for n in zf.namelist() if n.endswith(".so")]
        if not libs:
            raise InputError(f"{path.name} contains no shared library", "pass a plugin wheel built by devkit")
        return libs
    data = path.read_bytes()
    if data[:4] != b"\x7fELF":
        raise InputError(f"{path} is neither a wheel nor an ELF library", "pass a .whl or a .so")
    return [(path.name, data)]


def read_libraries(path: Path) -> list[tuple[LibraryAbi, bytes]]:
    """Every shared library in a wheel (or the one library `path` is), parsed, with its bytes."""
    libraries = []
    for name, data in libraries_in(path):
        try:
            libraries.append((read_library(data, name), data))
        except Exception as exc:  # pyelftools raises many kinds on a damaged file
            raise InputError(
                f"{name} in {path} is not a readable ELF library ({type(exc).__name__}: {exc})",
                "rebuild it; a truncated or edited library cannot be checked or loaded",
            ) from None
    return libraries


def runtime_problem(exc: Problem, pin: str, recipe: Recipe) -> DevkitError:
    """The error for a framework runtime pip could not get: the machine's when the index is
    unreachable, the input's when no such version exists for the target."""
    kind = EnvironmentProblem if exc.kind == "environment" else InputError
    return kind(f"cannot get {pin} for {recipe.name}: {exc.text}", exc.fix)


def require_findings(path: Path, findings: list[AbiFinding], say_warnings: bool = True) -> list[AbiFinding]:
    """Raise with every finding when any is an error; print the warnings as one line (the build says
    them; verify, which checks the same wheel again, passes say_warnings=False) and return them."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise BuildFailure(
            f"ABI check of {path.name} failed: {errors[0].problem}",
            errors[0].fix,
            details="\n".join(f.line() for f in findings),
        )
    if say_warnings and findings:
        err.print(f"[yellow]![/] {escape(portability_line(findings))}")
    return findings


def portability_line(warnings: list[AbiFinding]) -> str:
    """The portability warnings of a wheel's libraries as one line: which symbol versions they need
    beyond the runtime's own libraries (a floor's first item names it, e.g. "Paddle 3.3.1"), and
    what to do about it."""
    libraries = sorted({w.library for w in warnings})
    if any(w.floor is None for w in warnings):  # (a warning of another kind: said as it is)
        return "; ".join(w.line() for w in warnings)
    floors = sorted({w.floor for w in warnings if w.floor}, key=lambda f: f[1])
    newest: dict[str, tuple[str, str]] = {}
    for _, family, ours, paddles in floors:
        if family not in newest or tuple(map(int, ours.split("."))) > tuple(map(int, newest[family][0].split("."))):
            newest[family] = (ours, paddles)
    they = "it" if len(libraries) == 1 else "they"
    return (
        f"{', '.join(libraries)} need {', '.join(f'{f}_{o}' for f, (o, _) in newest.items())}, newer than "
        f"{floors[0][0]}'s own libraries ({', '.join(f'{f}_{p}' for f, (_, p) in newest.items())}), so "
        f"{they} will not load on older systems where that {floors[0][0].split()[0]} does. Fix: build in devkit's builder container on "
        f'its oldest base (--runner docker, builder-base = "{DEFAULT_BUILDER_BASE}"), or state this minimum to your '
        "users"
    )
