"""Run a Paddle Inference model on the {{ device_type }} device and print latency and top-k.

    python infer.py [--model-dir DIR] [--warmup 10] [--repeats 30] [--topk 5]

Without --model-dir a LeNet with random weights is exported first (no weights
can be downloaded), so the demo runs anywhere paddlepaddle is installed.
"""

import argparse
import os
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--topk", type=int, default=5)
    args = parser.parse_args()

    if "{{ device_type }}" not in (paddle.device.get_all_custom_device_type() or []):
        raise SystemExit("the {{ device_type }} plugin is not loaded: set CUSTOM_DEVICE_ROOT to the bundle's lib/ (run.sh does)")
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
