"""Reading a TOML file a user hands devkit: every way it can be unreadable is an input error naming it."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .errors import InputError


def read_toml(path: Path, fix: str = "fix its syntax") -> dict[str, Any]:
    """`path` parsed, or InputError naming it: bad syntax, not UTF-8, or values nested deeper than
    the parser can follow (tomllib recurses once per level: 20,000 nested arrays exhaust the stack)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path} is not valid TOML: {exc}", fix) from None
    except RecursionError:
        raise InputError(f"{path} is not valid TOML: its values are nested too deeply to parse", fix) from None
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text", "restore it from a freshly rendered project") from None
