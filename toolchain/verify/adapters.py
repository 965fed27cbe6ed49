"""What verification does differently per framework, declared once per framework and chosen by
the framework's name (as building/adapters.py does for the build): the training verification,
the --distributed payload and its ranks' environment, test-ops' op checks and check-kernels.
`verify`, `test-ops`, `check-kernels` and the matrix run the same steps for every framework."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..project.frameworks import Framework
from ..util.resources import PAYLOAD_DIR
from . import paddle_verify, torch_verify
from .ops import OpsRequest, OpsResult
from .session import KernelCheck, PluginSession, VerifyOptions, VerifyResult


@dataclass(frozen=True)
class VerifyAdapter:
    # (wheel, options, report dir): the checks and a model trained on the device vs the CPU
    train: Callable[[Path, VerifyOptions, Path], VerifyResult]
    # --distributed: the payload the framework's launcher starts once per rank
    distributed_payload: Path
    # (options, wheel): what the checks of this wheel run with (a bare torch wheel names its device)
    for_wheel: Callable[[VerifyOptions, Path], VerifyOptions]
    # the ranks' environment (CPU fallback allowed: data parallelism is what they check)
    rank_env: Callable[[VerifyOptions, PluginSession], dict[str, str | None]]
    # test-ops: the framework's op checks, and the mode the report names them by
    test_ops: Callable[[OpsRequest], tuple[OpsResult, str]]
    # check-kernels (wheel, options, report dir)
    check_kernels: Callable[[Path, VerifyOptions, Path], KernelCheck]


PADDLE_VERIFY = VerifyAdapter(
    train=paddle_verify.run_verify,
    distributed_payload=PAYLOAD_DIR / "paddle" / "paddle_distributed.py",
    for_wheel=lambda options, wheel: options,
    rank_env=lambda options, session: options.check_env,
    test_ops=paddle_verify.test_ops,
    check_kernels=paddle_verify.check_kernels,
)

TORCH_VERIFY = VerifyAdapter(
    train=torch_verify.run_torch_verify,
    distributed_payload=PAYLOAD_DIR / "torch" / "torch_distributed.py",
    for_wheel=torch_verify.with_device,
    rank_env=lambda options, session: torch_verify.torch_env(options, session, strict=False),
    test_ops=torch_verify.test_ops,
    check_kernels=torch_verify.check_kernels,
)

VERIFY_ADAPTERS: dict[str, VerifyAdapter] = {"paddle": PADDLE_VERIFY, "torch": TORCH_VERIFY}


def verify_adapter(framework: Framework) -> VerifyAdapter:
    return VERIFY_ADAPTERS[framework.name]
