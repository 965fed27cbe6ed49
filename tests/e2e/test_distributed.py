"""Multi-card training (issue 22), Paddle: `devkit verify --distributed 2` on the host runner.
Paddle's own launcher starts two ranks on stpu:0 and stpu:1 (the xccl runtime slots over the
device library's collectives); every collective is compared with NumPy, paddle.DataParallel
LeNet with one process on the whole batch, and a killed and a stopped rank must make rank 0's
next collective fail naming them. (The PyTorch c10d backend's run is in test_torch.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import devkit

pytestmark = pytest.mark.e2e


def test_paddle_verify_distributed_matches_one_process_and_names_a_lost_rank(built_project):
    argv = ["verify", str(built_project), "--runner", "host", "--distributed", "2", "--steps", "40", "--json"]
    proc = devkit(*argv, check=False)
    summary = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    checks = {c["name"]: c for c in summary["checks"]}
    assert list(checks) == ["collectives", "data parallel", "killed rank", "stalled rank"]
    assert "on 2 ranks (xccl runtime slots) vs NumPy: all match" in checks["collectives"]["detail"]
    assert "which has exited" in checks["killed rank"]["detail"]
    assert "waited 5 s for rank 1 (STPU_CCL_TIMEOUT_S=5)" in checks["stalled rank"]["detail"]
    report = json.loads(Path(summary["report"]).read_text())
    parallel = next(c for c in report["checks"] if c["name"] == "data parallel")
    assert len(parallel["data_parallel"]["losses"]) == len(parallel["single"]["losses"]) == 40
    assert parallel["max_curve_abs_diff"] <= parallel["criteria"]["max_curve_abs_diff"]
    assert report["distributed"] == 2 and Path(summary["plot"]).stat().st_size > 10_000
    cases = {c["case"] for c in next(c for c in report["checks"] if c["name"] == "collectives")["cases"]}
    assert {"all_reduce PROD int64", "reduce_scatter MIN float64", "send/recv int32", "barrier"} <= cases
