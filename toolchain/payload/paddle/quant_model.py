"""Quantized (int8) inference models for `devkit verify --infer --quant int8` (run inside the
verify environment, by infer_checks.py).

export() makes a QDQ model with Paddle's own post-training quantization: abs-max observers on
every layer's input (one scale: convolutions, linear layers, batch norms, relus, pooling), on both
operands of a ResNet's residual adds and on every conv/linear weight (a scale per output channel),
calibrated on seeded inputs (no download), converted so that each quantized tensor passes
quantize_linear -> dequantize_linear, and saved for paddle.inference; beside it, each quantized
conv/linear layer alone with the input the simulated model gave it (level 2 checks the engine layer
by layer on them), and how far the simulated output moves with float64 sums (float64_spread).

Three levels are checked from it:
- level 0, the deployment: paddle.inference folds the QDQ pairs with the passes the plugin's
  runtime hands Paddle and runs the float program on the device (infer_checks' measurement);
- level 1, simulated int8: the converted model run eagerly, every quantize_linear and
  dequantize_linear a device kernel, against the same model on Paddle's CPU kernels. (Paddle
  3.3.1 cannot be the reference with paddle.inference: a loaded program's dequantize_linear is
  lowered to the quantize kernel, on the CPU too.) That CPU output is level 2's reference;
- level 2, the plugin's int8 engine (quant_engine.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from int8_compare import compare
from quant_program import QDQ_OPS, op_name, program_ops

CALIBRATION_BATCHES, CALIBRATION_BATCH = 8, 4


def channel_wise_observer() -> Any:
    """An observer factory for weights: abs-max scales per output channel, as deployment toolchains
    quantize conv and fc weights (Paddle 3.3.1's own observers are per tensor). The channel axis is
    the layer's: 0 for a convolution's [out, in, kh, kw], 1 for a Linear's [in, out]."""
    import paddle
    from paddle.quantization.base_observer import BaseObserver
    from paddle.quantization.factory import ObserverFactory

    class ChannelWiseAbsmaxLayer(BaseObserver):  # type: ignore[misc]
        def __init__(self, layer: Any, quant_bits: int = 8) -> None:
            super().__init__()
            self._bits = quant_bits
            self._axis = 1 if isinstance(layer, paddle.nn.Linear) else 0
            self._max: Any = None

        def forward(self, weight: Any) -> Any:
            others = [d for d in range(weight.ndim) if d != self._axis]
            found = paddle.max(paddle.abs(weight), axis=others)
            self._max = found if self._max is None else paddle.maximum(self._max, found)
            return weight

        def bit_length(self) -> int:
            return self._bits

        def quant_axis(self) -> int:
            return self._axis

        def cal_thresholds(self) -> None:
            pass

        def scales(self) -> Any:
            return self._max

        def zero_points(self) -> Any:
            return paddle.zeros_like(self._max)

    class ChannelWiseAbsmax(ObserverFactory):  # type: ignore[misc]
        def __init__(self, quant_bits: int = 8) -> None:
            super().__init__(quant_bits=quant_bits)

        def _get_class(self) -> type:
            return ChannelWiseAbsmaxLayer

    return ChannelWiseAbsmax(quant_bits=8)


def scale_axes(program: Path) -> dict[str, int]:
    """The quantize_linear ops of a saved PIR program (.json) by the axis of their scales: "-1" one
    scale for the tensor, "0"/"1"... one per channel along that axis (an empty dict for a .pdmodel)."""
    if program.suffix != ".json":
        return {}
    axes: dict[str, int] = {}
    for op in program_ops(program):
        if op_name(op) != "quantize_linear":
            continue
        for attr in op.get("A", []):
            if isinstance(attr, dict) and attr.get("N") == "quant_axis":
                axis = str(attr.get("AT", {}).get("D"))
                axes[axis] = axes.get(axis, 0) + 1
    return axes


def quantize_residual_adds(model: Any) -> None:
    """A Stub on both operands of each paddle.vision ResNet block's residual add (`out += identity`),
    so PTQ quantizes them as deployment int8 models have them (the block's last batch norm's output,
    and its input or its downsampling's output): a functional add is no layer PTQ can observe."""
    from paddle.nn import Sequential
    from paddle.nn.quant import Stub
    from paddle.vision.models.resnet import BasicBlock, BottleneckBlock

    for block in model.sublayers(include_self=True):
        if isinstance(block, (BasicBlock, BottleneckBlock)):
            last = "bn3" if isinstance(block, BottleneckBlock) else "bn2"
            setattr(block, last, Sequential(getattr(block, last), Stub()))
            # (the block reads its identity through downsample where it has one)
            block.downsample = Stub() if block.downsample is None else Sequential(block.downsample, Stub())


def quantized(model: Any, shape: list[int], per_channel: bool = True) -> Any:
    """`model` with abs-max post-training quantization, calibrated on seeded inputs and converted to
    QDQ form (float weights kept, each behind its own quantize/dequantize pair). Activations get one
    scale each; weights one per output channel (`per_channel`, the deployment norm) or per tensor;
    a ResNet's residual adds both operands quantized (quantize_residual_adds)."""
    import numpy as np
    import paddle
    from paddle.quantization import PTQ, QuantConfig
    from paddle.quantization.observers import AbsmaxObserver

    model.eval()
    quantize_residual_adds(model)
    weight = channel_wise_observer() if per_channel else AbsmaxObserver(quant_bits=8)
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(quant_bits=8), weight=weight))
    observed = ptq.quantize(model)
    rng = np.random.RandomState(7)
    for _ in range(CALIBRATION_BATCHES):
        observed(paddle.to_tensor(rng.uniform(0, 1, [CALIBRATION_BATCH, *shape[1:]]).astype("float32")))
    return ptq.convert(observed, remain_weight=True)


def simulated_output(prefix: str) -> Path:
    """Where export() leaves the simulated-int8 CPU output for the measurement's input."""
    return Path(prefix + ".simulated.npy")


def layers_dir(prefix: str) -> Path:
    """Where export() leaves each quantized conv/linear layer of the model alone (layer<N>, in the
    order the model runs them), the input the simulated-int8 CPU run gave it (layer<N>.input.npy)
    and its output there (layer<N>.output.npy); layers.json names them."""
    return Path(prefix + ".layers")


def simulated_record(prefix: str) -> Path:
    """Where export() leaves level 1's comparison (simulate's record)."""
    return Path(prefix + ".simulated.json")


def export(model: Any, x: Any, prefix: Path, device: str) -> dict[str, Any]:
    """Save the QDQ model at `prefix` (its input shaped as `x`), and beside it its simulated-int8 CPU
    output for `x`, the input every measurement uses, and level 1's comparison (simulated int8 on
    the device vs the CPU), returned too."""
    import numpy as np
    import paddle
    from paddle.static import InputSpec

    paddle.set_device("cpu")
    shape = list(x.shape)
    qdq = quantized(model, shape)
    # a fixed input shape: Paddle 3.3.1 cannot save a QDQ model with a dynamic batch
    paddle.jit.save(qdq, str(prefix), input_spec=[InputSpec(shape, "float32", "x")])
    record = simulate(qdq, x, device, simulated_output(str(prefix)))
    export_layers(qdq, x, layers_dir(str(prefix)))
    record["float64_spread"] = float64_spread(qdq, x, np.load(simulated_output(str(prefix))))  # (last: it changes qdq)
    simulated_record(str(prefix)).write_text(json.dumps(record))
    return record


def in_float64(qdq: Any) -> Any:
    """`qdq`, changed in place: every layer but its quantize/dequantize ones computing in float64
    (Paddle's CPU quantize kernels take float32 only). The same int8 model, its float sums rounded
    differently."""
    from paddle.nn.quant.format import LinearDequanter, LinearQuanter

    for layer in qdq.sublayers(include_self=True):
        if not isinstance(layer, (LinearQuanter, LinearDequanter)):
            layer._to_impl(dtype="float64", include_sublayers=False, floating_only=True)
    return qdq


def float64_spread(qdq: Any, x: Any, reference: Any) -> dict[str, Any]:
    """How far the simulated-int8 output `reference` (float32 sums) moves when the sums are float64:
    where a rounding puts a value on the other side of a quantizer's tie, the integers after it
    differ by one and carry on, so a deep model's reference is only defined to this many LSB.
    Changes `qdq` (in_float64)."""
    import paddle

    try:
        moved = in_float64(qdq)(paddle.to_tensor(x.astype("float64"))).numpy()
    except Exception as exc:  # (a figure for the report, not a check: say why it is missing)
        return {"error": " ".join(str(exc).split())[:300]}
    found = compare(moved, reference)
    return {"max_lsb": found["max_lsb"], "mean_lsb": found["mean_lsb"]}


def export_layers(qdq: Any, x: Any, directory: Path) -> None:
    """Each quantized conv/linear layer of `qdq` saved alone into `directory`, with its input and
    output in a simulated-int8 CPU run of `qdq` on `x` (see layers_dir)."""
    import numpy as np
    import paddle
    from paddle.nn.quant.qat import QuantedConv2D, QuantedLinear
    from paddle.static import InputSpec

    directory.mkdir()
    ran: list[tuple[str, Any, list[int]]] = []  # (name, layer, input shape), in the order they ran

    def record(name: str) -> Any:
        def hook(layer: Any, inputs: Any, output: Any) -> None:
            n = len(ran)
            np.save(directory / f"layer{n}.input.npy", inputs[0].numpy())
            np.save(directory / f"layer{n}.output.npy", output.numpy())
            ran.append((name, layer, list(inputs[0].shape)))

        return hook

    hooks = [
        layer.register_forward_post_hook(record(name))
        for name, layer in qdq.named_sublayers()
        if isinstance(layer, (QuantedConv2D, QuantedLinear))
    ]
    paddle.set_device("cpu")
    try:
        qdq(paddle.to_tensor(x))
    finally:
        for hook in hooks:
            hook.remove()
    for n, (_, layer, shape) in enumerate(ran):
        paddle.jit.save(layer, str(directory / f"layer{n}"), input_spec=[InputSpec(shape, "float32", "x")])
    (directory / "layers.json").write_text(json.dumps([name for name, _, _ in ran]))


def simulate(qdq: Any, x: Any, device: str, save_cpu: Path) -> dict[str, Any]:
    import numpy as np
    import paddle

    paddle.set_device("cpu")
    cpu = qdq(paddle.to_tensor(x)).numpy()
    np.save(save_cpu, cpu)
    paddle.set_device(device)
    flags = paddle.get_flags(["FLAGS_enable_api_kernel_fallback"])
    paddle.set_flags({"FLAGS_enable_api_kernel_fallback": False})  # a kernel missing on the device raises
    try:
        dev = qdq(paddle.to_tensor(x)).numpy()
    finally:
        paddle.set_flags(flags)
    diff = np.abs(dev.astype(np.float64) - cpu)
    return {
        "max_abs_diff": float(diff.max()),
        "mean_abs_diff": float(diff.mean()),
        "top1_agree": bool(np.argmax(dev) == np.argmax(cpu)),
        "output_range": float(np.abs(cpu).max()),
    }


def levels(
    qdq_ops: dict[str, int],
    axes: dict[str, int],
    placement: dict[str, Any],
    outputs_agree: bool,
    simulated: dict[str, Any] | None,
    rtol: float,
    level2: dict[str, Any],
) -> dict[str, Any]:
    """The quant record of a model's inference check: level 0 from the deployment's measurement and
    kernel placement, level 1 from the simulation (None: a user's model, whose Python is not here),
    level 2 as quant_engine.level2 judged it. `axes`: the program's quantizers by scale axis."""
    ran = {op for where in ("on_device", "host_shape_ops", "cpu_fallback") for op in placement.get(where, {})}
    left = sorted(ran & set(QDQ_OPS))
    folded = not left and "error" not in placement
    level0 = {
        "passed": bool(outputs_agree and folded and not placement.get("cpu_fallback")),
        "not_run": False,
        "detail": (
            "level 0 (deployment): the runtime's passes folded every QDQ pair, the float program ran on the device"
            if folded
            else f"level 0 (deployment): {', '.join(left) or 'QDQ ops'} left in the program Paddle ran "
            "(the plugin's runtime hands Paddle no QDQ-folding passes?)"
        ),
    }
    if simulated is None:
        level1 = {
            "passed": False,
            "not_run": True,
            "detail": "level 1 (simulated int8): not run for a saved model (it needs the model's Python: Paddle 3.3.1 "
            "lowers a loaded program's dequantize_linear to the quantize kernel); not counted as passed",
        }
    else:
        bound = rtol * simulated["output_range"]
        ok = simulated["top1_agree"] and simulated["max_abs_diff"] <= bound
        level1 = {
            "passed": bool(ok),
            "not_run": False,
            "detail": f"level 1 (simulated int8, QDQ kernels on the device vs Paddle CPU; {scales(axes)}): max |diff| "
            f"{simulated['max_abs_diff']:.2e} (<= {bound:.2e} required), top-1 "
            f"{'agrees' if simulated['top1_agree'] else 'DIFFERS'}",
        }
    return {
        "dtype": "int8",
        "qdq_ops": qdq_ops,
        "scale_axes": axes,
        "levels": {"0": level0, "1": level1, "2": level2},
    }


def scales(axes: dict[str, int]) -> str:
    """How a program's quantizers are scaled, for a report line."""
    per_channel = sum(n for axis, n in axes.items() if axis != "-1")
    return f"{axes.get('-1', 0)} quantizers with one scale, {per_channel} with a scale per channel"
