"""A fuzz of the int8 engine's checks (run in a Python with paddlepaddle and the plugin, CUSTOM_DEVICE_ROOT).

Small quantized models (quant_model.quantized) whose ops the engine takes -- conv2d, depthwise_conv2d,
max and average pool2d, flatten + matmul, softmax, a residual add, a concat -- are saved, and each
mutation changes one attribute of one of their ops in model.json (its type, arity, sign; zero, huge,
missing) or feeds a good model an input of other channels or rank. Each runs through Paddle
Inference on the device with the engine's passes; its verdict:
- the device raised an error with words: passed (whatever Paddle's CPU does);
- the device gave numbers: Paddle's CPU must give the same output (shape, and values within the
  int8 engine's distance from the float model), not refuse -- unless Paddle computes that output on
  the device without the engine (its CPU's own passes refuse more: its fc fusion, a 1-d x);
- the process died by a signal: failed, unless Paddle without the engine dies on it too (on the
  device with the QDQ folding alone, or on its CPU): Paddle 3.3.1's own crash (conv2d's InferMeta
  reads dilations [], the device pipeline's TransferLayoutPass a pool2d's kernel_size []),
  reported as paddle_deaths.

The mutations run in one child process (a batch); one that kills it is named by the progress file
(what began and did not end), and the rest of the batch runs in a new child.

    python engine_fuzz.py --device stpu --work DIR --out report.json [--budget N] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine_mutations import Mutation, input_changes, models, mutated_program, plan, save_models
from process_exit import exit_without_final_collection

os.environ.setdefault("GLOG_minloglevel", "2")

# How far the engine may be from Paddle's CPU on these models (float, the QDQ pairs folded), as a
# share of max|cpu|: a few int8 steps of each layer's grid (measured: about 0.02 unmutated).
OUTPUT_RTOL = 0.15


def model_input(m: Mutation) -> Any:
    import numpy as np

    shape = models()[m["model"]][1]
    if m["attribute"] == "input":
        shape = dict(input_changes(shape))[m["change"]]
    return np.random.RandomState(5).uniform(0, 1, shape).astype("float32")


def predicted(model: Path, params: Path, device: str, x: Any, engine: bool = True) -> Any:
    """The output of paddle.inference for `x`: on `device` with the engine's passes (without
    `engine`: the QDQ folding alone, what the plugin runs without its engine), or on the CPU."""
    from paddle import inference

    config = inference.Config(str(model), str(params))
    if device == "cpu":
        config.disable_gpu()
    else:
        import quant_engine
        from quant_program import QDQ_FOLDING

        config.enable_custom_device(device, 0)
        if engine:
            quant_engine.use_engine(config, device)
        else:
            config.enable_custom_passes(list(QDQ_FOLDING), True)
    pred = inference.create_predictor(config)
    handle = pred.get_input_handle(pred.get_input_names()[0])
    handle.reshape(list(x.shape))
    handle.copy_from_cpu(x)
    pred.run()
    return pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()


def has_words(message: str) -> bool:
    """An error that says something: several words of letters, not a bare code, path or op name."""
    return len(re.findall(r"[A-Za-z]{3,}", re.sub(r"\[[^\]]*\]|\S*/\S*", " ", message))) >= 4


def last_line(message: str) -> str:
    """The error's own sentence: Paddle's "InvalidArgumentError: ..." or "ValueError: (InvalidArgument) ..."
    line (after a C++ traceback, before its hint and the op's name), else its last line."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    said = [line for line in lines if re.match(r"\w*Error: ", line) or re.search(r"\([A-Z][A-Za-z]+\) ", line)]
    return (said[-1] if said else lines[-1] if lines else "")[:400]


def attempt(run: Callable[[], Any]) -> tuple[Any, str]:
    try:
        return run(), ""
    except Exception as error:  # noqa: BLE001 (Paddle raises several kinds; each must have words)
        return None, f"{type(error).__name__}: {error}"


class Progress:
    """The child's record of what began and ended, written before each risky step."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()


def judge(m: Mutation, directory: Path, device: str, progress: Progress, dump: Path) -> dict[str, Any]:
    """One mutation run on the device (and, when the device gives numbers, on the CPU)."""
    import quant_engine

    model = directory / "mutated.json"
    model.write_text(mutated_program(directory, m))
    params = directory / f"{m['model']}.pdiparams"
    x = model_input(m)
    progress.write({"begin": m["id"], "stage": "device"})
    with dump.open("w") as log:  # the device library's op dump: what the engine ran
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            out, device_error = attempt(lambda: predicted(model, params, device, x))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    ran = {kind: n for kind, n in quant_engine.engine_ops(dump.read_text(errors="replace")).items() if n}
    result: dict[str, Any] = {**m, "engine_ran": ran}
    if device_error and has_words(last_line(device_error)):
        return {**result, "outcome": "device error", "error": last_line(device_error), "passed": True}
    progress.write({"begin": m["id"], "stage": "cpu"})
    reference, cpu_error = attempt(lambda: predicted(model, params, "cpu", x))
    if device_error:  # without words: only if it is Paddle's own, on its CPU too
        same = last_line(cpu_error) == last_line(device_error)
        outcome = "device error, as Paddle's CPU's" if same else "device error without words"
        return {**result, "outcome": outcome, "error": last_line(device_error), "passed": same}
    if cpu_error:  # (the CPU's own passes may refuse what Paddle computes on the device: its fc fusion, a 1-d x)
        progress.write({"begin": m["id"], "stage": "the device without the engine"})
        plain, plain_error = attempt(lambda: predicted(model, params, device, x, engine=False))
        share = None if plain_error else difference(out, plain)
        if share is not None and share <= OUTPUT_RTOL:
            outcome = "computed as Paddle on the device without the engine (its CPU refuses)"
            return {**result, "outcome": outcome, "error": last_line(cpu_error), "max_share": share, "passed": True}
        said = f"the device computed an output Paddle's CPU refuses ({last_line(cpu_error)})"
        return {**result, "outcome": "device computed, CPU refused", "error": said, "passed": False}
    share = difference(out, reference)
    if share is None:
        said = f"the device's output {list(out.shape)} is not the CPU's {list(reference.shape)}"
        return {**result, "outcome": "shapes differ", "error": said, "passed": False}
    return {**result, "outcome": "computed as the CPU", "max_share": share, "passed": share <= OUTPUT_RTOL}


def difference(out: Any, reference: Any) -> float | None:
    """max|out - reference| as a share of max|reference| (a NaN where the reference has one is its
    output); None when the shapes differ."""
    import numpy as np

    if out.shape != reference.shape:
        return None
    both_nan = np.isnan(out) & np.isnan(reference)
    diff = np.where(both_nan, 0.0, np.abs(out.astype(np.float64) - reference))
    scale = float(np.nanmax(np.abs(reference))) if not np.isnan(reference).all() else 1.0
    return float(np.nan_to_num(diff, nan=np.inf).max()) / (scale or 1.0)


def child(args: argparse.Namespace) -> None:
    """Runs the plan from --start in this process, one record per mutation into the progress file."""
    directory = Path(args.work)
    save_models(directory)
    mutations = plan(directory, args.budget, args.seed, cases_of(args))
    progress = Progress(directory / "progress.jsonl")
    progress.write({"planned": len(mutations)})
    if args.references:  # (a mutation that killed the engine's run: does Paddle die on it without the engine?)
        m = mutations[args.start]
        model = directory / "mutated.json"
        model.write_text(mutated_program(directory, m))
        for stage, device, engine in (("the device without the engine", args.device, False), ("the CPU", "cpu", True)):
            progress.write({"begin": m["id"], "stage": stage})
            _, error = attempt(
                lambda: predicted(model, directory / f"{m['model']}.pdiparams", device, model_input(m), engine)  # noqa: B023
            )
            progress.write({"reference": stage, "error": last_line(error)})
        return
    dump = directory / "dump.log"
    for m in mutations[args.start :]:
        progress.write({"end": m["id"], "result": judge(m, directory, args.device, progress, dump)})


def cases_of(args: argparse.Namespace) -> list[list[str]] | None:
    return json.loads(Path(args.cases).read_text()) if args.cases else None


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def references(
    command: list[str], env: dict[str, str], mutation: int, progress: Path, timeout: float
) -> dict[str, str]:
    """What Paddle does with a mutation that killed the engine's run, without the engine: on the
    device (its passes without the engine's), then on the CPU, in one child; stage -> its error,
    "computed", or the signal it died by."""
    before = len(records(progress))
    proc = subprocess.run(
        [*command, "--start", str(mutation), "--references"], capture_output=True, text=True, env=env, timeout=timeout
    )
    found: dict[str, str] = {}
    for record in records(progress)[before:]:
        if "reference" in record:
            found[record["reference"]] = record["error"] or "computed"
        elif "begin" in record:
            found[record["stage"]] = f"died by {signal_name(proc.returncode)}"  # (until its end is recorded)
    return found


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"exit status {returncode}"


def run_batches(args: argparse.Namespace) -> dict[str, Any]:
    """The plan in as few children as signal deaths allow: each death is the mutation that began
    and did not end; the next child starts after it."""
    directory = Path(args.work)
    progress = directory / "progress.jsonl"
    env = {**os.environ, f"{args.device.upper()}_DUMP_OP_ARGS": "1"}  # (PYTHONPATH as devkit set it)
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--device", args.device, "--work", args.work]
    command += ["--budget", str(args.budget), "--seed", str(args.seed)] + (
        ["--cases", args.cases] if args.cases else []
    )
    started, start, children = time.monotonic(), 0, 0
    results: list[dict[str, Any]] = []
    deaths: list[dict[str, Any]] = []  # the engine's: the device run died where Paddle's CPU alone does not
    paddle_deaths: list[dict[str, Any]] = []
    while True:
        before = len(records(progress))
        proc = subprocess.run(
            [*command, "--start", str(start)], capture_output=True, text=True, env=env, timeout=args.timeout
        )
        children += 1
        new = records(progress)[before:]
        results += [r["result"] for r in new if "end" in r]
        ended = {r["end"] for r in new if "end" in r}
        begun = [r for r in new if "begin" in r and r["begin"] not in ended]
        if proc.returncode == 0:
            break
        if not begun:
            raise SystemExit(
                f"the fuzz's child failed before a mutation (exit {proc.returncode}): {proc.stderr[-2000:]}"
            )
        died = begun[-1]
        mutation = plan(directory, args.budget, args.seed, cases_of(args))[died["begin"]]
        death = {
            **mutation,
            "outcome": f"died by {signal_name(proc.returncode)}",
            "stage": died["stage"],
            "passed": False,
        }
        if died["stage"] == "device":  # Paddle without the engine on it: Paddle's own death, or the engine's?
            death["references"] = references(command, env, died["begin"], progress, args.timeout)
        paddle_died = [stage for stage, said in death.get("references", {}).items() if said.startswith("died by")]
        if paddle_died or died["stage"] != "device":
            # Paddle's own death, without the plugin's engine: reported, not the engine's
            death.update(passed=True, outcome=f"{death['outcome']}, as {(paddle_died or [died['stage']])[0]} does")
            paddle_deaths.append(death)
        else:
            deaths.append(death)
        results.append(death)
        start = died["begin"] + 1
        if len(deaths) + len(paddle_deaths) >= args.max_deaths:
            break
    planned = next((r["planned"] for r in records(progress) if "planned" in r), len(results))
    return {
        "planned": planned,
        "ran": len(results),
        "children": children,
        "deaths": deaths,
        "paddle_deaths": paddle_deaths,
        "failed": [r for r in results if not r["passed"]],
        "results": results,
        "seconds": round(time.monotonic() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", required=True)
    parser.add_argument("--work", required=True, help="a private directory for the models and the progress file")
    parser.add_argument("--out", help="the report (JSON)")
    parser.add_argument("--budget", type=int, default=0, help="how many mutations (0, the default: all)")
    parser.add_argument("--seed", type=int, default=0, help="rotates which variant of each attribute comes first")
    parser.add_argument("--cases", help="a JSON file of [model, op, attribute, change] lists: these mutations alone")
    parser.add_argument("--max-deaths", type=int, default=12, help="stop after this many signal deaths")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--references", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    report = run_batches(args)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    print(
        f"{report['ran']} of {report['planned']} mutations in {report['children']} child process(es), "
        f"{report['seconds']} s: {len(report['deaths'])} signal deaths, {len(report['failed'])} failed; "
        f"{len(report['paddle_deaths'])} deaths of Paddle's own (without the engine too)"
    )
    for r in report["paddle_deaths"]:
        print(f"  PADDLE'S OWN {r['model']} {r['op']} {r['attribute']} {r['change']}: {r['outcome']}")
    for r in report["failed"]:
        print(f"  FAILED {r['model']} {r['op']} {r['attribute']} {r['change']}: {r['outcome']} {r.get('error', '')}")


if __name__ == "__main__":
    main()
    exit_without_final_collection(0)
