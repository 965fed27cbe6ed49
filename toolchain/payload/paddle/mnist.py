"""The MNIST check: LeNet trained on the device and on CPU from the same weights and batches."""

from __future__ import annotations

import time

from check_common import MNIST_CRITERIA, F, Tensor, _first_line, log, nn, np, paddle
from op_helpers import rng
from records import CheckRecord, TrainingRun, TrainingVerdict
from training_verdict import Dataset, cpu_reference, failed_check, require_data, training_verdict


class LeNet(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2D(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2D(6, 16, 5)
        self.pool = nn.MaxPool2D(2, 2)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: Tensor) -> Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = paddle.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def initial_state(model: nn.Layer, seed: int) -> dict[str, np.ndarray]:
    """Identical initial weights for both places (fan-in uniform), from NumPy."""
    r = rng(seed)
    state = {}
    for name, p in model.state_dict().items():
        shape = list(p.shape)
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        bound = 1.0 / np.sqrt(fan_in)
        if name.endswith("weight") and len(shape) == 2:  # paddle Linear weight is [in, out]
            bound = 1.0 / np.sqrt(shape[0])
        state[name] = r.uniform(-bound, bound, shape).astype(np.float32)
    return state


def train(place: str, data: Dataset | None, steps: int, batch: int, seed: int, world: int = 1) -> TrainingRun:
    """With world > 1, in a paddle.distributed job: this rank's share of every batch, the model
    in paddle.DataParallel, and the loss of the whole batch (the mean over the ranks). Without
    `data` (no --data), it fails where it needs it."""
    import paddle.distributed as dist

    paddle.set_device(place)
    model = LeNet()
    model.set_state_dict({k: paddle.to_tensor(v) for k, v in initial_state(model, seed).items()})
    net = paddle.DataParallel(model) if world > 1 else model
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    data = require_data(data, "mnist")
    x_train, y_train = data["x_train"], data["y_train"]
    order = rng(seed).permutation(len(x_train))
    share, first = batch // world, (dist.get_rank() if world > 1 else 0) * (batch // world)
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        idx = np.take(order, range(step * batch + first, step * batch + first + share), mode="wrap")
        x = paddle.to_tensor(x_train[idx])
        y = paddle.to_tensor(y_train[idx])
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        if world > 1:
            loss = loss.detach().clone()
            dist.all_reduce(loss)
        losses.append(float(loss) / world)
        if step % 50 == 0 or step == steps - 1:
            log(f"  mnist {place} step {step}: loss {losses[-1]:.4f}")
    train_seconds = time.perf_counter() - start
    model.eval()
    correct: float = 0
    x_test, y_test = data["x_test"], data["y_test"]
    with paddle.no_grad():
        for i in range(0, len(x_test), 256):
            logits = model(paddle.to_tensor(x_test[i : i + 256]))
            label = paddle.to_tensor(y_test[i : i + 256])
            acc = paddle.metric.accuracy(logits, label)  # topk + accuracy kernels on the place
            correct += float(acc) * len(label)
    return {
        "losses": losses,
        "heldout_accuracy": correct / len(x_test),
        "train_seconds": train_seconds,
    }


def check_mnist(
    device: str, data: Dataset | None, steps: int, batch: int, seed: int, reference: str | None = None
) -> TrainingVerdict | CheckRecord:
    """`reference`: the CPU curve trained natively (an emulated target's), else trained here."""
    try:
        dev = train(device, data, steps, batch, seed)
        cpu = cpu_reference(
            lambda: train("cpu", data, steps, batch, seed),
            f"paddle {paddle.__version__}",
            {"steps": steps, "batch_size": batch, "seed": seed},
            reference,
        )
    except Exception as exc:
        return failed_check("mnist", "training", _first_line(exc))
    return training_verdict("mnist", dev, cpu, MNIST_CRITERIA, require_data(data, "mnist"), steps, batch, seed)
