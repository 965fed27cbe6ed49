"""How far the simulated-int8 reference of `devkit verify --quant int8` is from itself.

Run with the Python of a Paddle environment (devkit's reference env), from the repository:

    ~/.cache/devkit/host/reference-envs/py311-paddle-3.3.1/bin/python benchmarks/int8_reference_spread.py \
        mobilenet_v1 resnet50 [--device stpu]   # --device: CUSTOM_DEVICE_ROOT names the built plugin

For each model, the QDQ model verify makes (same seeds) is run eagerly on Paddle's CPU twice: in
float32 (verify's level-2 reference) and with every convolution, batch norm and linear layer in
float64 (quant_model.in_float64; verify reports the same spread at level 2).
Both compute the same int8 model; only the rounding of the float sums differs. The figures are in
LSB of the output's int8 grid (max|reference| / 127), as verify reports level 2. With --device,
the plugin's int8 engine (exact int32 sums) against each. Nothing here asserts: it measures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

PAYLOAD = Path(__file__).resolve().parents[1] / "toolchain" / "payload"
sys.path[:0] = [str(PAYLOAD / folder) for folder in ("paddle", "shared", "numeric")]
os.environ.setdefault("DEVKIT_TOLERANCES", json.dumps({"infer_rtol": 1e-4, "infer_atol": 1e-5}))

import infer_models  # noqa: E402
import int8_compare  # noqa: E402
import quant_model  # noqa: E402


def spread(name: str, device: str) -> dict[str, object]:
    import paddle
    from paddle.static import InputSpec

    model, shape = infer_models.built(name)  # (the model verify checks)
    qdq = quant_model.quantized(model, shape)
    x = infer_models.measurement_input(shape)
    ref32 = qdq(paddle.to_tensor(x)).numpy()
    engine = None
    if device:
        with tempfile.TemporaryDirectory(prefix="devkit-int8-spread-") as tmp:
            prefix = str(Path(tmp) / "model")
            paddle.jit.save(qdq, prefix, input_spec=[InputSpec(shape, "float32", "x")])
            engine = infer_models.run_once(infer_models.predictor(prefix, device, engine=True), x)
            paddle.set_device("cpu")
    ref64 = quant_model.in_float64(qdq)(paddle.to_tensor(x.astype("float64"))).numpy()
    row: dict[str, object] = {"model": name, "float64 vs float32 reference": int8_compare.compare(ref64, ref32)}
    if engine is not None:
        row["engine vs float32 reference"] = int8_compare.compare(engine, ref32)
        row["engine vs float64 reference"] = int8_compare.compare(engine, ref64)
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+", choices=sorted(infer_models.MODELS))
    p.add_argument("--device", default="", help="the plugin's device type: also run its int8 engine")
    args = p.parse_args()
    for name in args.models:
        row = spread(name, args.device)
        print(f"{row['model']}:")
        for what, found in row.items():
            if isinstance(found, dict):
                print(
                    f"  {what}: max {found['max_lsb']:.2f} LSB, mean {found['mean_lsb']:.2f} LSB, top-1 "
                    f"{'agrees' if found['top1'] == found['reference_top1'] else 'differs'}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
