"""The three steps of a build, each on its own, without compiling: `prepare_build` (the log and the
stale artifacts), `execute_build` (the SDK from the placement, the plan run on a runner that records
it) and `check_and_publish` (a canned output directory checked and published to dist/)."""

from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path

import pytest

from devkit.building.options import BuildOptions, BuildRequest
from devkit.building.placement import BuildPlace, Placement
from devkit.building.plan import BuildPlan
from devkit.building.plugin import (
    ExecutedBuild,
    check_and_publish,
    device_bundle_name,
    device_bundle_path,
    execute_build,
    prepare_build,
)
from devkit.project.config import DevkitConfig
from devkit.project.project import Project
from devkit.project.recipes import find_recipe
from devkit.project.sdk import SdkSettings, SdkSource
from devkit.run.step import HostRunner, Step
from devkit.util.errors import BuildFailure, InputError

X86_64, ARMHF = find_recipe("x86_64"), find_recipe("armhf")


def project_at(root: Path, sdk: SdkSettings | None = None) -> Project:
    config = DevkitConfig(name="STPU", device_type="stpu", sdk=sdk)
    (root / "dist").mkdir(parents=True)
    return Project(root, "paddle-custom-stpu", "0.1.0", "STPU", "stpu", config)


class RecordingRunner(HostRunner):
    """The host, except that a step is recorded and answers with compiler lines instead of running."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[Step] = []

    def run(self, step: Step) -> str:
        self.steps.append(step)
        return "[1/3] Building CXX object a.o\n[2/3] Building C object b.o\n"


def test_prepare_removes_what_the_build_replaces_and_empties_the_log(tmp_path):
    project = project_at(tmp_path / "p")
    dist = project.dist_dir
    old_wheel = dist / "paddle_custom_stpu-0.1.0-py3-none-manylinux_2_31_x86_64.whl"
    other_target = dist / "paddle_custom_stpu-0.1.0-py3-none-manylinux_2_31_aarch64.whl"
    bundle = device_bundle_path(project, X86_64)
    inference = dist / "paddle-custom-stpu-inference-0.1.0-x86_64.tar.gz"
    for path in (old_wheel, other_target, bundle, inference):
        path.write_bytes(b"old")
    options = BuildRequest(X86_64).options(project)
    log = prepare_build(project, options)
    log.write_text("an older build's lines")
    assert prepare_build(project, options) == log and log.read_text() == ""
    assert not old_wheel.exists() and not inference.exists()
    assert other_target.exists()  # another target's wheel stays
    assert bundle.exists()  # a plugin build keeps the device bundle (the other framework's wheel came with it)
    prepare_build(project, BuildRequest(ARMHF).options(project))
    assert not device_bundle_path(project, ARMHF).exists() and other_target.exists()
    device = device_bundle_path(project, ARMHF)
    device.write_bytes(b"old")
    prepare_build(project, BuildRequest(ARMHF).options(project))
    assert not device.exists()  # a device-only build replaces its bundle


def test_execute_runs_the_plan_with_the_placements_sdk(tmp_path, monkeypatch):
    """The SDK root is the placement's, resolved once: the declared directory is not looked up again
    (here it does not exist, so a second resolution would fail)."""
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    source = SdkSource("dir", "build.armhf", path=str(tmp_path / "not-there"))
    settings = SdkSettings("opencl", "3.0", build={"armhf": source})
    project = project_at(tmp_path / "p", settings)
    stale = project.root / "build" / "armhf-device" / "stale.o"
    stale.parent.mkdir(parents=True)
    stale.write_text("")
    sdk_root = tmp_path / "opencl-3.0"
    (sdk_root / "include").mkdir(parents=True)
    placement = Placement(None, tmp_path / "cache" / "host", source, sdk_root, (sdk_root,))
    runner = RecordingRunner()
    options = BuildOptions(ARMHF, None, clean=True)
    out = tmp_path / "out"
    executed = execute_build(project, options, placement, BuildPlace(runner, X86_64, placement.cache), out)
    (step,) = runner.steps
    assert executed.output.count("Building") == 2 and executed.plan.device_only and executed.plan.cross
    assert "--device-only" in step.argv and step.argv[step.argv.index("--out") + 1] == str(out.resolve())
    assert executed.sdk is not None and executed.sdk.root == sdk_root
    assert step.env["OPENCL_SDK_ROOT"] == str(sdk_root.resolve())
    assert executed.plan.toolchain_file is not None and executed.plan.toolchain_file.is_file()  # cross: written
    assert not stale.exists()  # --clean


def elf_for(machine: int) -> bytes:
    data = bytearray(Path(sys.executable).read_bytes()[:4096])  # a real ELF header, e_machine changed
    data[18:20] = machine.to_bytes(2, "little")
    return bytes(data)


def canned_output(out: Path, project: Project, machine: int, extra: tuple[str, ...] = ()) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    bundle = out / f"{device_bundle_name(project, ARMHF)}.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        data = elf_for(machine)
        info = tarfile.TarInfo("stpu-device/tests/test_stpu_device")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    for name in extra:
        (out / name).write_text("")
    return bundle


def executed_armhf(project: Project) -> ExecutedBuild:
    plan = BuildPlan("build", (), {}, "", project.log_dir / "build-armhf.log", "build/armhf-device", True, True)
    return ExecutedBuild(plan, "", None)


EM_ARM, EM_X86_64 = 40, 62


def test_check_and_publish_puts_a_checked_device_bundle_in_dist(tmp_path):
    project = project_at(tmp_path / "p")
    canned_output(tmp_path / "out", project, EM_ARM)
    published = check_and_publish(project, BuildOptions(ARMHF, None), executed_armhf(project), tmp_path / "out", None)
    assert published.artifact == device_bundle_path(project, ARMHF) and published.artifact.is_file()
    assert published.platform is None and published.sdist is None


@pytest.mark.parametrize(
    ("machine", "extra", "problem"),
    [
        (EM_X86_64, (), "stpu-device/tests/test_stpu_device is built for EM_X86_64, not EM_ARM"),
        (EM_ARM, ("stray.whl",), "the build produced paddle-custom-stpu-device-0.1.0-armhf.tar.gz, stray.whl"),
    ],
)
def test_check_and_publish_refuses_an_output_that_is_not_the_targets(tmp_path, machine, extra, problem):
    project = project_at(tmp_path / "p")
    canned_output(tmp_path / "out", project, machine, extra)
    with pytest.raises(BuildFailure) as info:
        check_and_publish(project, BuildOptions(ARMHF, None), executed_armhf(project), tmp_path / "out", None)
    assert problem in info.value.problem
    assert not any(project.dist_dir.iterdir())  # nothing published


def test_check_and_publish_wants_the_wheel_of_a_plugin_build(tmp_path):
    project = project_at(tmp_path / "p")
    bundle = canned_output(tmp_path / "out", project, EM_ARM)
    bundle.rename(tmp_path / "out" / f"{device_bundle_name(project, X86_64)}.tar.gz")
    plan = BuildPlan("build", (), {}, "", project.log_dir / "b.log", "build/x", False, False)
    with pytest.raises(BuildFailure, match="expected a wheel and a device bundle"):
        check_and_publish(project, BuildOptions(X86_64, "3.3.1"), ExecutedBuild(plan, "", None), tmp_path / "out", None)


def test_where_a_build_runs_is_decided_once(tmp_path, monkeypatch):
    """resolve_placement asks the engine question once and resolves the SDK with it: a `dir` SDK's
    root and a Paddle Inference release are the container's inputs, the cache and image follow."""
    from devkit.building import placement as placement_module
    from devkit.building.placement import resolve_placement

    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    asked: list[str] = []
    monkeypatch.setattr(placement_module, "use_container", lambda choice: asked.append(choice) or choice == "docker")
    sdk_root = tmp_path / "opencl-3.0"
    (sdk_root / "lib").mkdir(parents=True)
    source = SdkSource("dir", "build.x86_64", path=str(sdk_root))
    project = project_at(tmp_path / "p", SdkSettings("opencl", "3.0", build={"x86_64": source}))
    inference = tmp_path / "paddle_inference"
    options = BuildOptions(X86_64, "3.3.1", runner="docker", inference_dir=inference)
    placed = resolve_placement(project, options)
    assert asked == ["docker"]
    assert placed.in_container and placed.image is not None and placed.image.kind == "builder-bullseye"
    assert placed.cache == tmp_path / "cache" / "container"
    assert (placed.sdk_source, placed.sdk_root, placed.inputs) == (source, sdk_root, (inference, sdk_root))
    on_host = resolve_placement(project, BuildOptions(X86_64, "3.3.1", runner="host"))
    assert asked == ["docker", "host"] and on_host.image is None and on_host.cache == tmp_path / "cache" / "host"
    missing = SdkSource("dir", "build.x86_64", path=str(tmp_path / "not-there"))
    project = project_at(tmp_path / "q", SdkSettings("opencl", "3.0", build={"x86_64": missing}))
    with pytest.raises(InputError, match="does not exist on this machine"):
        resolve_placement(project, BuildOptions(X86_64, "3.3.1", runner="host"))
