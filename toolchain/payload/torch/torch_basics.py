"""Registration and the tensor basics of an installed PyTorch adapter: `import torch` alone
registers the device, the version guard's message, a round trip, torch.save/load, a DataLoader."""

from __future__ import annotations

import io
from types import ModuleType

import numpy as np
import queued_work
from records import CheckRecord, TorchDevicesCheck
from torch_common import FORWARD


def check_registration(torch: ModuleType, device: str) -> CheckRecord:
    module = getattr(torch, device, None)
    name = torch._C._get_privateuse1_backend_name()
    ok = module is not None and name == device and module.is_available() and module.device_count() >= 1
    return {
        "name": "registration",
        "kind": "basics",
        "passed": bool(ok),
        "detail": (
            f"PrivateUse1 is {name!r}; torch.{device}: "
            + (f"{module.device_count()} device(s), available {module.is_available()}" if module else "missing")
            + " (loaded by `import torch` alone, through the torch.backends entry point)"
        ),
    }


def check_version_guard(torch: ModuleType, device: str) -> CheckRecord:
    """The message a user gets when the installed torch is not the one the adapter was built for:
    one RuntimeError naming the package, both torch versions and the fix (not a symbol riddle)."""
    import importlib

    adapter = importlib.import_module(f"torch_{device}")
    built = adapter._build_info.TORCH_VERSION
    try:
        adapter.check_torch_version("1.0.0")
        message = ""
    except RuntimeError as exc:
        message = str(exc)
    ok = all(s in message for s in (f"torch-{device}", built, "1.0.0", f"pip install torch=={built}"))
    return {
        "name": "version guard",
        "kind": "basics",
        "passed": ok and built == torch.__version__.split("+")[0],
        "detail": f"built for torch {built}; against torch 1.0.0 import would say: {message.splitlines()[0] if message else 'nothing'}",
    }


def check_tensor(torch: ModuleType, device: str) -> CheckRecord:
    x_int = torch.tensor([1, 2, 3], dtype=torch.int64, device=device)
    x_float = torch.tensor([0.5, -1.25, 3.0], dtype=torch.float32, device=device)
    int_sum, float_sum = (x_int + x_int), (x_float + x_float)
    ok = (
        str(int_sum.device) == f"{device}:0"
        and int_sum.dtype == torch.int64
        and int_sum.cpu().tolist() == [2, 4, 6]
        and float_sum.cpu().tolist() == [1.0, -2.5, 6.0]
    )
    return {
        "name": "tensor",
        "kind": "basics",
        "passed": bool(ok),
        "detail": f"device {int_sum.device}; int64 x+x = {int_sum.cpu().tolist()}; "
        f"float32 x+x = {float_sum.cpu().tolist()}",
    }


def check_save_load(torch: ModuleType, device: str) -> CheckRecord:
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(device)
    buffer = io.BytesIO()
    torch.save({"x": x}, buffer)
    buffer.seek(0)
    back = torch.load(buffer)["x"]
    buffer.seek(0)
    to_cpu = torch.load(buffer, map_location="cpu")["x"]
    ok = (
        back.device.type == device
        and to_cpu.device.type == "cpu"
        and torch.equal(back.cpu(), x.cpu())
        and torch.equal(to_cpu, x.cpu())
    )
    return {
        "name": "save-load",
        "kind": "basics",
        "passed": bool(ok),
        "detail": f"torch.save of a {device} tensor loads back on {back.device} and, with map_location='cpu', on "
        f"{to_cpu.device}",
    }


def check_dataloader(torch: ModuleType, device: str) -> CheckRecord:
    from torch.utils.data import DataLoader, TensorDataset

    r = np.random.RandomState(5)
    x, y = torch.from_numpy(r.rand(50, 3).astype(np.float32)), torch.from_numpy(r.randint(0, 4, 50))
    sums_device, sums_cpu = [], []
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=16):
        sums_device.append(float((xb.to(device) * 2).sum().cpu()) + int(yb.to(device).sum().cpu()))
        sums_cpu.append(float((xb * 2).sum()) + int(yb.sum()))
    ok = np.allclose(sums_device, sums_cpu, **FORWARD) and len(sums_device) == 4
    return {
        "name": "dataloader",
        "kind": "basics",
        "passed": bool(ok),
        "detail": f"{len(sums_device)} batches moved to {device} and reduced there, equal to CPU",
    }


def check_devices(torch: ModuleType, device: str) -> TorchDevicesCheck:
    """Several cards, as a real box has them: the count, the guard switching to :1 and back,
    a tensor moved :0 -> :1 -> :0 (the library's peer copy), a DataLoader feeding :1 and a
    few training steps of a small model on :1 against the CPU."""
    from torch.utils.data import DataLoader, TensorDataset

    module = getattr(torch, device)
    count = module.device_count()
    if count < 2:
        return {
            "name": "devices",
            "kind": "basics",
            "passed": False,
            "detail": f"{count} device: verify runs with 2 (<NAME>_DEVICE_COUNT)",
        }
    second = f"{device}:1"
    with module.device(1):
        inside = module.current_device()
        made = torch.ones(3)
        made = made.to(device)  # an index-less device string means the current device
    guard_ok = inside == 1 and module.current_device() == 0 and str(made.device) == second
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    there = x.to(f"{device}:0").to(second)
    back = (there.t() * 2).to(f"{device}:0")  # a strided view leaves :1 for :0
    move_ok = str(there.device) == second and str(back.device) == f"{device}:0" and torch.equal(back.cpu(), x.t() * 2)

    r = np.random.RandomState(7)
    xs, ys = torch.from_numpy(r.rand(64, 5).astype(np.float32)), torch.from_numpy(r.randint(0, 3, 64))
    losses: dict[str, list[float]] = {}
    params_on: set[str] = set()
    for where in (second, "cpu"):
        torch.manual_seed(0)
        model = torch.nn.Linear(5, 3).to(where)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        curve = []
        for xb, yb in DataLoader(TensorDataset(xs, ys), batch_size=16):
            loss = torch.nn.functional.cross_entropy(model(xb.to(where)), yb.to(where))
            opt.zero_grad()
            loss.backward()
            opt.step()
            curve.append(float(loss.item()))
        losses[where] = curve
        if where == second:
            params_on = {str(p.device) for p in model.parameters()}
    train_ok = (
        np.allclose(losses[second], losses["cpu"], **FORWARD) and len(losses["cpu"]) == 4 and params_on == {second}
    )
    return {
        "name": "devices",
        "kind": "basics",
        "passed": bool(guard_ok and move_ok and train_ok),
        "detail": f"{count} devices; guard to :1 and back {'ok' if guard_ok else 'WRONG'}; :0 -> :1 -> :0 copy "
        f"{'ok' if move_ok else 'WRONG'}; 4 DataLoader batches trained on {second} "
        f"{'match' if train_ok else 'differ from'} CPU (last loss {losses[second][-1]:.4f})",
        "devices": count,
        "params_on": sorted(params_on),
    }


def check_queued_work(torch: ModuleType, device: str) -> CheckRecord:
    a = queued_work.chain_input()
    x = torch.from_numpy(a).to(f"{device}:0")
    y = x
    for _ in range(queued_work.STEPS):
        y = y @ x + x
    chain = y.cpu().numpy()
    host = (x * 3).to("cpu", non_blocking=True)
    tripled = host.numpy().copy()  # read at once
    # A late copy (an adapter that does not wait) must land in `host`, still alive, not in
    # memory freed and reused by then: the wait comes before `host` goes.
    getattr(torch, device).synchronize()
    return queued_work.verdict(a, chain, tripled)
