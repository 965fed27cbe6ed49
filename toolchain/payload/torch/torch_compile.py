"""torch.compile onto the device (`devkit verify --framework torch --compile`): models compiled
with the default backend (Inductor) on the device's last card and on a stream of its own.

- "compile mlp", "compile lenet": a forward and three SGD training steps compiled, vs the same
  steps eager on the device and on torch's CPU (rtol 1e-5); counts from the generated code: kernels
  Inductor compiled (each launched on the device's queue), extern kernels (the device's eager
  aten kernels: matmul, convolution) and CPU fallbacks (0); the cold compile's seconds.
- "compile ordering": eager -> compiled -> eager on one stream, nothing synchronised in between,
  while the queue is still busy with a large matmul: results as on the CPU.
- "compile shapes": a new shape recompiles once (then the graph is dynamic); dynamic=True
  compiles once for three sizes.
- "compile trace": a fresh process (Inductor's cache warm) compiles LeNet again under the op
  trace ({NAME}_DUMP_OP_ARGS=2): every compiled kernel of the generated code is in the trace, on
  the library stream of the torch stream it ran on; the cached compile's seconds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from private_dirs import private_directory
from process_exit import exit_without_final_collection
from records import CheckRecord, CompiledCode, TorchCompileCheck
from torch_common import first_line
from torch_training import fallback_counts, lenet
from training_verdict import failed_check

RTOL, ATOL = 1e-5, 1e-6
# A kernel Inductor defines in its generated Python (the name it is called or launched by)
KERNEL_DEFINITION = re.compile(r"^(\w+) = async_compile\.cpp_pybinding\(", re.M)
STEPS = 3
SEED = 7


# Where devkit keeps Inductor's probes of the CPU between verifications (verify/frameworks/torch.py).
KEPT_PROBES = "DEVKIT_INDUCTOR_PROBES"


def probe_the_cpu_in_the_kept_directory() -> None:
    """Before its first CPU kernel Inductor probes the host's vector instruction sets (AMX,
    AVX-512 VNNI, AVX-512, AVX2 on x86): a small program each, compiled and then loaded in a child
    interpreter; ten compiles, 12-18 CPU-s here, in every session's empty cache. Its binaries are
    keyed by the compiler's version, the flags and torch's version (Inductor's own fingerprint), so
    devkit keeps them in its cache: the probe runs there, Inductor's own code and verdict, and the
    session's cache stays the session's. Without the variable (or without the probe's module in
    this torch) Inductor probes where and when it always does."""
    kept = os.environ.get(KEPT_PROBES)
    if not kept:
        return
    try:
        from torch._inductor.cpu_vec_isa import valid_vec_isa_list
    except ImportError:
        return
    if not private_directory(kept):  # (devkit made it so: anything else may hold planted binaries)
        return
    session = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = kept  # (Inductor reads the variable at each use)
    try:
        valid_vec_isa_list()  # (functools.cache: the verdict for the rest of the process)
    finally:
        if session is None:
            del os.environ["TORCHINDUCTOR_CACHE_DIR"]
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = session


def mlp(torch: ModuleType) -> Any:
    nn = torch.nn
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


MODELS: dict[str, tuple[Callable[[ModuleType], Any], tuple[int, ...]]] = {
    "mlp": (mlp, (16, 64)),
    "lenet": (lenet, (8, 1, 28, 28)),
}


def last_card(torch: ModuleType, device: str) -> Any:
    return torch.device(device, getattr(torch, device).device_count() - 1)


def code_counts(code: list[str]) -> CompiledCode:
    """What the generated Python of each graph (forward, backward) runs: kernels launched on the
    device, extern kernels (aten ops the device's eager kernels compute) and kernels called
    directly (none may be: that would be the host running a kernel on device memory)."""
    text = "\n".join(code)
    launched = re.findall(r"^\s*\w+_launch\((\w+), '", text, re.M)
    defined = KERNEL_DEFINITION.findall(text)
    called = [k for k in defined if re.search(rf"^\s*{k}\(", text, re.M)]
    return {
        "compiled_kernels": len(set(defined)),
        "launches": len(launched),
        "extern_kernels": len(re.findall(r"\bextern_kernels\.\w+\(", text))
        + len(re.findall(r"torch\.ops\.aten\.", text)),
        "direct_calls": len(called),
    }


def train_steps(torch: ModuleType, model: Any, x: Any, y: Any, compiled: bool) -> dict[str, Any]:
    F = torch.nn.functional
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    run = torch.compile(model) if compiled else model

    def step() -> Any:
        opt.zero_grad()
        loss = F.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    from torch._inductor.utils import run_and_get_code

    start = time.perf_counter()
    code: list[str] = []
    if compiled:
        first, code = run_and_get_code(step)
    else:
        first = step()
    first_seconds = time.perf_counter() - start
    losses = [first] + [step() for _ in range(STEPS - 1)]
    with torch.no_grad():
        out = run(x)
    return {"losses": losses, "out": out, "params": list(model.parameters()), "code": code, "first": first_seconds}


def compare(torch: ModuleType, got: dict[str, Any], want: dict[str, Any]) -> float:
    """The largest absolute difference over losses, outputs and parameters; raises past rtol/atol."""
    worst = 0.0
    pairs = list(zip(got["losses"], want["losses"], strict=True)) + [(got["out"], want["out"])]
    pairs += list(zip(got["params"], want["params"], strict=True))
    for a, b in pairs:
        a, b = a.detach().cpu(), b.detach().cpu()
        torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL)
        worst = max(worst, float((a - b).abs().max()))
    return worst


def own_stream(torch: ModuleType, device: str, dev: Any) -> Any:
    """A new stream of `dev` that starts after the work queued so far on its current stream (the
    model's parameters copied there), as CUDA's streams need: queues are independent."""
    stream = torch.Stream(device=dev)
    stream.wait_stream(getattr(torch, device).current_stream(dev.index))
    return stream


def check_model(torch: ModuleType, device: str, name: str) -> TorchCompileCheck | CheckRecord:
    check = f"compile {name}"
    try:
        build, shape = MODELS[name]
        dev = last_card(torch, device)
        torch.manual_seed(SEED)
        base = build(torch)
        x, y = torch.randn(*shape), torch.randint(0, 10, (shape[0],))
        runs: dict[str, dict[str, Any]] = {}
        getattr(torch, device).reset_fallback_counts()
        for label, where, compiled in (("cpu", "cpu", False), ("eager", dev, False), ("compiled", dev, True)):
            model = build(torch)
            model.load_state_dict(base.state_dict())
            model.to(where)
            if where == "cpu":
                runs[label] = train_steps(torch, model, x, y, compiled)
                continue
            stream = own_stream(torch, device, dev)
            with getattr(torch, device).device(dev.index), stream:
                runs[label] = train_steps(torch, model, x.to(dev), y.to(dev), compiled)
            stream.synchronize()
        fell_back = fallback_counts(torch, device)
        vs_eager = compare(torch, runs["compiled"], runs["eager"])
        vs_cpu = compare(torch, runs["compiled"], runs["cpu"])
    except Exception as exc:
        return failed_check(check, "compile", first_line(exc))
    counts = code_counts(runs["compiled"]["code"])
    problems = []
    if not counts["compiled_kernels"] or counts["launches"] < counts["compiled_kernels"]:
        problems.append(f"{counts['compiled_kernels']} kernels compiled but {counts['launches']} launched on {device}")
    if counts["direct_calls"]:
        problems.append(f"{counts['direct_calls']} kernels called on the host")
    if fell_back:
        problems.append(f"CPU fallbacks: {fell_back}")
    result: TorchCompileCheck = {
        "name": check,
        "kind": "compile",
        "passed": not problems,
        "detail": f"{STEPS} training steps on {dev} (own stream) vs eager: max |diff| {vs_eager:.2g}, vs CPU "
        f"{vs_cpu:.2g} (rtol {RTOL:g}); {counts['compiled_kernels']} compiled kernels "
        f"({counts['launches']} launches), {counts['extern_kernels']} extern kernels, {len(fell_back)} CPU "
        f"fallbacks; cold compile {runs['compiled']['first']:.1f} s" + (f"; {'; '.join(problems)}" if problems else ""),
        "model": name,
        "max_diff_eager": vs_eager,
        "max_diff_cpu": vs_cpu,
        "compiled_kernels": counts["compiled_kernels"],
        "launches": counts["launches"],
        "extern_kernels": counts["extern_kernels"],
        "direct_calls": counts["direct_calls"],
        "fallbacks": fell_back,
        "compile_seconds": round(runs["compiled"]["first"], 2),
    }
    return result


def check_ordering(torch: ModuleType, device: str) -> CheckRecord:
    """A large matmul queued first keeps the stream busy; the compiled function's launches and the
    eager op after them must wait their turn, with nothing synchronised until the end."""
    name = "compile ordering"
    try:
        dev = last_card(torch, device)
        torch.manual_seed(SEED)
        a, b = torch.randn(384, 384), torch.randn(384, 384)

        def f(t: Any) -> Any:
            return torch.sigmoid(t * 0.01) * 2 - t.mean(dim=0)

        compiled = torch.compile(f)
        stream = torch.Stream(device=dev)
        with getattr(torch, device).device(dev.index), stream:
            compiled(torch.zeros(384, 384, device=dev))  # compile first: the timed part is only queued work
            stream.synchronize()
            start = time.perf_counter()
            big = a.to(dev) @ b.to(dev)  # eager, queued
            mid = compiled(big)  # compiled kernels, queued behind it
            out = (mid + 1).sum(dim=1)  # eager again
            queued = time.perf_counter() - start
            stream.synchronize()
        want = (f(a @ b) + 1).sum(dim=1)
        torch.testing.assert_close(out.cpu(), want, rtol=RTOL, atol=1e-4)
    except Exception as exc:
        return failed_check(name, "compile", first_line(exc))
    return {
        "name": name,
        "kind": "compile",
        "passed": True,
        "detail": f"matmul -> compiled -> sum on one stream of {dev}, queued in {queued * 1e3:.1f} ms, "
        "synchronised once: as on the CPU",
    }


def check_shapes(torch: ModuleType, device: str) -> CheckRecord:
    name = "compile shapes"
    try:
        from torch._dynamo.utils import counters

        dev = last_card(torch, device)

        def f(x: Any, y: Any) -> Any:
            return torch.relu(x * 2 + y).sum(dim=1) / 3

        def graphs() -> int:
            return int(counters["stats"]["unique_graphs"])

        def run(fn: Any, rows: int) -> None:
            x, y = torch.randn(rows, 5), torch.randn(rows, 5)
            torch.testing.assert_close(fn(x.to(dev), y.to(dev)).cpu(), f(x, y), rtol=RTOL, atol=ATOL)

        torch._dynamo.reset()
        counters.clear()
        static = torch.compile(f)
        seen = []
        for rows in (4, 4, 6, 9):
            run(static, rows)
            seen.append(graphs())
        dynamic = torch.compile(f, dynamic=True)
        before = graphs()
        for rows in (3, 7, 11):
            run(dynamic, rows)
        dynamic_graphs = graphs() - before
    except Exception as exc:
        return failed_check(name, "compile", first_line(exc))
    # 4: compiled; 4 again: cached; 6: one recompile (now dynamic); 9: no more
    passed = seen == [1, 1, 2, 2] and dynamic_graphs == 1
    return {
        "name": name,
        "kind": "compile",
        "passed": passed,
        "detail": f"graphs after rows 4, 4, 6, 9: {seen} (want [1, 1, 2, 2]); dynamic=True: {dynamic_graphs} graph "
        "for rows 3, 7, 11 (want 1); results as on the CPU",
    }


def check_trace(torch: ModuleType, device: str) -> CheckRecord:
    """LeNet compiled again in a fresh process (the cache warm), under the op trace."""
    name = "compile trace"
    prefix = device.upper()
    env = {**os.environ, f"{prefix}_DUMP_OP_ARGS": "2", f"{prefix}_STRICT_FALLBACK": "1"}
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--device", device],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        result = next((json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
        if proc.returncode != 0 or result is None:
            raise RuntimeError(f"the traced process failed ({proc.returncode}): {(proc.stderr.strip() or '?')[-400:]}")
        pattern = re.compile(rf"^\[{prefix}\] torch\.compile: (\w+) launch=compiled device=(\d+) stream=(\d+)")
        traced = [m.groups() for m in map(pattern.match, proc.stderr.splitlines()) if m]
    except Exception as exc:
        return failed_check(name, "compile", first_line(exc))
    kernels = set(result["kernels"])
    where = {(result["device"], result["stream"])}
    seen = {k for k, _, _ in traced}
    places = {(int(d), int(s)) for _, d, s in traced}
    missing = sorted(kernels - seen)
    passed = bool(kernels) and not missing and places == where
    return {
        "name": name,
        "kind": "compile",
        "passed": passed,
        "detail": f"{len(kernels)} compiled kernels, {len(traced)} launches traced on device {result['device']} "
        f"stream {result['stream']} (traced at {sorted(places)}); in a new process, the first step from "
        f"Inductor's cache in {result['seconds']:.1f} s"
        + (f"; not in the trace: {', '.join(missing)}" if missing else ""),
    }


def traced_child(device: str) -> None:
    """The fresh process of check_trace: LeNet's forward and training steps, compiled. Inductor is
    imported before the clock starts: the seconds are the compile's, from the cache."""
    import torch
    import torch._dynamo
    import torch._inductor.compile_fx  # noqa: F401

    probe_the_cpu_in_the_kept_directory()
    dev = last_card(torch, device)
    torch.manual_seed(SEED)
    model = lenet(torch).to(dev)
    x, y = torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))
    stream = own_stream(torch, device, dev)
    with getattr(torch, device).device(dev.index), stream:
        start = time.perf_counter()
        result = train_steps(torch, model, x.to(dev), y.to(dev), compiled=True)
        seconds = time.perf_counter() - start
        stream.synchronize()
    kernels = KERNEL_DEFINITION.findall("\n".join(result["code"]))
    library_stream = getattr(torch, device).library_stream_id(stream)
    line = {"kernels": kernels, "device": dev.index, "stream": library_stream, "seconds": seconds}
    print("RESULT " + json.dumps(line), flush=True)


if __name__ == "__main__":
    traced_child(sys.argv[sys.argv.index("--device") + 1])
    exit_without_final_collection(0)
