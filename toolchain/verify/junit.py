"""JUnit XML, the report format CI dashboards (GitHub, GitLab, Jenkins) read."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..util.fsutil import write_atomic


@dataclass(frozen=True)
class Case:
    name: str
    classname: str
    seconds: float = 0.0
    failure: str | None = None  # message; None: passed
    skipped: str | None = None
    output: str = ""


def write_junit(path: Path, suite: str, cases: list[Case]) -> Path:
    return write_junit_suites(path, {suite: cases})


def write_junit_suites(path: Path, suites: Mapping[str, list[Case]]) -> Path:
    """One <testsuite> per suite, in the order given."""
    root = ET.Element("testsuites", name="devkit")
    for suite, cases in suites.items():
        root.append(_suite_element(suite, cases))
    tree = ET.ElementTree(root)
    ET.indent(tree)
    xml = io.BytesIO()
    tree.write(xml, encoding="utf-8", xml_declaration=True)
    return write_atomic(path, xml.getvalue())


def _suite_element(suite: str, cases: list[Case]) -> ET.Element:
    suite_el = ET.Element(
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(sum(c.failure is not None for c in cases)),
        errors="0",
        skipped=str(sum(c.skipped is not None for c in cases)),
        time=f"{sum(c.seconds for c in cases):.1f}",
    )
    for c in cases:
        case = ET.SubElement(suite_el, "testcase", classname=c.classname, name=c.name, time=f"{c.seconds:.1f}")
        if c.failure is not None:
            ET.SubElement(
                case, "failure", message=c.failure.splitlines()[0][:500] if c.failure else ""
            ).text = c.failure
        elif c.skipped is not None:
            ET.SubElement(case, "skipped", message=c.skipped)
        if c.output:
            ET.SubElement(case, "system-out").text = c.output
    return suite_el
