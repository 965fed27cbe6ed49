"""Multi-card training, first parts (issue 22): the device library's collectives behind Paddle's
xccl runtime slots, driven by Paddle's own launcher and DataParallel, two processes on two
devices."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_e2e import paddle_python

pytestmark = pytest.mark.e2e

PAYLOAD = Path(__file__).resolve().parents[2] / "toolchain" / "payload" / "paddle_data_parallel.py"


def test_paddle_data_parallel_on_two_devices_matches_one_process(built_project, tmp_path):
    plugin_dir = next((built_project / "build").glob("*/libpaddle-custom-stpu.so")).parent
    env = {**os.environ, "CUSTOM_DEVICE_ROOT": str(plugin_dir), "STPU_CCL_TIMEOUT_S": "60"}
    argv = [str(paddle_python()), "-m", "paddle.distributed.launch", "--devices", "0,1"]
    proc = subprocess.run(
        [*argv, "--log_dir", str(tmp_path / "log"), str(PAYLOAD)], capture_output=True, text=True, env=env, timeout=600
    )
    logs = "".join(p.read_text() for p in sorted((tmp_path / "log").glob("workerlog.*")))
    assert proc.returncode == 0, proc.stdout[-2000:] + logs[-3000:]
    for rank in (0, 1):
        assert f"rank {rank} on stpu:{rank}: all_reduce, all_gather, broadcast match numpy" in logs, logs[-3000:]
        assert f"rank {rank}: DataParallel on stpu:{rank} matches one process on the whole batch" in logs
