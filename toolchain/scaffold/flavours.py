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
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..project.frameworks import FRAMEWORKS as ALL_FRAMEWORKS
from ..util.errors import InputError
from ..util.resources import resource_dir
from ..util.tomlfile import read_toml
from .c_api import STUBS_FILE, declared_ops, header_path, implementation

FRAMEWORKS = tuple(ALL_FRAMEWORKS)


def int8_engine_ops() -> tuple[str, ...]:
    """The device-library ops the int8 engine (templates/backend/paddle/engine/) calls: a flavour
    that lacks one gets no engine."""
    engine = resource_dir("templates") / "backend" / "paddle" / "engine"
    calls = "".join(p.read_text() for p in sorted(engine.glob("*.cc")))
    return tuple(op for op in declared_ops(header_path().read_text()) if f"{{{{ p }}}}_{op}(" in calls)


_FLAVOUR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


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
    # whether its ops compute the 16-bit float dtypes (FLOAT16, BFLOAT16): the adapters register
    # their kernels for float16/bfloat16 only then
    half_precision: bool = False
    # whether it has the ops of the int8 engine (paddle/engine/): the plugin has the engine only then
    int8_engine: bool = True
    # whether it runs compiled kernels (launch_kernel): the PyTorch adapter offers Inductor only then
    compiled_kernels: bool = True

    def context(self) -> dict[str, object]:
        return {
            "sdk_flavour": self.name,
            # what the flavour declares of a vendor SDK: [tool.devkit.sdk] (a partial of pyproject.toml)
            # and the SDK's CMake (device/sdk.cmake); a flavour on plain C++ has neither
            "sdk_declared": self.root is not None and (self.root / "_pyproject-sdk.toml").is_file(),
            "sdk_cmake": self.root is not None and (self.root / "device" / "sdk.cmake").is_file(),
            "sdk_summary": self.summary,
            "device_sources": list(self.device_sources),
            "half_precision": self.half_precision,
            "int8_engine": self.int8_engine,
            "compiled_kernels": self.compiled_kernels,
            "unregistered": {fw: list(self.unregistered.get(fw, ())) for fw in FRAMEWORKS},
        }


def available() -> list[str]:
    return sorted(p.name for p in (resource_dir("templates") / "sdks").iterdir() if (p / "flavour.toml").is_file())


def host_backed() -> Flavour:
    src = resource_dir("templates") / "backend" / "device" / "src"
    return Flavour(
        name="", device_sources=tuple(f"src/{p.name}" for p in sorted(src.glob("*.cc"))), half_precision=True
    )


def _with_stubs(flavour: Flavour) -> Flavour:
    """The flavour with stubs for the C API ops its device/src leaves out, and the kernels
    that therefore stay unregistered."""
    assert flavour.root is not None
    src = flavour.root / "device" / "src"
    found = implementation(flavour.name, (p.read_text() for p in sorted(src.glob("*.cc"))), src)
    sources = flavour.device_sources + ((STUBS_FILE,) if found.stubs else ())
    return dataclasses.replace(
        flavour,
        device_sources=sources,
        unregistered=found.unregistered,
        stubs=found.stubs,
        int8_engine=not set(int8_engine_ops()) & set(found.missing),
        compiled_kernels="launch_kernel" not in found.missing,
    )


def load_flavour(name: str | None) -> Flavour:
    """The host-backed device library (no name), one devkit ships (templates/sdks/<name>), or a
    vendor's flavour directory (a path holding flavour.toml)."""
    if not name:
        return host_backed()
    if name in available():
        return _read_flavour(resource_dir("templates") / "sdks" / name, name)
    root = Path(name).expanduser()
    if (root / "flavour.toml").is_file():
        return _read_flavour(root.resolve(), root.resolve().name)
    raise InputError(
        f"--sdk {name!r} is neither a device library devkit ships nor a directory holding flavour.toml",
        f"choose one of: {', '.join(available())}, pass your flavour's directory, or leave --sdk out for the "
        "host-backed device",
    )


def _read_flavour(root: Path, name: str) -> Flavour:
    toml = root / "flavour.toml"
    fix = (
        f"fix {toml} (summary, device-sources, optional replaces and half-precision: "
        "see templates/sdks/opencl/flavour.toml)"
    )
    if not _FLAVOUR_NAME.fullmatch(name):
        raise InputError(f"a flavour's directory name {name!r} is not a name (letters, digits, - and _)", fix)
    data = read_toml(toml, fix)
    try:
        flavour = Flavour(
            name=name,
            summary=str(data["summary"]),
            root=root,
            replaces=tuple(str(r) for r in data.get("replaces", ())),
            device_sources=tuple(str(s) for s in data["device-sources"]),
            half_precision=data.get("half-precision", False),
        )
    except (KeyError, TypeError) as exc:
        raise InputError(f"{toml} lacks {exc} or holds the wrong type", fix) from None
    if not isinstance(flavour.half_precision, bool):
        raise InputError(f"{toml} has half-precision = {flavour.half_precision!r}, which is not true or false", fix)
    for rel in (*flavour.replaces, *flavour.device_sources):
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise InputError(f"{toml} names {rel!r}, which is not a path inside the project", fix)
    return _with_stubs(flavour)
