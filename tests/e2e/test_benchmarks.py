"""The benchmark suite's short run, so the script keeps working (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_short_benchmark_run_writes_json_and_markdown(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--short", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    results = json.loads((tmp_path / "short.json").read_text())
    assert results["short"] and "verify_x86_64" not in results  # verify end to end: the full run's figure
    # a kernel's first edit takes it out of its unity batch: the rest of the batch and the file, apart
    assert results["build_host"]["noop_compiled"] == 0 and results["build_host"]["edit_compiled"] == 2
    assert results["build_host"]["cold_compiled"] >= 4  # unity builds: two units each for kernels and device
    # a copy of the tree in another directory: every compiler run a direct hit of the cache the series filled
    elsewhere = results["build_host"]["elsewhere"]
    assert elsewhere["compiled"] > 0 and elsewhere["direct_hits"] == elsewhere["compiled"], elsewhere
    # the edit loop: the series' kernel file edited again recompiles alone, then test-ops on that wheel
    loop = results["edit_loop"]["kernels"]["edits"][-1]
    assert loop["compiled"] == 1 and loop["checked_passed"] and loop["checked_cases"] > 0
    assert loop["objects"][0].endswith("/kernels/activation_kernels.cc.o"), loop["objects"]  # not its unity batch
    torch = results["torch"]
    assert torch["noop_compiled"] == 0 and "verify_s" not in torch
    for mode in ("async", "inline"):  # the device queuing work and running it inline, each vs the CPU
        for key in ("dispatch_us", "train_step_ms"):
            assert set(results["device_vs_cpu"][mode][key]) == {"device", "cpu"}
            assert set(torch["modes"][mode][key]) == {"device", "cpu"}
        assert torch["modes"][mode]["fallbacks"] == {}
        assert results["device_vs_cpu"][mode]["amp_train_step_ms"]["device"] > 0
        assert torch["modes"][mode]["amp_train_step_ms"]["device"] > 0
        assert set(torch["modes"][mode]["empty_us"]) == {"device", "cpu"}
        # a device memory high-water mark per framework: what each allocator held from the device
        assert results["device_vs_cpu"][mode]["peak_device_memory_mb"] > 0
        assert torch["modes"][mode]["peak_device_memory_mb"] > 0
        # graph replay vs eager dispatch (host time) and the profiler's cost, measured (not judged)
        assert set(torch["modes"][mode]["graph_host_us"]) == {"eager", "replay"}
        assert set(torch["modes"][mode]["profiled_train_step_ms"]) == {"on", "off"}
    # torch.compile on the asynchronous device only (the short run leaves the inline device's out)
    assert torch["modes"]["async"]["compile_s"]["cold"] > 0 and "compile_s" not in torch["modes"]["inline"]
    # compiled vs eager in one process, its LeNet compiled from the Inductor cache the run above filled
    compiled = torch["compiled_vs_eager"]["device"]
    assert compiled["wall_ms"]["compiled"] > 0 and torch["compiled_vs_eager"]["fallbacks"] == {}
    table = (tmp_path / "short.md").read_text()
    for row in (
        "| torch LeNet training step, batch 64, Adam (stpu:0 async vs CPU) |",
        "| LeNet training step, batch 64 (stpu:0 inline vs CPU) |",
        "| one-kernel edit rebuild (host) |",
        "| `new-backend STPU` render: templates loaded compiled from devkit's cache vs compiled "
        "(median of 3, alternated) |",
        "| clean build of a copy in another directory vs in place, ccache warm (host) |",
        "| one-file edit -> rebuild (paddle/kernels/activation_kernels.cc, host): first edit, next edits |",
        "| one-file edit -> rebuild -> `test-ops --ops relu` (paddle/kernels/activation_kernels.cc, host) |",
        "| torch small tensor made and freed (stpu:0 async vs CPU) |",
        "| LeNet training step, batch 64: device memory high-water mark (stpu:0 async) |",
        "| LeNet training step, batch 64, AMP O1 float16 (stpu:0 async vs stpu:0 float32 vs CPU float32) |",
        "| torch LeNet training step, batch 64, Adam, autocast float16 (stpu:0 async vs stpu:0 float32 vs CPU float32) |",
        "| mnist int8 through the int8 engine vs float32, both on stpu (PTQ model) |",
        "| torch MLP forward, host time per step: torch.accelerator.Graph replay vs eager (stpu:0 async) |",
        "| torch LeNet training step, batch 64, Adam under torch.profiler (CPU + device) vs not profiled (stpu:0 async) |",
        "| torch LeNet training step, batch 64, Adam: model under torch.compile vs eager "
        "(stpu:0 async, alternated in one process; wall, process CPU) |",
    ):
        assert row in table
    assert results["inference"][0]["int8_engine_ms"] > 0
    assert all(results["render_templates"][kind]["render_s"] > 0 for kind in ("compiled", "kept"))
