"""Rules for backend names and the identifiers derived from them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..util.errors import InputError

MAX_NAME_LENGTH = 32
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # always fullmatch: `$` lets a final "\n" through
VERSION = re.compile(r"[0-9][0-9A-Za-z.+!_-]*")  # and packaging's Version must accept it
PACKAGE_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508

# C and C++ keywords (and the alternative operator spellings): a device type
# becomes a C identifier prefix and a C++ namespace in the generated code.
CXX_KEYWORDS = frozenset(
    [
        "alignas",
        "alignof",
        "and",
        "and_eq",
        "asm",
        "auto",
        "bitand",
        "bitor",
        "bool",
        "break",
        "case",
        "catch",
        "char",
        "char8_t",
        "char16_t",
        "char32_t",
        "class",
        "compl",
        "concept",
        "const",
        "consteval",
        "constexpr",
        "constinit",
        "const_cast",
        "continue",
        "co_await",
        "co_return",
        "co_yield",
        "decltype",
        "default",
        "delete",
        "do",
        "double",
        "dynamic_cast",
        "else",
        "enum",
        "explicit",
        "export",
        "extern",
        "false",
        "float",
        "for",
        "friend",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "mutable",
        "namespace",
        "new",
        "noexcept",
        "not",
        "not_eq",
        "nullptr",
        "operator",
        "or",
        "or_eq",
        "private",
        "protected",
        "public",
        "register",
        "reinterpret_cast",
        "requires",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "static_assert",
        "static_cast",
        "struct",
        "switch",
        "template",
        "this",
        "thread_local",
        "throw",
        "true",
        "try",
        "typedef",
        "typeid",
        "typename",
        "union",
        "unsigned",
        "using",
        "virtual",
        "void",
        "volatile",
        "wchar_t",
        "while",
        "xor",
        "xor_eq",
        "_Alignas",
        "_Alignof",
        "_Atomic",
        "_Bool",
        "_Complex",
        "_Generic",
        "_Imaginary",
        "_Noreturn",
        "_Static_assert",
        "_Thread_local",
    ]
)

# Place and backend names Paddle already owns; a plugin registering one of
# these either fails to load or shadows a built-in device.
PADDLE_RESERVED = frozenset(
    [
        "cpu",
        "gpu",
        "gpu_pinned",
        "cuda",
        "cuda_pinned",
        "dcu",
        "xpu",
        "xpu_pinned",
        "ipu",
        "npu",
        "npu_pinned",
        "mlu",
        "custom",
        "custom_cpu",
        "custom_device",
        "onednn",
        "mkldnn",
        "gpudnn",
        "cudnn",
        "kps",
        "all",
        "all_backend",
        "undefined",
        "fake_cpu",
        "phi",
        "paddle",
    ]
)


# PyTorch's device-string parser takes letters and _ only in a device type (c10/core/Device.cpp);
# Paddle also takes digits. One device type names the device in both frameworks.
_TORCH_DEVICE_TYPE_RE = re.compile(r"[a-z_]+")
TORCH_NAMES_FILE = Path(__file__).with_name("torch_names.txt")


@lru_cache(maxsize=1)
def torch_reserved() -> frozenset[str]:
    """Names PyTorch already uses where a backend's device type goes (see torch_names.txt)."""
    lines = TORCH_NAMES_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


@dataclass(frozen=True)
class BackendName:
    """A validated backend name and what the templates derive from it."""

    name: str  # as the user wrote it, e.g. "STPU"
    device_type: str  # Paddle's device type, e.g. "stpu"

    @property
    def upper(self) -> str:
        """Prefix of macros and environment variables (STPU_MEMORY_MB)."""
        return switch_prefix(self.device_type)

    @property
    def project_name(self) -> str:
        """The wheel's distribution name, which the CMake target of the plugin library also bears."""
        return f"paddle-custom-{self.device_type.replace('_', '-')}"


def switch_prefix(device_type: str) -> str:
    """What the generated project's macros and debugging switches begin with (`{{ NAME }}` in the
    templates: STPU_FALLBACK_OPS): the device type in upper case, whatever the backend's name."""
    return device_type.upper()


def _check_identifier(value: str, what: str, flag: str) -> None:
    if not value:
        raise InputError(f"the {what} is empty", f"pass a name such as STPU{flag}")
    if len(value) > MAX_NAME_LENGTH:
        raise InputError(
            f"the {what} {value!r} has {len(value)} characters, more than {MAX_NAME_LENGTH}",
            f"choose a shorter name{flag}",
        )
    if not _NAME_RE.fullmatch(value):
        raise InputError(
            f"the {what} {value!r} is invalid: it must start with a letter and contain only letters, digits or _",
            f"rename it, e.g. {re.sub(r'[^A-Za-z0-9_]', '_', value).lstrip('0123456789_') or 'STPU'}{flag}",
        )
    if value in CXX_KEYWORDS or value.lower() in CXX_KEYWORDS:
        raise InputError(
            f"the {what} {value!r} is a C/C++ keyword and cannot name generated code",
            f"choose another name, e.g. {value.upper()}_NPU{flag}",
        )
    if value.lower() in PADDLE_RESERVED:
        raise InputError(
            f"the {what} {value!r} is already used by Paddle for a built-in device",
            f"choose a name of your own, e.g. {value.upper()}X{flag}",
        )


def _suggest(device_type: str) -> str:
    """A device type both frameworks take, close to `device_type`."""
    letters = re.sub(r"_+", "_", re.sub(r"[^a-z_]", "", device_type.replace("cuda", ""))).strip("_")
    for candidate in (letters, f"{letters}_dev", "stpu"):
        if candidate and candidate not in torch_reserved() and candidate not in PADDLE_RESERVED:
            return candidate
    return "stpu"


def _check_device_type(device_type: str, origin: str = "") -> None:
    """The rules beyond a C identifier that the device type meets because both frameworks name the
    device with it (the generated project always has the Paddle and the PyTorch adapter)."""
    fix = f"pass --device-type {_suggest(device_type)} (or another name)"
    what = f"device type {device_type!r}{origin}"
    if "__" in device_type or device_type.endswith("_"):
        raise InputError(
            f"the {what} would give C names with a double underscore ({device_type}_malloc), which C and C++ reserve",
            fix,
        )
    if "cuda" in device_type:
        raise InputError(
            f"the {what} contains 'cuda', which Paddle's set_device rewrites to 'gpu' (\"{device_type}:0\" would "
            f'become "{device_type.replace("cuda", "gpu")}:0")',
            fix,
        )
    if not _TORCH_DEVICE_TYPE_RE.fullmatch(device_type):
        raise InputError(
            f"the {what} cannot name a PyTorch device: torch.device() takes only letters and _ "
            "in a device type (Paddle also takes digits; the generated project serves both)",
            fix,
        )
    if device_type in torch_reserved():
        raise InputError(
            f"the {what} is already used by PyTorch (a device type, or an attribute of torch, "
            f"Tensor or Module that the backend's torch.{device_type} and tensor.{device_type}() would replace)",
            fix,
        )


def check_name(name: str) -> None:
    """The rules a backend's name meets (it names generated code and files), or InputError."""
    _check_identifier(name, "backend name", "")


def check_device_type(device_type: str) -> None:
    """The rules an explicit device type meets (C identifiers, both frameworks' device), or InputError."""
    _check_identifier(device_type, "device type", " with --device-type")
    if device_type != device_type.lower():
        raise InputError(
            f"the device type {device_type!r} has upper-case letters; Paddle and PyTorch device types are lower case",
            f"use --device-type {device_type.lower()}",
        )
    _check_device_type(device_type)


def is_version(text: str) -> bool:
    """A PEP 440 version written as it is meant (no surrounding space, separator or `v`): it
    becomes part of file names (wheels, bundles) and reaches CMake and METADATA."""
    try:
        Version(text)
    except InvalidVersion:
        return False
    return VERSION.fullmatch(text) is not None


def is_package_name(text: str) -> bool:
    """A Python distribution name as PEP 508 spells one: it starts wheel and bundle file names."""
    return PACKAGE_NAME.fullmatch(text) is not None


def parse_backend_name(name: str, device_type: str | None = None) -> BackendName:
    """Validate NAME (and an explicit --device-type) or raise DevkitError."""
    check_name(name)
    if device_type is not None:
        check_device_type(device_type)
        return BackendName(name=name, device_type=device_type)
    _check_device_type(name.lower(), f" (the name {name!r} in lower case)")
    return BackendName(name=name, device_type=name.lower())
