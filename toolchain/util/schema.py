"""JSON Schemas of devkit's `--json` outputs: shipped in `devkit/schemas/`, one per output.

Every output is a dataclass (util/outputs.py) and its schema is generated from it here
(`dataclass_schema`), so the class stays the one place a field is declared; `output_schema` adds
the title and the error object every command may print instead; a unit test holds each shipped
file to the generated one (cli/schemas.py lists them; `python -m devkit.docs_gen` writes them).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .outputs import ErrorOutput
from .resources import resource_dir

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema_path(name: str) -> Path:
    return resource_dir("schemas") / f"{name}.json"


def load_schema(name: str) -> dict[str, Any]:
    return dict(json.loads(schema_path(name).read_text()))


def output_schema(title: str, hint: Any, description: str = "") -> dict[str, Any]:
    """The shipped schema of a --json output of type `hint`."""
    head = {"$schema": DRAFT, "title": title, **({"description": description} if description else {})}
    return {**head, "anyOf": [type_schema(hint), {"$ref": "#/$defs/error"}], "$defs": {"error": ERROR_OUTPUT}}


def type_schema(hint: Any) -> dict[str, Any]:
    """The schema of a value of type `hint` as `json_value` + `json.dumps` write it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return dataclass_schema(hint)
    if origin is typing.Literal:
        return {"enum": list(args)}
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


def _description(cls: type) -> str:
    """A dataclass's own docstring, one line (not the signature `dataclass` writes in its place)."""
    doc = cls.__doc__ or ""
    return "" if doc.startswith(f"{cls.__name__}(") else " ".join(doc.split())


def _without_none(hint: Any) -> Any:
    """`X | None` -> `X`: the type of a field whose key is left out while it is None."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return typing.Union[tuple(args)] if len(args) > 1 else args[0]  # noqa: UP007 (built at run time)


def _described(schema: dict[str, Any], metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {"description": metadata["doc"], **schema} if metadata.get("doc") else schema


def dataclass_schema(cls: type) -> dict[str, Any]:
    """The schema of `cls`'s instances as `json_value` writes them (util/outputs.py: field metadata)."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    patterns: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if f.metadata.get("flatten") and f.metadata.get("pattern"):
            patterns[f.metadata["pattern"]] = _described(type_schema(typing.get_args(hint)[1]), f.metadata)
            continue
        if f.metadata.get("flatten"):
            inner = dataclass_schema(hint)
            properties.update(inner["properties"])
            patterns.update(inner.get("patternProperties", {}))
            required += inner["required"]
            continue
        properties[f.name] = _described(
            type_schema(_without_none(hint) if f.metadata.get("omit_none") else hint), f.metadata
        )
        required += [] if f.metadata.get("omit_none") else [f.name]
    described = {"description": _description(cls)} if _description(cls) else {}
    schema = {**described, "type": "object", "properties": properties, "required": required}
    return {**schema, **({"patternProperties": patterns} if patterns else {}), "additionalProperties": False}


# What a --json command prints on stdout instead of its summary when it fails first: the parts of its
# one `error:` line, and its exit code with that code's name as the kind (README: Exit codes).
ERROR_OUTPUT: dict[str, Any] = dataclass_schema(ErrorOutput)
