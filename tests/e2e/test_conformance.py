"""Op conformance and the backend's debugging switches, for real: test-ops on the generated
backend and on one with a deliberately broken GEMM, the three environment switches, and
verify's fallback report."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import devkit
from test_e2e import paddle_python

from devkit.util.errors import ExitCode

pytestmark = pytest.mark.e2e

# A plausible vendor bug: the optimized GEMM path accumulates with a wrong factor.
# The GEMM micro-kernel's accumulation: broken, every tile of every product is 1 % off.
GEMM_LINE = "      acc[r][0] += x * b0;"
BROKEN_GEMM_LINE = "      acc[r][0] += x * b0 * 1.01f;"

SNIPPET = """
import paddle
paddle.set_device("stpu:0")
a = paddle.to_tensor([[1., 2.], [3., 4.]]); b = paddle.to_tensor([[1., 0.5], [0., 1.]])
print("matmul", paddle.matmul(a, b).numpy().tolist())
print("relu", paddle.nn.functional.relu(a - 2.5).numpy().tolist())
"""


def break_gemm(project: Path) -> None:
    ops = project / "device" / "src" / "matmul_ops.cc"
    text = ops.read_text()
    assert GEMM_LINE in text
    ops.write_text(text.replace(GEMM_LINE, BROKEN_GEMM_LINE))


@pytest.fixture(scope="module")
def broken_project(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("broken") / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    break_gemm(project)
    devkit("build", str(project), "--runner", "host")
    return project


def run_with_plugin(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The snippet in the build tools' Python (paddlepaddle 3.3.1) with the built plugin loaded."""
    plugin_dir = next(project.glob("build/*/paddle/libpaddle-custom-stpu.so")).parent
    return subprocess.run(
        [str(paddle_python()), "-c", SNIPPET],
        capture_output=True,
        text=True,
        env={**os.environ, "CUSTOM_DEVICE_ROOT": str(plugin_dir), "GLOG_minloglevel": "2", **env},
        timeout=300,
    )


def test_test_ops_passes_on_the_generated_backend(built_project):
    summary = json.loads(devkit("test-ops", str(built_project), "--runner", "host", "--json").stdout)
    assert summary["passed"] and summary["failed"] == []
    counts = summary["counts"]
    assert counts["pass"] >= 90 and counts["fail"] == counts["error"] == 0
    report = json.loads(Path(summary["report"]).read_text())
    cases = {(r["case"], r["dtype"]): r for r in report["results"]}
    # empty, 0-d and broadcast shapes, in float32 and float64, with gradients
    for case in ("add empty [0,5]+[5]", "relu 0-d", "divide broadcast [2,1,4]/[3,1]", "sum axis 1 of [3,0]"):
        assert cases[(case, "float32")]["status"] == "pass" and cases[(case, "float64")]["status"] == "pass"
    assert "d_x" in cases[("relu 0-d", "float64")]["max_abs_diff"]
    assert cases[("add int64", "int64")]["status"] == "pass"
    # float cases forward in the integer dtypes (Paddle sums int32 into int64: the device did not),
    # and casts to dtypes the device library lacks (AMP's float16)
    for case, dtype in (("sum axis 0", "int32"), ("compare float32", "bool"), ("cast to float16", "float32")):
        assert cases[(case, dtype)]["status"] == "pass", cases[(case, dtype)]
    # the 16-bit types by default: GEMM and convolution with gradients, and the casts bit for bit
    for case in ("matmul", "conv2d pad 2", "cast float32 <-> float16 bit-exact"):
        assert cases[(case, "float16")]["status"] == "pass", cases[(case, "float16")]
    assert cases[("linear", "bfloat16")]["status"] == "pass"
    # the quantization kernels bit for bit, inference and training modes
    for case, dtype in (
        ("quantize_linear per-tensor round_type 0 (ties, clipping)", "float32"),
        ("quantize_linear per-channel axis 1", "float32"),
        ("dequantize_linear int8 per-tensor", "int8"),
        ("quantize_linear training (moving average scales)", "float32"),
    ):
        assert cases[(case, dtype)]["status"] == "pass" and cases[(case, dtype)]["tolerance"]["forward"]["atol"] == 0
    # every registered kernel x dtype is run by some case but for these (integer gradients, kernels
    # whose cases have no integer form yet, and adam in float16/bfloat16, which Paddle's CPU has no
    # kernel to compare with: verify --amp trains with it): a new registration needs a case
    known_gaps = ("full", "full_like", "assign", "split", "split_with_num", "strided_copy", "adam")
    gaps = [g for g in report["dtypes_not_exercised"] if not g.split(" [")[0].endswith("_grad")]
    assert all(g.split(" [")[0] in known_gaps for g in gaps), gaps
    # dtypes the plugin does not register are reported, not failed
    assert cases[("matmul", "float64")]["status"] == "not registered"
    suite = ET.parse(summary["junit"]).getroot().find("testsuite")
    assert int(suite.get("tests")) == len(report["results"]) and suite.get("failures") == "0"
    assert int(suite.get("skipped")) == counts["not registered"] > 0
    assert "| matmul | float32 | matmul, matmul_grad | pass |" in Path(summary["markdown"]).read_text()


def test_test_ops_names_the_broken_kernel(broken_project):
    proc = devkit("test-ops", str(broken_project), "--runner", "host", "--dtypes", "float32", check=False)
    assert proc.returncode == ExitCode.VERIFICATION_FAILED
    error = proc.stderr.strip().splitlines()[-1]
    assert "op case(s) failed: matmul [float32] (matmul, matmul_grad: out: max |diff|" in error, error
    report = json.loads((broken_project / "reports" / "test-ops-x86_64" / "report.json").read_text())
    failed = {r["case"] for r in report["results"] if r["status"] == "fail"}
    assert {"matmul", "linear", "conv2d pad 2"} <= failed
    assert not failed & {"relu", "add", "softmax", "max_pool2d 2x2"}  # only what uses the GEMM
    # --ops narrows the run to kernels that are fine: it passes
    summary = json.loads(
        devkit("test-ops", str(broken_project), "--runner", "host", "--ops", "^relu|sigmoid", "--json").stdout
    )
    assert summary["passed"] and {r.split(" [")[0] for r in summary["failed"]} == set()


LISTED = """
[[paddle]]
suite = "ops"
case = "matmul"
dtype = "float32"
reason = "the GEMM accumulates 1 % high"

[[paddle]]
suite = "ops"
case = "relu 0-d"
dtype = "float32"
reason = "listed, but relu works"
"""


def test_the_expected_failures_file_is_enforced_both_ways(broken_project):
    path = broken_project / "conformance" / "expected-failures.toml"
    rendered = path.read_text()
    args = (
        "test-ops",
        str(broken_project),
        "--runner",
        "host",
        "--ops",
        "^(matmul|linear|relu 0-d)$",
        "--dtypes",
        "float32",
    )
    try:
        path.write_text(rendered + LISTED)
        proc = devkit(*args, check=False)
        assert proc.returncode == ExitCode.VERIFICATION_FAILED, proc.stderr
        report_dir = broken_project / "reports" / "test-ops-x86_64"
        report = json.loads((report_dir / "report.json").read_text())
        verdicts = {r["case"]: (r["status"], r.get("expected")) for r in report["results"]}
        # a listed failure is expected, an unlisted one fails, a listed case that passes fails
        assert verdicts["matmul"] == ("fail", "the GEMM accumulates 1 % high")
        assert verdicts["linear"] == ("fail", None) and verdicts["relu 0-d"] == ("pass", "listed, but relu works")
        assert report["counts"]["expected"] == 1 and report["counts"]["now passing"] == 1 and not report["passed"]
        error = proc.stderr.strip().splitlines()[-1]
        assert "relu 0-d [float32] (relu, relu_grad: now passes: remove it" in error and "linear [float32]" in error
        assert "matmul [float32]" not in error
        cases = {c.get("name"): c for c in ET.parse(report_dir / "junit.xml").getroot().iter("testcase")}
        assert cases["matmul [float32]"].find("skipped").get("message").startswith("expected: the GEMM")
        assert cases["relu 0-d [float32]"].find("failure").get("message").startswith("now passes: remove it")
        # --update-expected: the file follows the run (reasons kept), and the run passes against it
        summary = json.loads(devkit(*args, "--update-expected", "--json").stdout)
        assert summary["passed"] and summary["failed"] == [] and summary["counts"]["expected"] >= 2
        listed = {e["case"]: e["reason"] for e in tomllib.loads(path.read_text())["paddle"]}
        assert listed["matmul"] == "the GEMM accumulates 1 % high" and "relu 0-d" not in listed
        assert "recorded by --update-expected" in listed["linear"]
        assert path.read_text().startswith(rendered.strip())  # the rendered file's comment kept
    finally:
        path.write_text(rendered)


def test_autocompare_reports_the_mismatching_op(broken_project, built_project):
    proc = run_with_plugin(broken_project, {"STPU_AUTOCOMPARE": "1"})
    assert proc.returncode == 0, proc.stderr
    mismatch = [line for line in proc.stderr.splitlines() if "AUTOCOMPARE MISMATCH" in line]
    assert len(mismatch) == 1, proc.stderr
    assert "kernel=matmul op=gemm output=c shape=[2,2]" in mismatch[0] and "max |diff|" in mismatch[0]
    assert "op outputs compared, 1 mismatched" in proc.stderr
    good = run_with_plugin(built_project, {"STPU_AUTOCOMPARE": "1"})
    assert "AUTOCOMPARE MISMATCH" not in good.stderr and "op outputs compared, 0 mismatched" in good.stderr


def test_dump_op_args_levels(built_project):
    levels = {n: run_with_plugin(built_project, {"STPU_DUMP_OP_ARGS": str(n)}).stderr for n in (1, 2, 3)}
    gemm = {n: next(line for line in text.splitlines() if "matmul: gemm" in line) for n, text in levels.items()}
    assert gemm[1] == "[STPU] matmul: gemm"
    assert "m=2 n=2 k=2" in gemm[2] and "a=float32[2,2]" in gemm[2] and "c=float32[2,2]" in gemm[2]
    assert "[STPU]   a = [1, 2, 3, 4] (4 values)" in levels[3]
    assert "[STPU]   c = [1, 2.5, 3, 5.5] (4 values)" in levels[3]  # outputs too
    assert "[STPU]   a = " not in levels[2]
    assert "[STPU]" not in run_with_plugin(built_project, {}).stderr  # off by default


def test_fallback_ops_unregisters_kernels_and_ops_run_on_cpu(built_project):
    proc = run_with_plugin(built_project, {"STPU_FALLBACK_OPS": "matmul.*,nomatch("})
    assert proc.returncode == 0, proc.stderr
    assert "ignoring invalid regex 'nomatch('" in proc.stderr
    assert "STPU_FALLBACK_OPS=matmul.*,nomatch(: not registering matmul, matmul_grad" in proc.stderr
    assert "matmul [[1.0, 2.5], [3.0, 5.5]]" in proc.stdout  # ran, on the CPU
    # without fallback the op now fails by name: the kernel really is gone
    proc = run_with_plugin(built_project, {"STPU_FALLBACK_OPS": "matmul", "FLAGS_enable_api_kernel_fallback": "0"})
    assert proc.returncode != 0 and "kernel `matmul` is not registered" in proc.stderr


def test_verify_fallback_report_shows_ops_on_cpu(built_project, tmp_path):
    proc = subprocess.run(
        [
            *devkit_cmd(),
            "verify",
            str(built_project),
            "--runner",
            "host",
            "--steps",
            "20",
            "--json",
            "--report-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "STPU_FALLBACK_OPS": "matmul.*", "COLUMNS": "200"},
    )
    assert proc.returncode == ExitCode.VERIFICATION_FAILED
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert "fell back to CPU: matmul, matmul_grad" in checks["fallback report"]["detail"]
    assert not checks["mnist"]["passed"] and "matmul" in checks["mnist"]["detail"]
    report = json.loads((tmp_path / "report.json").read_text())
    kernels = report["checks"][-1]["kernels"]
    assert kernels["matmul"] == {"cpu_fallback": kernels["matmul"]["cpu_fallback"]} and kernels["conv2d"].get("device")


def devkit_cmd() -> list[str]:
    import sys

    return [sys.executable, "-m", "devkit"]


def test_check_kernels_finds_a_stale_signature_at_run_time(tmp_path):
    """A kernel with the pre-3.x reshape_grad signature and no compile-time check (what vendors
    who copied an older custom_cpu ship) builds, and check-kernels names it."""
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    src = project / "paddle" / "kernels" / "shape_kernels.cc"
    text = src.read_text()
    stale = (
        text.replace(
            "void ReshapeGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,",
            "void ReshapeGradKernel(const Context& ctx, const phi::DenseTensor& out_grad,",
        )
        .replace(
            "  x_grad->Resize(x.dims());\n  copy_tensor(ctx, out_grad, x_grad);",
            "  x_grad->Resize(out_grad.dims());\n  copy_tensor(ctx, out_grad, x_grad);",
        )
        .replace("STPU_CHECK_SIGNATURE_ANY_DTYPE(ReshapeGradKernel, phi::ReshapeGradKernel);\n", "")
    )
    assert stale.count("ReshapeGradKernel") == text.count("ReshapeGradKernel") - 2
    src.write_text(stale)
    devkit("build", str(project), "--runner", "host")
    proc = devkit("check-kernels", str(project), "--runner", "host", check=False)
    assert proc.returncode == ExitCode.VERIFICATION_FAILED
    assert (
        "kernel signatures differ from Paddle 3.3.1: reshape_grad: 1 inputs but Paddle's kernel has 2"
        in proc.stderr.strip().splitlines()[-1]
    ), proc.stderr


def test_check_kernels_passes_on_the_generated_backend(built_project):
    summary = json.loads(devkit("check-kernels", str(built_project), "--runner", "host", "--json").stdout)
    assert summary["passed"] and summary["mismatched"] == [] and summary["kernels"] >= 59
