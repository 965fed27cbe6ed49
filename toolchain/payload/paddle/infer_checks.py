"""Inference checks of an installed Paddle device plugin (run by `devkit verify --infer`).

Runs inside the verify environment (paddlepaddle + the plugin; Paddle, NumPy and
the standard library only). Exports the model (or takes --model-dir), runs it
with paddle.inference on the custom device and on CPU with the same input, and
reports output agreement, where each op's kernel ran, and latency.

    python infer_checks.py --model resnet50 --out report.json [--warmup 10 --repeats 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from infer_models import (
    MODELS,
    find_prefix,
    model_files,
)
from infer_phases import INPUT, PROBLEM, READING, REEXPORT, RTOL, UNIT_MARK, run_phase
from process_exit import exit_without_final_collection

if TYPE_CHECKING:  # types only (numpy is imported where it is used, records is not needed to run)
    from inference_records import InferenceCheck, KernelPlacement, QuantCheck

os.environ.setdefault("GLOG_minloglevel", "2")

# Ops that legitimately run on the host: shape arithmetic on integer tensors.
_SELECTED = re.compile(r"\[([a-z_0-9]+)\] selected kernel\(is_valid: \d \): \(([^,]+), [^,]+, ([a-z0-9:_]+)\)")


def check_load(prefix: str, out: str) -> int:
    """Load a user's model on the CPU, in a child (a file Paddle cannot read may crash it: a junk
    .pdmodel is a SIGSEGV in Paddle 3.3.1), before anything runs on the device; what it could not
    read is said in one devkit-problem line of kind input, naming the file. `out`: the model's inputs."""
    with tempfile.TemporaryFile("w+") as log:
        proc = child("--phase", "load", "--prefix", prefix, "--out", out, log=log)
        log.seek(0)
        text = log.read()
    if proc.returncode == 0:
        return 0
    said = [line for line in text.splitlines() if line.startswith(PROBLEM)]
    if not said and proc.returncode < 0 and READING in text:
        program, params = model_files(prefix)
        died = signal.Signals(-proc.returncode).name
        said = [f"{PROBLEM}Paddle could not load {program} with {params}: it died of {died} | {REEXPORT} | {INPUT}"]
    # else Paddle (or the plugin with it) did not start: not the model's doing, the child's own words
    print(said[-1] if said else text[-4000:], flush=True)
    return 1


def kernel_placement(
    prefix: str, device: str, input_shape: list[int], engine: bool = False, units: tuple[str, ...] = ()
) -> KernelPlacement:
    """Where Paddle placed each op's kernel: run one prediction in a child with
    the kernel-selection pass logging, and read its choices (an engine's ops are not among them).
    `units`: saved one-layer models the same child runs after it, each through the engine; what the
    engine ran of each is placement["units"]."""
    env = {**os.environ, "GLOG_vmodule": "pd_op_to_kernel_pass=6", "GLOG_minloglevel": "0", "GLOG_logtostderr": "1"}
    if engine:  # the device library's op dump names the engine's calls
        env[f"{device.upper()}_DUMP_OP_ARGS"] = "1"
    # The log goes to a file, not a pipe: helper processes Paddle leaves behind
    # may hold a pipe open and block reading it to the end.
    with tempfile.TemporaryFile("w+") as log:
        proc = child(
            "--phase",
            "probe",
            "--prefix",
            prefix,
            "--device",
            device,
            "--shape",
            ",".join(map(str, input_shape)),
            *(["--engine"] if engine else []),
            *[arg for unit in units for arg in ("--unit", unit)],
            env=env,
            log=log,
        )
        log.seek(0)
        text = log.read()
    if proc.returncode != 0:
        tail = [ln for ln in text.splitlines() if "Error" in ln][-3:]
        return {"error": " | ".join(tail) or text[-500:]}
    text, *unit_logs = text.split(UNIT_MARK)
    on_device: dict[str, int] = {}
    host_shape_ops: dict[str, int] = {}
    fallback: dict[str, int] = {}
    for op, place, dtype in _SELECTED.findall(text):
        if place == device:
            on_device[op] = on_device.get(op, 0) + 1
        elif place == "CPU" and host_shape_op(op, dtype):
            host_shape_ops[op] = host_shape_ops.get(op, 0) + 1
        elif place == "CPU":
            fallback[op] = fallback.get(op, 0) + 1
    placement: KernelPlacement = {"on_device": on_device, "host_shape_ops": host_shape_ops, "cpu_fallback": fallback}
    if engine:
        import quant_engine

        placement["engine"] = quant_engine.engine_ops(text)
        placement["units"] = [quant_engine.engine_ops(log) for log in unit_logs]
    return placement


# The CPU ops an inference program runs on the host by design, by op: Paddle computes the target
# shapes of reshape/expand there (full_int_array, shape) and casts them between integer types.
# Any other op on the CPU is a fallback, whatever its dtype: a bfloat16 or int8 kernel the device
# lacks must not pass for shape arithmetic. (op -> the dtypes it is allowed in; None: any)
HOST_SHAPE_OPS: dict[str, tuple[str, ...] | None] = {
    "full_int_array": None,
    "shape": None,
    "shape64": None,
    "cast": ("int32", "int64"),
}


def host_shape_op(op: str, dtype: str) -> bool:
    if op not in HOST_SHAPE_OPS:
        return False
    allowed = HOST_SHAPE_OPS[op]
    return allowed is None or dtype in allowed


def child(
    *args: str, env: dict[str, str] | None = None, log: IO[str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run a phase in a fresh interpreter. The orchestrating process never imports
    Paddle: a process started from one that has (its threads and signal state)
    can hang in Paddle's start-up."""
    return subprocess.run(
        [sys.executable, __file__, *args],
        stdout=subprocess.DEVNULL if log else None,
        stderr=log,
        env=env or os.environ.copy(),
        timeout=1800,
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(MODELS))
    p.add_argument("--model-dir", type=Path)
    p.add_argument("--device", default="")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--work", type=Path, default=Path("."))
    p.add_argument("--out")
    p.add_argument("--phase", choices=["export", "load", "probe", "measure"])
    p.add_argument("--load-only", action="store_true", help="with --model-dir: load it on the CPU, and stop")
    p.add_argument("--prefix")
    p.add_argument("--shape")
    p.add_argument("--quant", choices=["int8"], default="")
    p.add_argument("--engine", action="store_true")
    p.add_argument("--unit", action="append", default=[])
    args = p.parse_args()

    if args.phase:
        return run_phase(args)
    if args.model_dir and args.load_only:
        return check_load(find_prefix(args.model_dir), args.out)
    if not args.device:  # the plugin's device type, when the caller does not know it
        found = (
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import paddle; print(','.join(paddle.device.get_all_custom_device_type() or []))",
                ],
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()
        )
        types = found[-1].split(",") if found and found[-1] else []
        if len(types) != 1:
            raise SystemExit(f"cannot tell the plugin's device type; registered: {types}")
        args.device = types[0]
    work = args.work.resolve()
    quant = ["--quant", args.quant] if args.quant else []
    if args.model_dir:
        prefix, name = find_prefix(args.model_dir), str(args.model_dir)
    else:
        prefix, name = str(work / args.model / "model"), args.model
        if child(
            "--phase", "export", "--model", args.model, "--device", args.device, "--prefix", prefix, *quant
        ).returncode:
            raise SystemExit(f"exporting {args.model} failed")
    qdq_ops: dict[str, int] = {}
    if args.quant:
        import quant_program

        qdq_ops = quant_program.qdq_counts(Path(model_files(prefix)[0]))
        if not all(qdq_ops.values()):
            raise SystemExit(
                f"{name} is not a quantized (QDQ) model: its program holds {qdq_ops}; quantize it with "
                "paddle.quantization (PTQ or QAT, converted) and save it with paddle.jit.save"
            )
    measured = work / "measure.json"
    if child(
        "--phase",
        "measure",
        "--prefix",
        prefix,
        "--device",
        args.device,
        "--warmup",
        str(args.warmup),
        "--repeats",
        str(args.repeats),
        "--out",
        str(measured),
        *quant,
    ).returncode:
        raise SystemExit("running the model failed (see the lines above)")
    from plugin_exports import by_design

    report: InferenceCheck = json.loads(measured.read_text())  # the measurement, completed below
    placement = kernel_placement(prefix, args.device, report["input_shape"])
    # ops whose kernels the device library lacks run on the CPU by design; any other must not
    fell_back = placement.get("cpu_fallback", {})
    designed = {op: fell_back[op] for op in by_design(fell_back, report["unimplemented_kernels"])}
    # Paddle Inference also keeps an op that has a device kernel on the CPU when its input
    # comes from one of those (flatten after a CPU pool2d): placement, not a missing kernel
    beside = {
        op: n for op, n in fell_back.items() if designed and op not in designed and op in report["registered_kernels"]
    }
    unexpected = {op: n for op, n in fell_back.items() if op not in designed and op not in beside}
    placement["cpu_by_design"] = {**designed, **beside}
    passed = bool(report["outputs_agree"] and "error" not in placement and not unexpected)
    report.update({"name": "inference", "kind": "inference", "model": name, "passed": passed, "placement": placement})
    report["detail"] += "; " + (
        f"CPU fallback: {unexpected}"
        if unexpected
        else placement.get("error", "every op on the device but host shape arithmetic")
    )
    if designed and not unexpected and "error" not in placement:
        report["detail"] += f" but those the device library lacks, on the CPU by design: {designed}" + (
            f" (and, on their CPU output, {beside})" if beside else ""
        )
    if args.quant:
        import quant_engine
        import quant_model
        import quant_program

        record_file = quant_model.simulated_record(prefix)
        simulated = json.loads(record_file.read_text()) if record_file.exists() else None
        program = Path(model_files(prefix)[0])
        engine = report.get("engine")
        engine_placement: KernelPlacement = {}
        if engine and not {"unavailable", "error"} & set(engine):
            units = tuple(u["prefix"] for u in engine["units"])
            engine_placement = kernel_placement(prefix, args.device, report["input_shape"], engine=True, units=units)
            engine["units"] = quant_engine.units_in_engine(engine["units"], engine_placement.get("units", []))
            engine["reference_spread"] = (simulated or {}).get("float64_spread")
        quant_record = quant_model.levels(
            qdq_ops,
            quant_model.scale_axes(program),
            dict(placement),
            report["outputs_agree"],
            simulated,
            RTOL,
            quant_engine.level2(engine, quant_program.op_counts(program), dict(engine_placement)),
        )
        report["quant"] = cast("QuantCheck", quant_record)
        levels = quant_record["levels"].values()
        report["passed"] = passed and all(lv["passed"] or lv["not_run"] for lv in levels)
        report["detail"] += "; " + "; ".join(lv["detail"] for lv in levels)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(report["detail"], flush=True)
    return 0


if __name__ == "__main__":
    exit_without_final_collection(main())
