"""Device-library flavours of a rendered backend: `devkit new-backend NAME --sdk <flavour>`.

The default is the host-backed device library (templates/backend/device/src). A flavour is a
directory templates/sdks/<name>/: flavour.toml (what it replaces) and templates rendered over
templates/backend, the same relative path winning; its top-level files named _* are partials
the backend's templates include (_pyproject-sdk.toml: the [tool.devkit.sdk] declaration). The
C API ops its device/src does not define get generated stubs, and the framework kernels that
need them stay unregistered (c_api.py).
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..project.frameworks import FRAMEWORKS as ALL_FRAMEWORKS
from ..util.errors import InputError
from ..util.resources import resource_dir
from .c_api import STUBS_FILE, implementation

FRAMEWORKS = tuple(ALL_FRAMEWORKS)


@dataclass(frozen=True)
class Flavour:
    name: str  # "" for the host-backed device library
    summary: str = ""
    root: Path | None = None  # templates/sdks/<name>
    replaces: tuple[str, ...] = ()  # directories of templates/backend left out
    device_sources: tuple[str, ...] = ()  # device/CMakeLists.txt's sources
    # framework -> kernel patterns the adapters do not register (the device library lacks their ops)
    unregistered: dict[str, tuple[str, ...]] = field(default_factory=dict)
    stubs: str = ""  # template text of device/src/unimplemented.cc ("": the C API is complete)

    def context(self) -> dict[str, object]:
        return {
            "sdk_flavour": self.name,
            "sdk_summary": self.summary,
            "device_sources": list(self.device_sources),
            "unregistered": {fw: list(self.unregistered.get(fw, ())) for fw in FRAMEWORKS},
        }


def available() -> list[str]:
    return sorted(p.name for p in (resource_dir("templates") / "sdks").iterdir() if (p / "flavour.toml").is_file())


def host_backed() -> Flavour:
    src = resource_dir("templates") / "backend" / "device" / "src"
    return Flavour(name="", device_sources=tuple(f"src/{p.name}" for p in sorted(src.glob("*.cc"))))


def _with_stubs(flavour: Flavour) -> Flavour:
    """The flavour with stubs for the C API ops its device/src leaves out, and the kernels
    that therefore stay unregistered."""
    assert flavour.root is not None
    src = flavour.root / "device" / "src"
    found = implementation(flavour.name, (p.read_text() for p in sorted(src.glob("*.cc"))))
    sources = flavour.device_sources + ((STUBS_FILE,) if found.stubs else ())
    return dataclasses.replace(flavour, device_sources=sources, unregistered=found.unregistered, stubs=found.stubs)


def load_flavour(name: str | None) -> Flavour:
    if not name:
        return host_backed()
    if name not in available():
        raise InputError(
            f"--sdk {name!r} is not a device library devkit can render",
            f"choose one of: {', '.join(available())} (or leave --sdk out for the host-backed device)",
        )
    root = resource_dir("templates") / "sdks" / name
    data = tomllib.loads((root / "flavour.toml").read_text())
    return _with_stubs(
        Flavour(
            name=name,
            summary=data["summary"],
            root=root,
            replaces=tuple(data.get("replaces", ())),
            device_sources=tuple(data["device-sources"]),
        )
    )
