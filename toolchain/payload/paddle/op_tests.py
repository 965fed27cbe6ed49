"""devkit test-ops: the plugin's kernels vs Paddle CPU, over shapes and dtypes.

Cases are verify's op cases (op_cases.op_cases) plus broadcasting, empty and 0-d
shapes, each run in every requested dtype the plugin registers all the case's kernels
for (float inputs are cast; integer cases keep their dtype). Forward results and, where
the op has a backward kernel, gradients are compared with per-dtype tolerances.

--gen-golden DIR records, with Paddle CPU only, inputs and outputs of the cases the
device library's golden checker runs (tests/conformance/golden_check.cc), for targets with
no Paddle runtime.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import check_common as common
import kernel_checks
import op_cases
import op_helpers
import quant_cases
from check_common import F, np, paddle
from golden_cases import gen_golden
from op_helpers import Inputs, OpCase
from op_records import GoldenSummary, OpResult, OpTestsReport
from process_exit import exit_without_final_collection
from records import Tolerance

FLOATS = ("float32", "float64")
# The 16-bit types: a case's float inputs rounded to them and cast on the device, its results
# compared with Paddle CPU's float32 on the same rounded inputs (the device computes in float32
# and rounds each kernel's results once; gradients pass through more roundings).
HALVES = ("float16", "bfloat16")
# (forward, backward) tolerances per dtype; float32 comes from [tool.devkit.tolerances].
TOLERANCES: dict[str, tuple[Tolerance, Tolerance]] = {
    "float32": (common.FORWARD_TOL, common.BACKWARD_TOL),
    "float64": ({"rtol": 1e-9, "atol": 1e-12}, {"rtol": 1e-8, "atol": 1e-10}),
    "float16": ({"rtol": 1e-3, "atol": 1e-3}, {"rtol": 4e-3, "atol": 4e-3}),
    "bfloat16": ({"rtol": 8e-3, "atol": 8e-3}, {"rtol": 3e-2, "atol": 3e-2}),
}
EXACT: tuple[Tolerance, Tolerance] = ({"rtol": 0.0, "atol": 0.0}, {"rtol": 0.0, "atol": 0.0})


def shape_cases() -> list[OpCase]:
    """Empty, 0-d and two-sided broadcasting shapes, where the ops allow them."""
    u = op_helpers.uniform(op_helpers.rng(1))

    return [
        ("add empty [0,5]+[5]", ["add", "add_grad"], lambda x, y: x + y, {"x": u(0, 5), "y": u(5)}, True),
        ("add 0-d + [3]", ["add", "add_grad"], lambda x, y: x + y, {"x": u(), "y": u(3)}, True),
        ("multiply 0-d * 0-d", ["multiply", "multiply_grad"], lambda x, y: x * y, {"x": u(), "y": u()}, True),
        (
            "divide broadcast [2,1,4]/[3,1]",
            ["divide", "divide_grad"],
            lambda x, y: x / y,
            {"x": u(2, 1, 4), "y": u(3, 1, lo=0.5, hi=2.0)},
            True,
        ),
        (
            "subtract broadcast [4,1]-0-d",
            ["subtract", "subtract_grad"],
            lambda x, y: x - y,
            {"x": u(4, 1), "y": u()},
            True,
        ),
        ("relu empty [0,4]", ["relu", "relu_grad"], lambda x: F.relu(x), {"x": u(0, 4)}, True),
        ("relu 0-d", ["relu", "relu_grad"], lambda x: F.relu(x), {"x": u()}, True),
        ("sigmoid 0-d", ["sigmoid", "sigmoid_grad"], lambda x: F.sigmoid(x), {"x": u()}, True),
        ("exp empty [2,0]", ["exp", "exp_grad"], lambda x: paddle.exp(x), {"x": u(2, 0)}, True),
        (
            "matmul empty rows [0,4]x[4,3]",
            ["matmul", "matmul_grad"],
            lambda x, y: paddle.matmul(x, y),
            {"x": u(0, 4), "y": u(4, 3)},
            True,
        ),
        (
            "matmul vector [4]x[4,3]",
            ["matmul", "matmul_grad"],
            lambda x, y: paddle.matmul(x, y),
            {"x": u(4), "y": u(4, 3)},
            True,
        ),
        ("sum of 0-d", ["sum", "sum_grad"], lambda x: paddle.sum(x), {"x": u()}, True),
        ("sum axis 1 of [3,0]", ["sum", "sum_grad"], lambda x: paddle.sum(x, axis=1), {"x": u(3, 0)}, True),
        ("mean 0-d", ["mean_all", "mean_all_grad"], lambda x: paddle.mean(x), {"x": u()}, True),
        (
            "reshape empty [0,6]->[0,2,3]",
            ["reshape", "reshape_grad"],
            lambda x: paddle.reshape(x, [0, 2, 3]),
            {"x": u(0, 6)},
            True,
        ),
        ("scale 0-d", ["scale"], lambda x: paddle.scale(x, 3.0, -1.0), {"x": u()}, False),
        ("cast empty", ["cast"], lambda x: paddle.cast(x, "int64"), {"x": u(0, 3)}, False),
        (
            "concat with an empty part",
            ["concat"],
            lambda x, y: paddle.concat([x, y], axis=1),
            {"x": u(2, 0, 4), "y": u(2, 3, 4)},
            False,
        ),
        (
            "softmax [2,3,5] axis 1",
            ["softmax", "softmax_grad"],
            lambda x: F.softmax(x, axis=1),
            {"x": u(2, 3, 5)},
            True,
        ),
        ("max over axes (0,2)", ["max"], lambda x: paddle.max(x, axis=[0, 2]), {"x": u(3, 4, 5)}, False),
    ]


def case_dtype(inputs: Inputs) -> str:
    floats = [a.dtype.name for a in inputs.values() if a.dtype.kind == "f"]
    return floats[0] if floats else next(iter(inputs.values())).dtype.name


def in_dtype(inputs: Inputs, dtype: str) -> Inputs | None:
    """The case's inputs in `dtype`, or None when the case does not come in it."""
    base = case_dtype(inputs)
    if base == dtype:
        return inputs
    if base in FLOATS and dtype in FLOATS:
        return {k: a.astype(dtype) if a.dtype.kind == "f" else a for k, a in inputs.items()}
    if base == "float32" and dtype in HALVES:
        return {k: op_helpers.round_to(a, dtype) if a.dtype.kind == "f" else a for k, a in inputs.items()}
    return None


def as_integers(fn: Callable[..., Any], inputs: Inputs, dtype: str) -> Inputs | None:
    """A float case's inputs as `dtype` integers (never 0: no division by zero) or booleans, for the
    kernels registered for them; None when Paddle's CPU kernels do not take them either."""
    if case_dtype(inputs) not in FLOATS or dtype in FLOATS or dtype in HALVES:
        return None
    converted: Inputs = {}
    for key, a in inputs.items():
        if a.dtype.kind != "f":
            converted[key] = a
        elif dtype == "bool":
            converted[key] = a > 0
        else:
            whole = np.rint(a * 7).astype(dtype)
            converted[key] = np.where(whole == 0, 1, whole).astype(dtype)
    try:
        op_helpers.run_case(fn, converted, "cpu", False)
    except Exception:  # (the op has no such CPU kernel, or refuses the dtype: nothing to compare with)
        return None
    return converted


def run_case(
    device: str,
    case: str,
    kernels: list[str],
    fn: Callable[..., Any],
    inputs: Inputs,
    grad: bool,
    flags: dict[str, bool],
    dtype: str,
) -> OpResult:
    entry = cast(  # (its status comes below, on every path)
        OpResult,
        {
            "case": case,
            "dtype": dtype,
            "kernels": kernels,
            "shapes": {k: list(a.shape) for k, a in inputs.items()},
            "max_abs_diff": {},
        },
    )
    forward_tol, backward_tol = TOLERANCES.get(dtype, EXACT)
    saved = paddle.get_flags(list(flags)) if flags else {}
    try:
        if flags:
            paddle.set_flags(flags)
        cast_to = dtype if dtype in HALVES else ""
        dev = op_helpers.run_case(fn, inputs, device, grad, cast_to)
        cpu = op_helpers.run_case(fn, inputs, "cpu", grad, widen=bool(cast_to))
        ok = True
        for key in cpu:
            if key not in dev:
                ok, entry["error"] = False, f"no gradient {key} on {device}"
                continue
            same, diff = common._compare(dev[key], cpu[key], forward_tol if key == "out" else backward_tol)
            entry["max_abs_diff"][key] = diff
            if not same:
                entry.setdefault("mismatch", []).append(
                    f"{key}: max |diff| {diff:.3g}"
                    if np.isfinite(diff)
                    else f"{key}: shape/dtype {dev[key].shape}/{dev[key].dtype} vs cpu {cpu[key].shape}/{cpu[key].dtype}"
                )
            ok &= same
        entry["status"] = "pass" if ok else "fail"
    except Exception as exc:  # a missing or failing kernel raises: report it by name
        entry.update({"status": "error", "error": common._first_line(exc)})
    finally:
        if saved:
            paddle.set_flags(saved)
    entry["tolerance"] = {"forward": forward_tol, "backward": backward_tol}
    return entry


def half_cast_values() -> np.ndarray:
    """float32 values for the 16-bit casts: ties, both types' limits, subnormals, infinities and
    NaN, then a spread of magnitudes."""
    special = [1.0, -2.0, 65504.0, 65519.0, 65520.0, -1e6, np.inf, -np.inf, np.nan, -0.0, 0.1, 3.14159]
    special += [1 + 2.0**-11, 1 + 3 * 2.0**-11, 2.0**-24, 2.0**-25, 1.5 * 2.0**-25, 2.0**-14, 1 + 2.0**-8]
    special += [1 + 3 * 2.0**-8, 3.4e38, 1e-40]
    spread = op_helpers.rng(5).uniform(-1, 1, 2000) * 10.0 ** op_helpers.rng(6).uniform(-9, 6, 2000)
    return np.concatenate([np.array(special), spread]).astype(np.float32)


def check_half_cast(device: str, dtype: str) -> OpResult:
    """cast float32 -> dtype -> float32 on the device, bit for bit against NumPy's rounding
    (float16) or round-to-nearest-even (bfloat16, which NumPy lacks); any NaN for a NaN."""
    values = half_cast_values()
    entry = cast(OpResult, {"case": f"cast float32 <-> {dtype} bit-exact", "dtype": dtype, "kernels": ["cast"]})
    try:
        paddle.set_device(device)
        narrow = paddle.to_tensor(values).astype(dtype)
        got = narrow.numpy().view(np.uint16)  # (bfloat16 tensors read as their bits)
        back = narrow.astype("float32").numpy()
        want = values.astype(np.float16).view(np.uint16) if dtype == "float16" else op_helpers.bfloat16_bits(values)
        want_back = op_helpers.round_to(values, dtype)
        nan = np.isnan(values)
        wrong = int(np.count_nonzero((got != want) & ~nan)) + int(np.count_nonzero(~np.isnan(back[nan])))
        wrong += int(np.count_nonzero((back.view(np.uint32) != want_back.view(np.uint32)) & ~nan))
        entry.update({"status": "pass" if wrong == 0 else "fail", "shapes": {"x": list(values.shape)}})
        if wrong:
            entry["mismatch"] = [f"{wrong} of {2 * values.size} conversions differ from round-to-nearest-even"]
    except Exception as exc:
        entry.update({"status": "error", "error": common._first_line(exc)})
    entry["tolerance"] = {"forward": EXACT[0], "backward": EXACT[1]}
    return entry


def run_tests(device: str, ops: str, dtypes: list[str]) -> OpTestsReport:
    pattern = re.compile(ops) if ops else None
    registered = kernel_checks.registered_dtypes(device)
    results: list[OpResult] = []
    cases = op_cases.op_cases() + shape_cases()
    for case, kernels, fn, inputs, grad, *flags in cases:
        if pattern and not (pattern.search(case) or any(pattern.search(k) for k in kernels)):
            continue
        for dtype in dtypes:
            variant, run_kernels, run_grad = in_dtype(inputs, dtype), kernels, grad
            if variant is None:  # integer and boolean inputs, forward only, where a kernel takes them
                run_kernels = [k for k in kernels if not k.endswith("_grad")]
                if not any(dtype in registered.get(k, set()) for k in run_kernels):
                    continue
                variant, run_grad = as_integers(fn, inputs, dtype), False
                if variant is None:
                    continue
            missing = [k for k in run_kernels if dtype not in registered.get(k, set())]
            if missing:
                results.append(
                    {
                        "case": case,
                        "dtype": dtype,
                        "kernels": run_kernels,
                        "status": "not registered",
                        "detail": f"{', '.join(missing)} not registered for {dtype}",
                    }
                )
                continue
            entry = run_case(device, case, run_kernels, fn, variant, run_grad, flags[0] if flags else {}, dtype)
            common.log(f"  {case} [{dtype}]: {entry['status']}")
            results.append(entry)
    for half in HALVES:
        if half in dtypes and half in registered.get("cast", set()) and (not pattern or pattern.search("cast")):
            results.append(check_half_cast(device, half))
            common.log(f"  cast float32 <-> {half} bit-exact: {results[-1]['status']}")
    results += quant_cases.run(
        device,
        registered,
        dtypes,
        lambda case, kernel: not pattern or bool(pattern.search(case) or pattern.search(kernel)),
    )
    if "float32" in dtypes:
        for extra in (kernel_checks.check_optimizers, kernel_checks.check_random, kernel_checks.check_dropout_random):
            case_entry = extra(device)
            if (
                pattern
                and not any(pattern.search(k) for k in case_entry["kernels"])
                and not pattern.search(case_entry["case"])
            ):
                continue
            # the verify case as a result: its passed becomes a status (the other keys are a result's)
            result = cast(OpResult, {k: v for k, v in case_entry.items() if k != "passed"})
            result.update({"dtype": "float32", "status": "pass" if case_entry["passed"] else "fail"})
            results.append(result)
    ran = [r for r in results if r["status"] in ("pass", "fail", "error")]
    exercised = {k for r in ran for k in r["kernels"]}
    selected = {k for k in registered if not pattern or pattern.search(k)}
    # kernel x dtype: a kernel registered for a dtype the run asked for, but no case ran it in that dtype
    pairs_run = {(k, r["dtype"]) for r in ran for k in r["kernels"]}
    pairs_missed = sorted((k, d) for k in selected for d in registered[k] if d in dtypes and (k, d) not in pairs_run)
    return {
        "device": device,
        "paddle_version": paddle.__version__,
        "ops": ops,
        "dtypes": dtypes,
        "registered_kernels": {k: sorted(v) for k, v in sorted(registered.items())},
        "not_exercised": sorted(selected - exercised),
        "dtypes_not_exercised": [f"{k} [{d}]" for k, d in pairs_missed if k in exercised],
        "results": results,
    }


# ------------------------------------------------------------------ golden data


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="")
    p.add_argument("--ops", default="")
    p.add_argument("--dtypes", default="", help="comma-separated: the op tests' (devkit passes its --dtypes)")
    p.add_argument("--gen-golden", type=Path)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    report: GoldenSummary | OpTestsReport
    if args.gen_golden:
        report = gen_golden(args.gen_golden)
    else:
        types = paddle.device.get_all_custom_device_type() or []
        device = args.device or (types[0] if len(types) == 1 else "")
        if device not in types:
            raise SystemExit(
                f"devkit-problem: the plugin's device {device!r} is not registered (found {types}) | "
                "check the wheel with devkit check-abi"
            )
        dtypes = [d for d in args.dtypes.split(",") if d]
        if not dtypes:
            p.error("--dtypes is needed to run the op tests")
        report = run_tests(device, args.ops, dtypes)
    Path(args.out).write_text(json.dumps(report, indent=2, default=float))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    exit_without_final_collection(main())
