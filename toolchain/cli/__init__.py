"""The `devkit` command line: the app and its error edge, shared options, one module per command group, views."""

from .app import app, main

__all__ = ["app", "main"]
