"""Inference end to end: ON_INFER build, the bundle, and paddle.inference on stpu:0
vs CPU for LeNet, MobileNetV1 and ResNet50 with no op falling back to CPU."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import devkit
from test_e2e import paddle_python

from devkit.util.errors import ExitCode
from devkit.util.resources import PAYLOAD_DIR, payload_env

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def infer_project(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("infer") / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    summary = json.loads(devkit("build", str(project), "--runner", "host", "--infer", "--json").stdout)
    assert summary["inference_bundle"].endswith("paddle-custom-stpu-inference-0.1.0-x86_64.tar.gz")
    return project


def test_bundle_layout_and_manifest(infer_project, tmp_path):
    bundle = infer_project / "dist" / "paddle-custom-stpu-inference-0.1.0-x86_64.tar.gz"
    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / "paddle-custom-stpu-inference-0.1.0-x86_64"
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["target"] == "x86_64" and manifest["paddle_version"] == "3.3.1"
    expected = {
        "lib/libpaddle-custom-stpu.so",
        "lib/stpu/libpaddle-custom-stpu-impl.so",
        "lib/libstpu_device.a",
        "include/stpu_device.h",
        "run.sh",
        "demo/python/infer.py",
        "demo/cpp/main.cc",
        "demo/cpp/CMakeLists.txt",
        *(f"check/{name}" for name in ("check.json", "model.json", "model.pdiparams", "input.npy")),
        *(f"check/{name}" for name in ("deployment.npy", "simulated.npy")),
    }
    assert set(manifest["files"]) == expected
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == digest, rel
    # run.sh runs the Python demo with the bundle's plugin (CUSTOM_DEVICE_ROOT), in a
    # Python that has paddlepaddle but no plugin installed: the host's reference env.
    python = paddle_python()
    proc = subprocess.run(
        [str(root / "run.sh"), "--warmup", "2", "--repeats", "5"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": str(python), "GLOG_minloglevel": "2"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (
        "on stpu:0" in proc.stdout and "latency over 5 runs after 2 warmup" in proc.stdout and "top-5:" in proc.stdout
    )


def test_bundle_int8_check_passes_and_fails_on_a_wrong_golden(infer_project, tmp_path):
    """run.sh --check, as a board runs it: the bundle's quantized LeNet on the device (the deployment
    and the int8 engine) against the goldens the build made; a golden that is not the model's fails it
    by name, with a non-zero exit."""
    bundle = infer_project / "dist" / "paddle-custom-stpu-inference-0.1.0-x86_64.tar.gz"
    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / "paddle-custom-stpu-inference-0.1.0-x86_64"
    spec = json.loads((root / "check" / "check.json").read_text())
    assert (
        spec["made_with"] == "paddlepaddle 3.3.1 on x86_64" and spec["engine"]["passes"][0] == "stpu_int8_engine_pass"
    )
    env = {**os.environ, "PYTHON": str(paddle_python()), "GLOG_minloglevel": "2"}
    proc = subprocess.run([str(root / "run.sh"), "--check"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    verdicts = [line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert [v.split(":")[0] for v in verdicts] == ["PASS mnist int8", "PASS mnist int8"], verdicts
    assert "deployment (QDQ folded, float32 on stpu)" in verdicts[0] and "int8 engine vs simulated int8" in verdicts[1]

    import numpy as np  # (devkit's own dependency)

    golden = np.load(root / "check" / "simulated.npy")
    np.save(root / "check" / "simulated.npy", np.roll(golden, 1))  # another model's output
    proc = subprocess.run([str(root / "run.sh"), "--check"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert (
        "PASS mnist int8: deployment" in proc.stdout and "FAIL mnist int8: int8 engine vs simulated int8" in proc.stdout
    )
    # check.json is data: a name that leads out of check/ is refused, nothing read
    (root / "check" / "check.json").write_text(json.dumps({**spec, "input": "../manifest.json"}))
    proc = subprocess.run([str(root / "run.sh"), "--check"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "names '../manifest.json', which is not a file beside it" in proc.stderr


def verify_infer(project: Path, *args: str) -> dict:
    """`devkit verify PROJECT --runner host --infer --json ARGS`, which must pass: its report.json
    (conftest.verify_passes cannot serve: the C++ demo's check is "not run", never passed, here)."""
    proc = devkit("verify", str(project), "--runner", "host", "--infer", "--json", *args)
    summary = json.loads(proc.stdout)
    assert summary["passed"], proc.stderr
    return json.loads(Path(summary["report"]).read_text())


@pytest.mark.parametrize("model", ["mnist", "mobilenet_v1", "resnet50"])
def test_verify_infer_matches_cpu_on_device(infer_project, model):
    report = verify_infer(infer_project, "--model", model, "--warmup", "2", "--repeats", "5")
    check = report["checks"][0]
    assert check["top1_agree"] and check["placement"]["cpu_fallback"] == {}
    assert {"conv2d", "relu"} <= set(check["placement"]["on_device"]) or model == "mnist"
    assert set(check["latency_ms"]) == {"stpu", "cpu"}
    cpp = report["checks"][1]
    assert cpp["name"] == "C++ demo" and cpp["not_run"] and not cpp["passed"]


def test_cpp_demo_runs_against_the_given_library_and_fails_loudly_without_one(infer_project, tmp_path):
    # No Paddle Inference C++ release can be had here; an empty directory shows the
    # demo really is configured against what --paddle-inference-dir names.
    proc = devkit(
        "verify",
        str(infer_project),
        "--runner",
        "host",
        "--infer",
        "--model",
        "mnist",
        "--warmup",
        "1",
        "--repeats",
        "2",
        "--paddle-inference-dir",
        str(tmp_path),
        "--json",
        check=False,
    )
    assert proc.returncode == ExitCode.VERIFICATION_FAILED
    summary = json.loads(proc.stdout)
    cpp = next(c for c in summary["checks"] if c["name"] == "C++ demo")
    assert not cpp["passed"] and "configure C++ demo failed" in cpp["detail"]
    log = Path(summary["report"]).with_name("verify.log").read_text()
    assert "Paddle Inference not found: set PADDLE_INFERENCE_DIR" in log


@pytest.mark.parametrize("model", ["mnist", "mobilenet_v1"])
def test_verify_int8_model_at_the_deployment_and_simulated_levels(infer_project, model):
    report = verify_infer(infer_project, "--quant", "int8", "--model", model, "--warmup", "1", "--repeats", "3")
    check = report["checks"][0]
    assert check["name"] == f"inference {model} int8"
    quant = check["quant"]
    assert quant["qdq_ops"]["quantize_linear"] > 0 and quant["qdq_ops"]["dequantize_linear"] > 0
    # weights scaled per output channel (a conv's axis 0, a Linear's [in, out] axis 1), activations per tensor
    assert quant["scale_axes"]["0"] > 0 and quant["scale_axes"]["1"] > 0 and quant["scale_axes"]["-1"] > 0
    levels = quant["levels"]
    assert all(levels[n]["passed"] and not levels[n]["not_run"] for n in ("0", "1", "2")), levels
    # the bundle's own check (run.sh --check) with the plugin from the bundle
    bundle_check = next(c for c in report["checks"] if c["name"] == "bundle int8 check")
    assert bundle_check["passed"] and bundle_check["detail"].count("PASS mnist int8") == 2
    # level 2: every conv and fc in the int8 engine, one layer alone within 1 LSB of simulated int8
    program = {"mnist": {"conv2d": 2, "matmul": 3}, "mobilenet_v1": {"conv2d": 14, "depthwise_conv2d": 13, "matmul": 1}}
    # and each relu and pooling whose input is quantized, on the integers
    # (LeNet's two max poolings; MobileNetV1's global average pooling as int32 sums of the integers)
    on_integers = {"mnist": {"relu": 2, "pool2d": 2}, "mobilenet_v1": {"relu": 27, "pool2d": 1}}
    # and the flatten before the first fc, read flattened by its engine op
    on_integers[model]["flatten"] = 1
    assert levels["2"]["int8_ops"] == {**program[model], **on_integers[model]}
    units = {"conv2d 3x3 stride 2 pad 1", "depthwise conv2d 3x3", "fc"}
    units |= {"conv2d 3x3 stride 2 pad 1 per-tensor", "fc per-tensor", "residual add", "concat", "softmax"}
    assert {u["layer"] for u in levels["2"]["units"]} == units
    assert all(u["max_lsb"] <= 1 for u in levels["2"]["units"]) and levels["2"]["model"]["mean_lsb"] <= 1
    # the reference's own spread, its sums in float64 (MobileNetV1's moves by about 2 LSB: see README)
    assert levels["2"]["reference_spread"]["max_lsb"] >= 0 and "its sums in float64" in levels["2"]["detail"]
    # each unit computed by an engine op of its kind (the device's op dump), not by the float ops
    assert all(u["in_engine"] for u in levels["2"]["units"]), levels["2"]["units"]
    # every other quantized activation (the inputs of batch norm, relu, pooling) on its int8 grid in the
    # engine: LeNet's whole output then within 1 LSB of simulated int8 per element
    assert levels["2"]["int8_activations"] == {"mnist": 4, "mobilenet_v1": 55}[model]
    assert model != "mnist" or levels["2"]["model"]["max_lsb"] <= 1
    # and each conv/fc layer of the model alone, fed the simulated model's input, within 1 LSB
    layers = levels["2"]["layers"]
    assert len(layers) == sum(program[model].values()) and all(u["max_lsb"] <= 1 for u in layers), layers
    assert not {"relu", "pool2d"} & set(levels["2"]["float32_ops"]) and levels["2"]["latency_ms"]["avg_ms"] > 0
    # level 0: the runtime's passes folded every pair; what ran, ran on the device
    placement = check["placement"]
    ran = {op for where in ("on_device", "host_shape_ops", "cpu_fallback") for op in placement[where]}
    assert not ran & {"quantize_linear", "dequantize_linear"} and placement["cpu_fallback"] == {}


def test_quant_refuses_a_model_that_is_not_quantized(infer_project, tmp_path):
    model_dir = tmp_path / "float-lenet"
    script = (
        "import paddle, sys; from paddle.static import InputSpec; paddle.seed(1); m = paddle.vision.models.LeNet(); "
        "m.eval(); paddle.jit.save(m, sys.argv[1], input_spec=[InputSpec([1, 1, 28, 28], 'float32', 'x')])"
    )
    subprocess.run([str(paddle_python()), "-c", script, str(model_dir / "model")], check=True, capture_output=True)
    proc = devkit(
        "verify",
        str(infer_project),
        "--runner",
        "host",
        "--infer",
        "--quant",
        "int8",
        "--model-dir",
        str(model_dir),
        "--json",
        check=False,
    )
    assert proc.returncode == ExitCode.INPUT, proc.stderr
    assert "model.json is not a quantized (QDQ) model: it holds 0 quantize_linear, 0 dequantize_linear" in proc.stderr
    assert "paddle.quantization" in proc.stderr


def test_the_runtime_hands_paddle_the_configured_passes(tmp_path):
    """[tool.devkit] inference-passes reaches Paddle through the runtime: with none, nothing folds a
    quantized model's QDQ pairs and Paddle 3.3.1 cannot even prepare its program for the device."""
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    assert "\ninference-passes = [" in text
    pyproject.write_text(re.sub(r"\ninference-passes = \[[^]]*\]", "\ninference-passes = []", text))
    devkit("build", str(project), "--runner", "host")
    args = ("--runner", "host", "--infer", "--quant", "int8", "--model", "mnist", "--warmup", "1", "--repeats", "2")
    proc = devkit("verify", str(project), *args, check=False)
    assert proc.returncode == ExitCode.VERIFICATION_FAILED, proc.stderr[-2000:]
    assert "inference mnist int8 on x86_64" in proc.stderr and "failed" in proc.stderr


@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    """A small float model (a Linear and a ReLU) as paddle.jit.save writes it: model.json + model.pdiparams."""
    directory = tmp_path_factory.mktemp("small-model")
    script = (
        "import paddle, sys; from paddle.static import InputSpec; paddle.seed(1); "
        "m = paddle.nn.Sequential(paddle.nn.Linear(4, 3), paddle.nn.ReLU()); m.eval(); "
        "paddle.jit.save(m, sys.argv[1], input_spec=[InputSpec([1, 4], 'float32', 'x')])"
    )
    subprocess.run([str(paddle_python()), "-c", script, str(directory / "model")], check=True, capture_output=True)
    return directory


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _junk_pdmodel(model_dir: Path) -> None:
    (model_dir / "model.json").rename(model_dir / "model.pdmodel")
    (model_dir / "model.pdmodel").write_bytes(bytes(range(256)) * 2)  # Paddle 3.3.1 dies of SIGSEGV reading it


def _second_model(model_dir: Path) -> None:
    for suffix in (".json", ".pdiparams"):
        (model_dir / f"other{suffix}").write_bytes((model_dir / f"model{suffix}").read_bytes())


def _empty(model_dir: Path) -> None:
    for path in model_dir.iterdir():
        path.unlink()


# A model directory Paddle cannot load, made from the small model: how, and what the one error line says
# (the first two found by Paddle's own load on the CPU in the payload, the others by devkit before that).
BROKEN_MODELS = {
    "truncated-params": (
        lambda d: _truncate(d / "model.pdiparams"),
        "Paddle cannot load {d}/model.pdiparams: Cannot read tensor desc size",
    ),
    "junk-pdmodel": (_junk_pdmodel, "Paddle could not load {d}/model.pdmodel with {d}/model.pdiparams: it died of"),
    "program-paddle-cannot-read": (  # a PIR program's shape, an op without its fields
        lambda d: (d / "model.json").write_text('{"program": {"regions": [{"blocks": [{"ops": [{"#": "1.relu"}]}]}]}}'),
        "Paddle cannot load {d}/model.json: ",
    ),
    "json-not-a-program": (
        lambda d: (d / "model.json").write_text('{"program": 1}'),
        '{d}/model.json is not a valid Paddle program (not a PIR program (no "program" object))',
    ),
    "empty-dir": (_empty, "{d} holds no exported model"),
    "two-models": (_second_model, "{d} holds 2 models (model.json, other.json): verify takes one"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_MODELS))
def test_a_model_paddle_cannot_load_is_input_refused_in_one_line(infer_project, small_model, tmp_path, case):
    """A user's model is input, not a failed plugin: a model Paddle cannot load exits with the input
    error's code, in one line naming the file and the fix, before anything runs on the device."""
    model_dir = tmp_path / "model"
    shutil.copytree(small_model, model_dir)
    make, said = BROKEN_MODELS[case]
    make(model_dir)
    proc = devkit(
        "verify", str(infer_project), "--runner", "host", "--infer", "--model-dir", str(model_dir), check=False
    )
    assert proc.returncode == ExitCode.INPUT, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    assert said.format(d=model_dir) in lines[0], lines[0]
    assert "Fix: re-export the model with paddle.jit.save" in lines[0]


def test_quant_takes_a_pretty_printed_quantized_model(infer_project, tmp_path):
    """Paddle loads a model.json however it is laid out: verify --quant reads its ops from the parsed
    program, and a quantized LeNet saved pretty-printed is verified, not refused as unquantized."""
    model_dir = tmp_path / "int8-lenet"
    script = (
        "import paddle, sys; from paddle.static import InputSpec; sys.path.insert(0, sys.argv[2]); import quant_model; "
        "paddle.seed(1); m = quant_model.quantized(paddle.vision.models.LeNet(), [1, 1, 28, 28]); "
        "paddle.jit.save(m, sys.argv[1], input_spec=[InputSpec([1, 1, 28, 28], 'float32', 'x')])"
    )
    prefix = str(model_dir / "model")
    subprocess.run(
        [str(paddle_python()), "-c", script, prefix, str(PAYLOAD_DIR / "paddle")],
        check=True,
        capture_output=True,
        env={**os.environ, **payload_env()},
    )
    program = model_dir / "model.json"
    program.write_text(json.dumps(json.loads(program.read_text()), indent=2))
    report = verify_infer(
        infer_project, "--quant", "int8", "--model-dir", str(model_dir), "--warmup", "1", "--repeats", "2"
    )
    quant = report["checks"][0]["quant"]
    assert quant["qdq_ops"]["quantize_linear"] > 0 and quant["qdq_ops"]["dequantize_linear"] > 0
    assert quant["levels"]["0"]["passed"], quant["levels"]["0"]
