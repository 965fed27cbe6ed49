"""The error catalogue (docs/troubleshooting.md): every error devkit raises, read from its sources
(AST), with its kind, problem and fix."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from ..util import errors
from .markdown import cell, code_span

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


def troubleshooting_catalogue() -> str:
    by_kind: dict[str, list[Refusal]] = {}
    for refusal in refusals(Path(__file__).resolve().parents[1]):
        by_kind.setdefault(refusal.kind, []).append(refusal)
    out = []
    for kind in KINDS:
        code = getattr(errors, kind).exit_code
        out += [f"### {kind}: exit {int(code)} `{code.name}`\n", "| problem | fix | raised in |", "| --- | --- | --- |"]
        out += [
            f"| {cell(code_span(r.problem))} | {cell(r.fix or '(in the problem)')} | `{r.module}` |"
            for r in by_kind.get(kind, [])
        ]
        out.append("")
    return "\n".join(out)
