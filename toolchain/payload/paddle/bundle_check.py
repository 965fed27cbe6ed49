"""The inference bundle's int8 check, made by `devkit build --infer` with the build machine's Paddle
(its reference environment; Paddle, NumPy and the standard library only).

Writes DIR/check.json and beside it the quantized LeNet (QDQ, as `devkit verify --infer --quant int8`
makes it: seeded weights and calibration), the input and two golden outputs: Paddle CPU's
deployment (the QDQ pairs folded, float32) and the simulated int8 (the converted model run eagerly
on the CPU). The bundle's run.sh --check compares the device with them on the board
(templates/backend/inference/demo/python/infer.py); the target's older Paddle reads the program
(3.2.2 on aarch64 loads what 3.3.1 saves).

    python bundle_check.py --out DIR --device TYPE
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
from pathlib import Path

import infer_models
import infer_phases
import quant_engine
import quant_model
from int8_compare import TOP1_TIE_LSB
from process_exit import exit_without_final_collection
from quant_program import QDQ_FOLDING

MODEL = "mnist"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--device", required=True)
    args = p.parse_args()
    import numpy as np
    import paddle

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    prefix = out / "model"
    infer_models.export(MODEL, prefix, "int8", "cpu")  # the QDQ model, and its simulated-int8 CPU output
    x = infer_models.measurement_input(infer_models.MODELS[MODEL][0])  # the input quant_model.export used
    np.save(out / "input.npy", x)
    np.save(out / "deployment.npy", infer_models.run_once(infer_models.predictor(str(prefix), "cpu"), x))
    quant_model.simulated_output(str(prefix)).rename(out / "simulated.npy")
    quant_model.simulated_record(str(prefix)).unlink()  # (level 1's CPU-vs-CPU comparison: nothing here)
    shutil.rmtree(quant_model.layers_dir(str(prefix)))  # (level 2's layer by layer check: verify's, not a board's)
    spec = {
        "name": f"{MODEL} int8",
        "model": "model",
        "input": "input.npy",
        "made_with": f"paddlepaddle {paddle.__version__} on {platform.machine()}",
        "deployment": {"golden": "deployment.npy", "rtol": infer_phases.RTOL, "atol": infer_phases.ATOL},
        "engine": {
            "golden": "simulated.npy",
            "passes": [quant_engine.engine_pass(args.device), *QDQ_FOLDING],
            "max_mean_lsb": 1.0,
            "top1_tie_lsb": TOP1_TIE_LSB,
        },
    }
    (out / "check.json").write_text(json.dumps(spec, indent=2))
    return 0


if __name__ == "__main__":
    exit_without_final_collection(main())
