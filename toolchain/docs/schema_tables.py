"""A --json output's fields as Markdown tables, from the schema generated from its dataclass
(cli/schemas.py), one table per form the output takes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..cli.schemas import JSON_OUTPUTS
from .markdown import cell


def _schema_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_schema_type(alt) for alt in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind)


def _object_of(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema inside `schema` (itself, an array's items, an anyOf's object), if any."""
    if schema.get("type") == "object" or "properties" in schema:
        return schema
    if schema.get("type") == "array":
        return _object_of(schema.get("items", {}))
    for alt in schema.get("anyOf", []):
        found = _object_of(alt)
        if found is not None:
            return found
    return None


def _schema_rows(schema: dict[str, Any], prefix: str) -> Iterator[tuple[str, str, str, bool]]:
    """(field, type, description, required) for each field of an object schema, depth first."""
    required = set(schema.get("required", ()))
    children: list[tuple[str, dict[str, Any], bool]] = [
        (name, sub, name in required) for name, sub in schema.get("properties", {}).items()
    ]
    children += [(f"<{pattern}>", sub, False) for pattern, sub in schema.get("patternProperties", {}).items()]
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        children.append(("<key>", extra, False))
    for name, sub, is_required in children:
        path = f"{prefix}{name}"
        yield path, _schema_type(sub), sub.get("description", ""), is_required
        inner = _object_of(sub)
        if inner is not None:
            yield from _schema_rows(inner, path + ("[]." if sub.get("type") == "array" else "."))


def _forms(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The shapes the output takes: the alternatives of a top-level oneOf/anyOf, $refs resolved."""
    if "$ref" in schema:
        return _forms(root["$defs"][schema["$ref"].removeprefix("#/$defs/")], root)
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    if alternatives and "properties" not in schema:
        return [form for alt in alternatives for form in _forms(alt, root)]
    return [schema]


def schema_tables(name: str) -> str:
    """The --json output's fields as tables (one per shape the output takes)."""
    schema = JSON_OUTPUTS[name.replace(" ", "-")].schema()
    forms = _forms(schema, schema)
    out: list[str] = []
    for index, form in enumerate(forms, 1):
        listed = _object_of(form) or form  # a list's rows: its items' fields, as `[].field`
        if len(forms) > 1:
            what = form.get("description") or listed.get("description", "")
            out.append(f"Form {index}{' (a list)' if listed is not form else ''}: {what}".rstrip(": "))
            out.append("")
        out += ["| field | type | required | meaning |", "| --- | --- | --- | --- |"]
        for path, kind, text, required in _schema_rows(listed, "[]." if listed is not form else ""):
            out.append(f"| `{path}` | {cell(kind)} | {'yes' if required else ''} | {cell(text)} |")
        out.append("")
    source = f"`toolchain/schemas/{name.replace(' ', '-')}.json`"
    what = f" ({schema['description']})" if schema.get("description") else ""
    return f"With `--json`, stdout holds one JSON document{what}, described by {source}:\n\n" + "\n".join(out)
