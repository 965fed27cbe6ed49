"""What a `--json` output is: a dataclass (or a list or dict of them) the command fills, written by
`json_value`; its schema is generated from the same classes (util/schema.py), so that the JSON a
command prints and the schema devkit ships for it cannot drift apart.

A field's metadata says how it is written (`output_field`): `doc`, its description in the schema;
`omit_none`, the key is left out while the value is None (and is then not required); `flatten`,
the value's keys are the object's own (a dataclass: its fields; a dict: keys matching `pattern`).
"""

from __future__ import annotations

import dataclasses
from pathlib import PurePath
from typing import Any, Literal

# The kinds of failure a --json command reports instead of its summary: ExitCode's names, lower case
# (a unit test holds the two together).
ErrorKind = Literal["build_failed", "internal", "input", "environment", "verification_failed"]


def output_field(doc: str = "", *, omit_none: bool = False, flatten: bool = False, pattern: str = "") -> Any:
    """A field of a --json output with its description and how it is written (see the module's doc)."""
    metadata = {"doc": doc, "omit_none": omit_none, "flatten": flatten, "pattern": pattern}
    return dataclasses.field(metadata={k: v for k, v in metadata.items() if v})


def json_value(value: Any) -> Any:
    """`value` as its --json output holds it: dataclasses as objects (their fields' metadata applied),
    tuples as lists, paths as strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.metadata.get("flatten"):
                out.update(json_value(item))
            elif item is not None or not f.metadata.get("omit_none"):
                out[f.name] = json_value(item)
        return out
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(item) for item in value]
    if isinstance(value, PurePath):
        return str(value)
    return value


@dataclasses.dataclass(frozen=True)
class ErrorDetail:
    kind: ErrorKind
    exit_code: int
    problem: str
    fix: str
    log: str | None
    message: str = output_field("the error line devkit prints on stderr")


@dataclasses.dataclass(frozen=True)
class ErrorOutput:
    """the command failed before it had a summary to print"""

    error: ErrorDetail
