"""The table of the targets devkit ships a recipe for (recipes/*.toml)."""

from __future__ import annotations

from dataclasses import fields

from ..project.recipes import Recipe, all_recipes
from .markdown import cell


def recipes_table() -> str:
    """Every target devkit ships a recipe for (recipes/*.toml): one row per key, one column per target."""
    recipes = all_recipes()
    lines = ["| key | " + " | ".join(f"`{r.name}`" for r in recipes) + " |", "| --- |" + " --- |" * len(recipes)]
    for key in (f.name for f in fields(Recipe) if f.name != "name"):
        lines.append(f"| `{key}` | " + " | ".join(cell(_shown(getattr(r, key))) for r in recipes) + " |")
    return "\n".join(lines) + "\n"


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {'yes' if v is True else 'no' if v is False else v}" for k, v in value.items())
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)
