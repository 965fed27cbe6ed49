"""URLs a user hands devkit (an index, an upload target), checked before pip or twine reads them."""

from __future__ import annotations

from urllib.parse import urlsplit


def is_url(text: str, schemes: tuple[str, ...]) -> bool:
    """`text` is a whole URL of one of `schemes`: a host for http(s), a path for file, and no space
    or control character (pip would read "--x" as an option and a bare word as a path)."""
    if not text.isprintable() or any(c.isspace() for c in text):
        return False
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed [ of an IPv6 host
        return False
    if parts.scheme not in schemes:
        return False
    return bool(parts.path) if parts.scheme == "file" else bool(parts.hostname)
