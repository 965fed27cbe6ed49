"""LeNet on MNIST on the device against torch's CPU (the verdict Paddle's check uses), the CPU
fallback report, and the list of registered kernels."""

from __future__ import annotations

import re
import time
from types import ModuleType
from typing import Any

import numpy as np
from records import (
    CheckRecord,
    CpuCurve,
    TorchFallbackCheck,
    TorchKernelsCheck,
    TorchTrainingVerdict,
    TrainingCriteria,
    TrainingRun,
)
from torch_common import FORWARD, TOL, Tensor, first_line, log
from training_verdict import Dataset, cpu_reference, failed_check, require_data, training_verdict


def lenet(torch: ModuleType) -> Any:
    nn, F = torch.nn, torch.nn.functional
    Module: Any = nn.Module  # (a class of torch's, which is Any here)

    class LeNet(Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(400, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x: Tensor) -> Tensor:
            x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
            x = torch.flatten(x, 1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    return LeNet()


def initial_state(torch: ModuleType, model: Any, seed: int) -> dict[str, Tensor]:
    """The weights Paddle's verify starts from (fan-in uniform from NumPy), in torch's layout
    (Linear weights [out, in], where Paddle's are [in, out])."""
    r = np.random.RandomState(seed)
    state = {}
    for name, p in model.state_dict().items():
        shape = list(p.shape)
        if name.endswith("weight") and len(shape) == 2:  # draw in Paddle's [in, out], then transpose
            values = r.uniform(-1 / np.sqrt(shape[1]), 1 / np.sqrt(shape[1]), shape[::-1]).T
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            values = r.uniform(-1 / np.sqrt(fan_in), 1 / np.sqrt(fan_in), shape)
        state[name] = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
    return state


def train(
    torch: ModuleType, device: str, data: Dataset | None, steps: int, batch: int, seed: int, world: int = 1
) -> TrainingRun:
    """With world > 1, in a torch.distributed job: this rank's share of every batch, the model in
    DistributedDataParallel, and the loss of the whole batch (the mean over the ranks). Without
    `data` (no --data), it fails where it needs it."""
    F, dist = torch.nn.functional, torch.distributed
    torch.manual_seed(seed)
    model = lenet(torch)
    model.load_state_dict(initial_state(torch, model, seed))
    model.to(device)
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    data = require_data(data, "mnist")
    x_train, y_train = data["x_train"], data["y_train"]
    order = np.random.RandomState(seed).permutation(len(x_train))
    share, first = batch // world, (dist.get_rank() if world > 1 else 0) * (batch // world)
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        idx = np.take(order, range(step * batch + first, step * batch + first + share), mode="wrap")
        x = torch.from_numpy(x_train[idx]).to(device)
        y = torch.from_numpy(y_train[idx].reshape(-1).astype(np.int64)).to(device)
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if world > 1:
            loss = loss.detach().clone()
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        losses.append(float(loss.item()))
        if step % 50 == 0 or step == steps - 1:
            log(f"  mnist {device} step {step}: loss {losses[-1]:.4f}")
    train_seconds = time.perf_counter() - start
    model.eval()
    correct = 0
    x_test, y_test = data["x_test"], data["y_test"]
    with torch.no_grad():
        for i in range(0, len(x_test), 256):
            logits = model(torch.from_numpy(x_test[i : i + 256]).to(device))
            label = torch.from_numpy(y_test[i : i + 256].reshape(-1).astype(np.int64)).to(device)
            correct += int((logits.argmax(dim=1) == label).sum().item())  # argmax, eq, sum on the device
    return {"losses": losses, "heldout_accuracy": correct / len(x_test), "train_seconds": train_seconds}


def fallback_counts(torch: ModuleType, device: str) -> dict[str, int]:
    return dict(getattr(torch, device).fallback_counts())


def unimplemented_kernels(torch: ModuleType, device: str) -> list[str]:
    """Patterns of the ops the plugin leaves to the CPU because its device library lacks them
    (a plugin without the query, or the host-backed device: none)."""
    query = getattr(getattr(torch, device), "unimplemented_kernels", None)
    return list(query()) if query else []


def split_by_design(fell_back: dict[str, int], patterns: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """(fallbacks of ops the device library does not implement, every other fallback)."""

    def by_design(op: str) -> bool:
        short = op.removeprefix("aten::")
        return any(re.fullmatch(p, op) or re.fullmatch(p, short) for p in patterns)

    designed = {op: n for op, n in fell_back.items() if by_design(op)}
    return designed, {op: n for op, n in fell_back.items() if op not in designed}


def cpu_curve(
    torch: ModuleType, data: Dataset | None, steps: int, batch: int, seed: int, reference: str | None
) -> CpuCurve:
    """The float32 CPU curve the device's is judged against: trained here, or read from `reference`."""
    return cpu_reference(
        lambda: train(torch, "cpu", data, steps, batch, seed),
        f"torch {torch.__version__}",
        {"steps": steps, "batch_size": batch, "seed": seed},
        reference,
    )


def check_mnist(
    torch: ModuleType, device: str, data: Dataset | None, steps: int, batch: int, seed: int, reference: str | None
) -> TorchTrainingVerdict | CheckRecord:
    try:
        getattr(torch, device).reset_fallback_counts()
        dev = train(torch, device, data, steps, batch, seed)
        fell_back = fallback_counts(torch, device)
        cpu = cpu_curve(torch, data, steps, batch, seed, reference)
    except Exception as exc:
        return failed_check("mnist", "training", first_line(exc))
    criteria: TrainingCriteria = {
        "min_loss_drop_fraction": TOL["min_loss_drop"],
        "min_heldout_accuracy": TOL["min_accuracy"],
        "max_curve_abs_diff": TOL["max_curve_diff"],
    }
    verdict = training_verdict("mnist", dev, cpu, criteria, require_data(data, "mnist"), steps, batch, seed)
    unimplemented = unimplemented_kernels(torch, device)
    designed, unexpected = split_by_design(fell_back, unimplemented)
    detail = f", CPU fallbacks: {unexpected}" if unexpected else ", no CPU fallback"
    if designed:
        detail += f" (besides the ops the device library does not implement: {designed})"
    report: TorchTrainingVerdict = {  # the verdict's keys (three replaced in place), then torch's
        **verdict,
        "passed": verdict["passed"] and not unexpected,
        "detail": verdict["detail"] + detail,
        "criteria": {**criteria, "max_fallbacks": 0, "except_unimplemented": unimplemented},
        "optimizer": "torch.optim.Adam(lr=1e-3), foreach default",
        "fallbacks": fell_back,
        "fallbacks_by_design": designed,
    }
    return report


def check_fallback_report(torch: ModuleType, device: str, data: Dataset | None, seed: int) -> TorchFallbackCheck:
    """With fallback allowed: which ops LeNet training runs on the CPU (none expected), and an op
    the adapter has no kernel for (cumsum) running through the CPU fallback, correctly."""
    module = getattr(torch, device)
    with module.strict_fallback(False):  # (the checks before it ran strict, in this process)
        module.reset_fallback_counts()
        train(torch, device, data, 5, 64, seed)
        designed, lenet_fallbacks = split_by_design(
            fallback_counts(torch, device), unimplemented_kernels(torch, device)
        )
        module.reset_fallback_counts()
        x = np.random.RandomState(3).uniform(-1, 1, (4, 6)).astype(np.float32)
        got = torch.cumsum(torch.from_numpy(x).to(device), dim=1)
        unseen = fallback_counts(torch, device)
        ok_unseen = got.device.type == device and np.allclose(got.cpu().numpy(), np.cumsum(x, axis=1), **FORWARD)
    passed = not lenet_fallbacks and ok_unseen and any("cumsum" in op for op in unseen)
    return {
        "name": "fallback report",
        "kind": "fallback",
        "passed": bool(passed),
        "detail": (
            "LeNet: "
            + (f"fell back {lenet_fallbacks}" if lenet_fallbacks else "every op on the device")
            + (f" but those the device library lacks, on the CPU by design: {designed}" if designed else "")
            + f"; an op without a kernel runs through the CPU fallback ({unseen}), "
            + ("result correct" if ok_unseen else "WRONG result")
        ),
        "lenet_fallbacks": lenet_fallbacks,
        "lenet_fallbacks_by_design": designed,
        "unseen_op_fallbacks": unseen,
    }


def check_kernels(torch: ModuleType, device: str) -> TorchKernelsCheck:
    """The aten kernels the adapter registered. The dispatcher compared each one's C++ signature with
    this torch's operator schema when the library loaded (a mismatch fails `import torch`), so a
    list here means they all fit."""
    registered = sorted(k for k in torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))
    aten = [k for k in registered if k.startswith("aten::")]
    return {
        "name": "kernel signatures",
        "kind": "kernels",
        "passed": bool(aten),
        "detail": f"{len(aten)} aten kernels registered for {device} (PrivateUse1), each signature accepted by "
        f"torch {torch.__version__}'s dispatcher at load",
        "kernels": {k: "PrivateUse1" for k in aten},
        "mismatched": [],
    }
