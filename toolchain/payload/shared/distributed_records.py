"""The --distributed reports' records: each collective's case, the N ranks against one process, a
lost rank named, and what each rank writes (paddle_distributed.py, torch_distributed.py)."""

from __future__ import annotations

from typing import TypedDict

from records import CheckRecord, TrainingRun

# -- distributed (paddle_distributed.py, torch_distributed.py)


class CollectiveCase(TypedDict):
    case: str
    passed: bool
    detail: str


class CollectivesVerdict(CheckRecord):
    cases: list[CollectiveCase]  # rank 0's
    failed: list[str]  # every rank's


class ParallelCriteria(TypedDict):
    max_curve_abs_diff: float
    max_accuracy_diff: float


class ParallelVerdict(CheckRecord):
    """The "data parallel" check: N ranks against one process on the whole batch."""

    criteria: ParallelCriteria
    steps: int
    batch_size: int
    ranks: int
    max_curve_abs_diff: float
    data_parallel: TrainingRun
    single: TrainingRun


class LostRankVerdict(CheckRecord):
    error: str
    seconds_to_error: float


class _RankResultRequired(TypedDict):
    rank: int
    device: str
    backend: str


class RankResult(_RankResultRequired, total=False):
    """A training rank's rank-N.json."""

    collectives: list[CollectiveCase]
    train: TrainingRun


class LostRankResult(TypedDict):
    """Rank 0's rank-0.json in a lost-rank run: its collective's error (None: it did not fail)."""

    rank: int
    error: str | None
    seconds: float
