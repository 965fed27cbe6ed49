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
import copy
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

os.environ.setdefault("GLOG_minloglevel", "2")

INT_MAX = 2147483647
# The ops whose attributes the engine reads, by their name in a PIR program's JSON ("1.conv2d"):
# a concat's axis is its `full` operand's value, a pool2d's kernel its `full_int_array` operand's.
FUZZED_OPS = ("conv2d", "depthwise_conv2d", "matmul", "pool2d", "softmax", "concat", "flatten", "add")
SKIPPED_ATTRIBUTES = ("struct_name", "dtype", "place", "shape")  # (names, and the full's own output)
# what the value of a concat's `full` and of a pool2d's `full_int_array` operand is called in a report
OPERAND_ATTRIBUTES = {"concat": "axis (its full operand)", "pool2d": "kernel_size (its full_int_array operand)"}
# How far the engine may be from Paddle's CPU on these models (float, the QDQ pairs folded), as a
# share of max|cpu|: a few int8 steps of each layer's grid (measured: about 0.02 unmutated).
OUTPUT_RTOL = 0.15


class Mutation(TypedDict):
    id: int
    model: str
    op: str  # e.g. "conv2d#0" (the op's position among the model's ops of its name)
    attribute: str  # or "input"
    change: str
    index: int  # the op's position in the program (-1: an input mutation)


def models() -> dict[str, tuple[Callable[[Any], Any], list[int]]]:
    """The fuzzed models: name -> (builder given paddle, input shape)."""

    def convnet(paddle: Any) -> Any:
        nn = paddle.nn
        return nn.Sequential(
            nn.Conv2D(3, 8, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(8, 8, 3, padding=1, groups=8),
            nn.AvgPool2D(2, 2),
            nn.Flatten(),
            nn.Linear(32, 10),
            nn.Softmax(),
        )

    def operands(concat: bool) -> Callable[[Any], Any]:
        def build(paddle: Any) -> Any:
            import quant_engine

            return quant_engine.two_operands(paddle, concat)

        return build

    return {
        "convnet": (convnet, [1, 3, 17, 17]),
        "add": (operands(False), [1, 8, 6, 6]),
        "concat": (operands(True), [1, 8, 6, 6]),
    }


def save_models(directory: Path) -> None:
    import paddle
    from paddle.static import InputSpec
    from quant_model import quantized

    for n, (name, (build, shape)) in enumerate(models().items()):
        if (directory / f"{name}.json").exists():
            continue
        paddle.set_device("cpu")
        paddle.seed(31 + n)
        qdq = quantized(build(paddle), shape, True)
        paddle.jit.save(qdq, str(directory / name), input_spec=[InputSpec(shape, "float32", "x")])


def ops_of(program: dict[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = program["program"]["regions"][0]["blocks"][0]["ops"]
    return ops


def op_name(op: dict[str, Any]) -> str:
    return str(op["#"]).split(".", 1)[-1]


def value_ids(op: dict[str, Any], key: str) -> list[int]:
    return [v["%"] for v in op.get(key, []) if isinstance(v, dict) and "%" in v]


def variants(at: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """The mutations of one attribute value (a PIR JSON {"#": type, "D": data}), most telling first;
    None: the attribute removed."""
    kind, data = at["#"], at["D"]
    if kind == "0.a_array":
        n = max(len(data), 2)
        element = data[0]["#"] if data else "0.a_i32"
        first = data[0]["D"] if data else 1

        def ints(values: list[Any], of: str = element) -> dict[str, Any]:
            return {"#": "0.a_array", "D": [{"#": of, "D": v} for v in values]}

        return [
            ("empty", ints([])),
            ("zeros", ints([0] * n)),
            ("string elements", ints(["1"] * n, "0.a_str")),
            ("negative", ints([-1] * n)),
            ("one element", ints([first])),
            ("three elements", ints([first] * 3)),
            ("huge", ints([INT_MAX] * n)),
            ("a scalar", {"#": element, "D": first}),
            ("missing", None),
        ]
    if kind in ("0.a_i32", "0.a_i64"):
        return [
            ("a string", {"#": "0.a_str", "D": str(data)}),
            ("zero", {"#": kind, "D": 0}),
            ("negative", {"#": kind, "D": -5}),
            ("huge", {"#": kind, "D": INT_MAX}),
            ("an array", {"#": "0.a_array", "D": [{"#": kind, "D": data}]}),
            ("missing", None),
        ]
    if kind in ("0.a_f64", "0.a_f32"):
        return [
            ("huge", {"#": kind, "D": 1e9}),
            ("negative", {"#": kind, "D": -7.0}),
            ("a fraction", {"#": kind, "D": 0.5}),
        ]
    if kind == "0.a_str":
        return [("unknown", {"#": kind, "D": "BOGUS"}), ("an int", {"#": "0.a_i32", "D": 1}), ("missing", None)]
    if kind == "0.a_bool":
        return [("an int", {"#": "0.a_i32", "D": 1}), ("a string", {"#": "0.a_str", "D": "true"}), ("missing", None)]
    return []


def fuzzed_attributes(ops: list[dict[str, Any]]) -> Iterator[tuple[int, str, str, dict[str, Any]]]:
    """(op index, op label, attribute name, value) of every attribute the engine reads: the fuzzed
    ops' own, a concat's axis (its full's value) and a pool2d's kernel (its full_int_array's)."""
    producers = {v: i for i, op in enumerate(ops) for v in value_ids(op, "O")}
    seen: dict[str, int] = {}
    for i, op in enumerate(ops):
        name = op_name(op)
        if name not in FUZZED_OPS:
            continue
        label = f"{name}#{seen.get(name, 0)}"
        seen[name] = seen.get(name, 0) + 1
        for attribute in op.get("A", []):
            if attribute["N"] not in SKIPPED_ATTRIBUTES:
                yield i, label, attribute["N"], attribute["AT"]
        operands = value_ids(op, "I")
        if name in ("concat", "pool2d") and len(operands) > 1 and operands[1] in producers:
            feeder = producers[operands[1]]
            for attribute in ops[feeder].get("A", []):
                if attribute["N"] == "value":
                    yield feeder, label, OPERAND_ATTRIBUTES[name], attribute["AT"]


def input_changes(shape: list[int]) -> list[tuple[str, list[int]]]:
    """The model's own input (what the engine must run: the baseline), then inputs its program
    refuses: other channels, one rank less, one more."""
    return [
        ("unchanged", shape),
        ("channels doubled", [shape[0], shape[1] * 2, *shape[2:]]),
        ("one rank less", shape[:-1]),
        ("one rank more", [*shape, 1]),
    ]


def plan(directory: Path, budget: int, seed: int, cases: list[list[str]] | None = None) -> list[Mutation]:
    """The mutations to run: the input changes, then every fuzzed attribute's first variant, then
    each one's second and so on (rotated by `seed`), until `budget` (0: all of them); with `cases`
    ([model, op, attribute, change] each), those alone, in that order."""
    found: list[Mutation] = []
    rounds: list[list[Mutation]] = []
    for model, (_, shape) in models().items():
        for change, _ in input_changes(shape):
            found.append({"id": 0, "model": model, "op": "data", "attribute": "input", "change": change, "index": -1})
        ops = ops_of(json.loads((directory / f"{model}.json").read_text()))
        for index, label, attribute, at in fuzzed_attributes(ops):
            choices = variants(at)
            for r, (change, _) in enumerate(
                choices[seed % len(choices) :] + choices[: seed % len(choices)] if choices else []
            ):
                while len(rounds) <= r:
                    rounds.append([])
                rounds[r].append(
                    {"id": 0, "model": model, "op": label, "attribute": attribute, "change": change, "index": index}
                )
    for mutations in rounds:
        found.extend(mutations)
    if cases is not None:
        named = {(m["model"], m["op"], m["attribute"], m["change"]): m for m in found}
        unknown = [case for case in cases if tuple(case) not in named]
        if unknown:
            raise SystemExit(f"no such mutations: {unknown}")
        found = [named[(model, op, attribute, change)] for model, op, attribute, change in cases]
    elif budget:
        found = found[:budget]
    for n, m in enumerate(found):
        m["id"] = n
    return found


def mutated_program(directory: Path, m: Mutation) -> str:
    program = json.loads((directory / f"{m['model']}.json").read_text())
    if m["index"] < 0:
        return json.dumps(program)
    op = ops_of(program)[m["index"]]
    for n, attribute in enumerate(op["A"]):
        if attribute["N"] == ("value" if m["attribute"] in OPERAND_ATTRIBUTES.values() else m["attribute"]):
            new = dict(variants(attribute["AT"]))[m["change"]]
            if new is None:
                del op["A"][n]
            else:
                attribute["AT"] = copy.deepcopy(new)
            break
    return json.dumps(program)


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
    env = {**os.environ, f"{args.device.upper()}_DUMP_OP_ARGS": "1", "PYTHONPATH": str(Path(__file__).parent)}
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
