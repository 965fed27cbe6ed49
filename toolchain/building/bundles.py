"""Inference bundles: what a deployment needs, in one layout for every target.

<dist>-inference-<version>-<arch>/
  lib/        the plugin (CUSTOM_DEVICE_ROOT points here: its loader, and <type>/ the plugin
              proper) and the device library
  include/    the device library's header
  demo/cpp/   C++ demo against Paddle Inference (PADDLE_INFERENCE_DIR)
  demo/python/infer.py
  tests/      device library test binary (targets without a Paddle runtime)
  check/      the int8 check: a quantized LeNet, its input and golden outputs (bundle_check.py)
  run.sh      runs the Python demo with CUSTOM_DEVICE_ROOT set; run.sh --check runs check/
  manifest.json  target, versions, sha256 of every file
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

from .. import __version__
from ..project.frameworks import PADDLE
from ..project.project import Project
from ..project.recipes import Recipe
from ..run.envs import reference_env_for_build
from ..run.select import host_recipe
from ..run.step import HostRunner, Step
from ..util.archives import extract_tar, sha256_file, validate_wheel, write_tar_gz, zip_archive
from ..util.errors import BuildFailure, InputError
from ..util.fsutil import publish_file
from ..util.resources import payload_env, payload_script


def bundle_name(project: Project, recipe: Recipe) -> str:
    return f"{project.distribution}-inference-{project.version}-{recipe.name}"


def make_int8_check(project: Project, out: Path, log: Path) -> None:
    """The bundle's check/ (payload/bundle_check.py), made in the build machine's reference Paddle on
    the host: the target may have no Paddle to run on the build machine, and the goldens are the
    build machine's CPU (a board's own CPU would be no independent reference)."""
    native = host_recipe()
    version = PADDLE.version(native)
    if version is None:
        raise BuildFailure(
            f"the int8 check of an inference bundle needs Paddle on the build machine ({native.name}), which has none",
            "build the inference bundle on an x86_64 or aarch64 machine",
        )
    runner = HostRunner()
    python = reference_env_for_build(runner, version, PADDLE, log)
    runner.run(
        Step(
            f"int8 check for the inference bundle (quantized LeNet and goldens, Paddle {version} on {native.name})",
            [
                str(python / "bin" / "python"),
                str(payload_script("paddle", "bundle_check")),
                *("--out", str(out), "--device", project.device_type),
            ],
            log=log,
            env={
                **payload_env(),
                "DEVKIT_TOLERANCES": json.dumps(asdict(project.config.tolerances)),
                "CUSTOM_DEVICE_ROOT": None,
            },
            fails_as=BuildFailure,
        )
    )


def make_inference_bundle(
    project: Project,
    recipe: Recipe,
    build_tree: Path,
    wheel: Path | None,
    device_bundle: Path | None,
    paddle_version: str | None,
    log: Path,
) -> Path:
    name = bundle_name(project, recipe)
    with tempfile.TemporaryDirectory(prefix="devkit-bundle-") as tmp:
        root = Path(tmp) / name
        (root / "lib").mkdir(parents=True)
        (root / "include").mkdir()
        if wheel is not None:
            make_int8_check(project, root / "check", log)
            validate_wheel(wheel, "plugin wheel")  # its member names become paths below
            with zip_archive(wheel, "plugin wheel", "rebuild it with devkit build") as zf:
                for member in zf.namelist():
                    if member.startswith("paddle_custom_device/") and member.endswith(".so"):
                        # as installed: the loader in lib/, the plugin proper in lib/<type>/
                        target = root / "lib" / Path(member).relative_to("paddle_custom_device")
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(zf.read(member))
            libs = list((build_tree / "device").glob(f"lib{project.device_type}_device.a"))
            if not libs:
                raise BuildFailure(
                    f"the build tree {build_tree} holds no device/lib{project.device_type}_device.a for the bundle",
                    "keep the device library target in device/CMakeLists.txt and rebuild with --clean",
                )
            for lib in libs:
                shutil.copy2(lib, root / "lib")
            for header in (project.root / "device" / "include").glob("*.h"):
                shutil.copy2(header, root / "include")
        if device_bundle is not None:  # no Paddle runtime: library, header and tests from the device build
            extract_tar(device_bundle, Path(tmp) / "device", "device bundle", "rebuild it with devkit build")
            device_root = next((Path(tmp) / "device").iterdir())
            for sub in ("lib", "include", "tests"):
                if (device_root / sub).is_dir():
                    shutil.copytree(device_root / sub, root / sub, dirs_exist_ok=True)
        demo = project.root / "paddle" / "inference"
        if not (demo / "demo").is_dir():
            raise InputError(
                f"{demo}/demo is missing from the project",
                "restore paddle/inference/ from a freshly rendered project (devkit new-backend)",
            )
        shutil.copytree(demo / "demo", root / "demo")
        shutil.copy2(demo / "run.sh", root / "run.sh")
        files = sorted(p for p in root.rglob("*") if p.is_file())
        manifest = {
            "name": name,
            "device_type": project.device_type,
            "plugin_version": project.version,
            "target": recipe.name,
            "triple": recipe.triple,
            "paddle_version": paddle_version,
            "devkit_version": __version__,
            "note": None
            if paddle_version
            else (
                f"PaddlePaddle publishes no runtime for {recipe.name}: this bundle carries the device library, "
                "its header and its tests, not a plugin"
            ),
            "files": {p.relative_to(root).as_posix(): sha256_file(p) for p in files},
        }
        (root / "manifest.json").write_text(json.dumps(manifest, indent=2))
        archive = Path(tmp) / f"{name}.tar.gz"
        write_tar_gz(root, archive, name)
        return publish_file(archive, project.dist_dir)
