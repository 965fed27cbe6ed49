"""The devkit benchmark suite: one command, results as JSON and a Markdown table.

    python benchmarks/run.py            # everything (about 25 min on 2 cores; needs an engine + qemu)
    python benchmarks/run.py --short    # host-only subset with small sizes (CI runs this to keep it working)

Measures `bash compile.sh` from nothing (three runs each with uv and with pip setting up; the full run
only), then the generated STPU backend: render time (its templates compiled vs loaded compiled);
clean (no ccache; the short run keeps it), no-op and
one-kernel-edit builds on the host and in the builder container; cross vs emulated
compile (aarch64); verify end to end (x86_64 native with the device asynchronous and
inline, aarch64 emulated, torch; the full run only); op dispatch and LeNet training step
time on stpu:0 vs the framework's CPU, with the device in both modes; MobileNetV1 and
ResNet50 inference latency device vs CPU. Ratios are taken within one run (these machines are noisy).
Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from devkit.project.config import Tolerances
from devkit.verify.modes import DeviceModes

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def devkit(*args: str, env: dict | None = None) -> tuple[float, dict]:
    """Run the CLI; return wall seconds and its --json output."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "devkit", *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"devkit {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return seconds, json.loads(proc.stdout)


def edit_one_kernel(project: Path) -> None:
    """A real change in one kernel file: the edit loop's (edit_loop.py)."""
    from edit_loop import EDITED, edit_source

    edit_source(project / EDITED["paddle"]["kernels"])


# A clean build without ccache: what a first build costs. The short run (CI's) keeps ccache, which
# the suite's other builds have filled: a compiler-bound minute or two that measures nothing new there.
def cold_env(short: bool) -> dict[str, str]:
    return {} if short else {"CCACHE_DISABLE": "1"}


def build_series(project: Path, runner: str, short: bool = False) -> dict:
    cold, first = devkit("build", str(project), "--runner", runner, "--clean", env=cold_env(short))
    noop, second = devkit("build", str(project), "--runner", runner)
    elsewhere = {"elsewhere": clean_build_elsewhere(project)} if runner == "host" else {}
    edit_one_kernel(project)
    edit, third = devkit("build", str(project), "--runner", runner)
    return {
        "cold_s": cold,
        "cold_compiled": first["compiled_files"],
        "cold_ccache": short,
        "noop_s": noop,
        "noop_compiled": second["compiled_files"],
        "edit_s": edit,
        "edit_compiled": third["compiled_files"],
        "runner": first["runner"],
        **elsewhere,
    }


def clean_build_elsewhere(project: Path) -> dict:
    """A clean build of the tree where it is, then of a copy in another directory (a second
    checkout, a CI job's), both from the compiler cache the builds above filled; with ccache's
    counters for the copy's compiler runs (a direct hit runs no preprocessor)."""
    in_place, _ = devkit("build", str(project), "--runner", "host", "--clean")
    with tempfile.TemporaryDirectory(prefix="devkit-bench-") as tmp:
        copy = Path(tmp) / "another" / "checkout" / project.name
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns("build", "dist", "reports"))
        stats = Path(tmp) / "ccache-stats.log"
        moved, built = devkit("build", str(copy), "--runner", "host", env={"CCACHE_STATSLOG": str(stats)})
        counters = stats.read_text().split() if stats.exists() else []
    return {
        "in_place_s": in_place,
        "elsewhere_s": moved,
        "compiled": built["compiled_files"],
        "direct_hits": counters.count("direct_cache_hit"),
    }


def edit_loop(project: Path, builds: dict, short: bool) -> dict:
    """Edit -> rebuild -> `test-ops --ops relu`: the full run edits a device library file and a kernels
    file twice each (edit_loop.py); the short run (CI's) edits the series' kernel file once more (its
    first edit took it out of its unity batch) and checks that wheel."""
    from edit_loop import CHECKED_OPS, EDITED, checked, edit_rebuild_check, edit_source, rebuilt

    if not short:
        return edit_rebuild_check(project)
    source = project / EDITED["paddle"]["kernels"]
    edit_source(source)
    first = {"build_s": builds["edit_s"], "compiled": builds["edit_compiled"]}
    edits = [first, {**rebuilt(project), **checked(project)}]
    return {"ops": CHECKED_OPS["paddle"], "kernels": {"file": str(EDITED["paddle"]["kernels"]), "edits": edits}}


def edit_loop_rows(loop: dict, ops: str, clean_s: float, framework: str = "") -> list[tuple[str, str, str]]:
    """Per edited file: edit -> rebuild, first edit (out of its unity batch) and the next (alone), and
    edit -> checked (rebuilt, then `test-ops`) for the edits that were checked. `framework`: the
    adapter's name for torch's rows (Paddle's rows name none, as they always have)."""
    first, last = loop["edits"][0], loop["edits"][-1]
    where = f"{framework}: {loop['file']}" if framework else loop["file"]
    rows = [
        (
            f"one-file edit -> rebuild ({where}, host): first edit, next edits",
            f"{first['build_s']:.1f} s ({first['compiled']} files), {last['build_s']:.1f} s ({last['compiled']} files)",
            f"next {ratio(last['build_s'], clean_s)} of clean",
        )
    ]
    checks = [edit for edit in loop["edits"] if "check_s" in edit]
    if checks:
        rows.append(
            (
                f"one-file edit -> rebuild -> `test-ops --ops {ops}` ({where}, host)",
                ", ".join(
                    f"{e['build_s']:.1f} s + {e['check_s']:.1f} s = {e['build_s'] + e['check_s']:.1f} s" for e in checks
                ),
                "first edit, next edits" if len(checks) > 1 else "next edit",
            )
        )
    return rows


def plugin_env(wheel: Path, paddle_version: str, root: Path) -> Path:
    """A user's environment: paddlepaddle (a clone of the reference env verify made) plus the wheel."""
    from devkit.run.envs import clone_env, reference_env
    from devkit.run.step import HostRunner

    reference = reference_env(HostRunner(), paddle_version, root / "reference-env.log")
    assert reference is not None
    python = clone_env(reference, root / "bench-venv")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)
    return Path(python)


def fresh_verify_env(wheel: Path, work: Path) -> float:
    """What verify pays for its environment with a warm cache: clone the reference env, install the wheel."""
    from devkit.run.envs import clone_env, reference_env, verify_root
    from devkit.run.step import HostRunner

    reference = reference_env(HostRunner(), "3.3.1", work / "reference-env.log")  # made once, outside the timing
    assert reference is not None
    # Where verify puts its work directories: hard links need the reference env's file system.
    verify_root().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-", dir=verify_root()) as tmp:
        start = time.perf_counter()
        python = clone_env(reference, Path(tmp) / "venv")
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
        return time.perf_counter() - start


# The reference device's two ways of running work: queued on each stream's worker behind opaque
# memory (what verify checks with), and inline at submission with host-visible memory (the
# debugging mode, and how the device ran before it had queues).
MODES = {
    "async": DeviceModes(),
    "inline": DeviceModes(asynchronous=False, opaque_memory=False),
}


def in_both_modes(
    script: str,
    python: Path,
    args: list[str],
    env: dict,
    rounds: int,
    mode_args: dict[str, list[str]] | None = None,
    inductor: Path | None = None,
) -> dict:
    """The script's figures with the device in each mode, the modes alternated `rounds` times (a
    noisy machine's drift hits both); the best run of each. `mode_args`: arguments for one
    mode's runs alone. `inductor`: Inductor's cache for every run (else a fresh one per run)."""
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode, modes in MODES.items():
            with tempfile.TemporaryDirectory(prefix="inductor-") as fresh:  # torch.compile starts cold
                out = subprocess.run(
                    [str(python), str(HERE / script), "stpu", *args, *(mode_args or {}).get(mode, [])],
                    capture_output=True,
                    text=True,
                    env={**env, **modes.env("stpu"), "TORCHINDUCTOR_CACHE_DIR": str(inductor or fresh)},
                    timeout=1800,
                )
            if out.returncode != 0:
                raise SystemExit(f"{script} ({mode}) failed:\n{out.stderr[-3000:]}")
            runs[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {mode: best(results) for mode, results in runs.items()}


def best(results: list[dict]) -> dict:
    """Per figure, the run whose device time was lowest (each keeps its own CPU time: ratios are in-run)."""
    merged = dict(results[0])
    for key in ("dispatch_us", "train_step_ms"):
        merged[key] = min((r[key] for r in results), key=lambda figure: figure["device"])
    return merged


def device_vs_cpu(python: Path, short: bool) -> dict:
    args = ["--ops", "1000", "--steps", "5"] if short else ["--ops", "5000", "--steps", "30"]
    env = {k: v for k, v in os.environ.items() if k != "CUSTOM_DEVICE_ROOT"}
    env["DEVKIT_TOLERANCES"] = json.dumps(asdict(Tolerances()))  # plugin_checks takes them from devkit
    return in_both_modes("device_vs_cpu.py", python, args, env, rounds=1 if short else 2)


def torch_series(project: Path, short: bool) -> dict:
    """The PyTorch adapter: cold and no-op builds, dispatch / LeNet step vs torch's CPU, and (full
    run) verify end to end."""
    from devkit.project.frameworks import TORCH
    from devkit.run.envs import clone_env, reference_env
    from devkit.run.step import HostRunner

    build = ["build", str(project), "--framework", "torch", "--runner", "host"]
    cold, first = devkit(*build, "--clean", env=cold_env(short))
    noop, second = devkit(*build)
    version = first["torch_version"]
    reference = reference_env(HostRunner(), version, project.parent / "torch-reference-env.log", TORCH)
    assert reference is not None
    python = clone_env(reference, project.parent / "torch-bench-venv")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", first["wheel"]], check=True)
    args = ["--ops", "1000", "--steps", "5"] if short else ["--ops", "5000", "--steps", "30"]
    env = {**os.environ, "DEVKIT_TOLERANCES": json.dumps(asdict(Tolerances()))}  # torch_checks takes them from devkit
    # The short run (CI's): one Inductor cache, which the asynchronous device's run compiles into
    # cold (its compile_s) and compiled_vs_eager's LeNet, the same graphs, compiles from: that
    # script times the steps after its compile, not the compile (a second cold compile saved: 21 s).
    inductor = project.parent / "inductor-cache" if short else None
    series = {
        "torch": version,
        "cold_s": cold,
        "cold_compiled": first["compiled_files"],
        "cold_ccache": short,
        "noop_s": noop,
        "noop_compiled": second["compiled_files"],
        # The short run (CI's) compiles with Inductor on the asynchronous device only: the inline
        # device's compile is the same code generation (10 s cold in the 2026-11-27 short run).
        "modes": in_both_modes(
            "torch_vs_cpu.py",
            Path(python),
            args,
            env,
            rounds=1 if short else 2,
            mode_args={"inline": ["--no-compile"]} if short else None,
            inductor=inductor,
        ),
        "allreduce": allreduce_bandwidth(Path(python), first["wheel"], short),
        "compiled_vs_eager": compiled_vs_eager(Path(python), env, short, inductor),
    }
    if not short:
        from edit_loop import edit_rebuild_check

        series["edit_loop"] = edit_rebuild_check(project, "torch")  # a device file and an adapter file
        verify_s, verified = devkit("verify", str(project), "--framework", "torch", "--runner", "host")
        series.update(verify_s=verify_s, verify_passed=verified["passed"])
    return series


def compiled_vs_eager(python: Path, env: dict, short: bool, inductor: Path | None = None) -> dict:
    """The LeNet step with the model under torch.compile vs eager on stpu:0, alternated in one
    process (compiled_vs_eager.py), Inductor's cache `inductor` (else a fresh one)."""
    args = ["--steps", "5", "--rounds", "3"] if short else ["--steps", "20", "--rounds", "9"]
    with tempfile.TemporaryDirectory(prefix="inductor-") as fresh:
        out = subprocess.run(
            [str(python), str(HERE / "compiled_vs_eager.py"), "stpu", *args],
            check=True,
            capture_output=True,
            text=True,
            env={**env, "TORCHINDUCTOR_CACHE_DIR": str(inductor or fresh)},
            timeout=1800,
        ).stdout
    return json.loads(out.strip().splitlines()[-1])


def allreduce_bandwidth(python: Path, wheel: str, short: bool) -> dict:
    """2 ranks under torchrun: all-reduce on the device's c10d backend vs gloo (allreduce_bandwidth.py)."""
    device = Path(wheel).name.split("-")[0].removeprefix("torch_")
    argv = [str(python), "-m", "torch.distributed.run", "--nproc-per-node", "2", str(HERE / "allreduce_bandwidth.py")]
    argv += [device, "--mb", "1" if short else "1,64", "--repeats", "3" if short else "5"]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=1200).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("{")))


def render_templates(work: Path, rounds: int) -> dict:
    """`new-backend STPU` with its templates compiled (a devkit cache of its own, empty) and then
    loaded compiled from that cache, alternated `rounds` times; the medians."""
    compiled: list[tuple[float, float]] = []
    kept: list[tuple[float, float]] = []
    for round_ in range(rounds):
        cache = Path(tempfile.mkdtemp(prefix="render-cache-", dir=work))
        for name, series in (("compiled", compiled), ("kept", kept)):
            out = work / f"render-{name}-{round_}" / "STPU"
            seconds, rendered = devkit("new-backend", "STPU", "--out", str(out), env={"DEVKIT_CACHE_DIR": str(cache)})
            series.append((seconds, rendered["seconds"]))
            shutil.rmtree(out.parent)
        shutil.rmtree(cache)
    return {
        name: {"cli_s": statistics.median(c for c, _ in series), "render_s": statistics.median(r for _, r in series)}
        for name, series in (("compiled", compiled), ("kept", kept))
    } | {"rounds": rounds}


def run(short: bool, work: Path) -> dict:
    results: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "short": short,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform(terse=True)}",
    }
    if not short:
        from first_contact import measure as first_contact

        results["first_contact"] = first_contact(3, ["auto", "pip"])
        print(f"compile.sh from nothing: {results['first_contact']}", flush=True)
    project = work / "STPU"
    seconds, rendered = devkit("new-backend", "STPU", "--out", str(project))
    results["render"] = {"cli_s": seconds, "render_s": rendered["seconds"], "files": len(rendered["files"])}
    print(f"render: {rendered['seconds'] * 1000:.0f} ms", flush=True)
    results["render_templates"] = render_templates(work, rounds=3)
    print(f"render, templates compiled vs kept: {results['render_templates']}", flush=True)

    results["build_host"] = build_series(project, "host", short)
    print(f"host builds: {results['build_host']}", flush=True)
    results["edit_loop"] = edit_loop(project, results["build_host"], short)
    print(f"edit loop: {results['edit_loop']}", flush=True)
    wheel = next((project / "dist").glob("*_x86_64.whl"))
    if not short:
        container_project = work / "STPU-container"
        devkit("new-backend", "STPU", "--out", str(container_project))
        results["build_container"] = build_series(container_project, "docker")
        print(f"container builds: {results['build_container']}", flush=True)
        from cross_vs_emulated import measure

        results["cross_vs_emulated"] = measure()
        print(f"cross vs emulated: {results['cross_vs_emulated']}", flush=True)

    # Verify end to end: the full run's figure (the test suite runs verify itself everywhere).
    if not short:
        seconds, verified = devkit("verify", str(project), "--runner", "host")
        inline_s, inline_verified = devkit("verify", str(project), "--runner", "host", "--modes", "sync,host-visible")
        results["verify_x86_64"] = {
            "s": seconds,
            "passed": verified["passed"],
            "inline_s": inline_s,
            "inline_passed": inline_verified["passed"],
        }
        print(f"verify x86_64: {seconds:.0f} s (inline device: {inline_s:.0f} s)", flush=True)
        devkit("build", str(project), "--arch", "aarch64")
        seconds, verified = devkit("verify", str(project), "--arch", "aarch64")
        results["verify_aarch64_emulated"] = {"s": seconds, "passed": verified["passed"]}
        print(f"verify aarch64 (emulated): {seconds:.0f} s", flush=True)

    results["fresh_env_s"] = fresh_verify_env(wheel, work)
    print(f"fresh verify env: {results['fresh_env_s']:.2f} s", flush=True)
    python = plugin_env(wheel, "3.3.1", work)
    results["device_vs_cpu"] = device_vs_cpu(python, short)
    print(f"device vs cpu: {results['device_vs_cpu']}", flush=True)
    results["torch"] = torch_series(project, short)
    print(f"torch adapter: {results['torch']}", flush=True)
    if not short:
        from kept_curves import measure as kept_curves

        results["kept_curves"] = kept_curves(project, ["paddle", "torch"], rounds=3)
        print(f"verify, CPU curve kept vs trained: {results['kept_curves']}", flush=True)
    devkit("build", str(project), "--runner", "host", "--infer")
    results["inference"] = []
    for model in ("mnist",) if short else ("mobilenet_v1", "resnet50"):
        _, inferred = devkit(
            "verify",
            str(project),
            "--runner",
            "host",
            "--infer",
            "--quant",  # the float program (level 0), and the int8 engine's (level 2), in one run
            "int8",
            "--model",
            model,
            "--warmup",
            "2" if short else "5",
            "--repeats",
            "5" if short else "20",
        )
        report = json.loads(Path(inferred["report"]).read_text())
        check = next(c for c in report["checks"] if "latency_ms" in c)
        latency = check["latency_ms"]
        results["inference"].append(
            {
                "model": model,
                "device_ms": latency[next(k for k in latency if k != "cpu")]["avg_ms"],
                "cpu_ms": latency["cpu"]["avg_ms"],
                "int8_engine_ms": check["quant"]["levels"]["2"]["latency_ms"]["avg_ms"],
            }
        )
        print(f"inference {model}: {results['inference'][-1]}", flush=True)
    return results


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def mode_rows(figures: dict, prefix: str, step: str) -> list[tuple[str, str, str]]:
    """Dispatch and training step vs the CPU, for the async and the inline device."""
    rows = []
    for mode, d in figures.items():
        rows += [
            (
                f"{prefix}op dispatch, tiny `x + y` (stpu:0 {mode} vs CPU)",
                f"{d['dispatch_us']['device']:.1f} µs vs {d['dispatch_us']['cpu']:.1f} µs",
                ratio(d["dispatch_us"]["device"], d["dispatch_us"]["cpu"]),
            ),
            (
                f"{step} (stpu:0 {mode} vs CPU)",
                f"{d['train_step_ms']['device']:.1f} ms vs {d['train_step_ms']['cpu']:.1f} ms",
                ratio(d["train_step_ms"]["device"], d["train_step_ms"]["cpu"]),
            ),
        ]
        if "amp_train_step_ms" in d:
            amp, fp32 = d["amp_train_step_ms"]["device"], d["train_step_ms"]
            rows.append(
                (
                    f"{step}, {'autocast' if prefix else 'AMP O1'} float16 (stpu:0 {mode} vs stpu:0 float32 vs CPU float32)",
                    f"{amp:.1f} ms vs {fp32['device']:.1f} ms vs {fp32['cpu']:.1f} ms",
                    f"{ratio(amp, fp32['device'])} of float32; {ratio(amp, fp32['cpu'])} of CPU",
                )
            )
        if "compiled_train_step_ms" in d:
            compiled, eager = d["compiled_train_step_ms"]["device"], d["train_step_ms"]["device"]
            rows.append(
                (
                    f"{step}, torch.compile (stpu:0 {mode}, compiled vs eager)",
                    f"{compiled:.1f} ms vs {eager:.1f} ms",
                    ratio(compiled, eager),
                )
            )
            rows.append(
                (
                    f"{step}: torch.compile's first call, cold vs from Inductor's cache (stpu:0 {mode})",
                    f"{d['compile_s']['cold']:.1f} s vs {d['compile_s']['cached']:.1f} s",
                    "",
                )
            )
        if "graph_host_us" in d:
            g = d["graph_host_us"]
            rows.append(
                (
                    f"{prefix}MLP forward, host time per step: torch.accelerator.Graph replay vs eager (stpu:0 {mode})",
                    f"{g['replay']:.1f} µs vs {g['eager']:.1f} µs",
                    ratio(g["replay"], g["eager"]),
                )
            )
        if "profiled_train_step_ms" in d:
            prof = d["profiled_train_step_ms"]
            rows.append(
                (
                    f"{step} under torch.profiler (CPU + device) vs not profiled (stpu:0 {mode})",
                    f"{prof['on']:.1f} ms vs {prof['off']:.1f} ms",
                    ratio(prof["on"], prof["off"]),
                )
            )
        if "empty_us" in d:
            rows.append(
                (
                    f"{prefix}small tensor made and freed (stpu:0 {mode} vs CPU)",
                    f"{d['empty_us']['device']:.1f} µs vs {d['empty_us']['cpu']:.1f} µs",
                    ratio(d["empty_us"]["device"], d["empty_us"]["cpu"]),
                )
            )
        if "peak_device_memory_mb" in d:
            rows.append(
                (f"{step}: device memory high-water mark (stpu:0 {mode})", f"{d['peak_device_memory_mb']:.1f} MiB", "")
            )
    return rows


def first_contact_rows(series: dict) -> list[tuple[str, str, str]]:
    """compile.sh from nothing, the median of its runs per installer, against pip's (the set-up before uv)."""
    rows = []
    for installer, figures in series.items():
        m = figures["median"]
        rows.append(
            (
                f"`bash compile.sh` from nothing, set up with {'uv where allowed' if installer == 'auto' else installer} "
                f"(median of {len(figures['runs'])}; set-up, build, verify)",
                f"{m['total_s']:.1f} s ({m['setup_s']:.1f} + {m['build_s']:.1f} + {m['verify_s']:.1f} s)",
                ratio(m["total_s"], series["pip"]["median"]["total_s"]) + " of pip's" if "pip" in series else "",
            )
        )
    return rows


def markdown(r: dict) -> str:
    rows = first_contact_rows(r["first_contact"]) if "first_contact" in r else []
    rows += [
        (
            "`new-backend STPU` render",
            f"{r['render']['render_s'] * 1000:.0f} ms ({r['render']['files']} files; CLI {r['render']['cli_s']:.2f} s)",
            "",
        )
    ]
    if "render_templates" in r:
        compiled, kept = r["render_templates"]["compiled"], r["render_templates"]["kept"]
        rows.append(
            (
                "`new-backend STPU` render: templates loaded compiled from devkit's cache vs compiled "
                f"(median of {r['render_templates']['rounds']}, alternated)",
                f"{kept['render_s'] * 1000:.0f} ms vs {compiled['render_s'] * 1000:.0f} ms "
                f"(CLI {kept['cli_s']:.2f} s vs {compiled['cli_s']:.2f} s)",
                f"{ratio(kept['render_s'], compiled['render_s'])} (CLI {ratio(kept['cli_s'], compiled['cli_s'])})",
            )
        )
    for key, where in (("build_host", "host"), ("build_container", "container")):
        if key in r:
            b = r[key]
            rows += [
                (
                    f"clean build, {'ccache on (short run)' if b.get('cold_ccache') else 'no ccache'} ({where})",
                    f"{b['cold_s']:.1f} s ({b['cold_compiled']} files)",
                    f"{b['cold_s'] / max(b['cold_compiled'], 1):.2f} s per file",
                ),
                (
                    f"no-op rebuild ({where})",
                    f"{b['noop_s']:.1f} s ({b['noop_compiled']} files)",
                    f"{ratio(b['noop_s'], b['cold_s'])} of cold",
                ),
                (
                    f"one-kernel edit rebuild ({where})",
                    f"{b['edit_s']:.1f} s ({b['edit_compiled']} file)",
                    f"{ratio(b['edit_s'], b['cold_s'])} of cold",
                ),
            ]
            if "elsewhere" in b:
                e = b["elsewhere"]
                rows.append(
                    (
                        f"clean build of a copy in another directory vs in place, ccache warm ({where})",
                        f"{e['elsewhere_s']:.1f} s vs {e['in_place_s']:.1f} s "
                        f"({e['direct_hits']} of {e['compiled']} compiler runs direct hits)",
                        f"{ratio(e['elsewhere_s'], e['in_place_s'])} of in place",
                    )
                )
    for where, loop in r.get("edit_loop", {}).items():
        if where != "ops":
            rows += edit_loop_rows(loop, r["edit_loop"]["ops"], r["build_host"]["cold_s"])
    if "cross_vs_emulated" in r:
        c = r["cross_vs_emulated"]
        rows.append(
            (
                f"aarch64 compile, cross vs under qemu ({len(c['sources'])} sources)",
                f"{c['cross_seconds']:.1f} s vs {c['emulated_seconds']:.1f} s",
                f"emulated {c['emulated_over_cross']:.1f}x slower",
            )
        )
    if "verify_x86_64" in r:
        v = r["verify_x86_64"]
        rows.append(
            (
                "verify end to end, x86_64 native: async device vs inline",
                f"{v['s']:.0f} s vs {v['inline_s']:.0f} s",
                ratio(v["s"], v["inline_s"]),
            )
        )
    rows.append(("a fresh verify environment (clone + wheel), warm cache", f"{r['fresh_env_s']:.2f} s", ""))
    if "kept_curves" in r:
        k = r["kept_curves"]
        for framework in ("paddle", "torch"):
            if framework not in k:
                continue
            kept, trained = k[framework]["kept"], k[framework]["trained"]
            rows.append(
                (
                    f"verify end to end, x86_64 host, {framework}: CPU curve given from devkit's cache vs trained "
                    f"(median of {k['rounds']}, alternated)",
                    f"{kept['verify_s']:.1f} s vs {trained['verify_s']:.1f} s "
                    f"(CPU {kept['verify_cpu_s']:.1f} s vs {trained['verify_cpu_s']:.1f} s; "
                    f"mnist check {kept['mnist_check_s']:.1f} s vs {trained['mnist_check_s']:.1f} s)",
                    f"{ratio(kept['verify_s'], trained['verify_s'])} "
                    f"(CPU {ratio(kept['verify_cpu_s'], trained['verify_cpu_s'])})",
                )
            )
    if "verify_aarch64_emulated" in r:
        rows.append(
            (
                "verify end to end, aarch64 under qemu",
                f"{r['verify_aarch64_emulated']['s']:.0f} s",
                ratio(r["verify_aarch64_emulated"]["s"], r["verify_x86_64"]["s"]) + " of native",
            )
        )
    rows += mode_rows(r["device_vs_cpu"], "", "LeNet training step, batch 64")
    if "torch" in r:
        t = r["torch"]
        rows += [
            (
                f"torch adapter clean build, {'ccache on (short run)' if t.get('cold_ccache') else 'no ccache'} "
                f"(host, torch {t['torch']})",
                f"{t['cold_s']:.1f} s ({t['cold_compiled']} files)",
                f"{t['cold_s'] / max(t['cold_compiled'], 1):.2f} s per file",
            ),
            (
                "torch adapter no-op rebuild (host)",
                f"{t['noop_s']:.1f} s ({t['noop_compiled']} files)",
                f"{ratio(t['noop_s'], t['cold_s'])} of cold",
            ),
        ]
        for where, loop in t.get("edit_loop", {}).items():
            if where != "ops":
                rows += edit_loop_rows(loop, t["edit_loop"]["ops"], t["cold_s"], "torch")
        if "verify_s" in t:
            rows.append(("verify --framework torch end to end, x86_64 native", f"{t['verify_s']:.0f} s", ""))
        rows += mode_rows(t["modes"], "torch ", "torch LeNet training step, batch 64, Adam")
        if "compiled_vs_eager" in t:
            c = t["compiled_vs_eager"]["device"]
            rows.append(
                (
                    "torch LeNet training step, batch 64, Adam: model under torch.compile vs eager "
                    "(stpu:0 async, alternated in one process; wall, process CPU)",
                    f"{c['wall_ms']['compiled']:.1f} ms vs {c['wall_ms']['eager']:.1f} ms; "
                    f"{c['cpu_ms']['compiled']:.1f} vs {c['cpu_ms']['eager']:.1f} CPU-ms",
                    f"{ratio(c['wall_ms']['compiled'], c['wall_ms']['eager'])}; "
                    f"{ratio(c['cpu_ms']['compiled'], c['cpu_ms']['eager'])} CPU",
                )
            )
        for size in t.get("allreduce", {}).get("sizes", []):
            rows.append(
                (
                    f"all-reduce {size['mib']} MiB float32, 2 ranks (stpuccl vs gloo)",
                    f"{size['device_bytes_per_s'] / 1e9:.2f} GB/s vs {size['gloo_bytes_per_s'] / 1e9:.2f} GB/s",
                    ratio(size["device_bytes_per_s"], size["gloo_bytes_per_s"]),
                )
            )
    for i in r["inference"]:
        rows.append(
            (
                f"{i['model']} inference latency (stpu vs CPU)",
                f"{i['device_ms']:.1f} ms vs {i['cpu_ms']:.1f} ms",
                ratio(i["device_ms"], i["cpu_ms"]),
            )
        )
        rows.append(
            (
                f"{i['model']} int8 through the int8 engine vs float32, both on stpu (PTQ model)",
                f"{i['int8_engine_ms']:.1f} ms vs {i['device_ms']:.1f} ms",
                ratio(i["int8_engine_ms"], i["device_ms"]),
            )
        )
    lines = [
        f"Measured {r['date']} on {r['machine']}" + (" (short run)" if r["short"] else "") + ":",
        "",
        "| what | figure | ratio |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="host-only subset with small sizes")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="devkit-bench-") as tmp:
        results = run(args.short, Path(tmp))
    args.out.mkdir(parents=True, exist_ok=True)
    name = "short" if args.short else "full"
    (args.out / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / f"{name}.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
