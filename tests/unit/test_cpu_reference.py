"""The torch checks' CPU reference read from a file (an emulated target's, trained natively) must be
of the same run: a stale one is refused, naming both."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from devkit.util.resources import PAYLOAD_DIR


@pytest.fixture
def torch_training(monkeypatch):
    monkeypatch.setenv(
        "DEVKIT_TOLERANCES", json.dumps({k: 0.1 for k in ("op_rtol", "op_atol", "grad_rtol", "grad_atol")})
    )
    monkeypatch.syspath_prepend(str(PAYLOAD_DIR))
    for name in ("torch_training", "torch_common", "training_verdict"):
        sys.modules.pop(name, None)
    return importlib.import_module("torch_training")


def write_reference(tmp_path, **trained):
    path = tmp_path / "reference.json"
    path.write_text(json.dumps({"losses": [2.3, 1.0], "heldout_accuracy": 0.9, "trained": {"where": "x", **trained}}))
    return str(path)


def test_a_reference_of_the_same_run_is_used(torch_training, tmp_path):
    path = write_reference(tmp_path, steps=100, batch_size=64, seed=2024)
    assert torch_training.cpu_reference(None, {}, 100, 64, 2024, path)["losses"] == [2.3, 1.0]


@pytest.mark.parametrize("trained", [{"steps": 50, "batch_size": 64, "seed": 2024}, {"steps": 100, "batch_size": 64}])
def test_a_reference_of_another_run_is_refused(torch_training, tmp_path, trained):
    path = write_reference(tmp_path, **trained)
    with pytest.raises(
        ValueError, match=r"was trained with .* this run needs \{'steps': 100, 'batch_size': 64, 'seed': 2024\}"
    ):
        torch_training.cpu_reference(None, {}, 100, 64, 2024, path)
