"""Markdown pieces every generated table uses."""

from __future__ import annotations

import re


def cell(text: str) -> str:
    """One table cell: one line, pipes escaped, no text a Markdown renderer takes for HTML."""
    parts = re.split(r"(``.*?``|`[^`]*`)", " ".join(text.split()).replace("|", "\\|"))
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;").replace(">", "&gt;") for p in parts)


def code_span(text: str) -> str:
    """`text` as inline code, in double backticks when it holds one."""
    text = " ".join(text.split())
    return f"`` {text} ``" if "`" in text else f"`{text}`"
