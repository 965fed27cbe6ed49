"""Targets as data: one TOML file per target in recipes/.

Adding a target is adding a file; no code branches on architecture names.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..util.errors import InputError
from ..util.resources import resource_dir


@dataclass(frozen=True)
class RuntimePin:
    """A framework's reference runtime for a target: the version plugins are pinned to exactly,
    and the platform tag of its wheel on the package index (what pip download --platform takes)."""

    version: str
    wheel_platform: str


@dataclass(frozen=True)
class Recipe:
    name: str
    triple: str
    oci_platform: str
    wheel_platform: str
    elf_machine: str
    debian_arch: str
    # framework name -> the reference runtime the recipe pins ([runtimes.<name>]); a framework
    # without one publishes no runtime for the target
    runtimes: dict[str, RuntimePin] = field(default_factory=dict)
    cmake_system_processor: str = ""  # for the CMake toolchain file of a cross build
    cross_compiler: str = ""  # Debian package of its cross g++ on an x86_64 build machine ("": native there)
    qemu_handler: str = ""  # binfmt_misc handler that runs its binaries on x86_64 ("": native there)
    aliases: tuple[str, ...] = ()
    supports: dict[str, bool] = field(default_factory=dict)

    def runtime_version(self, framework: str) -> str | None:
        """The version of `framework`'s runtime the recipe pins; None: no runtime for the target."""
        pin = self.runtimes.get(framework)
        return pin.version if pin else None

    @property
    def has_runtime(self) -> bool:
        """Whether some framework publishes a runtime for the target (else: the device library only)."""
        return bool(self.runtimes)

    @property
    def wheel_tag(self) -> str:
        """The tag the build gives a wheel, before auditwheel retags it manylinux_X_Y."""
        return f"py3-none-{self.wheel_platform}"

    @property
    def wheel_arch(self) -> str:
        """The architecture part of the platform tag: linux_x86_64 -> x86_64."""
        return self.wheel_platform.removeprefix("linux_")

    def wheel_glob(self, prefix: str) -> str:
        """Wheels of this target, tagged linux_<arch> or manylinux_X_Y_<arch>."""
        return f"{prefix}*-py3-none-*linux*_{self.wheel_arch}.whl"

    def is_wheel_platform(self, platform: str) -> bool:
        return platform == self.wheel_platform or (
            platform.startswith("manylinux_") and platform.endswith(f"_{self.wheel_arch}")
        )

    def matches(self, machine: str) -> bool:
        """Whether `machine` (platform.machine() or an alias) names this target."""
        return machine.lower() in {self.name.lower(), *(a.lower() for a in self.aliases)}


_REQUIRED = ("name", "triple", "oci_platform", "wheel_platform", "elf_machine", "debian_arch")
_TYPES: dict[str, type] = {
    **dict.fromkeys(_REQUIRED, str),
    "runtimes": dict,
    "cmake_system_processor": str,
    "cross_compiler": str,
    "qemu_handler": str,
    "aliases": list,
    "supports": dict,
}


_EXPECTED: dict[type, str] = {str: "a string", list: "a list of strings", dict: "a table"}
_PIN_KEYS = ("version", "wheel_platform")


def _has_type(value: object, kind: type) -> bool:
    if kind is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, kind)


def _supports(path: Path, value: dict[str, object]) -> dict[str, bool]:
    if not all(isinstance(v, bool) for v in value.values()):
        raise InputError(f"recipe {path}: supports = {value!r} must be a table of true/false", f"fix {path.name}")
    return {k: bool(v) for k, v in value.items()}


def _runtimes(path: Path, value: dict[str, object]) -> dict[str, RuntimePin]:
    """[runtimes.<framework>] tables: version and wheel_platform, both non-empty strings."""
    pins = {}
    for framework, pin in value.items():
        if (
            not isinstance(pin, dict)
            or sorted(pin) != sorted(_PIN_KEYS)
            or not all(isinstance(v, str) and v for v in pin.values())
        ):
            raise InputError(
                f"recipe {path}: runtimes.{framework} = {pin!r} must be a table of version and wheel_platform",
                f'fix {path.name}, e.g. [runtimes.{framework}] version = "1.0" wheel_platform = "manylinux_2_28_x86_64"',
            )
        pins[framework] = RuntimePin(pin["version"], pin["wheel_platform"])
    return pins


def _load(path: Path) -> Recipe:
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"recipe {path} is not valid TOML: {exc}", "fix the file's syntax") from None
    except UnicodeDecodeError:
        raise InputError(f"recipe {path} is not UTF-8 text", "restore the file") from None
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise InputError(f"recipe {path} lacks {', '.join(missing)}", "add the missing keys")
    unknown = sorted(set(data) - set(_TYPES))
    if unknown:
        raise InputError(f"recipe {path} has unknown keys {', '.join(unknown)}", "remove or rename them")
    for key, value in data.items():
        if not _has_type(value, _TYPES[key]):
            raise InputError(
                f"recipe {path}: {key} = {value!r} must be {_EXPECTED[_TYPES[key]]}", f"fix {key} in {path.name}"
            )
    return Recipe(
        name=data["name"],
        triple=data["triple"],
        oci_platform=data["oci_platform"],
        wheel_platform=data["wheel_platform"],
        elf_machine=data["elf_machine"],
        debian_arch=data["debian_arch"],
        runtimes=_runtimes(path, data.get("runtimes", {})),
        cmake_system_processor=data.get("cmake_system_processor", ""),
        cross_compiler=data.get("cross_compiler", ""),
        qemu_handler=data.get("qemu_handler", ""),
        aliases=tuple(data.get("aliases", ())),
        supports=_supports(path, data.get("supports", {})),
    )


@functools.cache
def all_recipes() -> tuple[Recipe, ...]:
    """Every target, each file read once per process (callers ask for recipes at every step)."""
    return tuple(_load(p) for p in sorted(resource_dir("recipes").glob("*.toml")))


def find_recipe(arch: str) -> Recipe:
    """The recipe whose name or alias is `arch` (case-insensitive)."""
    recipes = all_recipes()
    for recipe in recipes:
        if recipe.matches(arch):
            return recipe
    names = ", ".join(sorted(n for r in recipes for n in (r.name, *r.aliases)))
    raise InputError(f"unknown target architecture {arch!r}", f"use one of: {names}")


# The machine builds run on, CI's hosted runners included: the recipes' cross_compiler and
# qemu_handler are its packages, one builder image serves every target, and Paddle publishes the most for it.
BUILD_MACHINE = "x86_64"


def build_machine_recipe() -> Recipe:
    return find_recipe(BUILD_MACHINE)
