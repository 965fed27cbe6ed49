"""The generated project's conformance/expected-failures.toml: the test-ops cases known to fail, each with why.

One array of tables per framework, one table per case in one dtype:

    [[torch]]
    suite = "ops"            # a suite of the framework's adapter (Framework.op_suites), or "framework-src"
    case = "as_strided"      # the case's name in its suite, as report.md lists it
    dtype = "float32"
    reason = "why it fails"  # required: a list of known gaps is only useful with the reasons

A listed case that fails is reported as expected; an unlisted failure fails the run, and so does a
listed case that passes ("now passes: remove it"). A listed case the run did not judge (another
--ops, --suite or --dtypes; not registered for the dtype) is left alone. `test-ops
--update-expected` rewrites the file from a run: the run's failures listed (their reasons kept, new
ones with the failure's words), its passes removed, what it did not judge kept.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..project.frameworks import FRAMEWORKS, Framework
from ..util.errors import InputError
from ..util.fsutil import write_atomic

EXPECTED_FILE = "conformance/expected-failures.toml"  # relative to the project
KEYS = ("suite", "case", "dtype", "reason")
SOURCE_SUITE = "framework-src"  # --framework-src's cases, for every framework
_JUDGED = ("pass", "fail", "error")  # the statuses that say whether a case works
_FIX = "fix it, or copy conformance/expected-failures.toml from a freshly rendered project"

CaseKey = tuple[str, str, str]  # suite, case, dtype


@dataclass(frozen=True)
class Expected:
    """One listed case: a failure known, and why."""

    framework: str
    suite: str
    case: str
    dtype: str
    reason: str

    @property
    def key(self) -> CaseKey:
        return (self.suite, self.case, self.dtype)


@dataclass(frozen=True)
class ExpectedFailures:
    path: Path
    entries: tuple[Expected, ...]
    header: str = ""  # the comment lines before the first entry, which a rewrite keeps

    def of(self, framework: str) -> dict[CaseKey, Expected]:
        return {e.key: e for e in self.entries if e.framework == framework}


def result_key(result: Mapping[str, Any]) -> CaseKey:
    return (str(result.get("suite", "ops")), str(result["case"]), str(result["dtype"]))


def judged_keys(results: Iterable[Mapping[str, Any]]) -> set[CaseKey]:
    """The cases a run judged: it passed or failed them (not: not registered for the dtype, skipped)."""
    return {result_key(r) for r in results if r["status"] in _JUDGED}


# ---- reading


def load_expected(path: Path) -> ExpectedFailures:
    """The file parsed and checked, or a one-line InputError naming file:line; no file: nothing expected."""
    if not path.is_file():
        return ExpectedFailures(path, ())
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text", _FIX) from None
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        where = f"{path}:{at.group(1) if at else 1}"
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise InputError(f"{where}: not valid TOML: {message}", _FIX) from None
    except RecursionError:
        raise InputError(f"{path}:1: not valid TOML: its values are nested too deeply to parse", _FIX) from None
    lines = text.splitlines()
    entries: list[Expected] = []
    seen: dict[tuple[str, CaseKey], int] = {}
    for name, tables in data.items():
        framework = FRAMEWORKS.get(name)
        if framework is None or not isinstance(tables, list):
            where = f"{path}:{_name_line(lines, name)}"
            raise InputError(
                f"{where}: {name!r} is not a framework's list of cases",
                f"write each case as a [[{' | '.join(FRAMEWORKS)}]] table with {', '.join(KEYS)}",
            )
        starts = _table_lines(lines, name)
        if len(starts) != len(tables):  # (an inline array: its entries' lines are not told apart)
            starts = [_name_line(lines, name)] * len(tables)
        for index, table in enumerate(tables):
            line = starts[index]
            end = starts[index + 1] - 1 if index + 1 < len(starts) and starts[index + 1] > line else len(lines)
            entry = _entry(path, framework, table, lines, (line, end))
            if (name, entry.key) in seen:
                where = f"{path}:{line}"
                raise InputError(
                    f"{where}: {name} {entry.suite} {entry.case!r} [{entry.dtype}] is listed twice "
                    f"(first at line {seen[name, entry.key]})",
                    "keep one entry for it",
                )
            seen[name, entry.key] = line
            entries.append(entry)
    first = next((i for i, text_line in enumerate(lines) if text_line.strip().startswith("[")), len(lines))
    header = "\n".join(lines[:first]).strip()
    return ExpectedFailures(path, tuple(entries), header + "\n" if header else "")


def _entry(path: Path, framework: Framework, table: Any, lines: list[str], span: tuple[int, int]) -> Expected:
    """One [[framework]] table, on the file's lines span[0]..span[1], checked."""
    entry = f"{path}:{span[0]}"

    def where(key: str) -> str:
        """file:line of the line that sets `key` (else of the entry)."""
        return f"{path}:{_key_line(lines, key, *span) or span[0]}"

    if not isinstance(table, dict):
        raise InputError(f"{entry}: a [[{framework.name}]] entry is not a table", _FIX)
    unknown = [k for k in table if k not in KEYS]
    if unknown:
        raise InputError(
            f"{where(unknown[0])}: unknown key {unknown[0]!r} in a [[{framework.name}]] entry",
            f"each entry has exactly {', '.join(KEYS)}",
        )
    missing = [k for k in KEYS if k not in table]
    if missing:
        raise InputError(
            f"{entry}: a [[{framework.name}]] entry lacks {', '.join(missing)}",
            f"each entry has {', '.join(KEYS)} (the reason says why the case fails)",
        )
    for key in KEYS:
        value = table[key]
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{where(key)}: {key} must be a non-empty string, not {value!r}", _FIX)
    suites = (*framework.op_suites, SOURCE_SUITE)
    if table["suite"] not in suites:
        raise InputError(
            f"{where('suite')}: suite {table['suite']!r} is not a suite of the {framework.label} adapter",
            f"use one of {', '.join(suites)}",
        )
    return Expected(framework.name, table["suite"], table["case"], table["dtype"], table["reason"].strip())


def _table_lines(lines: list[str], name: str) -> list[int]:
    """The 1-based lines of the file's [[name]] headers, in order."""
    header = re.compile(rf"^\s*\[\[\s*(?:{re.escape(name)}|\"{re.escape(name)}\")\s*\]\]")
    return [number for number, line in enumerate(lines, 1) if header.match(line)]


def _name_line(lines: list[str], name: str) -> int:
    """The 1-based line where the top-level `name` first appears ([name], [[name]] or name = ...); 1: none."""
    quoted = rf"(?:{re.escape(name)}|\"{re.escape(name)}\")"
    start = re.compile(rf"^\s*(?:\[\[?\s*{quoted}\s*[\].]|{quoted}\s*[=.])")
    return next((n for n, line in enumerate(lines, 1) if start.match(line)), 1)


def _key_line(lines: list[str], key: str, start: int, end: int) -> int:
    """The 1-based line that assigns `key` within lines start..end (1-based, inclusive); 0: none."""
    assign = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    return next((n for n in range(max(start, 1), end + 1) if assign.match(lines[n - 1])), 0)


# ---- judging a run


def judge(results: Iterable[dict[str, Any]], expected: Mapping[CaseKey, Expected]) -> None:
    """Mark each result of a listed case with `expected` (its reason): a failure so marked is
    expected, a pass so marked now passes (report.OpCase.verdict). A case listed once but run
    several times (one name in several samples) now passes only when none of them failed."""
    results = list(results)
    failing = {result_key(r) for r in results if r["status"] in ("fail", "error")}
    for result in results:
        listed = expected.get(result_key(result))
        if listed is not None and (result["status"] != "pass" or listed.key not in failing):
            result["expected"] = listed.reason


@dataclass(frozen=True)
class ExpectedUpdate:
    """What --update-expected changed."""

    path: Path
    added: tuple[Expected, ...]
    removed: tuple[Expected, ...]  # now passing
    kept: int


def update_expected(
    current: ExpectedFailures, framework: str, results: Iterable[Mapping[str, Any]]
) -> tuple[ExpectedFailures, ExpectedUpdate]:
    """The file as this run says it should be, written: its failures listed (the reasons known kept),
    its passes gone; the entries it did not judge, and the other frameworks', as they were."""
    results = list(results)
    judged = judged_keys(results)
    failures: dict[CaseKey, Mapping[str, Any]] = {}
    for r in results:
        if r["status"] in ("fail", "error"):
            failures.setdefault(result_key(r), r)
    listed = current.of(framework)
    others = [e for e in current.entries if e.framework != framework]
    kept = [e for e in listed.values() if e.key not in judged or e.key in failures]
    removed = tuple(e for e in listed.values() if e.key in judged and e.key not in failures)
    added = tuple(Expected(framework, *key, _new_reason(r)) for key, r in failures.items() if key not in listed)
    ordered = sorted([*kept, *added], key=lambda e: e.key)
    updated = ExpectedFailures(current.path, (*others, *ordered), current.header)
    write_expected(updated)
    return updated, ExpectedUpdate(current.path, added, removed, len(kept))


def _new_reason(result: Mapping[str, Any]) -> str:
    words = result.get("error") or "; ".join(result.get("mismatch") or ()) or result.get("detail") or result["status"]
    first = str(words).strip().splitlines()[0] if str(words).strip() else str(result["status"])
    return f"{first[:160]} (recorded by --update-expected: say why)"


# ---- writing


def write_expected(failures: ExpectedFailures) -> Path:
    blocks = [
        "\n".join(
            [f"[[{e.framework}]]", *(f"{key} = {toml_string(getattr(e, key))}" for key in KEYS)],
        )
        for e in failures.entries
    ]
    body = "\n\n".join(blocks)
    text = failures.header + ("\n" if failures.header and body else "") + body + ("\n" if body else "")
    failures.path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(failures.path, text)


def toml_string(value: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    escaped = "".join(
        f"\\{ch}" if ch in '"\\' else f"\\u{ord(ch):04x}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch for ch in value
    )
    return f'"{escaped}"'
