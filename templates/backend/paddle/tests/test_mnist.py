"""A LeNet trains on {{ device_type }} with no CPU fallback (synthetic digits, 30 steps)."""

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F


class LeNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5), nn.ReLU(), nn.MaxPool2D(2, 2),
        )
        self.fc = nn.Sequential(nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):
        return self.fc(paddle.flatten(self.features(x), 1))


def test_lenet_loss_falls_on_device():
    paddle.set_device("{{ device_type }}")
    paddle.seed(1)
    rng = np.random.RandomState(1)
    # Ten fixed random "digit" patterns plus noise: learnable in a few steps.
    prototypes = rng.rand(10, 1, 28, 28).astype("float32")
    model = LeNet()
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    losses = []
    for _ in range(30):
        labels = rng.randint(0, 10, (32, 1))
        images = prototypes[labels[:, 0]] + 0.1 * rng.randn(32, 1, 28, 28).astype("float32")
        loss = F.cross_entropy(model(paddle.to_tensor(images)), paddle.to_tensor(labels))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
