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
    # a package pinned as apt takes it: "ocl-icd-opencl-dev=2.3.1-1" (unpinned: the versions apt resolves)
    # { dir = "/opt/vendor/sdk-3.0" }   { archive = "https://.../sdk.tar.gz", sha256 = "..." }
    # { pip = ["vendor-sdk==3.0"], hashes = { vendor-sdk = ["sha256:..."] } }

    [tool.devkit.sdk.runtime]          # what verify images install (the runtime, not the headers)
    x86_64 = { debian = ["ocl-icd-libopencl1", "pocl-opencl-icd"] }

Parsed once into frozen dataclasses; every key checked, errors name it. Values reach CMake, the
environment of the build, generated code and METADATA, so each is matched whole against what it
may be (no surrounding whitespace, no separators), and the environment cannot override devkit's own
variables. Relative `dir`/`archive` paths are the project directory's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from ..util.errors import DevkitError, InputError
from .naming import is_version
from .recipes import Recipe, find_recipe

SOURCE_KINDS = ("dir", "archive", "debian", "pip")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
SHA256 = re.compile(r"[0-9a-f]{64}")
# name[:arch][=version], as apt takes it: [epoch:]upstream[-revision] (no space, quote or separator)
DEBIAN_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+)?(=([0-9]+:)?[0-9][A-Za-z0-9.+~]*(-[A-Za-z0-9.+~]+)*)?")
# No quote, separator or space: these reach C and Python string literals and CMake lists.
SONAME = re.compile(r"lib[A-Za-z0-9_+-][A-Za-z0-9_.+-]*\.so(\.[0-9]+)*")
LIBRARY = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*")  # -l<name>
_PART = r"(?:[A-Za-z0-9_+@-]|\.(?!\.)|\{triple\})+"  # a path component, never "..", "{triple}" allowed
RELATIVE_PATH = re.compile(rf"{_PART}(?:/{_PART})*")
# pip: exactly one distribution at one version, nothing pip would read as an option, URL or path.
PIP_PIN = re.compile(r"([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==([0-9][0-9A-Za-z.+!_-]*)")
PIP_HASH = re.compile(r"sha(256|384|512):[0-9a-f]{64,128}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What devkit, the compiler, CMake, scikit-build-core, pip, ccache, the dynamic loader and Python
# read from the environment of a build or a check: an SDK's env must not change them.
RESERVED_ENV = frozenset(
    ("PATH", "HOME", "SHELL", "IFS", "ENV", "BASH_ENV", "TMPDIR", "ON_INFER", "PADDLE_INFERENCE_DIR")
    + ("CC", "CXX", "CPP", "AR", "LD", "AS", "NM", "RANLIB", "STRIP", "MAKEFLAGS", "MAKE", "NINJA_STATUS")
    + ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LIBS", "CUSTOM_DEVICE_ROOT", "PKG_CONFIG_PATH")
    + ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "SOURCE_DATE_EPOCH")
)
RESERVED_ENV_PREFIXES = (
    *("DEVKIT_", "CCACHE_", "LD_", "PYTHON", "CMAKE_", "SKBUILD_", "PIP_", "PADDLE_", "TORCH_", "FLAGS_"),
    *("GCC_", "COMPILER_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "DOCKER_"),
)

# The C library's allocator and loader tunables (and other allocators'): set for verify, the checks
# would run the device library in a process unlike any user's.
ALLOCATOR_ENV_PREFIXES = ("GLIBC_TUNABLES", "MALLOC_", "JEMALLOC_", "TCMALLOC_")


@dataclass(frozen=True)
class SdkSource:
    """Where the SDK (or its runtime) comes from for one target: exactly one kind."""

    kind: str  # dir | archive | debian | pip
    key: str  # tool.devkit.sdk.build.<target>: what errors name
    path: str = ""  # dir: a directory on the build machine; archive: a path or URL
    sha256: str = ""  # archive
    packages: tuple[str, ...] = ()  # debian ("name[:arch][=version]") or pip ("name==version")
    hashes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # pip: normalised name -> allowed "sha256:..." hashes

    @property
    def pinned(self) -> bool:
        """Debian packages each pinned to a version: nothing left for apt to choose."""
        return all("=" in p for p in self.packages)

    def requirements(self) -> list[str]:
        """pip's requirement lines: `name==version`, with `--hash=` options when hashes are pinned."""
        known = dict(self.hashes)
        return [
            " ".join([p, *(f"--hash={h}" for h in known.get(_normalised(p.partition("==")[0]), ()))])
            for p in self.packages
        ]


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
            raise InputError(
                f"pyproject.toml: tool.devkit.sdk.build has no entry for {recipe.name}, so the {self.name} SDK "
                f"cannot be provided for it",
                f'add e.g. {recipe.name} = {{ dir = "/opt/{self.name}-{self.version}" }} under [tool.devkit.sdk.build]',
            )
        return self.build[recipe.name]

    def dirs(self, recipe: Recipe, which: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(d.replace("{triple}", recipe.triple) for d in which)


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _fail(key: str, problem: str, fix: str) -> DevkitError:
    return InputError(f"pyproject.toml: tool.devkit.sdk{'.' + key if key else ''} {problem}", fix)


def _strings(value: Any, key: str, pattern: re.Pattern[str] | None = None, *, what: str = "") -> tuple[str, ...]:
    """A list of non-empty strings at `key` (each matching `pattern`, described by `what`)."""
    short = key.rsplit(".", 1)[-1]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(key, f"= {value!r} must be a list of non-empty strings", f'e.g. {short} = ["..."]')
    for v in value:
        if v.startswith("/") and key.endswith("-dirs"):
            raise _fail(key, f"has {v!r}, an absolute path", "give it relative to the SDK's root")
        if pattern is not None and not pattern.fullmatch(v):
            raise _fail(key, f"has {v!r}, which is not {what}", f"fix or remove {v!r}")
    return tuple(value)


def _path(value: str, base: Path | None) -> str:
    """A source's `dir` or `archive` path as the build machine opens it: ~ is the user's home, a
    relative path the project directory's (never the directory devkit happens to run in)."""
    if re.match(r"https?://", value):
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() or base is None else base / path)


def _env(value: Any, key: str, example: str, sdk_variable: str, switches: tuple[str, ...]) -> dict[str, str]:
    """An environment table; `switches`: the prefixes of the device's own variables (STPU_: its
    debugging switches and modes, which devkit sets for verify and the user for runs of their own)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise _fail(key, f"= {value!r} must be a table of strings", f"e.g. {key} = {{ {example} }}")
    for name, text in value.items():
        if not ENV_NAME.fullmatch(name):
            raise _fail(key, f"has {name!r}, which is not an environment variable name", "use letters, digits and _")
        upper = name.upper()
        if upper in RESERVED_ENV or upper.startswith((*RESERVED_ENV_PREFIXES, f"{sdk_variable}_SDK_")):
            raise _fail(
                key,
                f"has {name}, which devkit, the compiler or the loader sets or reads itself",
                f"remove {name} (devkit sets the build's own variables; give the SDK's under a name of its own)",
            )
        if upper.startswith(tuple(f"{prefix}_" for prefix in switches)):
            raise _fail(
                key,
                f"has {name}, which is one of the device's own switches ({', '.join(f'{p}_*' for p in switches)}: "
                "modes, fallback, dumps), which verify sets itself so that it checks the device as built",
                f"remove {name} (set a switch in your shell for a run of your own, e.g. {switches[0]}_DUMP_OP_ARGS=1)",
            )
        if upper.startswith(ALLOCATOR_ENV_PREFIXES):
            raise _fail(
                key,
                f"has {name}, which tunes the C library's allocator or loader under the device, so the checks "
                "would not run it as users do",
                f"remove {name}",
            )
        if "\0" in text:
            raise _fail(f"{key}.{name}", "contains a NUL character", "remove it")
    return dict(value)


def _pip_packages(value: dict[str, Any], key: str) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    packages = _strings(value["pip"], f"{key}.pip", PIP_PIN, what="a pinned requirement (name==version)")
    for p in packages:
        try:
            Version(p.partition("==")[2])
        except InvalidVersion:
            raise _fail(
                f"{key}.pip", f"has {p!r}, whose version is not a version", "pin e.g. vendor-sdk==3.0"
            ) from None
    if "hashes" not in value:
        return packages, ()
    table = value["hashes"]
    if not isinstance(table, dict):
        raise _fail(
            f"{key}.hashes", "must be a table of package = [hashes]", 'e.g. hashes = { vendor-sdk = ["sha256:..."] }'
        )
    names = {_normalised(p.partition("==")[0]) for p in packages}
    hashes = {}
    for name, listed in table.items():
        if _normalised(name) not in names:
            raise _fail(
                f"{key}.hashes.{name}", "names a package pip does not list", f"remove it or add {name}==... to pip"
            )
        hashes[_normalised(name)] = _strings(listed, f"{key}.hashes.{name}", PIP_HASH, what="a hash (sha256:<hex>)")
    for name in sorted(names - set(hashes)):  # pip --require-hashes wants one for every package
        raise _fail(f"{key}.hashes", f"has no entry for {name}", f'add {name} = ["sha256:..."] (pip download shows it)')
    return packages, tuple(sorted(hashes.items()))


def _source(value: Any, key: str, base: Path | None) -> SdkSource:
    if not isinstance(value, dict):
        raise _fail(key, f"= {value!r} must be a table", f'e.g. {key.rsplit(".", 1)[-1]} = {{ dir = "/opt/sdk" }}')
    kinds = [k for k in SOURCE_KINDS if k in value]
    unknown = set(value) - {*SOURCE_KINDS, "sha256", "hashes"}
    if unknown:
        raise _fail(f"{key}.{sorted(unknown)[0]}", "is not an SDK source key", f"use one of: {', '.join(SOURCE_KINDS)}")
    if len(kinds) != 1:
        raise _fail(key, f"must name exactly one of {', '.join(SOURCE_KINDS)} (it has {len(kinds)})", "keep one")
    kind = kinds[0]
    if "hashes" in value and kind != "pip":
        raise _fail(f"{key}.hashes", f"is set for a {kind}", "remove it (only pip packages have hashes)")
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
        return SdkSource(kind, key, path=_path(value[kind], base), sha256=sha256)
    if "sha256" in value:
        raise _fail(f"{key}.sha256", f"is set for {kind} packages", "remove it (only an archive has one)")
    if not value[kind]:
        raise _fail(f"{key}.{kind}", "is empty", "list the packages")
    if kind == "pip":
        packages, hashes = _pip_packages(value, key)
        return SdkSource(kind, key, packages=packages, hashes=hashes)
    packages = _strings(value[kind], f"{key}.{kind}", DEBIAN_PACKAGE, what="a Debian package name[:arch][=version]")
    return SdkSource(kind, key, packages=packages)


def _per_target(value: Any, section: str, base: Path | None) -> dict[str, SdkSource]:
    if not isinstance(value, dict):
        raise _fail(section, "must be a table of target = { source }", f"write it as [tool.devkit.sdk.{section}]")
    sources = {}
    for target, source in value.items():
        try:
            recipe = find_recipe(target)
        except DevkitError as exc:
            raise _fail(f"{section}.{target}", f"names an unknown target ({exc.fix})", "use a recipe name") from None
        sources[recipe.name] = _source(source, f"{section}.{target}", base)
    return sources


def parse_sdk(table: Any, base: Path | None = None, switches: tuple[str, ...] = ()) -> SdkSettings:
    """[tool.devkit.sdk]; `base`: the project directory relative source paths are taken from;
    `switches`: the prefixes of the device's own environment variables, which env tables must not set."""
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
    if not isinstance(version, str):
        raise _fail("version", f"= {version!r} must be a string", 'quote it, e.g. version = "3.0"')
    if not is_version(version):
        raise _fail("version", f"= {version!r} is not a version", 'e.g. version = "3.0"')
    values: dict[str, Any] = {"name": name, "version": version}
    for key, pattern, what in (
        ("headers", RELATIVE_PATH, "a header path (relative, no ..)"),
        ("libraries", LIBRARY, "a library name (as -l takes it)"),
        ("include-dirs", RELATIVE_PATH, "a directory inside the SDK (relative, no ..)"),
        ("lib-dirs", RELATIVE_PATH, "a directory inside the SDK (relative, no ..)"),
    ):
        if key in table:
            values[key.replace("-", "_")] = _strings(table[key], key, pattern, what=what)
    if "runtime-libs" in table:
        values["runtime_libs"] = _strings(
            table["runtime-libs"], "runtime-libs", SONAME, what="a library file name (libX.so.N)"
        )
    for key, example in (("env", 'VENDOR_HOME = "/opt/vendor"'), ("runtime-env", 'POCL_DEVICES = "pthread pthread"')):
        if key in table:
            values[key.replace("-", "_")] = _env(table[key], key, example, name.upper(), switches)
    values["build"] = _per_target(table["build"], "build", base)
    if "runtime" in table:
        values["runtime"] = _per_target(table["runtime"], "runtime", base)
    return SdkSettings(**values)
