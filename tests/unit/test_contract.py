"""The framework contract's verdicts (payload/contract.py), framework-free: a clause passes only on
a True answer, a by-design clause only while the framework still refuses as its reason says, and a
device library's stub for an op its flavour lacks is by design in its own words. (The clauses
themselves run against real frameworks in the verify tests.)"""

from __future__ import annotations

from types import ModuleType

import pytest
from conftest import payload_module


@pytest.fixture
def contract() -> ModuleType:
    return payload_module("shared", "contract")  # (as the payloads import it: by plain name)


def _raise(message: str) -> object:
    raise RuntimeError(message)


def test_each_verdict(contract: ModuleType) -> None:
    Clause = contract.Clause
    check = contract.run_clauses(
        [
            Clause("works", "a()", lambda: True),
            Clause("wrong", "b()", lambda: 3),
            Clause("raises", "c()", lambda: _raise("Backend doesn't support it.\nmore")),
            Clause("refused", "d()", contract.refused(lambda: _raise("no gpgpu here"), "gpgpu"), by_design="why"),
            Clause("works now", "e()", contract.refused(lambda: 1, "gpgpu"), by_design="stale"),
            Clause("refused otherwise", "f()", contract.refused(lambda: _raise("segfault"), "gpgpu"), by_design="x"),
            Clause("stub", "g()", lambda: _raise("stpu_graph_launch is not implemented by the opencl device library")),
        ]
    )
    rows = {r["hook"]: (r["status"], r["detail"]) for r in check["clauses"]}
    assert rows == {
        "works": ("pass", ""),
        "wrong": ("fail", "wrong answer: 3"),
        "raises": ("fail", "RuntimeError: Backend doesn't support it."),
        "refused": ("by design", "why"),
        "works now": ("fail", "AssertionError: it works now: the clause is no longer by design"),
        "refused otherwise": ("fail", "AssertionError: refused, but not as by design: segfault"),
        "stub": ("by design", "stpu_graph_launch is not implemented by the opencl device library"),
    }
    assert not check["passed"] and check["detail"].startswith("1 of 7 pass, 2 by design; failing: wrong (")


def test_a_contract_met_passes(contract: ModuleType) -> None:
    check = contract.run_clauses([contract.Clause("works", "a()", lambda: True)])
    assert check == {
        "name": "framework contract",
        "kind": "contract",
        "passed": True,
        "detail": "1 of 1 pass, 0 by design",
        "clauses": [{"hook": "works", "api": "a()", "status": "pass", "detail": ""}],
    }
