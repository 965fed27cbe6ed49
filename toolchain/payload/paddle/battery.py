"""The model battery: models the project never tuned for (a ResNet with BatchNorm in training
mode, a tiny transformer encoder), trained on the device and on CPU from the same weights
and batches; with --amp, on the device under Paddle's mixed precision against the CPU's float32."""

from __future__ import annotations

import contextlib
import time

from check_common import _TOL, F, Tensor, _first_line, log, nn, np, paddle
from op_helpers import rng
from paddle_amp import AMP_CURVE_DIFF, amp_step, grad_scaler, low_precision_ops, op_counts
from records import BatteryCriteria, BatteryRun, BatteryVerdict, CheckRecord
from training_verdict import Dataset, failed_check, require_data

#
# Models beyond LeNet, each trained on the device and on the CPU from the same
# initial weights on the same batches; the loss curves must agree. `resnet_bn`
# trains BatchNorm (batch statistics, running-statistics momentum update) and then
# evaluates with the running statistics; `transformer` is a tiny encoder with
# embedding, gather, layer_norm, multi-head attention (split, transpose views,
# softmax), gelu, dropout, slice and concat.
#
# Dropout: every step sets Paddle's fixed dropout seed (default_main_program().
# random_seed = seed + step, i.e. dropout's fix_seed/seed attributes), for which the
# device library draws the mask from the same std::mt19937_64 stream as Paddle's CPU
# kernel: both places drop the same elements, so the curves are comparable with p > 0.
# The un-seeded path (the device's own generator) is checked by its statistics
# in the "ops" cases.

BATTERY = ("resnet_bn", "transformer")
BATTERY_CRITERIA: BatteryCriteria = {
    "max_curve_abs_diff": _TOL["max_curve_diff"],  # per-step |loss_device - loss_cpu|
    "max_eval_abs_diff": _TOL["max_curve_diff"],  # held-out loss, eval mode, device vs cpu
    "loss_must_drop": True,  # mean of the last steps < mean of the first
}
# Under AMP the device's curve is float16's against the CPU's float32 (paddle_amp.AMP_CURVE_DIFF).
AMP_BATTERY_CRITERIA: BatteryCriteria = {
    "max_curve_abs_diff": AMP_CURVE_DIFF,
    "max_eval_abs_diff": AMP_CURVE_DIFF,
    "loss_must_drop": True,
}
# The op each model must run in float16 under AMP (its GEMMs: Paddle's white list)
AMP_LOW_PRECISION_OP = {"resnet_bn": "conv2d", "transformer": "matmul_v2"}


class BasicBlock(nn.Layer):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2D(cin, cout, 3, stride=stride, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(cout)
        self.conv2 = nn.Conv2D(cout, cout, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2D(cin, cout, 1, stride=stride, bias_attr=False), nn.BatchNorm2D(cout))

    def forward(self, x: Tensor) -> Tensor:
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNetBN(nn.Layer):
    """28x28 digits: stem conv+BN, max pool, two residual blocks (one downsampling), global average pool."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2D(1, 8, 3, padding=1, bias_attr=False)
        self.bn = nn.BatchNorm2D(8)
        self.block1 = BasicBlock(8, 8, 1)
        self.block2 = BasicBlock(8, 16, 2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: Tensor) -> Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 2, 2)
        x = self.block2(self.block1(x))
        return self.fc(paddle.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class EncoderLayer(nn.Layer):
    def __init__(self, d: int, heads: int, ff: int, dropout: float) -> None:
        super().__init__()
        self.heads, self.p = heads, dropout
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: Tensor) -> Tensor:
        b, n, d = x.shape
        h = self.norm1(x)
        q, k, v = paddle.split(self.qkv(h), 3, axis=-1)  # split_with_num (views)
        q, k, v = (
            paddle.transpose(paddle.reshape(t, [b, n, self.heads, d // self.heads]), [0, 2, 1, 3]) for t in (q, k, v)
        )  # transpose views -> contiguous
        att = F.softmax(paddle.matmul(q, k, transpose_y=True) * (d // self.heads) ** -0.5, axis=-1)
        att = F.dropout(att, self.p, training=self.training)
        y = paddle.reshape(paddle.transpose(paddle.matmul(att, v), [0, 2, 1, 3]), [b, n, d])
        x = x + F.dropout(self.out(y), self.p, training=self.training)
        return x + F.dropout(self.ff2(F.gelu(self.ff1(self.norm2(x)))), self.p, training=self.training)


class TinyTransformer(nn.Layer):
    """Token + position embeddings, two pre-norm encoder layers, [first token, mean] pooling."""

    def __init__(
        self,
        vocab: int = 12,
        seq: int = 12,
        d: int = 32,
        heads: int = 4,
        ff: int = 64,
        classes: int = 8,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)  # padding_idx in forward: the layer would zero its row with set_value
        self.pos = self.create_parameter([seq, d], default_initializer=nn.initializer.Normal(std=0.1))
        self.layers = nn.LayerList([EncoderLayer(d, heads, ff, dropout) for _ in range(2)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(2 * d, classes)

    def forward(self, tokens: Tensor) -> Tensor:
        n = tokens.shape[1]
        positions = paddle.to_tensor(np.arange(n, dtype=np.int64))
        x = F.embedding(tokens, self.tok.weight, padding_idx=0) + paddle.gather(self.pos, positions)
        for layer in self.layers:
            x = layer(x)
        x = self.norm(x)
        pooled = paddle.concat([x[:, 0], paddle.mean(x, axis=1)], axis=-1)  # slice + concat
        return self.head(pooled)


def majority_tokens(count: int, seed: int, vocab: int = 12, seq: int = 12, classes: int = 8) -> dict[str, np.ndarray]:
    """Synthetic, deterministic: tokens 1..classes (0 = padding at the end); label = the most
    frequent token (ties: the smallest), minus one."""
    r = rng(seed)
    tokens = r.randint(1, classes + 1, (count, seq)).astype(np.int64)
    lengths = r.randint(seq - 3, seq + 1, count)
    for i, n in enumerate(lengths):
        tokens[i, n:] = 0
    labels = np.array([np.bincount(t[t > 0], minlength=classes + 1)[1:].argmax() for t in tokens], dtype=np.int64)
    return {"x": tokens, "y": labels[:, None]}


def battery_data(model: str, data: Dataset | None, seed: int) -> Dataset | None:
    """The data set `model` trains on: its own (transformer), or `data`, the digits'."""
    if model == "transformer":
        train, test = majority_tokens(4096, seed), majority_tokens(512, seed + 1)
        return {
            "x_train": train["x"],
            "y_train": train["y"],
            "x_test": test["x"],
            "y_test": test["y"],
            "source": "synthetic majority-token sequences (numpy RandomState)",
        }
    return data


def build_model(model: str) -> nn.Layer:
    return ResNetBN() if model == "resnet_bn" else TinyTransformer()


def battery_initial_state(model: str, seed: int) -> dict[str, np.ndarray]:
    """Paddle's default initialization, drawn once on the CPU, for both places."""
    saved = paddle.get_device()
    paddle.set_device("cpu")
    paddle.seed(seed)
    state = {k: v.numpy() for k, v in build_model(model).state_dict().items()}
    paddle.set_device(saved)
    return state


def train_model(
    model: str,
    place: str,
    data: Dataset | None,
    steps: int,
    batch: int,
    seed: int,
    state: dict[str, np.ndarray] | None = None,
    amp: str = "",
) -> BatteryRun:
    """Train `model` on `place` (same weights, same batches, same dropout seeds), then evaluate.
    With `amp` (O1, O2): under auto_cast(amp, float16) with a dynamic GradScaler (O2 through
    paddle.amp.decorate), Paddle's op counts by dtype in the run's "op_stats". Without `data`
    (no --data), it fails where it needs it."""
    state = state if state is not None else battery_initial_state(model, seed)
    paddle.set_device(place)
    net = build_model(model)
    net.set_state_dict({k: paddle.to_tensor(v) for k, v in state.items()})
    net.train()
    opt = paddle.optimizer.Adam(learning_rate=3e-3, parameters=net.parameters())
    if amp == "O2":
        net, opt = paddle.amp.decorate(models=net, optimizers=opt, level="O2", dtype="float16")
    grads = grad_scaler(2.0**15) if amp else None
    data = require_data(data, model)
    x_train, y_train = data["x_train"], data["y_train"]
    order = rng(seed).permutation(len(x_train))
    program = paddle.static.default_main_program()
    saved_seed = program.random_seed
    losses = []
    start = time.perf_counter()
    counting: contextlib.AbstractContextManager[dict[str, dict[str, int]]] = (
        op_counts() if amp else contextlib.nullcontext({})
    )
    with counting as stats:
        try:
            for step in range(steps):
                program.random_seed = seed + step + 1  # fixed dropout seed, new for every step
                idx = np.take(order, range(step * batch, (step + 1) * batch), mode="wrap")
                x, y = paddle.to_tensor(x_train[idx]), paddle.to_tensor(y_train[idx])
                if amp:
                    loss = amp_step(net, opt, grads, x, y, amp)  # verify --amp's step, as LeNet's
                else:
                    loss = F.cross_entropy(net(x), y)
                    loss.backward()
                    opt.step()
                    opt.clear_grad()
                losses.append(float(loss))
                if step % 10 == 0 or step == steps - 1:
                    log(f"  {model} {place}{' amp ' + amp if amp else ''} step {step}: loss {losses[-1]:.4f}")
        finally:
            program.random_seed = saved_seed
    train_seconds = time.perf_counter() - start
    net.eval()  # batch_norm with the running statistics, dropout off
    x_test, y_test = data["x_test"][:512], data["y_test"][:512]
    with paddle.no_grad(), paddle.amp.auto_cast(enable=bool(amp), level=amp or "O1", dtype="float16"):
        logits = net(paddle.to_tensor(x_test)).astype("float32")
        eval_loss = float(F.cross_entropy(logits, paddle.to_tensor(y_test)))
        accuracy = float((logits.numpy().argmax(-1) == y_test[:, 0]).mean())
    run: BatteryRun = {
        "losses": losses,
        "eval_loss": eval_loss,
        "heldout_accuracy": accuracy,
        "train_seconds": train_seconds,
    }
    if amp:
        run["op_stats"] = stats
    return run


def check_battery(
    model: str, device: str, data: Dataset | None, steps: int, batch: int, seed: int, amp: str = ""
) -> BatteryVerdict | CheckRecord:
    """`model` on the device (with `amp`: under mixed precision) against float32 on the CPU: the
    curves and the held-out losses agree within the criteria, the loss falls, and under AMP the
    model's GEMMs ran in float16 on the device (Paddle's own op counts)."""
    name = f"{model} amp {amp}" if amp else model
    try:
        data = battery_data(model, data, seed)
        if data is None:
            raise ValueError(f"{model} needs --data (the digits .npz devkit verify writes)")
        state = battery_initial_state(model, seed)
        dev = train_model(model, device, data, steps, batch, seed, state, amp)
        cpu = train_model(model, "cpu", data, steps, batch, seed, state)
    except Exception as exc:
        return failed_check(name, "training", _first_line(exc))
    window = max(1, min(10, steps // 4))
    first, last = float(np.mean(dev["losses"][:window])), float(np.mean(dev["losses"][-window:]))
    diffs = np.abs(np.array(dev["losses"]) - np.array(cpu["losses"]))
    curve_diff, eval_diff = float(diffs.max()), abs(dev["eval_loss"] - cpu["eval_loss"])
    c = AMP_BATTERY_CRITERIA if amp else BATTERY_CRITERIA
    passed = curve_diff <= c["max_curve_abs_diff"] and eval_diff <= c["max_eval_abs_diff"] and last < first
    low = low_precision_ops(dev.get("op_stats", {}))
    missing = amp and AMP_LOW_PRECISION_OP[model] not in low
    return {
        "name": name,
        "kind": "training",
        "passed": bool(passed and not missing),
        "detail": (
            f"loss {first:.3f} -> {last:.3f}, max |loss diff vs cpu| {curve_diff:.2e} (mean "
            f"{float(diffs.mean()):.1e}), eval loss {dev['eval_loss']:.4f} vs cpu {cpu['eval_loss']:.4f}, "
            f"held-out accuracy {dev['heldout_accuracy']:.3f} (cpu {cpu['heldout_accuracy']:.3f}); "
            f"{dev['train_seconds']:.1f} s on {device}, {cpu['train_seconds']:.1f} s on cpu"
            + (f"; under AMP {amp} against float32 on cpu, float16 ops: {', '.join(low) or 'none'}" if amp else "")
            + (f"; {AMP_LOW_PRECISION_OP[model]} never ran in float16" if missing else "")
        ),
        "criteria": c,
        "dataset": data["source"],
        "steps": steps,
        "batch_size": batch,
        "seed": seed,
        "dropout": "fixed per-step seed (fix_seed): identical masks on device and cpu"
        if model == "transformer"
        else None,
        "max_curve_abs_diff": curve_diff,
        "mean_curve_abs_diff": float(diffs.mean()),
        "eval_abs_diff": eval_diff,
        "device": dev,
        "cpu": cpu,
    }
