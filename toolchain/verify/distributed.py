"""`devkit verify --distributed N`: the plugin's collectives and data-parallel training in N
processes, one device each, started by the framework's own launcher in a fresh environment
(payload/torch_distributed.py, payload/paddle_distributed.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..project.frameworks import DEFAULT_MODEL
from ..project.recipes import Recipe
from ..run.select import host_recipe
from ..util.errors import InputError
from .session import PluginSession, VerifyOptions, VerifyResult, plugin_session

MAX_RANKS = 8  # the host-backed device's default count is 2; <NAME>_DEVICE_COUNT raises it up to 8


def runs_distributed(recipe: Recipe) -> bool:
    """Only natively: N processes training under emulation would take hours."""
    return host_recipe().matches(recipe.name)


def check_request(ranks: int, options: VerifyOptions) -> None:
    """What --distributed refuses, before any wheel is looked for."""
    if not 2 <= ranks <= MAX_RANKS:
        raise InputError(f"--distributed {ranks}: data parallelism needs 2 to {MAX_RANKS} ranks", "use --distributed 2")
    if not runs_distributed(options.recipe):
        raise InputError(
            f"--distributed trains {ranks} processes, which emulation of {options.recipe.name} makes too slow to "
            "finish (the collectives themselves are tested across processes by its device tests)",
            "verify --distributed on x86_64 (host or container runner)",
        )
    if options.model != DEFAULT_MODEL:
        raise InputError(f"--distributed trains LeNet on MNIST, not {options.model}", "use --model mnist")
    options.require_training_steps()


def run_distributed_verify(
    wheel: Path,
    options: VerifyOptions,
    report_dir: Path,
    ranks: int,
    payload: Path,
    rank_env: Callable[[PluginSession], dict[str, str | None]],
) -> VerifyResult:
    """The framework's `payload` (its launcher's driver) in a session, the ranks in `rank_env`. The
    request has passed check_request (run_verification checks it before finding the wheel)."""
    framework = options.framework
    from .datasets import load_dataset  # (NumPy, for the commands that train only)

    dataset = load_dataset(options.data_dir)
    with plugin_session(wheel, options, report_dir) as session:
        dataset.save(session.work / "data.npz")
        report = session.run_report(
            f"{framework.label} data parallel on {ranks} devices of {options.recipe.name} ({options.steps} steps)",
            payload,
            [
                "--data",
                session.runner.path(session.work / "data.npz"),
                "--steps",
                str(options.steps),
                "--ranks",
                str(ranks),
            ],
            "report.json",
            env=rank_env(session),
        )
    return session.finish(report)
