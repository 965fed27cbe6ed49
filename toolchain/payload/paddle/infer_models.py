"""The models `devkit verify --infer` checks and how one runs: built from paddle.vision (seeded, no
download) and exported for paddle.inference (quantized too, with --quant), or a user's saved model
found; a predictor on the CPU or the device (with the int8 engine's pass), and its timed runs."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict, cast

if TYPE_CHECKING:
    import numpy as np


MODELS: dict[str, tuple[list[int], Callable[[ModuleType], Any]]] = {  # name -> (input shape, builder)
    "mnist": ([1, 1, 28, 28], lambda vision: vision.models.LeNet()),
    "mobilenet_v1": ([1, 3, 224, 224], lambda vision: vision.models.mobilenet_v1(pretrained=False)),
    "resnet50": ([1, 3, 224, 224], lambda vision: vision.models.resnet50(pretrained=False)),
}


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
