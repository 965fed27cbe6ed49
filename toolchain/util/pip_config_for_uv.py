"""The pip configuration `compile.sh` installs devkit with, as uv's environment, or nothing.

    python toolchain/util/pip_config_for_uv.py   # run from the source tree by compile.sh

uv installs devkit and its ~40 dependencies in about 2 s where pip takes 12 (measured: a fresh venv,
empty caches), but it reads none of pip's configuration. So compile.sh uses uv only when every setting
pip would apply (its config files and PIP_* variables, as `pip config list` prints them) has a uv
equivalent; then this prints those equivalents as NUL-terminated NAME=VALUE pairs (the values are data,
read into an argument list, never evaluated). With any other setting (a trusted host, a proxy, a client
certificate...) it exits 1 and compile.sh installs with pip, so a company's index setup is honoured
either way. Standard library only: it runs before devkit is installed.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

# pip option -> uv environment variable (lists are space-separated in pip's config; uv takes its
# find-links comma-separated, the others space-separated).
# uv's indexes come before its default one; pip weighs every index alike: uv's best-match strategy
# (set below) picks the best version from all of them, as pip does.
TRANSLATED = {
    "index-url": "UV_DEFAULT_INDEX",
    "extra-index-url": "UV_INDEX",
    "find-links": "UV_FIND_LINKS",
    "constraint": "UV_CONSTRAINT",
    "cert": "SSL_CERT_FILE",
    "default-timeout": "UV_HTTP_TIMEOUT",
}
# Settings that change nothing about what gets installed from where.
IRRELEVANT = {
    "disable-pip-version-check",
    "progress-bar",
    "no-compile",
    "quiet",
    "verbose",
    "no-color",
    "root-user-action",
    "cache-dir",
    "no-cache-dir",
    "timeout",
    "config-file",  # (PIP_CONFIG_FILE: its settings are listed on their own lines)
}
SECTIONS = (":env:", "global", "install")  # what `pip install` reads; later ones win


def uv_environment(config_lines: list[str]) -> dict[str, str] | None:
    """uv's environment for pip's settings (`pip config list` lines: section.key='value'), or None
    when a setting that matters has no uv equivalent."""
    settings: dict[str, dict[str, str]] = {}
    for line in config_lines:
        if not line.strip():
            continue
        name, sep, quoted = line.partition("=")
        section, _, key = name.rpartition(".")
        if not sep or not section:
            return None  # not a line pip prints: trust nothing
        try:
            value = ast.literal_eval(quoted)
        except (ValueError, SyntaxError):
            return None
        if section in SECTIONS:
            settings.setdefault(section, {})[key] = str(value)
    # pip: the environment overrides the files, an [install] value overrides a [global] one.
    effective = {**settings.get("global", {}), **settings.get("install", {}), **settings.get(":env:", {})}
    env = {"UV_INDEX_STRATEGY": "unsafe-best-match"}
    for key, value in effective.items():
        if key == "find-links":
            # pip passes over a location that does not exist (with a warning); uv stops at it
            found = [link for link in value.split() if "://" in link or os.path.exists(link)]
            if found:
                env["UV_FIND_LINKS"] = ",".join(found)
        elif key in TRANSLATED:
            env[TRANSLATED[key]] = " ".join(value.split())
        elif key not in IRRELEVANT:
            return None
    if "UV_HTTP_TIMEOUT" in env:  # pip's may be a float; uv takes whole seconds
        try:
            env["UV_HTTP_TIMEOUT"] = str(max(1, round(float(env["UV_HTTP_TIMEOUT"]))))
        except ValueError:
            return None
    return env


def main() -> int:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    )
    env = uv_environment(listed.stdout.splitlines()) if listed.returncode == 0 else None
    if env is None:
        return 1
    sys.stdout.write("".join(f"{name}={value}\0" for name, value in env.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
