"""The model battery of `devkit verify --model` (issue 10): models beyond LeNet trained on
stpu:0 vs CPU from the same weights and batches, first with CPU fallback allowed (which
kernels fell back), then with fallback off; and Paddle's strided views on the device."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import PADDLE_CHECKS, devkit
from test_e2e import paddle_python

pytestmark = pytest.mark.e2e

CHECKS = [*PADDLE_CHECKS, "fallback report"]


def verify_model(project: Path, model: str, report_dir: Path, steps: int = 20) -> tuple[dict, dict]:
    proc = devkit(
        "verify",
        str(project),
        "--runner",
        "host",
        "--model",
        model,
        "--steps",
        str(steps),
        "--json",
        "--report-dir",
        str(report_dir),
        check=False,
    )
    summary = json.loads(proc.stdout)
    report = json.loads((report_dir / "report.json").read_text())
    assert summary["passed"], (proc.stderr[-3000:], [c for c in summary["checks"] if not c["passed"]])
    assert [c["name"] for c in report["checks"]] == CHECKS + [model]  # fallback report first, then the training
    assert report["model"] == model and report["fallback_flag"] == {"FLAGS_enable_api_kernel_fallback": False}
    return report, {c["name"]: c for c in report["checks"]}


def check_training(check: dict, steps: int) -> None:
    assert check["passed"] and check["steps"] == steps
    dev, cpu = check["device"]["losses"], check["cpu"]["losses"]
    assert len(dev) == len(cpu) == steps and dev[0] == pytest.approx(cpu[0], abs=1e-4)  # same weights, same batch
    assert check["max_curve_abs_diff"] <= check["criteria"]["max_curve_abs_diff"]
    assert max(abs(a - b) for a, b in zip(dev, cpu, strict=True)) == pytest.approx(check["max_curve_abs_diff"])
    assert sum(dev[-5:]) / 5 < sum(dev[:5]) / 5  # it learns
    assert check["eval_abs_diff"] <= check["criteria"]["max_eval_abs_diff"]


def test_verify_resnet_bn_trains_batch_norm_on_the_device(built_project, tmp_path):
    report, checks = verify_model(built_project, "resnet_bn", tmp_path)
    check_training(checks["resnet_bn"], 20)
    assert "scikit-learn" in checks["resnet_bn"]["dataset"]
    fallback = checks["fallback report"]
    assert fallback["model"] == "resnet_bn" and fallback["fallback"] == []
    assert {"batch_norm", "batch_norm_grad", "conv2d_grad", "pool2d_grad"} <= set(fallback["on_device"])
    assert {"batch_norm_grad", "layer_norm", "dropout", "contiguous"} <= set(report["registered_kernels"])
    assert (tmp_path / "resnet_bn-loss.png").stat().st_size > 10_000


def test_verify_transformer_trains_an_encoder_on_the_device(built_project, tmp_path):
    _, checks = verify_model(built_project, "transformer", tmp_path)
    check = checks["transformer"]
    check_training(check, 20)
    assert "fixed per-step seed" in check["dropout"]  # identical dropout masks on both places
    assert check["max_curve_abs_diff"] < 1e-3
    fallback = checks["fallback report"]
    assert fallback["model"] == "transformer" and fallback["fallback"] == []
    assert {
        "embedding",
        "gather_grad",
        "layer_norm_grad",
        "gelu",
        "gelu_grad",
        "softmax_grad",
        "dropout_grad",
        "concat_grad",
        "matmul_grad",
    } <= set(fallback["on_device"])


def test_unknown_model_lists_the_models(built_project):
    proc = devkit("verify", str(built_project), "--runner", "host", "--model", "lenet5", check=False)
    assert proc.returncode != 0
    assert "unknown model 'lenet5'" in proc.stderr and "mnist | resnet_bn | transformer" in proc.stderr
    helptext = " ".join(devkit("verify", "--help").stdout.split())
    assert "resnet_bn" in helptext and "transformer" in helptext


TRANSPOSE = """
import numpy as np, paddle
paddle.set_device("stpu:0")
x = paddle.to_tensor(np.arange(24, dtype="float32").reshape(2, 3, 4), stop_gradient=False)
t = paddle.transpose(x, [2, 0, 1])
print("flags", paddle.get_flags(["FLAGS_use_stride_kernel"])["FLAGS_use_stride_kernel"], "view", not t.is_contiguous())
y = t + 1.0
y.sum().backward()
print("y", (y.numpy() == np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1) + 1).all(), str(y.place))
print("grad", (x.grad.numpy() == 1).all())
z = paddle.zeros([3, 4])
paddle.transpose(z, [1, 0]).add_(paddle.to_tensor(np.arange(12, dtype="float32").reshape(4, 3)))
print("write", (z.numpy() == np.arange(12).reshape(4, 3).T).all())
"""


def test_transpose_view_and_an_op_on_it_run_on_the_device(built_project):
    """Paddle 3.3.1 defaults (FLAGS_use_stride_kernel on), fallback off: the view is materialized by
    the device's contiguous kernel and written through by its strided_copy."""
    plugin_dir = next(built_project.glob("build/*/paddle/libpaddle-custom-stpu.so")).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLAGS_")}
    proc = subprocess.run(
        [str(paddle_python()), "-c", TRANSPOSE],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **env,
            "CUSTOM_DEVICE_ROOT": str(plugin_dir),
            "GLOG_minloglevel": "2",
            "FLAGS_enable_api_kernel_fallback": "0",
            "STPU_DUMP_OP_ARGS": "1",
        },
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:4] == ["flags True view True", "y True Place(stpu:0)", "grad True", "write True"]
    assert "[STPU] contiguous: strided_copy" in proc.stderr
    assert "[STPU] strided_copy: strided_copy" in proc.stderr
