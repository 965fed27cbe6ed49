"""The PyTorch adapter end to end on this machine, for real: rendered, compiled against torch
2.13.0+cpu, retagged, verified in a fresh env (LeNet on MNIST with CPU fallback forbidden), then
installed with plain pip next to torch, where `import torch` alone must bring the device up.

One build and one verification per session (session fixtures); the checks that follow reuse
them and a clone of the verification's cached torch environment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import assert_cpu_reference, collective_cases, devkit, fresh_names, verify_distributed, verify_passes

from devkit.run.envs import cache_root, clone_env
from devkit.util.errors import ExitCode

TORCH = "2.13.0"
WHEEL = r"torch_stpu-0\.1\.0-py3-none-manylinux_2_\d+_x86_64\.whl"


@pytest.fixture(scope="session")
def torch_project(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("torch") / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    return project


@pytest.fixture(scope="session")
def torch_build(torch_project) -> dict:
    return json.loads(devkit("build", str(torch_project), "--framework", "torch", "--runner", "host", "--json").stdout)


@pytest.fixture(scope="session")
def torch_verify(torch_project, torch_build) -> dict:
    proc = devkit(
        "verify", str(torch_project), "--framework", "torch", "--runner", "host", "--profile", "--json", check=False
    )
    summary = json.loads(proc.stdout)
    summary["returncode"] = proc.returncode
    summary["stderr"] = proc.stderr
    return summary


@pytest.fixture(scope="session")
def torch_env(tmp_path_factory, torch_build, torch_verify) -> Path:
    """A venv a user would have: torch==2.13.0 (a clone of verify's cached reference env, which holds
    only torch and NumPy), then `pip install` of the wheel."""
    py = f"py{sys.version_info.major}{sys.version_info.minor}"
    reference = cache_root() / "host" / "reference-envs" / f"{py}-torch-{TORCH}"
    assert (reference / "devkit-reference-env.json").is_file(), "verify made no cached torch environment"
    env = tmp_path_factory.mktemp("torch-user") / "venv"
    clone_env(reference, env)
    subprocess.run(
        [str(env / "bin/python"), "-m", "pip", "install", "-q", "--no-deps", torch_build["wheel"]],
        check=True,
        capture_output=True,
    )
    return env


def run_python(env: Path, code: str, **extra: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("STPU_", "TORCH_DEVICE_BACKEND"))}
    return subprocess.run(
        [str(env / "bin/python"), "-c", code], capture_output=True, text=True, env={**clean, **extra}, timeout=300
    )


def test_build_gives_a_manylinux_wheel_pinned_to_its_torch(torch_build):
    wheel = Path(torch_build["wheel"])
    assert re.fullmatch(WHEEL, wheel.name), wheel.name
    assert torch_build["framework"] == "torch" and torch_build["torch_version"] == TORCH
    platform = torch_build["platform"]
    assert "libc10.so" in platform["excluded"] and "libtorch_cpu.so" in platform["excluded"]
    assert platform["grafted"] == []
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        points = zf.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert f"Requires-Dist: torch=={TORCH}" in meta
    assert re.search(r"\[torch\.backends\]\s+stpu = torch_stpu", points), points
    assert any(re.fullmatch(r"torch_stpu/.*\.so", n) for n in names)
    # the Paddle plugin's wheel is not touched by a torch build
    assert not list(wheel.parent.glob("paddle_custom_stpu-*.whl"))


def test_noop_rebuild_compiles_nothing(torch_project, torch_build):
    again = json.loads(devkit("build", str(torch_project), "--framework", "torch", "--runner", "host", "--json").stdout)
    assert again["compiled_files"] == 0 and again["sha256"] == torch_build["sha256"]


def test_verify_distributed_runs_ddp_on_the_c10d_backend(torch_project, torch_build):
    """torchrun, two ranks on stpu:0 and stpu:1, init_process_group() without a backend (the one
    registered for the device: stpuccl); every collective vs gloo, DDP LeNet vs one process, and a
    killed and a stopped rank."""
    report = verify_distributed(
        torch_project, "--framework", "torch", collectives="on 2 ranks (backend stpuccl) vs gloo on the CPU: all match"
    )
    wanted = {"all_reduce AVG float32", "reduce_scatter_tensor PRODUCT int64", "all_gather uint8", "barrier"}
    assert wanted <= collective_cases(report)


def test_verify_trains_lenet_with_zero_fallbacks(torch_verify):
    assert torch_verify["returncode"] == 0, torch_verify["stderr"][-3000:]
    checks = {c["name"]: c for c in torch_verify["checks"]}
    assert list(checks) == [
        "device conformance",
        "registration",
        "version guard",
        "tensor",
        "save-load",
        "dataloader",
        "devices",
        "queued work",
        "framework contract",
        "ops",
        "mnist",
        "profile",
        "fallback report",
    ]
    assert all(c["passed"] for c in checks.values())
    report = json.loads(Path(torch_verify["report"]).read_text())
    assert report["framework"] == "torch" and report["torch_version"].startswith(TORCH)
    assert report["strict_fallback"] == "1"
    mnist = next(c for c in report["checks"] if c["name"] == "mnist")
    assert mnist["fallbacks"] == {} and mnist["loss_drop_fraction"] >= 0.5
    assert mnist["device"]["heldout_accuracy"] >= 0.85 and mnist["max_curve_abs_diff"] <= 0.05
    assert_cpu_reference(report, re.escape(f"torch {report['torch_version']}"), "in this process")  # native target
    ops = next(c for c in report["checks"] if c["name"] == "ops")
    assert ops["untested_kernels"] == [] and len(ops["cases"]) >= 40
    for kernel in ("aten::convolution_overrideable", "aten::addmm", "aten::nll_loss_forward"):
        assert kernel in ops["registered_kernels"]
    fallback = next(c for c in report["checks"] if c["name"] == "fallback report")
    assert fallback["lenet_fallbacks"] == {} and any("cumsum" in k for k in fallback["unseen_op_fallbacks"])
    assert Path(torch_verify["plot"]).read_bytes()[:4] == b"\x89PNG"
    # what torch asks of a device, each through its public API: all met on torch 2.13
    contract = next(c for c in report["checks"] if c["name"] == "framework contract")
    assert {c["hook"]: c["status"] for c in contract["clauses"]} == {c["hook"]: "pass" for c in contract["clauses"]}
    assert {"profiler", "graph capture and replay (LeNet forward)", "RNG state", "streams and timed events"} <= {
        c["hook"] for c in contract["clauses"]
    }
    # --profile: the profiler's device kernels of a LeNet step are the device's op dump, one for one
    profile = next(c for c in report["checks"] if c["name"] == "profile")
    assert profile["device_kernels"] == profile["dumped_ops"] >= 40 and profile["missing"] == profile["extra"] == []
    trace = json.loads((Path(torch_verify["report"]).parent / "device-trace.json").read_text())
    assert sum(e.get("cat") == "kernel" for e in trace["traceEvents"]) == profile["device_kernels"]


def test_plain_pip_install_autoloads_with_torch_alone(torch_env):
    code = (
        "import sys, torch\n"
        "x = torch.tensor([1, 2, 3], device='stpu')\n"
        "y = (x + x).cpu().tolist()\n"
        "print(y, torch.stpu.device_count(), torch.stpu.memory_allocated() > 0, str(x.device),"
        " sorted(m for m in sys.modules if m.startswith('torch_stpu'))[:1])\n"
    )
    proc = run_python(torch_env, code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[2, 4, 6] 2 True stpu:0 ['torch_stpu']", proc.stdout
    # It is the entry point that loads it: with autoload off, torch does not know the device.
    off = run_python(torch_env, "import torch; torch.tensor([1], device='stpu')", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert off.returncode != 0 and "stpu" in off.stderr
    # Importing the adapter first (as torch_npu users do) must not register the device twice:
    # torch's import runs the entry point while torch_stpu is still being imported.
    proc = run_python(torch_env, "import torch_stpu, torch; print(torch.stpu.device_count())")
    assert proc.returncode == 0 and proc.stdout.strip() == "2", proc.stderr[-2000:]


def test_a_torch_mismatch_is_one_message_naming_the_fix(torch_env, tmp_path):
    """The adapter claims another torch (as a wheel built for 2.12.0 would): `import torch` fails with
    our message, not an undefined-symbol riddle."""
    env = tmp_path / "venv"
    clone_env(torch_env, env)
    (info,) = env.glob("lib/python3*/site-packages/torch_stpu/_build_info.json")  # the data _build_info.py reads
    info.unlink()  # a hard link into the shared env: replace, do not edit in place
    info.write_text((torch_env / info.relative_to(env)).read_text().replace(f'"{TORCH}"', '"2.12.0"'))
    proc = run_python(env, "import torch")
    assert proc.returncode != 0
    assert "torch-stpu 0.1.0 was built for torch 2.12.0, but torch 2.13.0" in proc.stderr, proc.stderr[-2000:]
    assert "pip install torch==2.12.0" in proc.stderr


def test_strict_fallback_names_the_op(torch_env):
    code = "import torch; torch.cumsum(torch.ones(3, device='stpu'), 0)"
    proc = run_python(torch_env, code, STPU_STRICT_FALLBACK="1")
    assert proc.returncode != 0
    assert re.search(r"aten::cumsum.*STPU_STRICT_FALLBACK", proc.stderr), proc.stderr[-2000:]


def test_fallback_works_and_is_counted(torch_env):
    code = (
        "import torch\n"
        "x = torch.tensor([0.0, 1, 2, 3, 4, 5]).to('stpu')\n"
        "c = torch.cumsum(x, 0)\n"
        "print(c.device, c.cpu().tolist(), torch.stpu.fallback_counts())\n"
    )
    proc = run_python(torch_env, code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "stpu:0 [0.0, 1.0, 3.0, 6.0, 10.0, 15.0] {'aten::cumsum.out': 1}", proc.stdout


CONJ_VIEWS = """
import torch
for dt in (torch.complex64, torch.complex128):
    x = torch.randn(4, 3, dtype=dt)
    d = x.to("stpu")
    assert torch.equal(d.cpu(), x), dt
    assert torch.equal(d.conj().resolve_conj().cpu(), x.conj()), dt  # on the device
    assert torch.equal(x.conj().to("stpu").cpu(), x.conj()), dt  # to the device
    assert torch.equal(d.conj().t().cpu(), x.conj().t()), dt  # from the device, strided
    assert torch.equal(d.conj().imag.cpu(), x.conj().imag), dt  # a negative view
    e = torch.empty_like(d)
    e.conj().copy_(d)  # into a conjugate view
    assert torch.equal(e.cpu(), x.conj()), dt
print("ok")
"""


def test_conjugate_and_negative_views_copy_to_from_and_on_the_device(torch_env):
    """The conjugate fallback resolved a view with clone -> copy_ -> _copy_from, which took the
    fallback again until the stack was gone (exit 139); complex128 could not be copied at all."""
    proc = run_python(torch_env, CONJ_VIEWS)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr[-1500:])


def test_dtypes_the_device_lacks_fall_back_inside_registered_kernels(torch_env):
    """rms_norm in half/bfloat16 reached mul.Tensor (float32 x half), which refused the dtype; half
    and bfloat16 are device dtypes now (mixed precision), so a complex mul is what must fall back
    from inside the registered kernel."""
    code = (
        "import torch\nF = torch.nn.functional\n"
        "for h in (torch.half, torch.bfloat16):\n"
        "    x, w = torch.randn(3, 8, dtype=h), torch.randn(8, dtype=h)\n"
        "    got = F.rms_norm(x.to('stpu'), [8], w.to('stpu')).cpu()\n"
        "    assert torch.allclose(got.float(), F.rms_norm(x, [8], w).float(), rtol=1e-2, atol=2e-2), h\n"
        "    assert torch.equal((x.float().to('stpu') * x.to('stpu')).cpu(), x.float() * x), h\n"
        "c = torch.randn(4, dtype=torch.complex64)\n"
        "assert torch.equal((c.to('stpu') * c.to('stpu')).cpu(), c * c)\n"
        "print('ok', sorted(torch.stpu.fallback_counts()))\n"
    )
    proc = run_python(torch_env, code)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.startswith("ok") and "aten::mul.Tensor" in proc.stdout, proc.stdout


def test_opinfo_samples_run_isolated_and_right_with_the_fallback(torch_project, torch_build):
    """torch's own OpInfos: the five fft ones killed the process (the conjugate copy); each op now
    runs in a worker, so a crash would be one result naming the op and its sample. as_strided reads
    outside its input view (wrong in every dtype while samples came over without the storage around
    the view); group_norm was off in 16-bit types; sparse layouts are refused in one line. Their
    out= and in-place variants are cases of the ops suite, their gradients the grads suite's
    (linalg.matrix_rank's out= computed nothing under the dispatch mode that saw the kernels;
    tensor_split's indices belong on the CPU; mode's out= and conj_physical's in-place form are
    composites no backend fallback sees: "mode only supports CPU, CUDA and XPU", "DispatchStub:
    missing kernel for stpu" until the adapter sent them to it by name)."""
    fft = "fft.hfft,fft.hfft2,fft.hfftn,fft.ifft,fft.ihfft"
    more = "as_strided,nn.functional.group_norm,to_sparse,add,linalg.matrix_rank,tensor_split,mode,conj_physical"
    others = ("as_strided.partial_views", "linalg.matrix_rank.hermitian", *more.split(","))
    proc = devkit(
        "test-ops",
        str(torch_project),
        "--framework",
        "torch",
        "--all",
        "--suite",
        "ops,grads",
        "--ops",
        f"{fft},{more}",
        "--runner",
        "host",
        "--json",
        check=False,
    )
    summary = json.loads(proc.stdout)
    report = json.loads(Path(summary["report"]).read_text())
    results = report["results"]
    cases = {r["case"] for r in results if r["suite"] == "ops" and "[" not in r["case"]}
    assert cases == {*fft.split(","), *others}, cases
    variants = {r["case"] for r in results if "[" in r["case"]}
    assert {
        "add[out]",
        "add[inplace]",
        "fft.ifft[out]",
        "linalg.matrix_rank[out]",
        "as_strided[inplace]",
        "mode[out]",
        "conj_physical[inplace]",
    } <= variants
    grads = {(r["case"], r["dtype"]) for r in results if r["suite"] == "grads"}
    differentiated = ("add", "fft.ifft", "nn.functional.group_norm", "tensor_split", "as_strided")
    assert {(c, d) for c in differentiated for d in ("float32", "float64")} <= grads, grads
    assert report["suite_runs"]["grads"]["cases"] >= len(differentiated), report["suite_runs"]
    sparse = [r for r in report["results"] if r["case"] == "to_sparse"]
    assert all(r["status"] == "not registered" and "stpu has no Sparse tensors" in r["error"] for r in sparse), sparse
    assert summary["passed"] and report["restarts"] == 0, summary["failed"]
    assert {"complex64", "complex128", "float32"} <= {r["dtype"] for r in report["results"]}
    assert Path(summary["junit"]).is_file() and Path(summary["markdown"]).read_text().startswith("# devkit test-ops")


def test_pytorchs_own_test_files_run_with_the_device_as_the_test_device(torch_project, torch_build):
    """--framework-src: a tree in PyTorch's shape (tests/fixtures/framework-src/torch), its
    device-generic file instantiated for the PrivateUse1 test base alone (as OpenReg runs them:
    PYTORCH_TESTING_DEVICE_ONLY_FOR), @onlyCUDA skipped, the file that is not device-generic left out."""
    src = Path(__file__).resolve().parents[1] / "fixtures" / "framework-src" / "torch"
    summary = json.loads(
        devkit(
            "test-ops",
            str(torch_project),
            "--framework",
            "torch",
            "--framework-src",
            str(src),
            "--runner",
            "host",
            "--json",
        ).stdout
    )
    report = json.loads(Path(summary["report"]).read_text())
    cases = {r["case"]: (r["status"], r["dtype"], r["suite"]) for r in report["results"]}
    generic = "test/test_device_generic.py::TestDeviceGenericPRIVATEUSE1::"
    assert cases == {
        f"{generic}test_add_stpu_float32": ("pass", "float32", "framework-src"),
        f"{generic}test_add_stpu_int64": ("pass", "int64", "framework-src"),
        f"{generic}test_matmul_backward_stpu": ("pass", "-", "framework-src"),
    }
    assert report["skipped"] == {"Only runs on cuda": 1} and summary["mode"] == "framework-src"


def test_fallback_ops_switch_sends_a_registered_kernel_to_cpu(torch_env):
    code = (
        "import torch\na = torch.ones(4, device='stpu')\nprint((a + a).cpu().tolist(), torch.stpu.fallback_counts())\n"
    )
    # add.Tensor alone would still reach the device through add.out: the pattern names both
    proc = run_python(torch_env, code, STPU_FALLBACK_OPS="aten::add\\..*")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[2.0, 2.0, 2.0, 2.0] {'aten::add.out': 1}", proc.stdout
    assert "not registering aten::add.Tensor, aten::add.out" in proc.stderr  # it says what it left out


def test_dump_and_autocompare_name_torch_ops(torch_env):
    code = "import torch; a = torch.ones(3, 4, device='stpu'); print(float((a @ a.t()).sum().cpu()))"
    proc = run_python(torch_env, code, STPU_DUMP_OP_ARGS="2", STPU_AUTOCOMPARE="1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "36.0"
    assert re.search(r"\[STPU\] aten::mm: gemm trans_a=0 trans_b=1 m=3 n=3 k=4", proc.stderr), proc.stderr[-2000:]
    assert re.search(r"autocompare: [1-9]\d* op outputs compared, 0 mismatched", proc.stderr), proc.stderr[-2000:]


def test_wrong_framework_wheels_are_refused_in_one_line(torch_build, built_project):
    paddle_wheel = next((built_project / "dist").glob("paddle_custom_stpu-*.whl"))
    for wheel, framework, message in (
        (torch_build["wheel"], "paddle", "is a PyTorch adapter wheel"),
        (str(paddle_wheel), "torch", "is not a PyTorch adapter wheel"),
    ):
        proc = devkit("verify", "--wheel", wheel, "--framework", framework, "--runner", "host", check=False)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert proc.returncode == ExitCode.INPUT and len(errors) == 1 and message in errors[0], proc.stderr


def test_check_abi_and_kernels(torch_project, torch_build):
    abi = json.loads(devkit("check-abi", torch_build["wheel"], "--json").stdout)
    assert abi["ok"] and abi["framework"] == "torch" and abi["torch_version"] == TORCH
    wrong_arch = devkit("check-abi", torch_build["wheel"], "--arch", "aarch64", "--json", check=False)
    assert wrong_arch.returncode == ExitCode.BUILD_FAILED and "EM_X86_64" in wrong_arch.stdout
    kernels = json.loads(
        devkit("check-kernels", str(torch_project), "--framework", "torch", "--runner", "host", "--json").stdout
    )
    assert kernels["passed"]
    argv = ["test-ops", str(torch_project), "--framework", "torch", "--ops", ".*conv2d", "--dtypes", "float32"]
    ops = json.loads(devkit(*argv, "--runner", "host", "--json").stdout)
    assert ops["passed"] and ops["counts"]["pass"] >= 1 and ops["mode"] == "opinfo", ops
    # --dtypes reaches the suites (without it, conv2d's float64 samples run too)
    assert {r["dtype"] for r in json.loads(Path(ops["report"]).read_text())["results"]} == {"float32"}


def test_the_adapters_own_tests_pass(torch_env, torch_project):
    """pytorch/tests, as a vendor runs them against the installed wheel."""
    subprocess.run(
        [str(torch_env / "bin/python"), "-m", "pip", "install", "-q", "pytest"], check=True, capture_output=True
    )
    proc = subprocess.run(
        [str(torch_env / "bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "pytorch/tests"],
        cwd=torch_project,
        capture_output=True,
        text=True,
        timeout=900,
        env={k: v for k, v in os.environ.items() if not k.startswith("STPU_")},
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"\d+ passed", proc.stdout) and "failed" not in proc.stdout


def test_convolutions_the_device_lacks_run_on_the_cpu(torch_env):
    """A registered kernel handles every mode its schema admits: transposed and 1-D convolutions run
    (on CPU copies, counted as fallbacks) instead of failing."""
    code = (
        "import torch, torch.nn.functional as F\n"
        "x, w = torch.randn(1, 2, 5, 5), torch.randn(2, 3, 3, 3)\n"
        "got = F.conv_transpose2d(x.to('stpu'), w.to('stpu')).cpu()\n"
        "x1, w1 = torch.randn(1, 2, 9), torch.randn(4, 2, 3)\n"
        "got1 = F.conv1d(x1.to('stpu'), w1.to('stpu')).cpu()\n"
        "print(torch.allclose(got, F.conv_transpose2d(x, w), atol=1e-5), torch.allclose(got1, F.conv1d(x1, w1), "
        "atol=1e-5), torch.stpu.fallback_counts())\n"
    )
    proc = run_python(torch_env, code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True True {'aten::convolution_overrideable': 1}", (
        proc.stdout
    )  # conv1d runs on the device as 2-D


def test_two_devices_copy_through_the_peer_copy_and_refuse_mixed_operands(torch_env):
    code = (
        "import torch\n"
        "a = torch.arange(6.).to('stpu:1')\n"
        "b = a.to('stpu:0')\n"
        "print(torch.stpu.device_count(), b.device, b.cpu().tolist(), flush=True)\n"
        "try:\n"
        "    a + b\n"
        "except RuntimeError as e:\n"
        "    print(str(e).splitlines()[0])\n"
    )
    proc = run_python(torch_env, code, STPU_DUMP_OP_ARGS="2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "2 stpu:0 [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]", proc.stdout
    assert "Expected all tensors to be on the same device" in lines[1] and "stpu:1" in lines[1], lines
    assert "aten::_copy_from: memcpy_peer from=1 to=0 bytes=24" in proc.stderr, proc.stderr[-2000:]
    one = run_python(torch_env, "import torch; print(torch.stpu.device_count())", STPU_DEVICE_COUNT="1")
    assert one.stdout.strip() == "1", one.stderr[-2000:]


# ---------------------------------------------------------------- names both frameworks take

# What PyTorch does with a backend name, asked of the installed torch itself: the registration a
# generated adapter performs, plus the Tensor/Module attributes that generate_methods_* would
# silently replace. Prints "taken: <reason>" or "free".
NAME_PROBE = """
import sys, types, torch
from torch.nn.utils.rnn import PackedSequence
name = sys.argv[1]
owners = (torch.Tensor, torch.nn.Module, PackedSequence, torch.TypedStorage, torch.UntypedStorage)
replaced = [o.__name__ for o in owners if hasattr(o, name)]
try:  # one of torch's own device types (ideep, vulkan): torch.device() takes it before any renaming
    torch.device(name)
except RuntimeError:
    pass
else:
    print("taken: torch's own device type")
    sys.exit()
try:
    torch.utils.rename_privateuse1_backend(name)
    torch._register_device_module(name, types.ModuleType(name))
    torch.utils.generate_methods_for_privateuse1_backend()
    assert torch.device(name + ":1").type == name
except Exception as exc:
    print("taken:", str(exc).splitlines()[0][:200])
else:
    print(f"taken: would replace {name} of {replaced}" if replaced else "free")
"""

# Every name torch gives a meaning where a device type goes (torch_names.txt says how).
TORCH_NAMES = """
import re, torch
from torch.nn.utils.rnn import PackedSequence
from torch.storage import _StorageBase
names = set(dir(torch))
try:
    torch.device("not_a_device")
except RuntimeError as exc:
    names |= set(re.findall(r"[a-z_]+", str(exc).split("Expected one of")[1].split("device type")[0]))
for cls in (torch.Tensor, torch.nn.Module, PackedSequence, _StorageBase, torch.TypedStorage, torch.UntypedStorage):
    for attr in dir(cls):
        names |= {attr, attr[3:]} if attr.startswith("is_") else {attr}
print("\\n".join(sorted(n for n in names if re.fullmatch(r"[a-z][a-z_]*", n))))
"""


def test_devkit_knows_every_name_the_installed_torch_uses(torch_env):
    from devkit.project.naming import TORCH_NAMES_FILE, torch_reserved

    proc = run_python(torch_env, TORCH_NAMES, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert proc.returncode == 0, proc.stderr
    used = set(proc.stdout.split())
    assert {"cuda", "mps", "xpu", "meta", "hpu", "privateuseone", "nn", "view"} <= used  # the probe sees them
    missing = sorted(used - torch_reserved())
    assert not missing, f"add to {TORCH_NAMES_FILE}: {missing}"


def test_fresh_names_are_refused_in_one_line_or_rendered(torch_env, tmp_path):
    """Names no test has used, against what the installed torch takes. The accepted kind (mixed
    case with an underscore) is also built by both adapters and run on: test_json_output.py's
    empty-cache run uses such a name, since its builds compile from nothing anyway."""
    import time

    seed = time.time_ns()
    names = fresh_names(seed)
    context = f"names {names} (seed {seed})"
    for kind, name in names.items():
        torch_says = subprocess.run(
            [str(torch_env / "bin/python"), "-c", NAME_PROBE, name.lower()],
            capture_output=True,
            text=True,
            env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        ).stdout.strip()
        project = tmp_path / name
        proc = devkit("new-backend", name, "--out", str(project), check=False)
        if kind == "mixed":
            assert torch_says == "free" and proc.returncode == 0, f"{context}: {torch_says}; {proc.stderr}"
            assert (project / "pytorch" / f"torch_{name.lower()}").is_dir(), context
            continue
        assert torch_says.startswith("taken"), f"{context}: torch takes {name.lower()!r}, devkit refused it"
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert proc.returncode == ExitCode.INPUT and len(errors) == 1 and "PyTorch" in errors[0], (
            f"{context}: {proc.stderr}"
        )
        assert "Fix: pass --device-type " in errors[0] and not project.exists()


def test_torch_autocast_and_grad_scaler_train_on_the_device(torch_project, torch_build):
    """torch.autocast("stpu") in float16 with torch.amp.GradScaler, and in bfloat16: torch's own
    policy lists registered for AutocastPrivateUse1, the convolutions and GEMMs in the low dtype
    on the device, the scaler's two ops as device kernels, no CPU fallback."""
    _, report = verify_passes(torch_project, "--framework", "torch", "--amp", "O1")
    checks = {c["name"]: c for c in report["checks"]}
    for dtype in ("float16", "bfloat16"):
        amp = checks[f"mnist autocast {dtype}"]
        assert amp["ops"]["aten.convolution.default"][f"{dtype} on stpu"] > 0
        assert amp["ops"]["aten.addmm.default"][f"{dtype} on stpu"] > 0
        assert amp["fallbacks"] == {} and amp["device"]["heldout_accuracy"] >= amp["cpu"]["heldout_accuracy"] - 0.01
    scaler_ops = checks["mnist autocast float16"]["ops"]
    assert "float32 on stpu" in scaler_ops["aten._amp_foreach_non_finite_check_and_unscale_.default"]
    assert "float32 on stpu" in scaler_ops["aten._amp_update_scale_.default"]
    overflow = checks["amp overflow (autocast float16)"]
    assert overflow["changed_parameters"] == [] and overflow["scale_after"] == 2.0**39
    ops = checks["ops"]  # the scaler's ops and reciprocal are op cases too, against torch's CPU
    assert ops["passed"] and "GradScaler update after an overflow" in {c["case"] for c in ops["cases"]}
    lists = checks["autocast policy lists"]  # torch's own autocast test lists, on the device
    assert lists["passed"] and lists["cases"] >= 140 and lists["failures"] == {}
    assert {k.split("] ")[1].split(" ")[0] for k in lists["skipped"]} == {
        "cudnn_convolution",
        "cudnn_convolution_transpose",
        "einsum",
    }


# The autocast-lists check with the fp32 list expected in the low dtype: a device whose policy
# kept those ops in float32 (as torch's does) must fail it, naming them.
WRONG_POLICY = """
import json, sys
sys.path[:0] = sys.argv[1:]
import torch, torch_amp
torch_amp.POLICY_LISTS["torch_fp32"] = ("torch", "low")
print(json.dumps(torch_amp.check_autocast_lists(torch, "stpu")))
"""


def test_the_autocast_lists_check_names_an_op_against_the_policy(torch_env):
    from dataclasses import asdict

    from devkit.project.config import Tolerances
    from devkit.util.resources import PAYLOAD_DIR, PAYLOAD_LIBRARIES

    tolerances = json.dumps(asdict(Tolerances()))
    folders = [str(PAYLOAD_DIR / folder) for folder in ("torch", *PAYLOAD_LIBRARIES)]
    proc = subprocess.run(
        [str(torch_env / "bin/python"), "-c", WRONG_POLICY, *folders],
        capture_output=True,
        text=True,
        env={**os.environ, "DEVKIT_TOLERANCES": tolerances, "STPU_STRICT_FALLBACK": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    check = json.loads(proc.stdout.splitlines()[-1])
    assert not check["passed"]
    assert check["failures"]["torch_fp32[0] acos (float16)"] == "gave float32, policy says float16"
    assert all(k.startswith("torch_fp32[") for k in check["failures"])


def test_torch_compile_runs_inductor_kernels_on_the_device_queue(torch_project, torch_build):
    """torch.compile's default backend on stpu:1 and a stream of its own: every generated kernel
    launched through the device library (none called on the host), matmul/conv as the device's
    eager kernels, no CPU fallback, results as eager and the CPU; ordering, recompiles, the trace.
    Inductor's probes of the CPU are compiled into devkit's cache, where later sessions find them."""
    from devkit.run.envs import inductor_probes

    probes = inductor_probes() / "host"
    shutil.rmtree(probes, ignore_errors=True)
    _, report = verify_passes(torch_project, "--framework", "torch", "--compile")
    assert list(probes.rglob("*.so")), f"no probe of the CPU kept in {probes}"
    checks = {c["name"]: c for c in report["checks"]}
    assert "mnist" not in checks and {"compile ordering", "compile shapes", "compile trace"} <= checks.keys()
    for model in ("mlp", "lenet"):
        check = checks[f"compile {model}"]
        assert check["compiled_kernels"] > 0 and check["launches"] >= check["compiled_kernels"], check
        assert check["direct_calls"] == 0 and check["extern_kernels"] > 0 and check["fallbacks"] == {}, check
        assert check["max_diff_cpu"] < 1e-4 and check["max_diff_eager"] < 1e-4, check
    assert "device 1 stream" in checks["compile trace"]["detail"]


# What torch, and code written for torch.cuda, asks of the device (issue 54), each probe through
# torch's public API; the generated pytorch/tests/test_device_api.py goes into each in depth.
DEVICE_API_PROBES = """
import json, torch, torch.utils.checkpoint
mod = torch.stpu
def probe(name, fn):
    try:
        out[name] = fn()
    except Exception as error:
        out[name] = f"{type(error).__name__}: {error}".splitlines()[0]
def fork_rng():
    with torch.random.fork_rng(device_type="stpu"):
        inside = torch.rand(8, device="stpu").cpu()
    return torch.equal(torch.rand(8, device="stpu").cpu(), inside)
def checkpoint():
    x = torch.ones(64, device="stpu", requires_grad=True)
    f = lambda t: (t * (torch.rand_like(t) > 0.5)).sum()
    mod.manual_seed(1); torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False).backward()
    again = x.grad.cpu(); x.grad = None
    mod.manual_seed(1); f(x).backward()
    return torch.equal(again, x.grad.cpu())
out = {}
probe("fork_rng", fork_rng)
probe("checkpoint", checkpoint)
probe("get_device_name", lambda: mod.get_device_name(0))
probe("is_bf16_supported", lambda: mod.is_bf16_supported())
probe("is_pinned", lambda: torch.ones(3).pin_memory().is_pinned())
probe("capability_dtypes", lambda: sorted(map(str, torch.accelerator.get_device_capability()["supported_dtypes"])))
probe("memory_info", lambda: list(torch.accelerator.get_memory_info()) == list(mod.mem_get_info()))
print(json.dumps(out))
"""


def test_the_device_answers_what_torch_asks_of_it(torch_env):
    proc = run_python(torch_env, DEVICE_API_PROBES)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = json.loads(proc.stdout.splitlines()[-1])
    assert answers == {
        "fork_rng": True,
        "checkpoint": True,
        "get_device_name": "STPU",
        "is_bf16_supported": True,
        "is_pinned": True,
        "capability_dtypes": sorted(
            f"torch.{t}"
            for t in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
        ),
        "memory_info": True,
    }


# torch.profiler around a LeNet-ish training step on the device (issue 54): each item the device
# queued is a device event, the same count for the same step, in the Chrome trace on the device's
# row, linked to the CPU op that queued it and on one time base with it.
PROFILED_STEP = """
import json, tempfile, torch, torch.nn as nn
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
model = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1176, 10))
model = model.to("stpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 1, 28, 28, device="stpu"), torch.randint(0, 10, (8,), device="stpu")
def step():
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
step()
counts = []
for _ in range(2):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        step()
    counts.append(sum(e.device_type == DeviceType.PrivateUse1 for e in prof.events()))
path = tempfile.mkdtemp() + "/trace.json"
prof.export_chrome_trace(path)
trace = json.load(open(path))["traceEvents"]
ops = {e["args"]["External id"]: e for e in trace if e.get("cat") == "cpu_op"}
rows = [e for e in trace if e.get("cat") == "kernel"]
queued_by = [ops.get(e["args"].get("External id")) for e in rows]
print(json.dumps({
    "counts": counts, "rows": len(rows), "pids": sorted({e["pid"] for e in rows}),
    "unlinked": queued_by.count(None),
    "ran_after_queued": all(op is None or e["ts"] >= op["ts"] - 50 for e, op in zip(rows, queued_by)),
    "linked_ops": sorted({op["name"] for op in queued_by if op}),
    "device_column": "Self STPU" in prof.key_averages().table(sort_by="self_device_time_total", row_limit=3),
}))
"""


def test_the_profiler_shows_the_device_kernels_of_a_training_step(torch_env):
    proc = run_python(torch_env, PROFILED_STEP)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen["counts"][0] == seen["counts"][1] == seen["rows"] >= 20, seen
    assert seen["pids"] == [0] and seen["unlinked"] == 0 and seen["ran_after_queued"] and seen["device_column"], seen
    queuing = {"aten::convolution_overrideable", "aten::convolution_backward_overrideable", "aten::addmm", "aten::add_"}
    assert queuing <= set(seen["linked_ops"]), seen


# torch.cuda.graph-style use of torch.accelerator.Graph (issue 54): a static input, a small MLP
# forward captured on a side stream, new values copied in, replayed on the asynchronous device.
GRAPH_PROBE = """
import json, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to("stpu")
static_x = torch.zeros(32, 64, device="stpu")
out = {}
try:
    torch.accelerator.Graph().capture_begin()
except RuntimeError as error:
    out["default_stream"] = str(error)
graph, side = torch.accelerator.Graph(), torch.Stream()
with torch.no_grad():
    side.wait_stream(torch.accelerator.current_stream())
    with side, graph:
        static_y = model(static_x)
    torch.accelerator.current_stream().wait_stream(side)
    out["replay_equals_eager"] = []
    for seed in range(3):
        x = torch.randn(32, 64, generator=torch.Generator().manual_seed(seed)).to("stpu")
        static_x.copy_(x)
        graph.replay()
        out["replay_equals_eager"].append(torch.equal(static_y.cpu(), model(x).cpu()))
print(json.dumps(out))
"""


def test_a_captured_mlp_forward_replays_like_eager_bit_for_bit(torch_env):
    proc = run_python(torch_env, GRAPH_PROBE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = json.loads(proc.stdout.splitlines()[-1])
    assert answers["replay_equals_eager"] == [True, True, True]
    assert answers["default_stream"].startswith("stpu graphs must be captured on a non-default stream")
    assert "\n" not in answers["default_stream"].strip()


def test_module_and_optimizer_databases_run_on_the_device(torch_project, torch_build):
    """torch's module_db and optim_db (--suite modules,optims) vs the CPU. BatchNorm's and
    InstanceNorm's running statistics stayed at their initial values on the device: native_batch_norm
    writes them although its schema does not say so, and the CPU fallback copied back only what the
    schema marks. Adam in its for-loop and foreach forms; SparseAdam's sparse gradients refused in one
    line."""
    proc = devkit(
        "test-ops",
        str(torch_project),
        "--framework",
        "torch",
        "--all",
        "--suite",
        "modules,optims",
        "--ops",
        "nn.BatchNorm2d,nn.InstanceNorm1d,nn.Linear,Adam,SparseAdam",
        "--runner",
        "host",
        "--json",
        check=False,
    )
    summary = json.loads(proc.stdout)
    report = json.loads(Path(summary["report"]).read_text())
    results = {(r["suite"], r["case"], r["dtype"]): r for r in report["results"]}
    modules = ("nn.BatchNorm2d[train]", "nn.BatchNorm2d[eval]", "nn.InstanceNorm1d[train]", "nn.Linear")
    optims = ("Adam", "Adam[foreach]")
    wanted = [("modules", c) for c in modules] + [("optims", c) for c in optims]
    for (suite, case), dtype in ((w, d) for w in wanted for d in ("float32", "float64")):
        assert results[(suite, case, dtype)]["status"] == "pass", results.get((suite, case, dtype))
    assert results[("modules", "nn.Linear", "float32")]["max_abs_diff"].keys() == {"out", "grad"}
    sparse = results[("optims", "SparseAdam", "float32")]
    assert sparse["status"] == "not registered" and "stpu has no Sparse tensors" in sparse["error"], sparse
    assert summary["passed"] and report["restarts"] == 0, summary["failed"]
