"""`[tool.devkit.sdk]`: the vendor SDK a backend's device library is built against.

    [tool.devkit.sdk]
    name = "opencl"                    # CMake gets OPENCL_SDK_ROOT and OPENCL_SDK_VERSION
    version = "3.0"
    headers = ["CL/cl.h"]              # must be in an include dir, or the configure stops
    libraries = ["OpenCL"]             # linked into the device library (-lOpenCL)
    include-dirs = ["usr/include"]     # relative to the SDK's root; {triple} is the target's
    lib-dirs = ["usr/lib/{triple}"]
    runtime-libs = ["libOpenCL.so.1"]  # the driver installs these: never copied into a wheel
    env = { }                          # extra environment for the build
    runtime-env = { }                  # and for verify's checks (e.g. which devices a driver shows)

    [tool.devkit.sdk.build]            # where the SDK comes from, per target: one of
    x86_64 = { debian = ["opencl-c-headers", "ocl-icd-opencl-dev", "ocl-icd-libopencl1"] }
    aarch64 = { debian = ["opencl-c-headers", "ocl-icd-opencl-dev:arm64", "ocl-icd-libopencl1:arm64"] }
    # { dir = "/opt/vendor/sdk-3.0" }   { archive = "https://.../sdk.tar.gz", sha256 = "..." }
    # { pip = ["vendor-sdk==3.0"] }

    [tool.devkit.sdk.runtime]          # what verify images install (the runtime, not the headers)
    x86_64 = { debian = ["ocl-icd-libopencl1", "pocl-opencl-icd"] }

Parsed once into frozen dataclasses; every key checked, errors name it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from ..util.errors import DevkitError
from .recipes import Recipe, find_recipe

SOURCE_KINDS = ("dir", "archive", "debian", "pip")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
SHA256 = re.compile(r"[0-9a-f]{64}")
DEBIAN_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+)?")
SONAME = re.compile(r"lib[^/\s]+\.so(\.[0-9]+)*")


@dataclass(frozen=True)
class SdkSource:
    """Where the SDK (or its runtime) comes from for one target: exactly one kind."""

    kind: str  # dir | archive | debian | pip
    key: str  # tool.devkit.sdk.build.<target>: what errors name
    path: str = ""  # dir: a directory on the build machine; archive: a path or URL
    sha256: str = ""  # archive
    packages: tuple[str, ...] = ()  # debian ("name[:arch]") or pip (requirements)


@dataclass(frozen=True)
class SdkSettings:
    name: str
    version: str
    headers: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ("include",)
    lib_dirs: tuple[str, ...] = ("lib",)
    runtime_libs: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    runtime_env: dict[str, str] = field(default_factory=dict)
    build: dict[str, SdkSource] = field(default_factory=dict)  # recipe name -> source
    runtime: dict[str, SdkSource] = field(default_factory=dict)

    @property
    def variable(self) -> str:
        """The prefix of the CMake variables and the environment the build gets: OPENCL."""
        return self.name.upper()

    def build_source(self, recipe: Recipe) -> SdkSource:
        if recipe.name not in self.build:
            raise DevkitError(
                f"pyproject.toml: tool.devkit.sdk.build has no entry for {recipe.name}, so the {self.name} SDK "
                f"cannot be provided for it",
                f'add e.g. {recipe.name} = {{ dir = "/opt/{self.name}-{self.version}" }} under [tool.devkit.sdk.build]',
            )
        return self.build[recipe.name]

    def dirs(self, recipe: Recipe, which: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(d.replace("{triple}", recipe.triple) for d in which)


def _fail(key: str, problem: str, fix: str) -> DevkitError:
    return DevkitError(f"pyproject.toml: tool.devkit.sdk{'.' + key if key else ''} {problem}", fix)


def _strings(value: Any, key: str, pattern: re.Pattern[str] | None = None, *, what: str = "") -> tuple[str, ...]:
    """A list of non-empty strings at `key` (each matching `pattern`, described by `what`)."""
    short = key.rsplit(".", 1)[-1]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(key, f"= {value!r} must be a list of non-empty strings", f'e.g. {short} = ["..."]')
    for v in value:
        if pattern is not None and not pattern.fullmatch(v):
            raise _fail(key, f"has {v!r}, which is not {what}", f"fix or remove {v!r}")
        if v.startswith("/") and key.endswith("-dirs"):
            raise _fail(key, f"has {v!r}, an absolute path", "give it relative to the SDK's root")
    return tuple(value)


def _source(value: Any, key: str) -> SdkSource:
    if not isinstance(value, dict):
        raise _fail(key, f"= {value!r} must be a table", f'e.g. {key.rsplit(".", 1)[-1]} = {{ dir = "/opt/sdk" }}')
    kinds = [k for k in SOURCE_KINDS if k in value]
    unknown = set(value) - {*SOURCE_KINDS, "sha256"}
    if unknown:
        raise _fail(f"{key}.{sorted(unknown)[0]}", "is not an SDK source key", f"use one of: {', '.join(SOURCE_KINDS)}")
    if len(kinds) != 1:
        raise _fail(key, f"must name exactly one of {', '.join(SOURCE_KINDS)} (it has {len(kinds)})", "keep one")
    kind = kinds[0]
    if kind in ("dir", "archive"):
        if not isinstance(value[kind], str) or not value[kind]:
            raise _fail(f"{key}.{kind}", f"= {value[kind]!r} must be a non-empty string", "give a path")
        sha256 = value.get("sha256", "")
        if kind == "archive" and not (isinstance(sha256, str) and SHA256.fullmatch(sha256)):
            raise _fail(
                f"{key}.sha256",
                f"= {sha256!r} must be the archive's sha256 (64 lowercase hex digits)",
                f'add sha256 = "$(sha256sum {value["archive"]})"',
            )
        if kind == "dir" and "sha256" in value:
            raise _fail(f"{key}.sha256", "is set for a directory", "remove it (only an archive has one)")
        return SdkSource(kind, key, path=value[kind], sha256=sha256)
    if "sha256" in value:
        raise _fail(f"{key}.sha256", f"is set for {kind} packages", "remove it (only an archive has one)")
    pattern = DEBIAN_PACKAGE if kind == "debian" else None
    packages = _strings(value[kind], f"{key}.{kind}", pattern, what="a Debian package name[:arch]")
    if not packages:
        raise _fail(f"{key}.{kind}", "is empty", "list the packages")
    return SdkSource(kind, key, packages=packages)


def _per_target(value: Any, section: str) -> dict[str, SdkSource]:
    if not isinstance(value, dict):
        raise _fail(section, "must be a table of target = { source }", f"write it as [tool.devkit.sdk.{section}]")
    sources = {}
    for target, source in value.items():
        try:
            recipe = find_recipe(target)
        except DevkitError as exc:
            raise _fail(f"{section}.{target}", f"names an unknown target ({exc.fix})", "use a recipe name") from None
        sources[recipe.name] = _source(source, f"{section}.{target}")
    return sources


def parse_sdk(table: Any) -> SdkSettings:
    if not isinstance(table, dict):
        raise _fail("", "must be a table", "write it as [tool.devkit.sdk]")
    known = {
        "name",
        "version",
        "headers",
        "libraries",
        "include-dirs",
        "lib-dirs",
        "runtime-libs",
        "env",
        "runtime-env",
    }
    for key in table:
        if key not in known | {"build", "runtime"}:
            raise _fail(key, "is not an SDK setting", f"use one of: {', '.join(sorted(known | {'build', 'runtime'}))}")
    for key in ("name", "version", "build"):
        if key not in table:
            raise _fail(key, "is missing", "every SDK needs name, version and [tool.devkit.sdk.build]")
    name, version = table["name"], table["version"]
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise _fail("name", f"= {name!r} must be an identifier (letters, digits, _)", 'e.g. name = "opencl"')
    try:
        Version(str(version))
    except InvalidVersion:
        raise _fail("version", f"= {version!r} is not a version", 'e.g. version = "3.0"') from None
    values: dict[str, Any] = {"name": name, "version": str(version)}
    for key in ("headers", "libraries", "include-dirs", "lib-dirs"):
        if key in table:
            values[key.replace("-", "_")] = _strings(table[key], key)
    if "runtime-libs" in table:
        values["runtime_libs"] = _strings(
            table["runtime-libs"], "runtime-libs", SONAME, what="a library file name (libX.so.N)"
        )
    for key, example in (("env", 'VENDOR_HOME = "/opt/vendor"'), ("runtime-env", 'POCL_DEVICES = "pthread pthread"')):
        if key in table:
            env = table[key]
            if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
                raise _fail(key, f"= {env!r} must be a table of strings", f"e.g. {key} = {{ {example} }}")
            values[key.replace("-", "_")] = dict(env)
    values["build"] = _per_target(table["build"], "build")
    if "runtime" in table:
        values["runtime"] = _per_target(table["runtime"], "runtime")
    return SdkSettings(**values)
