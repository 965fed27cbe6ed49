"""Checks of an installed PyTorch adapter, run inside a fresh environment.

Executed by `devkit verify --framework torch` (and `test-ops` / `check-kernels`) with the
verify environment's Python: torch==V, NumPy and the adapter wheel, nothing else. Only
`import torch` loads the adapter (the torch.backends entry point). Writes a JSON report
with the layout of plugin_checks.py's; devkit renders it. The checks live in torch_basics, torch_contract,
torch_ops and torch_training.

    python torch_checks.py --device stpu --data data.npz --steps 200 --out report.json
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

import torch_amp
import torch_compile
from device_trace import check_profile
from process_exit import exit_without_final_collection
from records import CheckKind, CheckRecord, CpuCurve, VerifyReport
from torch_basics import (
    check_dataloader,
    check_devices,
    check_queued_work,
    check_registration,
    check_save_load,
    check_tensor,
    check_version_guard,
)
from torch_common import first_line, log
from torch_contract import check_contract
from torch_ops import check_ops
from torch_training import check_fallback_report, check_kernels, check_mnist, cpu_curve
from training_verdict import add_training_arguments, failed_check, load_data, timed, write_report

# What each check is (records.CheckKind): the kind of the record of one that raised.
CHECK_KINDS: dict[str, CheckKind] = {
    **dict.fromkeys(("version-guard", "tensor", "save-load", "dataloader", "devices", "queued-work"), "basics"),
    **dict.fromkeys(("mnist", "mnist-autocast-float16", "mnist-autocast-bfloat16"), "training"),
    **dict.fromkeys(("amp-overflow", "autocast-lists"), "amp"),
    **dict.fromkeys(("compile-mlp", "compile-lenet", "compile-ordering", "compile-shapes", "compile-trace"), "compile"),
    "contract": "contract",
    "ops": "ops",
    "kernels": "kernels",
    "profile": "profile",
    "fallback-report": "fallback",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", required=True)
    parser.add_argument("--only", default="", help="comma-separated checks (default: all but kernels)")
    parser.add_argument("--ops", default="", help="with ops: a regular expression selecting cases")
    parser.add_argument("--amp", default="", choices=("", "O1"), help="mnist under torch.autocast and a GradScaler")
    parser.add_argument(
        "--compile", action="store_true", help="torch.compile (Inductor) on the device instead of mnist"
    )
    parser.add_argument(
        "--profile", default="", metavar="FILE", help="also profile a step: its trace into FILE beside --out"
    )
    add_training_arguments(parser)
    args = parser.parse_args(argv)

    report: VerifyReport = {"framework": "torch", "device": args.device, "checks": []}
    try:
        import torch  # loads the adapter through the torch.backends entry point, or raises its message
    except Exception as exc:
        report["checks"].append({"name": "registration", "kind": "basics", "passed": False, "detail": first_line(exc)})
        torch = None
    if torch is not None:
        report["torch_version"] = torch.__version__
        report["paddle_version"] = None
        report["strict_fallback"] = os.environ.get(f"{args.device.upper()}_STRICT_FALLBACK", "")
        wanted = [w for w in args.only.split(",") if w] or [
            "version-guard",
            "tensor",
            "save-load",
            "dataloader",
            "devices",
            "queued-work",
            "contract",
            "ops",
            *(
                ["mnist-autocast-float16", "mnist-autocast-bfloat16", "amp-overflow", "autocast-lists"]
                if args.amp
                else []
            ),
            *(
                ["compile-mlp", "compile-lenet", "compile-ordering", "compile-shapes", "compile-trace"]
                if args.compile
                else []
            ),
            *([] if args.amp or args.compile else ["mnist"]),
            *(["profile"] if args.profile else []),
            "fallback-report",  # last: it lifts the strict fallback the others run under
        ]
        if any(w.startswith("compile-") for w in wanted):
            torch_compile.probe_the_cpu_in_the_kept_directory()
        log("check registration")
        report["checks"].append(timed(lambda: check_registration(torch, args.device)))
        if report["checks"][-1]["passed"]:
            data = load_data(args.data)

            @cache
            def float32_curve() -> CpuCurve:  # the CPU curve both autocast checks judge by, trained once
                return cpu_curve(torch, data, args.steps, args.batch_size, args.seed, args.cpu_reference)

            checks: dict[str, Callable[[], CheckRecord]] = {
                "version-guard": lambda: check_version_guard(torch, args.device),
                "tensor": lambda: check_tensor(torch, args.device),
                "save-load": lambda: check_save_load(torch, args.device),
                "dataloader": lambda: check_dataloader(torch, args.device),
                "devices": lambda: check_devices(torch, args.device),
                "queued-work": lambda: check_queued_work(torch, args.device),
                "contract": lambda: check_contract(torch, args.device),
                "ops": lambda: check_ops(torch, args.device, args.ops),
                "mnist": lambda: check_mnist(
                    torch, args.device, data, args.steps, args.batch_size, args.seed, args.cpu_reference
                ),
                "mnist-autocast-float16": lambda: torch_amp.check_autocast(
                    torch, args.device, data, args.steps, args.batch_size, args.seed, "float16", float32_curve
                ),
                "mnist-autocast-bfloat16": lambda: torch_amp.check_autocast(
                    torch, args.device, data, args.steps, args.batch_size, args.seed, "bfloat16", float32_curve
                ),
                "amp-overflow": lambda: torch_amp.check_overflow(torch, args.device, data, args.batch_size, args.seed),
                "autocast-lists": lambda: torch_amp.check_autocast_lists(torch, args.device),
                "compile-mlp": lambda: torch_compile.check_model(torch, args.device, "mlp"),
                "compile-lenet": lambda: torch_compile.check_model(torch, args.device, "lenet"),
                "compile-ordering": lambda: torch_compile.check_ordering(torch, args.device),
                "compile-shapes": lambda: torch_compile.check_shapes(torch, args.device),
                "compile-trace": lambda: torch_compile.check_trace(torch, args.device),
                "kernels": lambda: check_kernels(torch, args.device),
                "profile": lambda: check_profile(
                    Path(__file__).with_name("torch_profile.py"),
                    args.device,
                    Path(args.out).with_name(args.profile),
                ),
                "fallback-report": lambda: check_fallback_report(torch, args.device, data, args.seed),
            }
            for name in wanted:
                log(f"check {name}")
                try:
                    if name not in checks:
                        raise ValueError(f"unknown check {name!r}")
                    result = timed(checks[name])
                except Exception as exc:
                    result = failed_check(name, CHECK_KINDS.get(name, "basics"), first_line(exc))
                report["checks"].append(result)
    return write_report(report, args.out)


if __name__ == "__main__":
    exit_without_final_collection(main())
