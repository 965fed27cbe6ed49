"""The kernel-signatures check: every kernel the plugin registered, as Paddle parsed it at
load time, against Paddle's own (CPU) kernel of the same name."""

from __future__ import annotations

import re

from check_common import paddle
from plugin_exports import plugin_function
from records import KernelSignature, KernelSignaturesCheck

ATTRIBUTE_TYPES = (
    "undefined",
    "bool",
    "int32",
    "int64",
    "float32",
    "float64",
    "string",
    "bools",
    "int32s",
    "int64s",
    "float32s",
    "float64s",
    "strings",
    "Scalar",
    "Scalars",
    "IntArray",
    "DataType",
    "DataLayout",
    "Place",
)  # phi::AttributeType, in order


def _parse_args_def(text: str) -> dict[str, list[str]]:
    parts = {}
    for kind, _count, items in re.findall(r"(inputs|attributes|outputs) (\d+) \[([^\]]*)\]", text):
        parts[kind] = [i for i in items.split(",") if i]
    return parts


def _describe_difference(ours: dict[str, list[str]], paddles: dict[str, list[str]]) -> str:
    diffs = []
    for kind in ("inputs", "attributes", "outputs"):
        a, b = ours.get(kind, []), paddles.get(kind, [])
        if a == b:
            continue
        if kind == "attributes":

            def names(xs: list[str]) -> str:
                return ", ".join(
                    ATTRIBUTE_TYPES[int(x)] if x.isdigit() and int(x) < len(ATTRIBUTE_TYPES) else x for x in xs
                )

            diffs.append(f"attributes ({names(a)}) but Paddle's are ({names(b)})")
        elif len(a) != len(b):
            diffs.append(f"{len(a)} {kind} but Paddle's kernel has {len(b)}")
        else:
            diffs.append(f"{kind} of other tensor types than Paddle's")
    return "; ".join(diffs)


def check_kernel_signatures(device: str) -> KernelSignaturesCheck:
    """Each registered kernel's inputs, attributes and outputs vs the installed Paddle's CPU kernel."""
    path, report_fn = plugin_function(device, "kernel_report")
    if report_fn is None:
        return {
            "name": "kernel signatures",
            "kind": "kernels",
            "passed": False,
            "detail": f"no loaded library exports {device}_kernel_report (rebuild with this devkit's template)",
        }
    import ctypes

    report_fn.restype = ctypes.c_char_p
    mismatched: list[str] = []
    unmatched: list[str] = []
    kernels: dict[str, KernelSignature] = {}
    for line in report_fn().decode().splitlines():
        name, ours, paddles = line.split("\t")
        kernels[name] = {"plugin": ours, "paddle": paddles}
        if paddles == "-":
            unmatched.append(name)
        elif ours != paddles:
            why = _describe_difference(_parse_args_def(ours), _parse_args_def(paddles))
            mismatched.append(f"{name}: {why}")
    return {
        "name": "kernel signatures",
        "kind": "kernels",
        "passed": not mismatched and bool(kernels),
        "detail": (
            f"{len(kernels) - len(mismatched) - len(unmatched)}/{len(kernels)} kernels match Paddle "
            f"{paddle.__version__}'s definitions"
            + (f"; MISMATCH {'; '.join(mismatched)}" if mismatched else "")
            + (f"; no CPU kernel to compare: {', '.join(unmatched)}" if unmatched else "")
        ),
        "library": path,
        "mismatched": mismatched,
        "kernels": kernels,
    }
