"""The JSON that crosses the process boundary between devkit and the payloads, as TypedDicts: the
tolerances devkit passes (DEVKIT_TOLERANCES) and the reports the payloads write (report.json,
ops.json, opinfo.json, the ranks' results). Standard library only: the payloads import this module
in the target's environment, next to each other (sys.path), where a TypedDict is a plain dict; devkit
imports it for the types only (see pyproject.toml's [tool.mypy]).

A check's record holds name, passed and detail, and what its kind adds (a subclass here). Optional
keys are those of a `total=False` class (typing.NotRequired is Python 3.11's)."""

from __future__ import annotations

from typing import Literal, TypedDict


class DevkitTolerances(TypedDict):
    """DEVKIT_TOLERANCES: the project's [tool.devkit.tolerances], resolved by devkit and passed whole."""

    op_rtol: float
    op_atol: float
    grad_rtol: float
    grad_atol: float
    min_loss_drop: float
    min_accuracy: float
    max_curve_diff: float
    infer_rtol: float
    infer_atol: float


class Tolerance(TypedDict):
    """numpy.allclose's, as `**tolerance`."""

    rtol: float
    atol: float


class OpTolerance(TypedDict):
    forward: Tolerance
    backward: Tolerance


# ---- checks: the entries of a report's "checks"

# What a check is: devkit reads a check's record by its kind (verify/report.py), never by its name.
CheckKind = Literal[
    "basics",  # the plugin loads, registers its device, moves tensors (registration, devices, tensor, ...)
    "ops",  # op cases vs the framework's CPU
    "kernels",  # the registered kernels' signatures
    "training",  # a model trained on the device vs the CPU: the loss curves (TrainingVerdict, BatteryVerdict)
    "amp",  # mixed precision beside the training curve (overflow, bfloat16, autocast lists)
    "compile",  # torch.compile
    "fallback",  # where each kernel ran with CPU fallback on
    "contract",  # the framework contract's clauses
    "profile",  # the profiler's trace against the device's op dump
    "collectives",  # --distributed: every collective vs a CPU reference
    "parallel",  # --distributed: N ranks vs one process (ParallelVerdict)
    "lost-rank",  # --distributed: a killed or stalled rank is named
    "inference",  # --infer: one model on the device vs the CPU (InferenceCheck)
    "deployment",  # --infer: the inference bundle's own checks (C++ demo, int8 check)
    "conformance",  # the device library's conformance suite (devkit's own)
]


class _CheckRequired(TypedDict):
    name: str
    kind: CheckKind  # what it is: devkit finds a check's record by it
    passed: bool
    detail: str


class CheckRecord(_CheckRequired, total=False):
    """One check of a report: what every kind of check has, or may have."""

    seconds: float  # how long it took (training_verdict.timed)
    traceback: str  # the check raised
    cpu_by_design: list[str]  # kernels (Paddle) the device library lacks, run on the CPU by design
    not_run: bool  # devkit's own checks only (the C++ demo without a Paddle Inference library)


class PaddleRegistrationCheck(CheckRecord):
    custom_device_types: list[str]


class TorchDevicesCheck(CheckRecord, total=False):
    devices: int
    params_on: list[str]


class KernelSignature(TypedDict):
    plugin: str  # the kernel's inputs, attributes and outputs as Paddle parsed them at load
    paddle: str  # Paddle's own (CPU) kernel of that name, or "-" without one


class KernelSignaturesCheck(CheckRecord, total=False):
    """Paddle's "kernel signatures" (devkit check-kernels reads mismatched and kernels)."""

    library: str | None
    mismatched: list[str]
    kernels: dict[str, KernelSignature]


class TorchKernelsCheck(CheckRecord):
    """torch's "kernel signatures": the registered aten kernels, each with its dispatch key."""

    kernels: dict[str, str]
    mismatched: list[str]


# -- training: a model trained on the device and on the CPU from the same weights and batches


class TrainingRun(TypedDict):
    """A model trained on one place (train() of mnist.py and torch_training.py)."""

    losses: list[float]
    heldout_accuracy: float
    train_seconds: float


class RunSettings(TypedDict):
    steps: int
    batch_size: int
    seed: int


class TrainedBy(RunSettings):
    where: str  # which runtime, on which machine


class CpuCurve(TrainingRun):
    """The CPU run a device's is judged against (cpu_reference.py writes one as its JSON)."""

    trained: TrainedBy


class _TrainingCriteriaRequired(TypedDict):
    min_loss_drop_fraction: float
    min_heldout_accuracy: float
    max_curve_abs_diff: float


class TrainingCriteria(_TrainingCriteriaRequired, total=False):
    max_fallbacks: int  # torch
    except_unimplemented: list[str]  # torch


class TrainingVerdict(CheckRecord):
    """The "mnist" check (training_verdict.training_verdict())."""

    criteria: TrainingCriteria
    dataset: str
    steps: int
    batch_size: int
    seed: int
    loss_drop_fraction: float
    max_curve_abs_diff: float
    device: TrainingRun
    cpu: CpuCurve
    cpu_reference: str  # who trained the CPU curve


class AmpTrainingVerdict(TrainingVerdict):
    """The "mnist amp O1|O2" check (paddle_amp.check_amp())."""

    level: str
    op_stats: dict[str, dict[str, int]]  # Paddle's op counts by dtype (float16, bfloat16, float32, other)
    peak_memory_bytes: int
    fp32_peak_memory_bytes: int  # O2 only (0 otherwise)


class AmpOverflowCheck(CheckRecord):
    found_inf: bool
    changed_parameters: list[str]
    scale_after: float


class Bfloat16Check(CheckRecord):
    gate: str  # why Paddle's auto_cast refuses bfloat16 on the device ("" when it does not)
    losses: list[float]
    op_stats: dict[str, dict[str, int]]


class TorchTrainingVerdict(TrainingVerdict):
    optimizer: str
    fallbacks: dict[str, int]  # op -> CPU fallbacks while training
    fallbacks_by_design: dict[str, int]


class TorchAmpVerdict(TrainingVerdict):
    """The "mnist autocast <dtype>" check (torch_amp.check_autocast())."""

    dtype: str
    ops: dict[str, dict[str, int]]  # op -> {"<dtype> on <device type>": runs} of the first step
    fallbacks: dict[str, int]
    fallbacks_by_design: dict[str, int]


class TorchOverflowCheck(CheckRecord):
    changed_parameters: list[str]
    scale_after: float


class TorchAutocastListsCheck(CheckRecord):
    """The "autocast policy lists" check (torch_amp.check_autocast_lists())."""

    cases: int
    failures: dict[str, str]  # "<list>[<n>] <op> (<dtype>)" -> what was wrong
    skipped: dict[str, str]  # entries not run (CUDA-only ops, those torch's own test skips) -> why
    fallbacks: dict[str, int]  # ops that ran through the CPU fallback


class CompiledCode(TypedDict):
    """What the generated code of a compiled model runs (torch_compile.code_counts())."""

    compiled_kernels: int  # kernels Inductor generated (forward and backward graphs)
    launches: int  # their launch calls in the generated code
    extern_kernels: int  # aten calls of the generated code: the device's eager kernels
    direct_calls: int  # kernels the generated code calls on the host (must be 0)


class TorchCompileCheck(CheckRecord, CompiledCode):
    """A "compile <model>" check (torch_compile.check_model())."""

    model: str
    max_diff_eager: float  # compiled vs eager on the device, largest |diff| over losses, outputs, parameters
    max_diff_cpu: float
    fallbacks: dict[str, int]
    compile_seconds: float  # the first compiled step: tracing, code generation, C++ compilation


class _BatteryRunRequired(TrainingRun):
    eval_loss: float


class BatteryRun(_BatteryRunRequired, total=False):
    op_stats: dict[str, dict[str, int]]  # --amp: Paddle's op counts by dtype (as AmpTrainingVerdict's)


class BatteryCriteria(TypedDict):
    max_curve_abs_diff: float
    max_eval_abs_diff: float
    loss_must_drop: bool


class BatteryVerdict(CheckRecord):
    """A model of Paddle's battery (resnet_bn, transformer)."""

    criteria: BatteryCriteria
    dataset: str
    steps: int
    batch_size: int
    seed: int
    dropout: str | None
    max_curve_abs_diff: float
    mean_curve_abs_diff: float
    eval_abs_diff: float
    device: BatteryRun
    cpu: BatteryRun


class FallbackReportCheck(CheckRecord):
    """Paddle's "fallback report" (fallback_report.py's JSON): where each kernel ran."""

    fallback_flag: str
    model: str
    kernels: dict[str, dict[str, int]]  # kernel -> {device | cpu_fallback | cpu_inputs: runs}
    on_device: list[str]
    fallback: list[str]
    # kernel -> dtype -> {device | cpu_fallback | cpu_inputs: runs} (the kernel keys Paddle chose)
    dtypes: dict[str, dict[str, dict[str, int]]]
    amp: str  # "" or the --amp level the model trained under
    device_library_ops: dict[str, list[str]]  # --amp: kernel -> the device-library ops it ran (the op dump)


class TorchFallbackCheck(CheckRecord):
    lenet_fallbacks: dict[str, int]
    lenet_fallbacks_by_design: dict[str, int]
    unseen_op_fallbacks: dict[str, int]


# -- op cases in a verify report's "ops" check


class _OpCheckCaseRequired(TypedDict):
    case: str
    kernels: list[str]
    passed: bool


class OpCheckCase(_OpCheckCaseRequired, total=False):
    """A case of Paddle's "ops" check (plugin_checks.py)."""

    max_abs_diff: dict[str, float]  # out, d_<input>
    cpu_by_design: list[str]
    error: str
    stats: dict[str, float | bool]  # the random ops' statistics
    not_run: str  # why a case was not run (an in-place op left to the CPU by design)


class PaddleOpsCheck(CheckRecord):
    uncovered_kernels: list[str]
    tolerance: OpTolerance
    cases: list[OpCheckCase]


class _TorchOpCaseRequired(TypedDict):
    case: str
    status: Literal["pass", "fail", "error"]


class TorchOpCase(_TorchOpCaseRequired, total=False):
    """A case of torch's "ops" check (torch_ops.py)."""

    shapes: list[list[int]]
    max_diff: float
    max_grad_diff: float | None
    error: str


class TorchOpsCheck(CheckRecord):
    cases: list[TorchOpCase]
    registered_kernels: list[str]
    exercised_kernels: list[str]
    untested_kernels: list[str]


# -- the framework contract (contract.py)


class ContractRow(TypedDict):
    hook: str  # what the framework asks of a device
    api: str  # the public call that exercised it
    status: Literal["pass", "by design", "fail"]
    detail: str  # by design: why; fail: what the call did


class ContractCheck(CheckRecord):
    clauses: list[ContractRow]


class ProfileCheck(CheckRecord, total=False):
    """verify --profile (device_trace.py)."""

    device_kernels: int  # the profiler's device kernels in the profiled step
    dumped_ops: int  # the device library's op dump of the same step
    missing: list[str]  # ops in the dump the trace lacks
    extra: list[str]  # kernels in the trace the dump lacks
    trace: str  # the Chrome trace's file name, beside report.json


# ---- whole reports


class _VerifyReportRequired(TypedDict):
    device: str
    checks: list[CheckRecord]


class VerifyReport(_VerifyReportRequired, total=False):
    """report.json of plugin_checks.py, torch_checks.py and the *_distributed.py drivers."""

    passed: bool  # set last, when every check has run
    framework: str  # torch, and the distributed drivers
    paddle_version: str | None  # None: torch's
    torch_version: str
    distributed: int  # ranks
    fallback_flag: dict[str, bool]  # Paddle's FLAGS_enable_api_kernel_fallback
    registered_kernels: list[str]  # Paddle
    unimplemented_kernels: list[str]  # Paddle
    strict_fallback: str  # torch: <NAME>_STRICT_FALLBACK
