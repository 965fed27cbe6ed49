"""Checks of an installed Paddle device plugin, run inside a fresh environment.

This file is executed by `devkit verify` with the verify environment's Python
(paddlepaddle + the plugin wheel and nothing else), so it imports only Paddle,
NumPy and the standard library. It writes a JSON report; devkit renders it.

    python plugin_checks.py --device stpu --data data.npz --steps 200 --out report.json
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path

import paddle_amp
from battery import BATTERY, check_battery
from check_common import log, paddle
from device_trace import check_profile
from kernel_checks import (
    check_ops,
    check_queued_work,
    check_strided_views,
    check_with_kernels_left_out,
    cpu_fallback,
    registered_dtypes,
    registered_kernels,
    with_kernels_left_to_the_cpu,
)
from kernel_signatures import check_kernel_signatures
from mnist import check_mnist, train
from paddle_basics import check_devices, check_registration, check_tensor
from paddle_contract import check_contract
from plugin_exports import unimplemented_kernels
from process_exit import exit_without_final_collection
from records import CheckRecord, CpuCurve, VerifyReport
from training_verdict import Dataset, add_training_arguments, cpu_reference, load_data, timed, write_report


def mnist_with_fallback_by_design(
    device: str,
    data: Dataset | None,
    training: tuple[int, int, int],
    reference: str | None,
    unimplemented: list[str],
) -> CheckRecord:
    """LeNet; a device library that lacks some ops trains with Paddle's CPU running them."""
    with cpu_fallback(bool(unimplemented)):
        entry = check_mnist(device, data, *training, reference)
    if unimplemented:
        entry["cpu_by_design"] = unimplemented
        entry["detail"] = (
            entry.get("detail", "") + f"; kernels the device library lacks ran on the CPU: {', '.join(unimplemented)}"
        )
    return entry


def amp_checks(
    device: str, data: Dataset | None, training: tuple[int, int, int], level: str, reference: str | None
) -> list[tuple[str, str, Callable[[], CheckRecord]]]:
    """--amp LEVEL, in place of the float32 mnist check: LeNet under AMP vs the float32 CPU curve,
    an overflowing step, and bfloat16 through explicit casts (a third of the steps). The CPU curve
    is trained (or read from `reference`) once, for both training checks."""
    steps, batch, seed = training

    @cache
    def cpu_curve() -> CpuCurve:
        return cpu_reference(
            lambda: train("cpu", data, steps, batch, seed),
            f"paddle {paddle.__version__}",
            {"steps": steps, "batch_size": batch, "seed": seed},
            reference,
        )

    return [
        (
            "mnist",
            f"mnist amp {level} ({steps} steps)",
            lambda: paddle_amp.check_amp(device, data, *training, level, cpu_curve),
        ),
        ("mnist", f"amp overflow ({level})", lambda: paddle_amp.check_overflow(device, data, batch, seed, level)),
        (
            "mnist",
            "bfloat16 (explicit casts)",
            lambda: paddle_amp.check_bfloat16(device, data, max(steps // 3, 40), batch, seed, cpu_curve),
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", help="expected device type; default: the only registered one")
    parser.add_argument("--model", default="mnist", choices=("mnist", *BATTERY), help="the model to train")
    parser.add_argument("--only", default="", help="comma-separated checks to run (default: all)")
    parser.add_argument("--amp", default="", choices=("", "O1", "O2"), help="train the model under mixed precision")
    parser.add_argument(
        "--profile", default="", metavar="FILE", help="also profile a step: its trace into FILE beside --out"
    )
    add_training_arguments(parser)
    args = parser.parse_args(argv)

    paddle.seed(args.seed)
    types = paddle.device.get_all_custom_device_type() or []
    device = args.device or (types[0] if len(types) == 1 else "")
    report: VerifyReport = {
        "paddle_version": paddle.__version__,
        "device": device,
        "fallback_flag": paddle.get_flags(["FLAGS_enable_api_kernel_fallback"]),
        "checks": [],
    }
    if not device:
        report["checks"].append(
            {
                "name": "registration",
                "kind": "basics",
                "passed": False,
                "detail": f"cannot tell the plugin's device type; registered: {types}",
            }
        )
    else:
        wanted = set(filter(None, args.only.split(","))) or {
            "tensor",
            "devices",
            "queued-work",
            "contract",
            "kernel-signatures",
            "ops",
            "strided-views",
            args.model,
            *(["profile"] if args.profile else []),
        }
        log("check registration")
        report["checks"].append(timed(lambda: check_registration(device)))
        if report["checks"][-1]["passed"]:
            report["registered_kernels"] = registered = registered_kernels(device)
            report["unimplemented_kernels"] = unimplemented = unimplemented_kernels(device)
            data = load_data(args.data)
            training = (args.steps, args.batch_size, args.seed)
            checks: list[tuple[str, str, Callable[[], CheckRecord]]] = [
                ("kernel-signatures", "kernel signatures", lambda: check_kernel_signatures(device)),
                ("tensor", "tensor", lambda: with_kernels_left_to_the_cpu(lambda: check_tensor(device), unimplemented)),
                (
                    "devices",
                    "devices",
                    lambda: with_kernels_left_to_the_cpu(
                        lambda: check_with_kernels_left_out("devices", check_devices, device), unimplemented
                    ),
                ),
                (
                    "queued-work",
                    "queued work",
                    lambda: with_kernels_left_to_the_cpu(
                        lambda: check_with_kernels_left_out("queued work", check_queued_work, device), unimplemented
                    ),
                ),
                (
                    "contract",
                    "framework contract",
                    lambda: with_kernels_left_to_the_cpu(
                        lambda: check_contract(
                            device,
                            half_precision="float16" in registered_dtypes(device).get("matmul", set()),
                            unimplemented=unimplemented,
                        ),
                        unimplemented,
                    ),
                ),
                ("ops", "ops vs cpu", lambda: check_ops(device, registered, unimplemented)),
                (
                    "strided-views",
                    "strided views",
                    lambda: with_kernels_left_to_the_cpu(lambda: check_strided_views(device), unimplemented),
                ),
                *(
                    amp_checks(device, data, training, args.amp, args.cpu_reference)
                    if args.amp
                    else [
                        (
                            "mnist",
                            f"mnist ({args.steps} steps)",
                            lambda: mnist_with_fallback_by_design(
                                device, data, training, args.cpu_reference, unimplemented
                            ),
                        )
                    ]
                ),
                *(
                    (
                        model,
                        f"{model}{' amp ' + args.amp if args.amp else ''} ({args.steps} steps)",
                        partial(check_battery, model, device, data, *training, args.amp),
                    )
                    for model in BATTERY
                ),
                (
                    "profile",
                    "profile",
                    lambda: check_profile(
                        Path(__file__).with_name("paddle_profile.py"), device, Path(args.out).with_name(args.profile)
                    ),
                ),
            ]
            for key, title, check in checks:
                if key in wanted:
                    log(f"check {title}")
                    report["checks"].append(timed(check))
    return write_report(report, args.out)


if __name__ == "__main__":
    exit_without_final_collection(main())
