"""The framework contract: what a framework asks of a device, each clause exercised through the
framework's public API. Framework-free (torch_contract.py and paddle_contract.py hold the
clauses); a clause either passes, or is by design with its reason -- then its probe must see the
framework refuse the call as the reason says, so a by-design line that stops being true (the
call starts working, or fails another way) fails the check as surely as a missing hook.

A probe returns True when the answer is right; anything else (False, an exception) fails it --
except an error of the device library saying the flavour does not implement what the call needs
(its generated stub's "<op> is not implemented by <flavour>"): that is the flavour's design, and
the row says so with the error's line."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass

from records import ContractCheck, ContractRow

# What the device library's stub for an op its flavour lacks says (device/core/core.cc).
UNIMPLEMENTED = " is not implemented by "


@dataclass(frozen=True)
class Clause:
    hook: str  # what the framework asks of the device: a slot, hook or device-module function
    api: str  # the public call that exercises it
    probe: Callable[[], object]
    by_design: str = ""  # not provided, and why (the probe then checks the refusal)


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


def soon(query: Callable[[], object], seconds: float = 2.0) -> bool:
    """A query that must come true: Stream.query() of a synchronised stream may still see a
    device's own bookkeeping for a moment (the OpenCL flavour queues a marker per query and
    answers within a millisecond, which a loaded machine can miss)."""
    until = time.monotonic() + seconds
    while not query():
        if time.monotonic() > until:
            return False
        time.sleep(0.005)
    return True


def refused(call: Callable[[], object], *words: str, any_of: bool = False) -> Callable[[], bool]:
    """A probe for a by-design clause: `call` raises, and its first line says each of `words`
    (`any_of`: one of them)."""

    def probe() -> bool:
        try:
            call()
        except Exception as exc:
            line = first_line(exc)
            said = [w in line for w in words]
            if not (any(said) if any_of else all(said)):
                raise AssertionError(f"refused, but not as by design: {line[:300]}") from exc
            return True
        raise AssertionError("it works now: the clause is no longer by design")

    return probe


def device_library_lacks(library: str, prefix: str, function: str, *args: object) -> str:
    """The device library's own words when its flavour stubs `function`, called with `args` (a
    query without side effects; default: one uint64_t*, as trace_dropped), read from the adapter's
    library that exports the C API; else ""."""
    lib = ctypes.CDLL(library)  # (loaded by the framework already: the same handle)
    call = getattr(lib, f"{prefix}_{function}", None)
    if call is None:
        return ""
    if call(*(args or (ctypes.byref(ctypes.c_uint64()),))) == 0:
        return ""
    detail = lib[f"{prefix}_error_detail"]
    detail.restype = ctypes.c_char_p
    return (detail() or b"").decode(errors="replace")


def _row(clause: Clause) -> ContractRow:
    row: ContractRow = {"hook": clause.hook, "api": clause.api, "status": "fail", "detail": ""}
    try:
        answer = clause.probe()
    except Exception as exc:
        line = first_line(exc)[:300]
        if UNIMPLEMENTED in line:
            row["status"], row["detail"] = "by design", line
        else:
            row["detail"] = f"{type(exc).__name__}: {line}"
        return row
    if answer is not True:
        row["detail"] = f"wrong answer: {answer!r}"[:300]
        return row
    row["status"] = "by design" if clause.by_design else "pass"
    row["detail"] = clause.by_design
    return row


def run_clauses(clauses: list[Clause]) -> ContractCheck:
    rows = [_row(c) for c in clauses]
    failed = [r for r in rows if r["status"] == "fail"]
    by_design = sum(r["status"] == "by design" for r in rows)
    detail = f"{len(rows) - len(failed) - by_design} of {len(rows)} pass, {by_design} by design"
    if failed:
        detail += "; failing: " + "; ".join(f"{r['hook']} ({r['detail'][:120]})" for r in failed[:4])
    return {"name": "framework contract", "kind": "contract", "passed": not failed, "detail": detail, "clauses": rows}
