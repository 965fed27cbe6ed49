"""Which kernels a model ran on the device and which fell back to Paddle's CPU kernels.

Trains a model (MNIST LeNet, or one of the battery's: resnet_bn, transformer; --amp: under
mixed precision) for a few steps (and evaluates it) with kernel fallback enabled,
as users run by default, with Paddle's kernel-choice logging on; then reads that log.
Run by devkit verify in a fresh interpreter: the flags must be set before paddle loads.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
from pathlib import Path

from process_exit import exit_without_final_collection

# "<api> API kernel key: [stpu, NCHW, float32]" then "<kernel> kernel: {...}" for every
# dygraph op (forward: api.cc, backward: backward_api_base.cc); kernel_factory.cc adds
# "missing stpu kernel: <kernel>, ..., fallbacking to CPU one!" before a fallback.
KEY = re.compile(r"\] (\w+) API kernel key: \[(\w+), [^,]+, (\w+)\]")
KERNEL = re.compile(r"\] (\w+) kernel: [{\[]")
MISSING = re.compile(r"\] missing (\w+) kernel: (\w+),")
# The device library's op dump ({PREFIX}_DUMP_OP_ARGS=1): "[PREFIX] <kernel>: <op>" per device op.
# It shows the ops of kernels Paddle dispatches without a kernel-key line (the legacy
# check_finite_and_unscale GradScaler calls) reaching the device.
DUMP = re.compile(r"^\[(\w+)\] ([\w.-]+): (\w+)$")

Placements = dict[str, collections.Counter[str]]


def parse(lines: list[str], device: str) -> tuple[Placements, dict[str, Placements]]:
    """Where each kernel ran, in all and by dtype (the kernel key's)."""
    placements: Placements = collections.defaultdict(collections.Counter)
    by_dtype: dict[str, Placements] = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    key_backend, key_dtype, fell_back = None, "", None

    def count(kernel: str, where: str) -> None:
        placements[kernel][where] += 1
        by_dtype[kernel][key_dtype or "unknown"][where] += 1

    for line in lines:
        if m := KEY.search(line):
            key_backend, key_dtype, fell_back = m.group(2), m.group(3), None
        elif m := MISSING.search(line):
            # Counted here, not at the kernel line: some ops (dropout, layer_norm, contiguous) are
            # dispatched without the API's kernel-key line, and their fallback must not go unseen.
            fell_back = m.group(2)
            if m.group(1) == device:
                count(fell_back, "cpu_fallback")
        elif (m := KERNEL.search(line)) and key_backend is not None:
            kernel = m.group(1)
            if fell_back == kernel:
                pass  # counted at its "missing" line
            elif key_backend == device:
                count(kernel, "device")
            else:
                count(kernel, "cpu_inputs")  # the op's inputs were CPU tensors
            key_backend, key_dtype, fell_back = None, "", None
    return placements, by_dtype


def device_library_ops(lines: list[str], prefix: str) -> dict[str, list[str]]:
    """kernel -> the device-library ops it ran, from the op dump."""
    ops: dict[str, set[str]] = collections.defaultdict(set)
    for line in lines:
        if (m := DUMP.match(line)) and m.group(1) == prefix:
            ops[m.group(2)].add(m.group(3))
    return {k: sorted(v) for k, v in sorted(ops.items())}


# Under --amp: what must have run in float16 on the device (each model's GEMMs), and the scaler's op.
AMP_FLOAT16_KERNELS = {
    "mnist": ("conv2d", "conv2d_grad", "matmul", "matmul_grad"),
    "resnet_bn": ("conv2d", "conv2d_grad", "matmul", "matmul_grad"),
    "transformer": ("matmul", "matmul_grad"),
}
SCALER_KERNEL = "check_finite_and_unscale"


def on_device_in(by_dtype: dict[str, Placements], kernel: str, dtype: str) -> bool:
    runs = by_dtype[kernel].get(dtype) if kernel in by_dtype else None  # (.get: the table stays as it ran)
    return bool(runs and runs["device"])


def amp_problems(by_dtype: dict[str, Placements], library_ops: dict[str, list[str]], model: str) -> list[str]:
    problems = [
        f"{k} did not run in float16 on the device"
        for k in AMP_FLOAT16_KERNELS[model]
        if not on_device_in(by_dtype, k, "float16")
    ]
    if SCALER_KERNEL not in library_ops:
        problems.append(f"the GradScaler's {SCALER_KERNEL} never reached the device library")
    return problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", help="default: the only registered custom device type")
    p.add_argument("--data", help="the .npz of mnist / resnet_bn (transformer makes its own data)")
    p.add_argument("--model", default="mnist")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--amp", default="", choices=("", "O1", "O2"), help="train the model under mixed precision")
    p.add_argument("--out", required=True)
    args = p.parse_args()

    glog = Path(args.out).with_suffix(".glog")
    fd = os.open(glog, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)  # Paddle's log goes to stderr; keep it for parsing
    os.environ.update(
        FLAGS_enable_api_kernel_fallback="1",
        GLOG_v="0",
        GLOG_minloglevel="0",
        GLOG_vmodule="kernel_factory=3,api=6,backward_api_base=6",
    )
    if args.amp and args.device:
        os.environ[f"{args.device.upper()}_DUMP_OP_ARGS"] = "1"  # one line per device op, to stderr
    import battery  # imports paddle, after the flags above
    import check_common as common
    import mnist
    from plugin_exports import by_design, unimplemented_kernels
    from records import FallbackReportCheck
    from training_verdict import load_data, require_data

    if not args.device:
        types = common.paddle.device.get_all_custom_device_type() or []
        args.device = types[0] if len(types) == 1 else ""

    data = load_data(args.data)
    if data:
        data["x_test"], data["y_test"] = data["x_test"][:256], data["y_test"][:256]
    error = ""
    try:
        if args.model != "mnist":
            battery_data = battery.battery_data(args.model, data, 2024)
            battery.train_model(args.model, args.device, battery_data, args.steps, 64, 2024, amp=args.amp)
        elif args.amp:
            import paddle_amp

            paddle_amp.train_amp(args.device, require_data(data, "mnist"), args.steps, 64, 2024, args.amp)
        else:
            mnist.train(args.device, data, args.steps, 64, 2024)
    except Exception as exc:  # the report still says what ran until then
        error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    sys.stderr.flush()
    lines = glog.read_text(errors="replace").splitlines()
    placements, by_dtype = parse(lines, args.device)
    library_ops = device_library_ops(lines, args.device.upper()) if args.amp else {}
    problems = amp_problems(by_dtype, library_ops, args.model) if args.amp else []
    fell_back = sorted(k for k, c in placements.items() if c["cpu_fallback"])
    # kernels the device library lacks are unregistered on purpose: their fallback is by design
    designed = by_design(fell_back, unimplemented_kernels(args.device))
    fallback = [k for k in fell_back if k not in designed]
    on_device = sorted(k for k, c in placements.items() if c["device"] and not c["cpu_fallback"])
    report: FallbackReportCheck = {
        "name": "fallback report",
        "kind": "fallback",
        "passed": bool(placements) and not fallback and not error and not problems,
        "detail": (
            (f"under AMP {args.amp}: " if args.amp else "")
            + f"{len(placements)} kernels ran; "
            + (f"fell back to CPU: {', '.join(fallback)}" if fallback else f"all on {args.device}")
            + (f" but those the device library lacks, on the CPU by design: {', '.join(designed)}" if designed else "")
            + (
                f"; float16 on {args.device}: {', '.join(k for k in sorted(by_dtype) if on_device_in(by_dtype, k, 'float16'))}"
                if args.amp
                else ""
            )
            + (f"; {'; '.join(problems)}" if problems else "")
            + (f"; training failed: {error}" if error else "")
        ),
        "cpu_by_design": designed,
        "fallback_flag": "FLAGS_enable_api_kernel_fallback=1",
        "model": args.model,
        "kernels": {k: dict(c) for k, c in sorted(placements.items())},
        "on_device": on_device,
        "fallback": fallback,
        "dtypes": {k: {d: dict(c) for d, c in sorted(v.items())} for k, v in sorted(by_dtype.items())},
        "amp": args.amp,
        "device_library_ops": library_ops,
    }
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(report["detail"], flush=True)
    os._exit(0)  # skip Paddle's exit handlers, which can abort with verbose logging on


if __name__ == "__main__":
    exit_without_final_collection(main())
