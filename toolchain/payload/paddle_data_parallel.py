"""Data-parallel training of a Paddle plugin across ranks, one process and device per rank.

Run by Paddle's own launcher, which starts a process per device and sets up the ranks:

    python -m paddle.distributed.launch --devices 0,1 paddle_data_parallel.py

Each rank checks all_reduce, all_gather and broadcast on its device against numpy, then
trains a small model with paddle.DataParallel on its share of a global batch and compares
the weights with one process trained on the whole batch on the CPU. Each rank prints one
line per check; the collectives go through the plugin's xccl runtime slots."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.distributed as dist
import paddle.nn.functional as F

STEPS = 3
GLOBAL_BATCH = 8


def check_collectives(rank: int, world: int) -> bool:
    x = paddle.to_tensor(np.arange(6, dtype="float32") + rank)
    dist.all_reduce(x)
    ok = bool(np.allclose(x.numpy(), sum(np.arange(6, dtype="float32") + r for r in range(world))))
    gathered: list = []
    dist.all_gather(gathered, paddle.to_tensor(np.array([rank, rank * 10], dtype="int64")))
    ok &= [t.numpy().tolist() for t in gathered] == [[r, r * 10] for r in range(world)]
    b = paddle.to_tensor(np.full([3], rank, "float32"))
    dist.broadcast(b, src=world - 1)
    return ok and bool((b.numpy() == world - 1).all())


def train(model, xs: np.ndarray, ys: np.ndarray) -> None:
    opt = paddle.optimizer.SGD(learning_rate=0.5, parameters=model.parameters())
    for _ in range(STEPS):
        loss = F.cross_entropy(model(paddle.to_tensor(xs)), paddle.to_tensor(ys))
        loss.backward()
        opt.step()
        opt.clear_grad()


def linear(w: np.ndarray, b: np.ndarray):
    model = paddle.nn.Linear(*w.shape)
    model.weight.set_value(w)
    model.bias.set_value(b)
    return model


def main() -> int:
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    device = paddle.get_device()
    ok = check_collectives(rank, world)
    print(f"rank {rank} on {device}: all_reduce, all_gather, broadcast {'match' if ok else 'DIFFER from'} numpy")
    r = np.random.RandomState(7)
    xs, ys = r.rand(GLOBAL_BATCH, 5).astype("float32"), r.randint(0, 3, (GLOBAL_BATCH, 1)).astype("int64")
    w, b = r.rand(5, 3).astype("float32") - 0.5, np.zeros(3, "float32")
    share = slice(rank * GLOBAL_BATCH // world, (rank + 1) * GLOBAL_BATCH // world)
    model = linear(w, b)
    train(paddle.DataParallel(model), xs[share], ys[share])
    paddle.set_device("cpu")
    reference = linear(w, b)
    train(reference, xs, ys)
    same = bool(np.allclose(model.weight.numpy(), reference.weight.numpy(), rtol=1e-4, atol=1e-5))
    print(
        f"rank {rank}: DataParallel on {device} {'matches' if same else 'DIFFERS from'} one process on the whole batch"
    )
    return 0 if ok and same else 1


if __name__ == "__main__":
    raise SystemExit(main())
