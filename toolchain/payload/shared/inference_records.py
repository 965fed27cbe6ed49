"""The --infer checks' records (infer_checks.py): criteria, latency and figures of one model on the
device against the CPU, where its kernels ran, and --quant's levels."""

from __future__ import annotations

from typing import Any, TypedDict

from records import CheckRecord

# -- inference (infer_checks.py)


class InferCriteria(TypedDict):
    rtol_of_max_abs_output: float
    atol: float
    top1: str
    cpu_fallback: str


class Latency(TypedDict):
    avg_ms: float
    min_ms: float
    max_ms: float


class InferFigures(TypedDict):
    input_shape: list[int]
    unimplemented_kernels: list[str]
    registered_kernels: list[str]
    paddle_version: str
    device: str
    criteria: InferCriteria
    max_abs_diff: float
    max_rel_diff: float
    top1_agree: bool
    top5_overlap: float
    outputs_agree: bool
    latency_ms: dict[str, Latency]  # place -> latency
    warmup: int
    repeats: int


class _InferMeasurementRequired(InferFigures):
    detail: str


class InferMeasurement(_InferMeasurementRequired, total=False):
    """The measure phase's JSON (inside infer_checks.py)."""

    engine: dict[str, Any]  # --quant: level 2's measurement (infer_phases.measure_engine)


class KernelPlacement(TypedDict, total=False):
    """Where Paddle Inference placed each op's kernel (op -> count), or why that is unknown."""

    on_device: dict[str, int]
    host_shape_ops: dict[str, int]  # by-design host ops (infer_checks.HOST_SHAPE_OPS)
    cpu_fallback: dict[str, int]
    cpu_by_design: dict[str, int]
    engine: dict[str, int]  # a run through the int8 engine: its ops by kind (quant_engine.engine_ops)
    units: list[dict[str, int]]  # ... and of each one-layer model run after it (quant_engine.units_in_engine)
    error: str


class QuantLevel(TypedDict):
    """One level of a quantized model's check (quant_model.py): 0, the deployment's folded float
    program on the device; 1, simulated int8 (QDQ kernels on the device)."""

    passed: bool
    not_run: bool
    detail: str


class QuantCheck(TypedDict):
    dtype: str  # int8
    qdq_ops: dict[str, int]  # quantize_linear / dequantize_linear in the saved program
    scale_axes: dict[str, int]  # quantize_linear ops by the axis of their scales ("-1": one per tensor)
    levels: dict[str, QuantLevel]  # "0", "1"


class _InferenceCheckRequired(CheckRecord, InferFigures):
    model: str
    placement: KernelPlacement


class InferenceCheck(_InferenceCheckRequired, total=False):
    """infer_checks.py's JSON: one model's inference check."""

    quant: QuantCheck  # --quant
    engine: dict[str, Any]  # --quant: level 2's measurement (infer_phases.measure_engine)
