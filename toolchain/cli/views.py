"""What the commands print for people: rich tables on stderr (stdout stays for --json)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from ..building.plugin import BuildResult
from ..project.frameworks import find_framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..util.console import err
from ..verify.expected import ExpectedUpdate
from ..verify.report import OpsReport, counts_line
from ..verify.session import VerifyResult

_OP_STATUS = {
    "pass": "[green]pass[/]",
    "fail": "[red]FAIL[/]",
    "error": "[red]ERROR[/]",
    "expected": "[yellow]expected failure[/]",
    "now passing": "[red]NOW PASSES[/] (listed as failing)",
}
_CONTRACT_STATUS = {"pass": "[green]pass[/]", "by design": "[yellow]by design[/]", "fail": "[red]FAIL[/]"}


def show_build(result: BuildResult) -> None:
    # Unity builds compile several source files per compiler run: the count is of compiler runs.
    what = "nothing recompiled" if result.compiled_files == 0 else f"{result.compiled_files} compiler runs"
    runtime = find_framework(result.framework).runtime
    pin = f", {runtime}=={result.runtime_version}" if result.runtime_version else ""
    err.print(
        f"[green]✓[/] built {result.artifact} ({result.arch}{pin}; {what}; {result.seconds:.1f} s on {result.runner})"
    )
    if result.sdist:
        err.print(f"[green]✓[/] sdist {result.sdist}")
    if result.bundle:
        err.print(f"[green]✓[/] inference bundle {result.bundle}")


def show_build_matrix(project: Project, outcomes: list[Any], seconds: float) -> None:
    table = Table(title=f"devkit build --all — {project.name} ({seconds:.0f} s)")
    for col in ("target", "framework", "mode", "version", "result", "time", "artifact"):
        table.add_column(col)
    for o in outcomes:
        artifact = "\n".join(a.relative_to(project.root).as_posix() for a in o.artifacts) or o.error
        table.add_row(
            o.entry.recipe.name,
            o.entry.framework.name if o.entry.version else "-",
            o.entry.mode,
            o.entry.version or "-",
            "[green]pass[/]" if o.passed else "[red]FAIL[/]",
            f"{o.seconds:.0f} s",
            artifact,
        )
    err.print(table)


def show_verify(result: VerifyResult, recipe: Recipe) -> None:
    report = result.report
    ranks = report.ranks
    devices = f"{report.device}:0..{ranks - 1} in {ranks} processes" if ranks else f"{report.device}:0"
    if report.device:
        where = f"{devices}, {find_framework(report.framework).package} {report.runtime_version}"
    else:
        where = "device library tests"
    modes = report.data.get("modes", {}).get("summary")
    table = Table(title=f"devkit verify — {recipe.name}: {where} ({report.runner})" + (f"\n{modes}" if modes else ""))
    for col in ("check", "result", "figures"):
        table.add_column(col)
    table.add_column("time", justify="right")
    for check in report.checks:
        status = "[yellow]not run[/]" if check.not_run else "[green]pass[/]" if check.passed else "[red]FAIL[/]"
        seconds = check.data.get("seconds")
        table.add_row(check.name, status, check.detail, f"{seconds:.1f} s" if seconds is not None else "")
    latency = report.inference()
    if latency:
        lat = Table(title="latency (ms) after warmup", show_lines=False)
        for col in ("model", "place", "avg", "min", "max"):
            lat.add_column(col)
        for name, inference in latency:
            for place, t in inference["latency_ms"].items():
                lat.add_row(name, place, f"{t['avg_ms']:.2f}", f"{t['min_ms']:.2f}", f"{t['max_ms']:.2f}")
        err.print(lat)
    fallback = report.fallback()
    if fallback:
        kernels = fallback["kernels"]
        places = Table(title=f"kernels the model ran, with CPU fallback on ({len(kernels)})")
        for col in ("kernel", "ran on", "runs"):
            places.add_column(col)
        for kernel, counts in kernels.items():
            ran_on = (
                "[red]CPU (fallback)[/]"
                if counts.get("cpu_fallback")
                else (report.device or "")
                if counts.get("device")
                else "CPU (CPU inputs)"
            )
            places.add_row(kernel, ran_on, str(sum(counts.values())))
        err.print(places)
    contract = report.contract()
    if contract:
        clauses = Table(title=f"framework contract — {contract['detail']}")
        for col in ("what the framework asks", "through", "result", "why"):
            clauses.add_column(col)
        for row in contract["clauses"]:
            status = _CONTRACT_STATUS.get(row["status"], row["status"])
            clauses.add_row(row["hook"], row["api"], status, row["detail"])
        err.print(clauses)
    err.print(table)
    _show_op_suites(report.data.get("op_suites"))
    err.print(f"report: {result.report_path}" + (f"  plot: {result.plot_path}" if result.plot_path else ""))


def _show_op_suites(summary: Mapping[str, Any] | None) -> None:
    """The last test-ops run's verdicts per suite (verify/ops.py with_op_suites)."""
    if not summary:
        return
    older = " [yellow](an older build's: run devkit test-ops again)[/]" if summary["older_than_wheel"] else ""
    table = Table(
        "suite",
        "pass",
        "expected",
        "failed",
        "now passing",
        "not run",
        title=f"devkit test-ops: {summary['report']}{older}",
    )
    for suite, c in summary["suites"].items():
        failed = c["fail"] + c["error"]
        table.add_row(
            suite,
            str(c["pass"]),
            str(c["expected"]),
            f"[red]{failed}[/]" if failed else "0",
            f"[red]{c['now passing']}[/]" if c["now passing"] else "0",
            str(c["not registered"] + c["skipped"]),
        )
    err.print(table)


def show_test_ops(report: OpsReport, recipe: Recipe, mode: str, report_dir: Path) -> None:
    table = Table("suite", "case", "dtype", "kernels", "result", title=f"devkit test-ops — {recipe.name} ({mode})")
    for r in report.results:
        verdict = _OP_STATUS.get(r.verdict, f"[yellow]{r.verdict}[/]")
        table.add_row(r.suite, r.case, r.dtype, ", ".join(r.kernels), verdict)
    err.print(table)
    for suite, counts in report.data.get("suites", {}).items():
        err.print(f"{suite}: {counts_line(counts)}")
    err.print(f"reports in {report_dir} (report.md, junit.xml)")


def show_expected_update(update: ExpectedUpdate) -> None:
    """What --update-expected changed in the project's expected failures."""
    err.print(
        f"[green]✓[/] {update.path}: {len(update.added)} added, {len(update.removed)} removed (now passing), "
        f"{update.kept} kept"
    )
    for entry in update.added:
        err.print(f"  + {entry.suite} {escape(entry.case)} [{entry.dtype}]: say why it fails in its reason")
    for entry in update.removed:
        err.print(f"  - {entry.suite} {escape(entry.case)} [{entry.dtype}] passes now")


def show_matrix(entries: list[Any]) -> None:
    table = Table("entry", "target", "framework", "mode", "version", "command")
    for e in entries:
        framework = e.framework.name if e.version else "-"
        table.add_row(e.id, e.recipe.name, framework, e.mode, e.version or "-", f"devkit matrix run {e.id}")
    err.print(table)


def show_config(config: Mapping[str, Any], pyproject: Path) -> None:
    table = Table("key", "value", title=escape(f"[tool.devkit] of {pyproject}"))
    for key, value in config.items():
        if isinstance(value, dict) and not key.endswith("_versions"):
            for sub, v in value.items():
                table.add_row(f"{key}.{sub}".replace("_", "-"), json.dumps(v))
        else:
            table.add_row(key.replace("_", "-"), json.dumps(value))
    err.print(table)


def show_images(infos: list[Any]) -> None:
    table = Table("image", "platform", "size")
    for i in infos:
        table.add_row(i.tag, i.platform, f"{i.size_mb:.0f} MB")
    err.print(table)


def show_doctor(checks: list[Any]) -> None:
    table = Table("check", "status", "detail", "fix")
    for c in checks:
        status = "[green]ok[/]" if c.ok else ("[red]missing[/]" if c.required else "[yellow]optional[/]")
        table.add_row(c.name, status, c.detail, "" if c.ok else c.fix)
    err.print(table)
