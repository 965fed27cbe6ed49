"""The templates' Jinja environment, with their compiled code kept in devkit's cache.

Compiling the backend's ~170 templates is most of a render (0.5 of 0.6 CPU-s); loading them
compiled takes 0.1 s. Jinja keys each compiled template by its name and file and checks it against
a checksum of the template's source, so an edited template compiles again. What the key leaves out
(Jinja's own version, the environment's options, which change the generated code) names the
directory instead. The cache only saves time: one that cannot be used is passed over, and a kept
file that cannot be read compiles its template again."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket

from ..util.errors import DevkitError
from ..util.fsutil import private_dir


class KeptBytecode(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache, in a private directory, that never fails a render."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # (a truncated or foreign file: its template compiles again)
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):  # (a full or read-only disk: the next render compiles again)
            super().dump_bytecode(bucket)


def cache_directory(cache_root: Path, env: jinja2.Environment) -> Path:
    """Where `env`'s compiled templates are kept: one directory per Jinja version and per set of
    the options that change the code Jinja generates."""
    options = (
        *(env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string),
        *(env.comment_start_string, env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix),
        *(env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, env.autoescape),
        *(env.optimized, sorted(env.extensions)),
    )
    digest = hashlib.sha256(repr(options).encode()).hexdigest()[:12]
    return cache_root / "templates" / f"jinja-{jinja2.__version__}-{digest}"


def template_environment(roots: list[str], cache_root: Path) -> jinja2.Environment:
    """A strict environment over `roots` (the first root's template wins)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(roots),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    with contextlib.suppress(DevkitError, OSError):  # (a directory that is not ours, or no room: none)
        env.bytecode_cache = KeptBytecode(str(private_dir(cache_directory(cache_root, env))))
    return env
