"""The training checks' CPU reference read from a file (an emulated target's, trained natively)
must be of the same run: a stale one is refused, naming both; without a file it is trained here."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from devkit.util.resources import PAYLOAD_DIR

RUN = {"steps": 100, "batch_size": 64, "seed": 2024}


@pytest.fixture
def training_verdict(monkeypatch):
    for folder in ("shared", "numeric"):
        monkeypatch.syspath_prepend(str(PAYLOAD_DIR / folder))
    sys.modules.pop("training_verdict", None)
    return importlib.import_module("training_verdict")


def write_reference(training_verdict, tmp_path, run):
    path = tmp_path / "reference.json"
    cpu = training_verdict.trained_natively({"losses": [2.3, 1.0], "heldout_accuracy": 0.9}, "torch 9.9", run)
    path.write_text(json.dumps(cpu))
    return str(path)


def never_train():
    raise AssertionError("trained although a reference was given")


def test_a_reference_of_the_same_run_is_used(training_verdict, tmp_path):
    path = write_reference(training_verdict, tmp_path, RUN)
    cpu = training_verdict.cpu_reference(never_train, "torch 9.9", RUN, path)
    assert cpu["losses"] == [2.3, 1.0] and cpu["trained"]["where"].startswith("torch 9.9 CPU on ")


@pytest.mark.parametrize("trained", [{**RUN, "steps": 50}, {"steps": 100, "batch_size": 64}])
def test_a_reference_of_another_run_is_refused(training_verdict, tmp_path, trained):
    path = write_reference(training_verdict, tmp_path, trained)
    with pytest.raises(
        ValueError, match=r"was trained with .* this run needs \{'steps': 100, 'batch_size': 64, 'seed': 2024\}"
    ):
        training_verdict.cpu_reference(never_train, "torch 9.9", RUN, path)


def test_without_a_reference_the_curve_is_trained_here(training_verdict):
    cpu = training_verdict.cpu_reference(lambda: {"losses": [1.0]}, "paddle 9.9", RUN, None)
    assert cpu == {"losses": [1.0], "trained": {"where": "paddle 9.9 CPU in this process", **RUN}}
