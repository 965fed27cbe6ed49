"""Mixed precision on the device, Paddle: `devkit verify --amp O1|O2` trains LeNet (and, with
--model, the model battery) under paddle.amp.auto_cast with a GradScaler on two asynchronous
devices with opaque memory, and `test-ops` runs every kernel registered for float16 and bfloat16
(casts bit for bit). PyTorch's `--amp` is in test_torch.py, on its project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import devkit, verify_passes

pytestmark = pytest.mark.e2e


def verify_amp(project: Path, level: str) -> tuple[dict, dict[str, dict]]:
    summary, report = verify_passes(project, "--amp", level)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["modes"]["asynchronous"] and report["modes"]["opaque_memory"] and report["modes"]["devices"] == 2
    assert summary["plot"] and Path(summary["plot"]).is_file()  # the AMP curve against the float32 CPU one
    return report, checks


def test_amp_o1_trains_with_the_gemms_in_float16_and_the_scaler_on_the_device(built_project):
    _, checks = verify_amp(built_project, "O1")
    amp = checks["mnist amp O1"]
    # Paddle's own op counts: the white-list ops ran in float16
    assert amp["op_stats"]["conv2d"]["float16"] > 0 and amp["op_stats"]["matmul_v2"]["float16"] > 0
    assert amp["device"]["heldout_accuracy"] >= amp["cpu"]["heldout_accuracy"] - 0.01
    assert amp["max_curve_abs_diff"] <= amp["criteria"]["max_curve_abs_diff"]
    # where each kernel ran, by dtype: nothing on the CPU, the GradScaler's op in the device library
    placement = checks["fallback report"]
    assert placement["amp"] == "O1" and placement["fallback"] == []
    for kernel in ("conv2d", "conv2d_grad", "matmul", "matmul_grad"):
        assert placement["dtypes"][kernel]["float16"]["device"] > 0, kernel
    assert "check_finite_and_unscale" in placement["device_library_ops"]["check_finite_and_unscale"]
    # an overflowing step: found on the device, the step skipped, the scale halved
    overflow = checks["amp overflow (O1)"]
    assert overflow["found_inf"] and overflow["changed_parameters"] == [] and overflow["scale_after"] == 2.0**39
    # Paddle's bfloat16 gate said in one line, and the bfloat16 kernels verified by explicit casts
    bf16 = checks["bfloat16 (explicit casts)"]
    assert "turns bfloat16 auto_cast off for custom device type 'stpu'" in bf16["gate"]
    assert bf16["op_stats"]["conv2d"]["bfloat16"] > 0 and bf16["op_stats"]["adam_"]["bfloat16"] > 0


def test_amp_o2_holds_at_most_two_thirds_of_the_float32_device_memory(built_project):
    _, checks = verify_amp(built_project, "O2")
    amp = checks["mnist amp O2"]
    assert amp["peak_memory_bytes"] <= 0.65 * amp["fp32_peak_memory_bytes"]
    # O2: the parameters are float16, updated with float32 master weights by the device's adam
    placement = checks["fallback report"]
    assert placement["dtypes"]["adam"]["float16"]["device"] > 0 and placement["fallback"] == []
    assert checks["amp overflow (O2)"]["changed_parameters"] == []


# The battery's models under AMP: the ops each must run in float16 on the device (beyond its GEMMs).
BATTERY_FLOAT16 = {
    ("resnet_bn", "O1"): ("conv2d", "conv2d_grad", "batch_norm", "batch_norm_grad", "matmul"),
    ("transformer", "O2"): ("matmul", "matmul_grad", "gather", "gather_grad", "gelu", "gelu_grad", "dropout_grad"),
}


@pytest.mark.parametrize(("model", "level"), list(BATTERY_FLOAT16))
def test_the_model_battery_trains_under_amp_with_nothing_on_the_cpu(built_project, model, level):
    """A ResNet with batch norm in training (float16 x, float32 statistics) and a transformer under
    O2 (float16 parameters: embedding gather, gelu, dropout, softmax) against float32 on the CPU."""
    _, report = verify_passes(built_project, "--amp", level, "--model", model, "--steps", "100")
    checks = {c["name"]: c for c in report["checks"]}
    run = checks[f"{model} amp {level}"]
    assert run["criteria"]["max_curve_abs_diff"] == 0.15 and run["max_curve_abs_diff"] <= 0.15
    assert run["device"]["heldout_accuracy"] >= run["cpu"]["heldout_accuracy"] - 0.01
    gemm = "conv2d" if model == "resnet_bn" else "matmul_v2"
    assert run["device"]["op_stats"][gemm]["float16"] > 0 and "op_stats" not in run["cpu"]
    placement = checks["fallback report"]
    assert placement["amp"] == level and placement["fallback"] == []
    for kernel in BATTERY_FLOAT16[(model, level)]:
        assert placement["dtypes"][kernel]["float16"]["device"] > 0, kernel


def test_test_ops_runs_every_float16_and_bfloat16_kernel(built_project):
    proc = devkit("test-ops", str(built_project), "--runner", "host", "--dtypes", "float16,bfloat16", "--json")
    result = json.loads(proc.stdout)
    report = json.loads(Path(result["report"]).read_text())
    ran = [r for r in report["results"] if r["status"] in ("pass", "fail", "error")]
    assert ran and all(r["status"] == "pass" for r in ran), [r for r in ran if r["status"] != "pass"]
    assert {"cast float32 <-> float16 bit-exact", "cast float32 <-> bfloat16 bit-exact"} <= {r["case"] for r in ran}
    for kernel in ("matmul_grad", "conv2d_grad", "softmax_grad", "cross_entropy_with_softmax_grad", "pool2d_grad"):
        assert {"float16", "bfloat16"} <= set(report["registered_kernels"][kernel]), kernel
    for kernel in ("batch_norm_grad", "layer_norm_grad", "gelu_grad", "dropout_grad", "embedding_grad", "gather_grad"):
        assert {"float16", "bfloat16"} <= set(report["registered_kernels"][kernel]), kernel
    # every kernel registered for a 16-bit dtype ran in it, but the optimizer (verify --amp trains with it)
    assert report["dtypes_not_exercised"] == [] and "adam" in report["not_exercised"]
