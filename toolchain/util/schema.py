"""JSON Schemas of devkit's `--json` outputs: shipped in `devkit/schemas/`, one per output.

Where an output is a settings model's `asdict` (`config show`), its schema is generated from the
dataclasses (`dataclass_schema`), so the model stays the one place a setting is declared; a unit
test holds the shipped file to the generated one.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

from .resources import resource_dir

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema_path(name: str) -> Path:
    return resource_dir("schemas") / f"{name}.json"


def load_schema(name: str) -> dict[str, Any]:
    return dict(json.loads(schema_path(name).read_text()))


# What a --json command prints on stdout instead of its summary when it fails first: the parts of its
# one `error:` line, and its exit code with that code's name as the kind (README: Exit codes).
ERROR_OUTPUT: dict[str, Any] = {
    "description": "the command failed before it had a summary to print",
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "kind": {"enum": ["build_failed", "internal", "input", "environment", "verification_failed"]},
                "exit_code": {"type": "integer"},
                "problem": {"type": "string"},
                "fix": {"type": "string"},
                "log": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "message": {"description": "the error line devkit prints on stderr", "type": "string"},
            },
            "required": ["kind", "exit_code", "problem", "fix", "log", "message"],
            "additionalProperties": False,
        }
    },
    "required": ["error"],
    "additionalProperties": False,
}


def with_error_output(schema: dict[str, Any]) -> dict[str, Any]:
    """A command's --json schema: its summary (`schema`), or the error object it prints instead."""
    head: dict[str, Any] = {key: schema[key] for key in ("$schema", "title", "description") if key in schema}
    summary = {key: value for key, value in schema.items() if key not in head}
    return {**head, "anyOf": [summary, {"$ref": "#/$defs/error"}], "$defs": {"error": ERROR_OUTPUT}}


def type_schema(hint: Any) -> dict[str, Any]:
    """The schema of a value of type `hint` as `dataclasses.asdict` + `json.dumps` write it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return dataclass_schema(hint)
    if origin in (types.UnionType, typing.Union):
        return {"anyOf": [type_schema(a) for a in args]}
    if hint is type(None):
        return {"type": "null"}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": type_schema(args[0])}
    if origin is tuple:
        items = [type_schema(a) for a in args]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if origin is list:
        return {"type": "array", "items": type_schema(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": type_schema(args[1])}
    simple = {str: "string", bool: "boolean", int: "integer", float: "number", Path: "string"}
    if hint in simple:
        return {"type": simple[hint]}
    raise TypeError(f"no JSON schema for {hint!r}")


def dataclass_schema(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    properties = {}
    for f in fields:
        prop = type_schema(hints[f.name])
        if f.metadata.get("doc"):
            prop = {"description": f.metadata["doc"], **prop}
        properties[f.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [f.name for f in fields],
        "additionalProperties": False,
    }
