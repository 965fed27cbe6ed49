"""The CPU curve an emulated target's training is judged against, computed natively.

Under qemu the framework's own CPU kernels are the slowest part of a verification (LeNet, 100
steps: torch's CPU ~10 minutes against ~50 s on the emulated device, Paddle's 83 s against
56 s), and the curve says nothing about the target: it is what the framework's CPU computes for
these weights, batches and optimizer. So for an emulated target it is trained on the build
machine's architecture by the runtime that machine's recipe pins (the one a native verification
uses, whose environment is cached), and the device's curve, trained on the target, must stay
within `max-curve-diff` of it as it must of an in-process CPU curve. The report names the
release and machine that trained it. (Not the target's own release: aarch64's Paddle 3.2.2 and
torch 2.9.1 are not the host's, and x86_64's torch 2.9.1 is, outside a CPU index, a 900 MB CUDA
build plus several GB of nvidia packages.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..building.frameworks import build_adapter
from ..run.select import host_recipe, verify_runner
from ..run.step import Step
from ..util.errors import VerificationFailure
from ..util.resources import payload_env, payload_script
from .kept_curves import CurveKey, curve_key, keep_curve, kept_curve
from .session import PluginSession, VerifyOptions, fresh_env, work_dir

if TYPE_CHECKING:
    from .datasets import Dataset  # (NumPy: imported by the commands that train, not by every command)
    from .report import Report


@dataclass(frozen=True)
class CpuReference:
    """The CPU curve a verification's training check is given (`argv`: its --cpu-reference), or
    none (the check trains it beside the device); and the key it is kept under once trained."""

    argv: tuple[str, ...]
    # None: not to be kept (it was given from the cache, cannot be keyed, or the run's check is not
    # a float32 training: --amp, --compile)
    key: CurveKey | None

    def keep(self, report: Report) -> None:
        """Keep the curve the verification trained."""
        if self.key is not None:
            keep_curve(self.key, report)


def cpu_reference(options: VerifyOptions, dataset: Dataset, session: PluginSession) -> CpuReference:
    """The CPU curve for this verification's training check, written beside its data: one kept
    from an earlier verification on this machine, or for an emulated target one trained natively
    now (natively_trained); otherwise none, and the check trains it on the target."""
    out = session.work / "cpu-reference.json"
    given = ("--cpu-reference", session.runner.path(out))
    native, framework = host_recipe(), options.framework
    native_version = framework.version(native)
    if native.matches(options.recipe.name) or native_version is None:
        trainer, runtime, arch = session.runner.key, session.runtime_version, options.recipe.name
    else:
        trainer, runtime, arch = "native", native_version, native.name
    key = curve_key(trainer, framework.name, runtime, arch, options.steps, dataset)
    kept = kept_curve(key) if key is not None else None
    if kept is not None:
        out.write_text(json.dumps(kept))
        with session.log.open("a") as log:
            log.write(f"[devkit] CPU reference: {kept['trained']['where']} (devkit's cache)\n")
        return CpuReference(given, None)
    kept_as = None if options.amp or options.compile else key
    if trainer == "native":
        natively_trained(options, runtime, dataset, session.log, out)
        return CpuReference(given, kept_as)
    return CpuReference((), kept_as)


def natively_trained(options: VerifyOptions, version: str, dataset: Dataset, log: Path, out: Path) -> None:
    """For an emulated target, train the reference on the host's architecture with `version`, the
    runtime its recipe pins, and write it to `out`."""
    native, framework = host_recipe(), options.framework
    links = build_adapter(framework).find_links(native, version, options.index_url)
    with work_dir() as work:
        runner = verify_runner(options.runner, native, work, [links] if links else [], log)
        python = fresh_env(runner, work, None, version, log, replace(options, recipe=native), links)
        dataset.save(work / "data.npz")
        runner.run(
            Step(
                title=f"CPU reference on {native.name} ({framework.runtime} {version}, {options.steps} mnist steps)",
                argv=[
                    python,
                    runner.path(payload_script(framework.name, f"{framework.name}_cpu_reference")),
                    *("--data", runner.path(work / "data.npz")),
                    *("--steps", str(options.steps), "--out", runner.path(work / "reference.json")),
                ],
                log=log,
                cwd=Path(runner.path(work)),
                env={**payload_env(runner.path), **options.check_env, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
                fails_as=VerificationFailure,
            )
        )
        reference = json.loads((work / "reference.json").read_text())
    out.write_text(json.dumps(reference))
