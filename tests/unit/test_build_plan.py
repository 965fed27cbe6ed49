"""Build plans, asserted without building: what the payload is told, in which environment, where
its tree and log go, for each kind of build devkit makes. The container runner is real; its
engine is a stub (what these tests are about is the plan, not the engine)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import devkit

from devkit.building.options import BuildOptions, BuildRequest
from devkit.building.placement import BuildPlace, build_mounts
from devkit.building.plan import BuildPlan, plan_build
from devkit.building.plugin import device_bundle_name
from devkit.building.sdk import ProvidedSdk
from devkit.project.config import DEFAULT_INFERENCE_PASSES
from devkit.project.frameworks import PADDLE, TORCH
from devkit.project.project import Project, load_project
from devkit.project.recipes import find_recipe
from devkit.run import container
from devkit.run.container import ContainerRunner
from devkit.run.envs import container_reference_envs
from devkit.run.step import HostRunner
from devkit.util.resources import PAYLOAD_DIR


class StubEngine:
    files_mode = "bind"


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> dict[str, Project]:
    root = tmp_path_factory.mktemp("plans")
    devkit("new-backend", "STPU", "--out", str(root / "plain"))
    devkit("new-backend", "STPU", "--sdk", "opencl", "--out", str(root / "opencl"))
    return {"plain": load_project(root / "plain"), "opencl": load_project(root / "opencl")}


@pytest.fixture(autouse=True)
def no_host_pip(monkeypatch):
    monkeypatch.setattr(container, "host_pip_settings", lambda: ({}, []))
    monkeypatch.delenv("CCACHE_DIR", raising=False)
    monkeypatch.delenv("CCACHE_SLOPPINESS", raising=False)


def host_place(tmp_path: Path) -> BuildPlace:
    return BuildPlace(HostRunner(), find_recipe("x86_64"), tmp_path / "cache")


def container_place(
    project: Project, tmp_path: Path, inputs: list[Path] | None = None, reference_envs: Path | None = None
) -> BuildPlace:
    cache = tmp_path / "cache"
    mounts = build_mounts(project, tmp_path / "out", cache, inputs or [], reference_envs)
    runner = ContainerRunner(StubEngine(), "devkit-builder-bullseye:0123", "linux/amd64", mounts)  # type: ignore[arg-type]
    return BuildPlace(runner, find_recipe("x86_64"), cache)


def plan(project: Project, options: BuildOptions, place: BuildPlace, tmp_path: Path, sdk=None) -> BuildPlan:
    return plan_build(project, options, place, tmp_path / "out", sdk, device_bundle_name(project, options.recipe))


def flag(p: BuildPlan, name: str) -> str | None:
    argv = list(p.argv)
    return argv[argv.index(name) + 1] if name in argv else None


def test_native_host_build_compiles_against_the_reference_runtime(projects, tmp_path):
    project = projects["plain"]
    options = BuildRequest(find_recipe("x86_64")).options(project)
    p = plan(project, options, host_place(tmp_path), tmp_path)
    assert p.argv[1] == str(PAYLOAD_DIR / "shared" / "build_plugin.py")
    assert (flag(p, "--target"), flag(p, "--framework"), flag(p, "--runtime-version")) == ("x86_64", "paddle", "3.3.1")
    assert flag(p, "--project") == str(project.root) and flag(p, "--env-key") == "host"
    assert p.reference_runtime and not p.cross and not p.device_only and p.toolchain_file is None
    assert "--toolchain-file" not in p.argv and "--runtime-platform" not in p.argv
    assert p.build_dir == "build/py3-none-linux_x86_64" and p.log == project.log_dir / "build-x86_64.log"
    assert p.env["ON_INFER"] == "OFF" and p.env["CCACHE_BASEDIR"] == str(project.root)
    assert p.env["CCACHE_SLOPPINESS"] == "pch_defines,time_macros"  # the kernels' PCH compiles from the cache
    # the runtime's inference passes come from [tool.devkit] (default: the CPU's QDQ folding)
    assert p.env["DEVKIT_INFERENCE_PASSES"].split(";") == list(DEFAULT_INFERENCE_PASSES)
    assert p.env["CCACHE_DIR"] == str((tmp_path / "cache" / "ccache").resolve())
    assert p.title == "build STPU paddle plugin wheel (paddle 3.3.1) for x86_64"
    assert p.says_portability  # the host's toolchain: the container's oldest base is the fix
    runtime = p.step("/venv/site-packages/paddle").argv[-2:]
    assert runtime == ["--runtime-root", "/venv/site-packages/paddle"]


def test_a_host_build_compiles_into_the_users_ccache_and_a_container_into_its_volume(projects, tmp_path, monkeypatch):
    project = projects["plain"]
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "machine-ccache"))
    monkeypatch.setenv("CCACHE_SLOPPINESS", "include_file_mtime, time_macros")
    options = BuildRequest(find_recipe("x86_64")).options(project)
    assert plan(project, options, host_place(tmp_path), tmp_path).env["CCACHE_SLOPPINESS"] == (
        "include_file_mtime,time_macros,pch_defines"  # the user's kept
    )
    assert plan(project, options, host_place(tmp_path), tmp_path).env["CCACHE_DIR"] == str(tmp_path / "machine-ccache")
    in_container = plan(project, options, container_place(project, tmp_path), tmp_path)
    assert in_container.env["CCACHE_DIR"] == "/cache/ccache"  # a host path would not be there


def test_cross_build_in_the_container_reads_the_recipe_toolchain_file(projects, tmp_path):
    project = projects["plain"]
    options = BuildRequest(find_recipe("armv8")).options(project)
    p = plan(project, options, container_place(project, tmp_path), tmp_path)
    assert p.cross and not p.reference_runtime and p.argv[0] == "/usr/bin/python3"
    assert p.toolchain_file == project.root / "build" / "toolchain-aarch64.cmake"
    assert flag(p, "--toolchain-file") == "/src/build/toolchain-aarch64.cmake"
    assert flag(p, "--runtime-platform") == "manylinux2014_aarch64" and flag(p, "--runtime-version") == "3.2.2"
    assert flag(p, "--wheel-tag") == "py3-none-linux_aarch64"
    assert (flag(p, "--project"), flag(p, "--out"), flag(p, "--cache")) == ("/src", "/out", "/cache")
    assert p.argv[1] == "/devkit/payload/shared/build_plugin.py" and p.cwd == "/src"
    assert p.env["CCACHE_DIR"] == "/cache/ccache" and p.env["CCACHE_BASEDIR"] == "/src"
    assert p.title.endswith("for aarch64 (cross)")


def test_native_container_build_compiles_against_the_verify_images_reference_runtime(projects, tmp_path):
    project = projects["plain"]
    options = BuildRequest(find_recipe("x86_64")).options(project)
    place = container_place(project, tmp_path, reference_envs=container_reference_envs())
    p = plan(project, options, place, tmp_path)
    assert p.reference_runtime and not p.cross  # the env verify clones, made in the verify image
    assert place.runner.path(container_reference_envs() / "k-paddle-3.3.1") == "/reference-envs/k-paddle-3.3.1"
    # Through a remote engine (no host directory mounted) the builder installs the runtime itself.
    p = plan(project, options, container_place(project, tmp_path), tmp_path)
    assert not p.cross and not p.reference_runtime
    assert flag(p, "--env-key") == "devkit-builder-bullseye-0123"
    assert not p.says_portability  # the oldest builder base: nothing older to suggest
    assert "--toolchain-file" not in p.argv and "--wheel-tag" not in p.argv


def test_a_target_without_the_runtime_builds_the_device_library_only(projects, tmp_path):
    project = projects["plain"]
    options = BuildRequest(find_recipe("armhf")).options(project)
    assert options.runtime_version is None
    p = plan(project, options, container_place(project, tmp_path), tmp_path)
    assert p.device_only and p.build_dir == "build/armhf-device"
    assert flag(p, "--bundle-name") == "paddle-custom-stpu-device-0.1.0-armhf" and "--device-only" in p.argv
    assert "--runtime-platform" not in p.argv and "--wheel-tag" not in p.argv
    assert flag(p, "--toolchain-file") == "/src/build/toolchain-armhf.cmake"
    assert p.title == "build STPU device library for armhf (cross)"


def test_torch_builds_unpack_the_runtime_and_keep_their_own_tree(projects, tmp_path):
    project = projects["plain"]
    options = BuildRequest(find_recipe("x86_64"), TORCH).options(project)
    p = plan(project, options, host_place(tmp_path), tmp_path)
    assert (flag(p, "--framework"), flag(p, "--source"), flag(p, "--runtime-version")) == ("torch", "pytorch", "2.13.0")
    assert flag(p, "--runtime-platform") == "manylinux_2_28_x86_64" and not p.reference_runtime
    assert p.build_dir == "build/py3-none-linux_x86_64-torch" and p.log.name == "build-x86_64-torch.log"


def test_inference_and_other_versions_get_their_own_tree(projects, tmp_path):
    project = projects["plain"]
    release = tmp_path / "paddle_inference"
    (release / "paddle" / "lib").mkdir(parents=True)
    (release / "paddle" / "lib" / "libpaddle_inference.so").write_bytes(b"")
    options = BuildRequest(find_recipe("x86_64"), PADDLE, "3.2.2", infer=True, inference_dir=release).options(project)
    p = plan(project, options, container_place(project, tmp_path, [release]), tmp_path)
    assert p.build_dir == "build/py3-none-linux_x86_64-paddle3.2.2-infer" and p.env["ON_INFER"] == "ON"
    assert p.env["PADDLE_INFERENCE_DIR"] == "/inputs/0" and p.title.endswith("with ON_INFER")


def test_an_sdk_from_a_directory_is_seen_where_it_is_mounted(projects, tmp_path):
    project = projects["opencl"]
    recipe = find_recipe("x86_64")
    sdk_dir = tmp_path / "opencl-sdk"
    sdk = ProvidedSdk(project.config.sdk, recipe, sdk_dir)  # type: ignore[arg-type]
    options = BuildRequest(recipe).options(project)
    p = plan(project, options, container_place(project, tmp_path, [sdk_dir]), tmp_path, sdk)
    assert p.env["DEVKIT_SDK"] == "OPENCL" and p.env["OPENCL_SDK_ROOT"] == "/inputs/0"
    assert p.env["DEVKIT_SDK_RUNTIME_LIBS"] == "libOpenCL.so.1" and p.env["OPENCL_SDK_VERSION"] == "3.0"
    assert all(d.startswith("/inputs/0") for d in str(p.env["DEVKIT_SDK_INCLUDE_DIRS"]).split(";"))


def test_an_sdk_from_debian_packages_is_unpacked_into_the_build_cache(projects, tmp_path):
    project = projects["opencl"]
    recipe = find_recipe("aarch64")
    root = tmp_path / "cache" / "sdk" / "opencl-3.0-aarch64-0123"
    sdk = ProvidedSdk(project.config.sdk, recipe, root)  # type: ignore[arg-type]
    p = plan(project, BuildRequest(recipe).options(project), container_place(project, tmp_path), tmp_path, sdk)
    assert p.env["OPENCL_SDK_ROOT"] == "/cache/sdk/opencl-3.0-aarch64-0123"
    assert all(d.startswith("/cache/sdk/") for d in str(p.env["DEVKIT_SDK_LIB_DIRS"]).split(";"))
    assert p.cross and flag(p, "--toolchain-file") == "/src/build/toolchain-aarch64.cmake"


def test_the_matrix_and_the_command_line_share_one_request(projects):
    """A matrix entry's build goes through the checks the command line's does."""
    project = projects["plain"]
    with pytest.raises(Exception, match="no sdist to go with it"):
        BuildRequest(find_recipe("armhf"), sdist=True).options(project)
    with pytest.raises(Exception, match="apply to the Paddle plugin"):
        BuildRequest(find_recipe("x86_64"), TORCH, infer=True).options(project)
    assert BuildRequest(find_recipe("x86_64"), TORCH).options(project).index_url == project.config.index_url(TORCH)
