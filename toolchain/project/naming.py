"""Rules for backend names and the identifiers derived from them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..util.errors import DevkitError

MAX_NAME_LENGTH = 32
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

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


@dataclass(frozen=True)
class BackendName:
    """A validated backend name and what the templates derive from it."""

    name: str  # as the user wrote it, e.g. "STPU"
    device_type: str  # Paddle's device type, e.g. "stpu"

    @property
    def upper(self) -> str:
        """Prefix of macros and environment variables (STPU_MEMORY_MB)."""
        return self.device_type.upper()

    @property
    def project_name(self) -> str:
        """The wheel's distribution name, which the CMake target of the plugin library also bears."""
        return f"paddle-custom-{self.device_type.replace('_', '-')}"


def _check_identifier(value: str, what: str, flag: str) -> None:
    if not value:
        raise DevkitError(f"the {what} is empty", f"pass a name such as STPU{flag}")
    if len(value) > MAX_NAME_LENGTH:
        raise DevkitError(
            f"the {what} {value!r} has {len(value)} characters, more than {MAX_NAME_LENGTH}",
            f"choose a shorter name{flag}",
        )
    if not _NAME_RE.match(value):
        raise DevkitError(
            f"the {what} {value!r} is invalid: it must start with a letter and contain only letters, digits or _",
            f"rename it, e.g. {re.sub(r'[^A-Za-z0-9_]', '_', value).lstrip('0123456789_') or 'STPU'}{flag}",
        )
    if value in CXX_KEYWORDS or value.lower() in CXX_KEYWORDS:
        raise DevkitError(
            f"the {what} {value!r} is a C/C++ keyword and cannot name generated code",
            f"choose another name, e.g. {value.upper()}_NPU{flag}",
        )
    if value.lower() in PADDLE_RESERVED:
        raise DevkitError(
            f"the {what} {value!r} is already used by Paddle for a built-in device",
            f"choose a name of your own, e.g. {value.upper()}X{flag}",
        )


def parse_backend_name(name: str, device_type: str | None = None) -> BackendName:
    """Validate NAME (and an explicit --device-type) or raise DevkitError."""
    _check_identifier(name, "backend name", "")
    dtype = device_type if device_type is not None else name.lower()
    if device_type is not None:
        _check_identifier(device_type, "device type", " with --device-type")
        if device_type != device_type.lower():
            raise DevkitError(
                f"the device type {device_type!r} has upper-case letters; Paddle device types are lower case",
                f"use --device-type {device_type.lower()}",
            )
    return BackendName(name=name, device_type=dtype)
