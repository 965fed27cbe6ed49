"""Cross-compiling vs compiling under qemu emulation: the same sources, same flags.

Compiles a rendered STPU backend's device library (device.cc and the op files
behind the two kernel files), the Paddle runtime's profiler and two kernel files
for aarch64 (a) with the cross g++ in the x86_64 builder image and (b) with the
native g++ in an emulated arm64 container, timing only the compiles, in one run.

    python benchmarks/cross_vs_emulated.py [--out results.json]

Needs a Docker Engine, qemu binfmt handlers, and the aarch64 Paddle headers in
devkit's cache (any `devkit build --arch aarch64` puts them there).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from devkit.project.naming import parse_backend_name
from devkit.project.recipes import find_recipe
from devkit.run.container import ContainerRunner, Mount
from devkit.run.engine import Engine, tar_context
from devkit.run.envs import cache_root
from devkit.run.images import base_tag, builder_spec, ensure_image
from devkit.run.step import Step
from devkit.scaffold.render import render_backend

SOURCES = [
    "device/src/elementwise_ops.cc",
    "device/src/matmul_ops.cc",
    "device/src/device.cc",
    "paddle/runtime/profiler.cc",  # (runtime.cc includes headers its CMake build generates)
    "paddle/kernels/elementwise_kernels.cc",
    "paddle/kernels/matmul_kernels.cc",
]
FLAGS = [
    "-std=c++17",
    "-O3",
    "-fPIC",
    "-DPADDLE_WITH_CUSTOM_DEVICE",
    "-DPADDLE_WITH_CUSTOM_KERNEL",
    "-D_GLIBCXX_USE_CXX11_ABI=1",
    "-Idevice/include",
    "-Idevice/core",
    "-Ipaddle/kernels",
    "-isystem",
    "/paddle/include",
]
# Timed inside the container, so container start-up is not counted.
TIMER = (
    "import subprocess, sys, time, json; t = time.perf_counter(); "
    "[subprocess.run(sys.argv[2:] + [s, '-c', '-o', '/tmp/x.o'], check=True) for s in sys.argv[1].split(',')]; "
    "print('SECONDS', time.perf_counter() - t)"
)


def emulated_gcc_image(engine: Engine, log: Path) -> str:
    recipe = find_recipe("aarch64")
    ensure_image(engine, builder_spec(), log)  # bootstraps bases as needed
    tag = "devkit-bench-gcc-arm64:1"
    if engine.image(tag) is None:
        dockerfile = (
            f"FROM {base_tag(recipe)}\nRUN apt-get update && apt-get install -y --no-install-recommends "
            "g++ python3 && rm -rf /var/lib/apt/lists/*\n"
        ).encode()
        engine.build_image(
            tar_context({"Dockerfile": dockerfile}),
            tag=tag,
            platform=recipe.oci_platform,
            buildargs={},
            labels={"org.devkit.image": "bench"},
            log=log,
        )
    return tag


def timed_compile(runner: ContainerRunner, compiler: str, log: Path) -> float:
    out = runner.run(
        Step(
            title=f"compile with {compiler}",
            argv=["python3", "-c", TIMER, ",".join(SOURCES), compiler, *FLAGS],
            log=log,
            cwd=Path("/src"),
        )
    )
    return float(out.strip().splitlines()[-1].split()[1])


def measure() -> dict:
    paddle = next((cache_root() / "container" / "paddle").glob("3.2.2-manylinux2014_aarch64/paddle"), None)
    if paddle is None:
        raise SystemExit("no aarch64 Paddle headers cached: run `devkit build --arch aarch64` on any project first")
    engine = Engine.connect()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "STPU"
        render_backend(parse_backend_name("STPU"), project)
        log = Path(tmp) / "bench.log"
        mounts = [Mount(project, "/src"), Mount(paddle, "/paddle")]
        builder = ContainerRunner(engine, ensure_image(engine, builder_spec(), log), "linux/amd64", mounts)
        emulated = ContainerRunner(engine, emulated_gcc_image(engine, log), "linux/arm64", mounts)
        start = time.monotonic()
        cross_s = timed_compile(builder, "aarch64-linux-gnu-g++", log)
        emulated_s = timed_compile(emulated, "g++", log)
    return {
        "date": time.strftime("%Y-%m-%d"),
        "sources": SOURCES,
        "cross_seconds": round(cross_s, 2),
        "emulated_seconds": round(emulated_s, 2),
        "emulated_over_cross": round(emulated_s / cross_s, 2),
        "wall_seconds": round(time.monotonic() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cross_vs_emulated.json"))
    args = parser.parse_args()
    result = measure()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
