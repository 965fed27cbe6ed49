"""PyTorch's own OpInfo samples (torch.testing._internal.common_methods_invocations.op_db) on the
device against torch's CPU, each op isolated: run inside the verify environment by
`devkit test-ops --framework torch`.

    python torch_opinfo.py --device stpu [--all] [--ops fft.hfft,fft.ifft] --out ops.json

By default only the OpInfos the device implements (one of their CPU samples reaches a kernel the
adapter registers) in the dtypes the device library has; --all runs every OpInfo in its CPU dtypes
with the CPU fallback. Ops run in worker processes (this file with --worker) that print one JSON
line per op and dtype, and a line before each sample; a worker that dies (a signal, a timeout) is
reported as the op it was on, with its last sample, and a new worker goes on from the next op.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:  # (types only: this file imports none of its siblings when it runs)
    from op_records import OpInfoReport, OpInfoRun, OpResult, OpStatus

DEVICE_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64")
ALL_DTYPES = (*DEVICE_DTYPES, "float16", "bfloat16", "complex64", "complex128")
# Ops whose values are random or uninitialised: only shapes and dtypes are compared.
UNCHECKED_VALUES = re.compile(
    r"rand|normal|bernoulli|dropout|multinomial|uniform|cauchy|exponential|geometric|poisson|empty|"
    r"^new_empty|rrelu|^nn\.functional\.feature_alpha_dropout"
)
# (or the adapter's own one-line refusal of sparse layouts: "aten::op: stpu has no SparseCsr tensors")
NO_BACKEND = re.compile(
    r"Could not run '[^']+' with arguments from the '(Sparse|Quantized|Mkldnn)\w*' backend|has no Sparse\w* tensors"
)
# Kernels every op reaches (allocation, views, copies, fills): they do not make an op "implemented".
INFRASTRUCTURE = {
    "empty",
    "empty_strided",
    "_copy_from",
    "_copy_from_and_resize",
    "copy_",
    "resize_",
    "set_",
    "_local_scalar_dense",
    "view",
    "_reshape_alias",
    "as_strided",
    "fill_",
    "zero_",
    "view_as_real",
    "view_as_complex",
    "record_stream",
}


# The worker's lines besides the results (an OpInfo, its samples and torch's tensors are Any here)


class OpStart(TypedDict):
    op: int  # its index
    name: str


class SampleStart(TypedDict):
    at: str  # the op
    dtype: str
    sample: int
    summary: str


def op_label(op: Any) -> str:
    label: str = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
    return label


def emit(record: Mapping[str, object]) -> None:
    sys.stdout.write(json.dumps(record, default=float) + "\n")
    sys.stdout.flush()


def registered_kernels(torch: ModuleType) -> set[str]:
    names = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    found = {n.removeprefix("aten::").split(".")[0] for n in names if n.startswith("aten::")} - INFRASTRUCTURE
    # at::convolution reaches the backend as convolution_overrideable
    return found | {k.removesuffix("_overrideable") for k in found if k.endswith("_overrideable")}


def reached_kernels(torch: ModuleType, fn: Callable[[], object]) -> set[str]:
    """The aten ops a call reaches below autograd (where backend kernels sit)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
        ) -> Any:
            seen.add(func._schema.name.removeprefix("aten::"))
            return func(*args, **(kwargs or {}))

    with Mode():
        fn()
    return seen


def compare(torch: ModuleType, got: Any, want: Any, dtype: Any, values: bool, tol: dict[str, Any]) -> float:
    """Max |diff| of the outputs; raises AssertionError naming the first difference."""
    from torch.utils._pytree import tree_flatten

    got_flat, want_flat = tree_flatten(got)[0], tree_flatten(want)[0]
    assert len(got_flat) == len(want_flat), f"{len(got_flat)} outputs, CPU gives {len(want_flat)}"
    worst = 0.0
    for g, w in zip(got_flat, want_flat, strict=True):
        if not isinstance(w, torch.Tensor):
            if values and isinstance(w, (int, float, complex, bool)):
                assert g == w or (w != w and g != g), f"got {g}, CPU gives {w}"
            continue
        assert isinstance(g, torch.Tensor), f"got {type(g).__name__}, CPU gives a tensor"
        g = g.detach().cpu()
        w = w.detach()
        assert g.shape == w.shape and g.dtype == w.dtype, f"got {g.dtype}{list(g.shape)}, CPU {w.dtype}{list(w.shape)}"
        if not values or w.numel() == 0 or w.layout != torch.strided:
            continue
        rtol, atol = tol.get(str(w.dtype).removeprefix("torch."), (tol["op_rtol"], tol["op_atol"]))
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
        if w.is_floating_point() or w.is_complex():
            diff = (g.to(torch.complex128 if w.is_complex() else torch.float64) - w).abs()
            finite = diff[diff.isfinite()]
            worst = max(worst, float(finite.max()) if finite.numel() else 0.0)
    return worst


def run_op(
    torch: ModuleType,
    op: Any,
    device: str,
    dtypes: list[str],
    implemented_only: bool,
    samples: int,
    tol: dict[str, Any],
) -> None:
    kernels = registered_kernels(torch)
    wanted = [d for d in dtypes if getattr(torch, d) in op.supported_dtypes("cpu")]
    label = op_label(op)
    if implemented_only:
        reached: set[str] = set()
        probe = next((d for d in ("float32", *wanted) if getattr(torch, d) in op.supported_dtypes("cpu")), None)
        try:
            first = next(iter(op.sample_inputs("cpu", getattr(torch, probe), requires_grad=False))) if probe else None
            if first is not None:
                reached = reached_kernels(torch, lambda: op(first.input, *first.args, **first.kwargs))
        except Exception:
            pass
        own = {op.name.split(".")[-1], (op.aten_name or "").split(".")[-1]}
        hit = (reached | own) & (kernels | INFRASTRUCTURE if own & INFRASTRUCTURE else kernels)
        if not hit:
            return
    values = not UNCHECKED_VALUES.search(op.name)
    for dtype_name in wanted:
        dtype = getattr(torch, dtype_name)
        result: OpResult = {"case": label, "dtype": dtype_name, "kernels": [], "status": "pass", "samples": 0}
        worst = 0.0
        reached_device: set[str] = set()
        try:
            inputs = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:samples]
        except Exception as exc:
            emit({**result, "status": "skipped", "detail": f"sample inputs: {first_line(exc)}"})
            continue
        for index, sample in enumerate(inputs):
            emit({"at": label, "dtype": dtype_name, "sample": index, "summary": summarize(sample)})
            on_device = sample.transform(lambda t: to_device(torch, t, device))
            try:
                want = op(sample.input, *sample.args, **sample.kwargs)
            except Exception:
                continue  # the CPU refuses this sample too
            result["samples"] += 1
            try:
                got = None

                def call(s: Any = on_device) -> None:
                    nonlocal got
                    got = op(s.input, *s.args, **s.kwargs)

                reached_device |= reached_kernels(torch, call)
                worst = max(worst, compare(torch, got, want, dtype, values, tol))
            except AssertionError as exc:
                result.update(
                    {"status": "fail", "mismatch": [f"sample {index} ({summarize(sample)}): {first_line(exc)}"]}
                )
                break
            except Exception as exc:
                # a layout the adapter does not have (sparse, quantized) is a clean refusal, not a wrong op
                status: OpStatus = "not registered" if NO_BACKEND.search(str(exc)) else "error"
                result.update({"status": status, "error": f"sample {index} ({summarize(sample)}): {first_line(exc)}"})
                break
        result["kernels"] = sorted(reached_device & kernels)
        result["max_abs_diff"] = {"out": worst}
        emit(result if result["samples"] else {**result, "status": "skipped", "detail": "no sample the CPU runs"})


def to_device(torch: ModuleType, t: Any, device: str) -> Any:
    """t on the device as the same view of a copy of its whole storage: ops such as as_strided
    read elements outside the view."""
    if not isinstance(t, torch.Tensor):
        return t
    t = t.detach()
    if t.layout != torch.strided or t.is_quantized or t.numel() == 0:
        return t.clone().to(device)
    flat = t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)
    return flat.clone().to(device).as_strided(t.shape, t.stride(), t.storage_offset())


def summarize(sample: Any) -> str:
    def one(x: Any) -> str:
        shape = getattr(x, "shape", None)
        if shape is not None:
            flags = "".join(f for f, on in (("conj", x.is_conj()), ("neg", x.is_neg())) if on)
            return f"{str(x.dtype).removeprefix('torch.')}{list(shape)}{' ' + flags if flags else ''}"
        return repr(x)[:40]

    parts = [one(sample.input), *(one(a) for a in sample.args), *(f"{k}={one(v)}" for k, v in sample.kwargs.items())]
    return ", ".join(parts)[:200]


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]


def selected_ops(op_db: Iterable[Any], pattern: str) -> list[Any]:
    if not pattern:
        return list(op_db)
    wanted = [re.compile(n.strip()) for n in pattern.split(",") if n.strip()]
    return [op for op in op_db if any(w.fullmatch(op.name) or w.fullmatch(op_label(op)) for w in wanted)]


def allow_torch_testing_imports() -> None:
    """torch.testing._internal imports expecttest, which the verify env (torch + NumPy) lacks;
    only its TestCase base is needed to import the samples and lists devkit reads."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        import types
        import unittest

        sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase)  # type: ignore[assignment]


def worker(args: argparse.Namespace) -> int:
    import torch

    allow_torch_testing_imports()
    from torch.testing._internal.common_methods_invocations import op_db

    # DEVKIT_TOLERANCES, and (rtol, atol) by dtype name
    tol: dict[str, Any] = json.loads(os.environ.get("DEVKIT_TOLERANCES") or "{}") or {"op_rtol": 1e-4, "op_atol": 1e-5}
    tol.setdefault("float16", (1e-3, 1e-3))
    tol.setdefault("bfloat16", (1.6e-2, 1e-2))
    torch.manual_seed(0)
    ops = selected_ops(op_db, args.ops)
    for index in range(args.start, len(ops)):
        emit({"op": index, "name": op_label(ops[index])})
        run_op(torch, ops[index], args.device, args.dtypes.split(","), not args.all, args.samples, tol)
    emit({"done": True})
    return 0


def crash_result(name: str, last: SampleStart | None, why: str) -> OpResult:
    where = f"sample {last['sample']} ({last['summary']})" if last else "before its first sample"
    return {
        "case": name,
        "dtype": last["dtype"] if last else "-",
        "kernels": [],
        "status": "error",
        "error": f"the process {why} at {where}",
    }


def supervise(args: argparse.Namespace) -> OpInfoRun:
    """Run workers until every op has reported; each crash or timeout becomes that op's result."""
    results: list[OpResult] = []
    start, restarts = 0, 0
    argv = [sys.executable, __file__, "--worker", "--device", args.device, "--dtypes", args.dtypes]
    argv += [
        "--samples",
        str(args.samples),
        *(["--all"] if args.all else []),
        *(["--ops", args.ops] if args.ops else []),
    ]
    while True:
        proc = subprocess.Popen([*argv, "--start", str(start), "--out", "-"], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        current: OpStart | None
        last: SampleStart | None
        current, last, done, timed_out = None, None, False, False
        deadline = time.monotonic() + args.timeout
        buffer = ""
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                timed_out = True
                proc.kill()
                break
            chunk = os.read(proc.stdout.fileno(), 65536).decode(errors="replace")
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split("\n")
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a print of the op itself
                if "op" in record:
                    current, last = record, None
                    start = record["op"] + 1
                    deadline = time.monotonic() + args.timeout
                elif "at" in record:
                    last = record
                elif "done" in record:
                    done = True
                elif record.get("status") != "skipped":
                    results.append(record)
        code = proc.wait()
        if done:
            break
        if current is None:  # the worker died before its first op: nothing to go on from
            results.append(crash_result("(worker start)", None, f"exited with code {code}"))
            break
        why = f"timed out after {args.timeout:.0f} s" if timed_out else describe_exit(code)
        results.append(crash_result(current["name"], last, why))
        restarts += 1
    return {"results": results, "restarts": restarts}


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"died of {signal.Signals(-code).name}"
        except ValueError:
            return f"died of signal {-code}"
    return f"exited with code {code}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", required=True)
    parser.add_argument("--all", action="store_true", help="every OpInfo, not only the ones the device implements")
    parser.add_argument("--ops", default="", help="comma-separated regexes, each matching whole OpInfo names")
    parser.add_argument("--dtypes", default="")
    parser.add_argument("--samples", type=int, default=4, help="samples per op and dtype")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per op")
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    args.dtypes = args.dtypes or ",".join(ALL_DTYPES if args.all else DEVICE_DTYPES)
    if args.worker:
        return worker(args)
    began = time.monotonic()
    import torch

    run = supervise(args)
    report: OpInfoReport = {
        **run,
        "mode": "opinfo-all" if args.all else "opinfo",
        "framework": "torch",
        "device": args.device,
        "torch_version": torch.__version__,
        "reference": f"torch {torch.__version__} CPU",
        "dtypes": args.dtypes.split(","),
        "seconds_in_env": round(time.monotonic() - began, 1),
    }
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
