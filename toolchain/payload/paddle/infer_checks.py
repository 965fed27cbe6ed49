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
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, TypedDict, cast

if TYPE_CHECKING:  # types only (numpy is imported where it is used, records is not needed to run)
    import numpy as np
    from records import InferenceCheck, InferMeasurement, KernelPlacement, QuantCheck

os.environ.setdefault("GLOG_minloglevel", "2")

MODELS: dict[str, tuple[list[int], Callable[[ModuleType], Any]]] = {  # name -> (input shape, builder)
    "mnist": ([1, 1, 28, 28], lambda vision: vision.models.LeNet()),
    "mobilenet_v1": ([1, 3, 224, 224], lambda vision: vision.models.mobilenet_v1(pretrained=False)),
    "resnet50": ([1, 3, 224, 224], lambda vision: vision.models.resnet50(pretrained=False)),
}
# Outputs agree when max|device - cpu| <= RTOL * max|cpu| + ATOL, and the top-1 class matches.
_TOL = json.loads(os.environ["DEVKIT_TOLERANCES"])  # the resolved [tool.devkit.tolerances], passed whole by devkit
RTOL, ATOL = _TOL["infer_rtol"], _TOL["infer_atol"]
# Ops that legitimately run on the host: shape arithmetic on integer tensors.
_SELECTED = re.compile(r"\[([a-z_0-9]+)\] selected kernel\(is_valid: \d \): \(([^,]+), [^,]+, ([a-z0-9:_]+)\)")


def measurement_input(shape: list[int]) -> np.ndarray:
    """The input every measurement of a model runs (seeded: the same on every machine)."""
    import numpy as np

    return np.random.RandomState(0).uniform(0, 1, shape).astype("float32")


def built(name: str) -> tuple[Any, list[int]]:
    """The named model with random weights (seeded: no weights can be downloaded), on the CPU and
    in eval mode, and its input shape."""
    import paddle

    shape, build = MODELS[name]
    paddle.seed(2024)
    paddle.set_device("cpu")
    model = build(paddle.vision)
    model.eval()
    return model, shape


def export(name: str, prefix: Path, quant: str, device: str) -> None:
    """Save the model (built); with `quant`, its QDQ form, and the simulated-int8 comparison beside
    it for the measurement's input (quant_model.py)."""
    import paddle
    from paddle.static import InputSpec

    model, shape = built(name)
    if quant:
        import quant_model

        quant_model.export(model, measurement_input(shape), prefix, device)
        return
    paddle.jit.save(model, str(prefix), input_spec=[InputSpec(shape, "float32", "x")])


def model_files(prefix: str) -> tuple[str, str]:
    for ext in (".json", ".pdmodel"):
        if os.path.exists(prefix + ext):
            return prefix + ext, prefix + ".pdiparams"
    raise FileNotFoundError(f"no {prefix}.json or {prefix}.pdmodel")


# The line devkit reads from a payload's output as its error (run/step.py: PROBLEM_KINDS), then the kind.
PROBLEM, INPUT = "devkit-problem: ", "input"
READING = "devkit-load: Paddle started, reading the model"  # what follows is the model's doing
REEXPORT = "re-export the model with paddle.jit.save (or paddle.static.save_inference_model)"


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


def load_on_cpu(prefix: str, out: Path) -> int:
    """The load phase: a CPU predictor of the model, or the devkit-problem line (on stderr, the log)."""
    import paddle.inference  # noqa: F401 (the plugin loads with Paddle: what fails here is not the model)

    program, params = model_files(prefix)
    print(READING, file=sys.stderr, flush=True)
    try:
        pred = predictor(prefix, "cpu")
    except Exception as exc:
        words = paddle_words(exc)
        # Paddle reads the parameters as tensors, all at once (load_combine): its words then name them
        culprit = params if re.search("tensor|load_combine", words, re.IGNORECASE) else program
        print(f"{PROBLEM}Paddle cannot load {culprit}: {words} | {REEXPORT} | {INPUT}", file=sys.stderr, flush=True)
        return 1
    inputs = {name: pred.get_input_handle(name).shape() for name in pred.get_input_names()}
    out.write_text(json.dumps({"program": program, "params": params, "inputs": inputs}))
    return 0


def paddle_words(exc: BaseException) -> str:
    """The first line of Paddle's error without its kind and source position: "(Unavailable) Cannot
    read tensor desc size ... (at dense_tensor_tostream.cc:316)" -> "Cannot read tensor desc size"."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    first = re.sub(r"^\([A-Za-z]+\)\s*", "", re.sub(r"\s*\(at \S+\)$", "", first.strip()))
    return first.rstrip(". ").replace("|", "/")[:300]  # (a | would split devkit's line)


def find_prefix(model_dir: Path) -> str:
    for pattern in ("*.json", "*.pdmodel"):
        for path in sorted(model_dir.glob(pattern)):
            if path.with_suffix(".pdiparams").exists():
                return str(path.with_suffix(""))
    raise SystemExit(f"{model_dir} holds no exported model (<name>.json or .pdmodel with .pdiparams)")


def predictor(prefix: str, device: str, engine: bool = False) -> Any:
    """A paddle.inference predictor (Paddle's objects are Any here); `engine`: with the plugin's int8
    engine (quant_engine.py)."""
    from paddle import inference

    config = inference.Config(*model_files(prefix))
    if device == "cpu":
        config.disable_gpu()
    else:
        config.enable_custom_device(device, 0)
    if engine:
        import quant_engine

        quant_engine.use_engine(config, device)
    return inference.create_predictor(config)


def run_once(pred: Any, x: np.ndarray) -> np.ndarray:
    handle = pred.get_input_handle(pred.get_input_names()[0])
    handle.reshape(list(x.shape))
    handle.copy_from_cpu(x)
    pred.run()
    out: np.ndarray = pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()
    return out


class Timing(TypedDict):
    output: np.ndarray  # the last run's
    avg_ms: float
    min_ms: float
    max_ms: float


def timed(prefix: str, device: str, x: np.ndarray, warmup: int, repeats: int, engine: bool = False) -> Timing:
    pred = predictor(prefix, device, engine)
    for _ in range(warmup):
        run_once(pred, x)
    times: list[float] = []
    out = None
    for _ in range(repeats):
        start = time.perf_counter()
        out = run_once(pred, x)
        times.append((time.perf_counter() - start) * 1000)
    # (out is set: without repeats, the mean divides by zero first)
    return {
        "output": cast("np.ndarray", out),
        "avg_ms": sum(times) / len(times),
        "min_ms": min(times),
        "max_ms": max(times),
    }


# What the probe writes before each unit's prediction: the log's sections, apart.
UNIT_MARK = "devkit-probe: unit"


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


def topk(values: np.ndarray, k: int) -> set[int]:
    import numpy as np

    return set(np.argsort(-values.reshape(-1))[:k].tolist())


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
    report.update({"name": "inference", "model": name, "passed": passed, "placement": placement})
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


def run_phase(args: argparse.Namespace) -> int:
    import numpy as np

    if args.phase == "export":
        export(args.model, Path(args.prefix), args.quant, args.device)
        return 0
    if args.phase == "load":
        return load_on_cpu(args.prefix, Path(args.out))
    if args.phase == "probe":
        shape = [int(s) for s in args.shape.split(",")]
        run_once(predictor(args.prefix, args.device, args.engine), np.zeros(shape, dtype="float32"))
        for unit in args.unit:
            print(UNIT_MARK, file=sys.stderr, flush=True)
            pred = predictor(unit, args.device, engine=True)
            unit_shape = pred.get_input_handle(pred.get_input_names()[0]).shape()
            run_once(pred, np.zeros(unit_shape, dtype="float32"))
        # The placement log is written. Skip interpreter teardown: with verbose
        # logging on, Paddle 3.3.1 can abort in an exit handler and then hang in
        # its own signal handler.
        sys.stderr.flush()
        os._exit(0)
    import paddle

    handle = predictor(args.prefix, "cpu")
    shape = [d if d > 0 else 1 for d in handle.get_input_handle(handle.get_input_names()[0]).shape()]
    x = measurement_input(shape)
    dev = timed(args.prefix, args.device, x, args.warmup, args.repeats)
    cpu = timed(args.prefix, "cpu", x, args.warmup, args.repeats)
    diff = np.abs(dev["output"].astype(np.float64) - cpu["output"].astype(np.float64))
    scale = float(np.max(np.abs(cpu["output"])))
    max_abs = float(diff.max())
    max_rel = float(max_abs / scale) if scale > 0 else max_abs
    top1 = topk(dev["output"], 1) == topk(cpu["output"], 1)
    top5 = len(topk(dev["output"], 5) & topk(cpu["output"], 5)) / 5
    from plugin_exports import unimplemented_kernels

    report: InferMeasurement = {
        "input_shape": shape,
        "unimplemented_kernels": unimplemented_kernels(args.device),
        "registered_kernels": sorted(
            name
            for name, keys in paddle.base.core._get_registered_phi_kernels("function").items()
            if any(key.strip("()").split(",")[0].strip() == args.device for key in keys)
        ),
        "paddle_version": paddle.__version__,
        "device": args.device,
        "criteria": {"rtol_of_max_abs_output": RTOL, "atol": ATOL, "top1": "must agree", "cpu_fallback": "none"},
        "max_abs_diff": max_abs,
        "max_rel_diff": max_rel,
        "top1_agree": top1,
        "top5_overlap": top5,
        "outputs_agree": bool(max_abs <= RTOL * scale + ATOL and top1),
        "latency_ms": {
            place: {"avg_ms": round(r["avg_ms"], 3), "min_ms": round(r["min_ms"], 3), "max_ms": round(r["max_ms"], 3)}
            for place, r in ((args.device, dev), ("cpu", cpu))
        },
        "warmup": args.warmup,
        "repeats": args.repeats,
        "detail": (
            f"max abs diff {max_abs:.2e} (rel {max_rel:.1e}), top-1 {'agrees' if top1 else 'DIFFERS'}, "
            f"top-5 overlap {top5:.0%}; {args.device} {dev['avg_ms']:.1f} ms vs cpu {cpu['avg_ms']:.1f} ms"
        ),
    }
    if args.quant:
        report["engine"] = measure_engine(args, x, cpu["output"])
    Path(args.out).write_text(json.dumps(report))
    return 0


def measure_engine(args: argparse.Namespace, x: np.ndarray, deployment: np.ndarray) -> dict[str, Any]:
    """Level 2's measurement: the model and one-layer models through the plugin's int8 engine,
    against their simulated-int8 CPU outputs."""
    import numpy as np
    import quant_engine
    import quant_model
    from int8_compare import compare

    reference_file = quant_model.simulated_output(args.prefix)
    if not reference_file.exists():
        return {"unavailable": "no simulated-int8 reference for a saved model (see level 1)"}
    try:
        run = timed(args.prefix, args.device, x, args.warmup, args.repeats, engine=True)
    except Exception as exc:
        said = " ".join(str(exc).split())[:400]
        # a plugin without the engine (a flavour without the int8 ops) registers no pass of its name
        return {"unavailable" if "has not been registered" in said else "error": said}

    def through_engine(prefix: str, inputs: np.ndarray) -> np.ndarray:
        return run_once(predictor(prefix, args.device, engine=True), inputs)

    simulated = np.load(reference_file)
    return {
        "model": compare(run["output"], simulated),
        "deployment_top1_agree": bool(np.argmax(run["output"]) == np.argmax(deployment)),
        # (the quantized model's own top-1 against the float one's: PTQ's doing, not the engine's)
        "simulated_deployment_top1_agree": bool(np.argmax(simulated) == np.argmax(deployment)),
        "units": quant_engine.unit_checks(args.device, through_engine, Path(args.prefix + ".units")),
        "layers": quant_engine.layer_checks(quant_model.layers_dir(args.prefix), through_engine),
        "latency_ms": {
            "avg_ms": round(run["avg_ms"], 3),
            "min_ms": round(run["min_ms"], 3),
            "max_ms": round(run["max_ms"], 3),
        },
    }


if __name__ == "__main__":
    sys.exit(main())
