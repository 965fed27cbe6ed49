"""What infer_checks.py's children run, one phase each in a fresh interpreter (infer_checks.child):
load a model, probe where its kernels run, measure it on the CPU and the device, and level 2's
measurement through the plugin's int8 engine."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infer_models import export, measurement_input, model_files, paddle_words, predictor, run_once, timed

if TYPE_CHECKING:
    import numpy as np
    from inference_records import InferMeasurement


# Outputs agree when max|device - cpu| <= RTOL * max|cpu| + ATOL, and the top-1 class matches.
_TOL = json.loads(os.environ["DEVKIT_TOLERANCES"])  # the resolved [tool.devkit.tolerances], passed whole by devkit

RTOL, ATOL = _TOL["infer_rtol"], _TOL["infer_atol"]

# The line devkit reads from a payload's output as its error (run/step.py: PROBLEM_KINDS), then the kind.
PROBLEM, INPUT = "devkit-problem: ", "input"

READING = "devkit-load: Paddle started, reading the model"  # what follows is the model's doing

REEXPORT = "re-export the model with paddle.jit.save (or paddle.static.save_inference_model)"


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


# What the probe writes before each unit's prediction: the log's sections, apart.
UNIT_MARK = "devkit-probe: unit"


def topk(values: np.ndarray, k: int) -> set[int]:
    import numpy as np

    return set(np.argsort(-values.reshape(-1))[:k].tolist())


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
