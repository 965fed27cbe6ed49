"""LeNet (devkit's verify model) trains on the device with no CPU fallback, matching CPU."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import run_python


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def train(device, optimizer, foreach, steps=5):
    torch.manual_seed(0)
    model = LeNet()
    data = [(torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))) for _ in range(steps)]
    model = model.to(device)
    opt = optimizer(model.parameters(), lr=1e-3, foreach=foreach)
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("optimizer", [torch.optim.Adam, torch.optim.SGD])
@pytest.mark.parametrize("foreach", [False, True])
def test_lenet_matches_cpu_without_fallback(device, optimizer, foreach):
    cpu = train("cpu", optimizer, foreach)
    ours = train(device, optimizer, foreach)
    assert torch.{{ device_type }}.fallback_counts() == {}
    for a, b in zip(ours, cpu):
        assert abs(a - b) < 1e-4, (ours, cpu)


def test_training_step_under_strict_fallback():
    r = run_python(
        "import sys; sys.path.insert(0, %r)\n"
        "import torch, test_training as t\n"
        "print(t.train('{{ device_type }}', torch.optim.Adam, False, steps=2))" % __file__.rsplit("/", 1)[0],
        {{ NAME }}_STRICT_FALLBACK="1")
    assert r.returncode == 0, r.stderr[-3000:]
