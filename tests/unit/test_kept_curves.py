"""CPU curves kept between verifications (devkit/verify/kept_curves.py): kept only from a passed
training check that trained its own, given back under the same key only, whole and from this
user's private directory, and accepted by the payload as a --cpu-reference of the same run."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys

import numpy as np
import pytest

from devkit.util.resources import PAYLOAD_DIR
from devkit.verify import kept_curves
from devkit.verify.datasets import Dataset
from devkit.verify.report import Report

STEPS = 4
RUN = {"steps": STEPS, "batch_size": 64, "seed": 2024}


def dataset(scale: float = 1.0) -> Dataset:
    x = np.full((3, 1, 28, 28), 0.5 * scale, dtype=np.float32)
    y = np.arange(3, dtype=np.int64).reshape(3, 1)
    return Dataset(x, y, x[:1], y[:1], "three images")


def report(passed: bool = True, where: str = "paddle 9.9 CPU in this process", steps: int = STEPS) -> Report:
    curve = {"losses": [2.3, 1.5, 0.9, 0.5][:steps], "heldout_accuracy": 0.9, "train_seconds": 1.0}
    mnist = {
        "name": "mnist",
        "kind": "training",
        "passed": passed,
        "cpu": {**curve, "trained": {"where": where, **RUN}},
    }
    return Report.from_json({"checks": [{"name": "ops", "kind": "basics", "passed": True}, mnist]})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "cpu-curves"


@pytest.fixture
def key():
    made = kept_curves.curve_key("host", "paddle", "9.9", "x86_64", STEPS, dataset())
    assert made is not None  # (this machine's processor is known: /proc/cpuinfo)
    return made


def test_a_passed_checks_curve_is_given_back_marked_kept_and_the_payload_takes_it(cache, key, tmp_path, monkeypatch):
    assert kept_curves.kept_curve(key) is None
    path = kept_curves.keep_curve(key, report())
    assert path is not None and path.parent == cache and cache.stat().st_mode & 0o777 == 0o700
    kept = kept_curves.kept_curve(key)
    assert kept is not None and kept["losses"] == [2.3, 1.5, 0.9, 0.5]
    where = kept["trained"]["where"]
    assert where.startswith("paddle 9.9 CPU on x86_64, kept from ") and where.endswith(" UTC"), where
    # the payload reads it as it reads a natively trained curve: same run, so not trained again
    for folder in ("shared", "numeric"):
        monkeypatch.syspath_prepend(str(PAYLOAD_DIR / folder))
    sys.modules.pop("training_verdict", None)
    training_verdict = importlib.import_module("training_verdict")
    (tmp_path / "reference.json").write_text(json.dumps(kept))
    given = training_verdict.cpu_reference(
        lambda: pytest.fail("trained"), "paddle 9.9", RUN, str(tmp_path / "reference.json")
    )
    assert given["trained"]["where"] == where


def test_nothing_is_kept_from_a_failed_check_a_given_curve_or_another_runs(cache, key):
    assert kept_curves.keep_curve(key, report(passed=False)) is None
    assert kept_curves.keep_curve(key, report(where="paddle 9.9 CPU on x86_64, kept from 2026-11-30 21:40 UTC")) is None
    assert kept_curves.keep_curve(key, report(steps=STEPS - 1)) is None
    assert kept_curves.keep_curve(key, Report.from_json({"checks": []})) is None
    assert not cache.exists() or not list(cache.iterdir())


@pytest.mark.parametrize(
    "field, value",
    [
        ("trainer", "docker-devkit-verify-x86_64"),
        ("framework", "torch"),
        ("runtime", "9.10"),
        ("arch", "aarch64"),
        ("steps", STEPS + 1),
        ("dataset", kept_curves.dataset_digest(dataset(scale=0.5))),
        ("payload", "0" * 16),
        ("cpu", "1" * 16),
    ],
)
def test_a_curve_is_given_only_under_everything_it_depends_on(cache, key, field, value):
    kept_curves.keep_curve(key, report())
    other = dataclasses.replace(key, **{field: value})
    assert other.file_name != key.file_name and kept_curves.kept_curve(other) is None
    # a file renamed to another key's name is not that key's curve either
    (cache / key.file_name).rename(cache / other.file_name)
    assert kept_curves.kept_curve(other) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut short
        lambda text: text.replace("0.9, 0.5", "NaN, 0.5"),  # a loss that is not a number
        lambda text: text.replace("[2.3, ", "["),  # one step short
        lambda text: text.replace('"kept": ', '"when": '),
        lambda text: "\xff" + text,
        lambda text: text + " " * kept_curves.KEPT_LIMIT,
    ],
)
def test_a_damaged_kept_curve_is_passed_over_and_the_next_keep_replaces_it(cache, key, damage):
    path = kept_curves.keep_curve(key, report())
    assert path is not None
    path.write_text(damage(path.read_text()))
    assert kept_curves.kept_curve(key) is None
    kept_curves.keep_curve(key, report())
    assert kept_curves.kept_curve(key) is not None


def test_a_link_or_a_directory_open_to_others_is_not_used(cache, key, tmp_path):
    path = kept_curves.keep_curve(key, report())
    assert path is not None
    elsewhere = tmp_path / "planted.json"
    os.rename(path, elsewhere)
    path.symlink_to(elsewhere)
    assert kept_curves.kept_curve(key) is None  # (a whole curve, behind a link)
    path.unlink()
    os.rename(elsewhere, path)
    cache.chmod(0o775)  # (others can write in it)
    assert kept_curves.kept_curve(key) is None
    assert kept_curves.keep_curve(key, report()) is None
