"""Multi-card training (issue 22), Paddle: `devkit verify --distributed 2` on the host runner.
Paddle's own launcher starts two ranks on stpu:0 and stpu:1 (the xccl runtime slots over the
device library's collectives); every collective is compared with NumPy, paddle.DataParallel
LeNet with one process on the whole batch, and a killed and a stopped rank must make rank 0's
next collective fail naming them. (The PyTorch c10d backend's run is in test_torch.py.)"""

from __future__ import annotations

import pytest
from conftest import collective_cases, verify_distributed

pytestmark = pytest.mark.e2e


def test_paddle_verify_distributed_matches_one_process_and_names_a_lost_rank(built_project):
    report = verify_distributed(built_project, collectives="on 2 ranks (xccl runtime slots) vs NumPy: all match")
    wanted = {"all_reduce PROD int64", "reduce_scatter MIN float64", "send/recv int32", "barrier"}
    assert wanted <= collective_cases(report)
