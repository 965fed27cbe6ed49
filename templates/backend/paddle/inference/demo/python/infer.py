"""Run a Paddle Inference model on the {{ device_type }} device and print latency and top-k.

    python infer.py [--model-dir DIR] [--warmup 10] [--repeats 30] [--topk 5]
    python infer.py --check DIR

Without --model-dir a LeNet with random weights is exported first (no weights
can be downloaded), so the demo runs anywhere paddlepaddle is installed.

--check DIR runs the bundle's check/ (made by `devkit build --infer` with the build
machine's Paddle): a quantized (int8, QDQ) LeNet, its input and two golden outputs.
The deployment (Paddle folds the QDQ pairs with the passes the plugin hands it) must
match the CPU's output within the tolerances in check.json, and the plugin's int8
engine (where the plugin has one) must match the simulated-int8 output: on average within
1 LSB of the output's int8 grid, and its top-1 class scored by the golden within 2 LSB of
the golden's top (each output may be 1 LSB off, so closer classes may swap). It prints
a PASS or FAIL line for each and exits non-zero on a failure.
"""

import argparse
import json
import os
import re
import tempfile
import time

import numpy as np
import paddle
from paddle import inference


def export_lenet(directory):
    from paddle.static import InputSpec

    paddle.set_device("cpu")
    model = paddle.vision.models.LeNet()
    model.eval()
    prefix = os.path.join(directory, "lenet")
    paddle.jit.save(model, prefix, input_spec=[InputSpec([1, 1, 28, 28], "float32", "x")])
    return prefix


def model_prefix(directory):
    for name in sorted(os.listdir(directory)):
        stem, ext = os.path.splitext(name)
        if ext in (".json", ".pdmodel") and os.path.exists(os.path.join(directory, stem + ".pdiparams")):
            return os.path.join(directory, stem), ext
    raise SystemExit(f"no exported model (<name>.json or .pdmodel + .pdiparams) in {directory}")


def run_once(predictor, x):
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(list(x.shape))
    handle.copy_from_cpu(x)
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()


def check(directory):
    """The bundle's int8 check (see the module's text); True when every part passed."""
    with open(os.path.join(directory, "check.json")) as f:
        spec = json.load(f)

    def member(name):  # check.json names files of its own directory, nothing else
        if not isinstance(name, str) or os.path.basename(name) != name or name.startswith("."):
            raise SystemExit(f"{directory}/check.json names {name!r}, which is not a file beside it")
        return os.path.join(directory, name)

    model = member(spec["model"])
    x = np.load(member(spec["input"]))
    ok = True

    def predictor(passes=None):
        config = inference.Config(model + ".json", model + ".pdiparams")
        config.enable_custom_device("{{ device_type }}", 0)
        if passes is not None:
            config.enable_custom_passes(passes, True)
        return inference.create_predictor(config)

    def report(passed, what):
        print(f"{'PASS' if passed else 'FAIL'} {spec['name']}: {what}", flush=True)
        return passed

    deployment = spec["deployment"]
    golden = np.load(member(deployment["golden"])).astype(np.float64)
    out = run_once(predictor(), x).astype(np.float64)
    diff = float(np.abs(out - golden).max())
    bound = deployment["rtol"] * float(np.abs(golden).max()) + deployment["atol"]
    ok &= report(
        diff <= bound and np.argmax(out) == np.argmax(golden),
        f"deployment (QDQ folded, float32 on {{ device_type }}): max |diff| {diff:.2e} (<= {bound:.2e}), "
        f"top-1 {np.argmax(out)} (golden {np.argmax(golden)})",
    )
    engine = spec["engine"]
    passes = [p for p in engine["passes"] if re.fullmatch(r"[a-z][a-z0-9_]*", p)]  # names, never more
    golden = np.load(member(engine["golden"])).astype(np.float64)
    try:
        out = run_once(predictor(passes), x).astype(np.float64)
    except Exception as exc:  # a plugin built without the engine registers no pass of its name
        if "has not been registered" not in str(exc):
            raise
        print(f"SKIP {spec['name']}: int8 engine: this plugin has none ({passes[0]} is not registered)")
        return ok
    lsb = float(np.abs(golden).max()) / 127 or 1.0
    mean, worst = float(np.abs(out - golden).mean() / lsb), float(np.abs(out - golden).max() / lsb)
    gap = float(golden.max() - golden.reshape(-1)[np.argmax(out)]) / lsb  # a class this close to the top ties
    ok &= report(
        mean <= engine["max_mean_lsb"] and gap <= engine["top1_tie_lsb"],
        f"int8 engine vs simulated int8: mean {mean:.2f} LSB (<= {engine['max_mean_lsb']}), max {worst:.2f} LSB, "
        f"top-1 {np.argmax(out)} (golden {np.argmax(golden)}, {gap:.2f} LSB below its top; "
        f"<= {engine['top1_tie_lsb']} ties)",
    )
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--topk", type=int, default=5)
    parser.add_argument("--check", metavar="DIR", help="run the bundle's int8 check (run.sh --check runs check/)")
    args = parser.parse_args()

    if "{{ device_type }}" not in (paddle.device.get_all_custom_device_type() or []):
        raise SystemExit("the {{ device_type }} plugin is not loaded: set CUSTOM_DEVICE_ROOT to the bundle's lib/ (run.sh does)")
    if args.check:
        raise SystemExit(0 if check(args.check) else 1)
    model_dir = args.model_dir or tempfile.mkdtemp()
    if not args.model_dir:
        export_lenet(model_dir)
    prefix, ext = model_prefix(model_dir)
    config = inference.Config(prefix + ext, prefix + ".pdiparams")
    config.enable_custom_device("{{ device_type }}", 0)
    predictor = inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    shape = [d if d > 0 else 1 for d in handle.shape()]
    x = np.random.RandomState(0).uniform(0, 1, shape).astype("float32")
    handle.reshape(shape)
    handle.copy_from_cpu(x)
    for _ in range(args.warmup):
        predictor.run()
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        predictor.run()
        times.append((time.perf_counter() - start) * 1000)
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu().reshape(-1)
    top = np.argsort(-out)[: args.topk]
    print(f"model {prefix}{ext} on {{ device_type }}:0, input {shape}")
    print(f"latency over {args.repeats} runs after {args.warmup} warmup: avg {np.mean(times):.3f} ms, "
          f"min {np.min(times):.3f} ms, max {np.max(times):.3f} ms")
    print("top-%d: %s" % (args.topk, ", ".join(f"{i}:{out[i]:.4f}" for i in top)))


if __name__ == "__main__":
    main()
