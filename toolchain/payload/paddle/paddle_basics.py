"""The Paddle plugin checks before any op: the device type registered, a tensor on the device, and
two devices with a copy between them and training on the second."""

from __future__ import annotations

from check_common import np, paddle
from records import CheckRecord, PaddleRegistrationCheck


def check_registration(device: str) -> PaddleRegistrationCheck:
    types = paddle.device.get_all_custom_device_type() or []
    return {
        "name": "registration",
        "kind": "basics",
        "passed": device in types,
        "detail": f"custom device types: {types}",
        "custom_device_types": types,
    }


def check_tensor(device: str) -> CheckRecord:
    paddle.set_device(device)
    x_int = paddle.to_tensor([1, 2, 3], dtype="int64")
    x_float = paddle.to_tensor([0.5, -1.25, 3.0], dtype="float32")
    int_sum = (x_int + x_int).numpy()
    float_sum = (x_float + x_float).numpy()
    place = str(x_int.place)
    expected_place = f"Place({device}:0)"
    passed = (
        place == expected_place
        and str((x_int + x_int).place) == expected_place
        and int_sum.dtype == np.int64
        and int_sum.tolist() == [2, 4, 6]
        and np.array_equal(float_sum, np.array([1.0, -2.5, 6.0], dtype=np.float32))
    )
    return {
        "name": "tensor",
        "kind": "basics",
        "passed": bool(passed),
        "detail": f"place {place}; int64 x+x = {int_sum.tolist()}; float32 x+x = {float_sum.tolist()}",
    }


def check_devices(device: str) -> CheckRecord:
    """Several cards, as a real box has them: Paddle lists <type>:0 and <type>:1, a tensor goes
    :0 -> :1 -> :0 (the runtime's peer copy), and a small model trains a few SGD steps on :1,
    fed by a DataLoader, with the losses of the CPU."""
    mine = sorted(d for d in paddle.device.get_available_custom_device() or [] if d.split(":")[0] == device)
    if len(mine) < 2:
        return {
            "name": "devices",
            "kind": "basics",
            "passed": False,
            "detail": f"Paddle sees {mine}: verify runs with 2 devices",
        }
    first, second = paddle.CustomPlace(device, 0), paddle.CustomPlace(device, 1)
    x = np.arange(24, dtype="float32").reshape(4, 6)
    there = paddle.to_tensor(x, place=first)._copy_to(second, True)
    back = (there * 2)._copy_to(first, True)
    move_ok = f"{device}:1" in str(there.place) and f"{device}:0" in str(back.place) and (back.numpy() == x * 2).all()
    r = np.random.RandomState(7)
    xs, ys = r.rand(64, 5).astype("float32"), r.randint(0, 3, (64, 1)).astype("int64")
    w, b = r.rand(5, 3).astype("float32") - 0.5, np.zeros(3, "float32")
    host = paddle.CPUPlace()
    batches = paddle.io.DataLoader(
        paddle.io.TensorDataset([paddle.to_tensor(xs, place=host), paddle.to_tensor(ys, place=host)]),
        batch_size=16,
        places=host,
    )
    losses: dict[str, list[float]] = {}
    for where in (f"{device}:1", "cpu"):
        paddle.set_device(where)
        model = paddle.nn.Linear(5, 3)
        model.weight.set_value(w)
        model.bias.set_value(b)
        opt = paddle.optimizer.SGD(learning_rate=0.5, parameters=model.parameters())
        curve = []
        target = paddle.CustomPlace(device, 1) if where != "cpu" else host
        for xb, yb in batches:  # CPU batches from a DataLoader, moved to the place that trains
            loss = paddle.nn.functional.cross_entropy(model(xb._copy_to(target, True)), yb._copy_to(target, True))
            loss.backward()
            opt.step()
            opt.clear_grad()
            curve.append(float(loss.numpy()))
        losses[where] = curve
    paddle.set_device(f"{device}:0")
    train_ok = np.allclose(losses[f"{device}:1"], losses["cpu"], rtol=1e-4, atol=1e-5)
    return {
        "name": "devices",
        "kind": "basics",
        "passed": bool(move_ok and train_ok),
        "detail": f"Paddle sees {mine}; :0 -> :1 -> :0 copy {'ok' if move_ok else 'WRONG'}; 4 DataLoader batches on "
        f"{device}:1 {'match' if train_ok else 'differ from'} CPU (last loss {losses[f'{device}:1'][-1]:.4f})",
    }
