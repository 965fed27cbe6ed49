"""What Paddle asks of the device through its public API (issue 54): the plugin's
C_DeviceInterface query slots, in the session's built STPU project with Paddle 3.3.1."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from test_e2e import paddle_python

pytestmark = pytest.mark.e2e

PROBES = """
import json, paddle
from paddle.base import core
props = core.get_device_properties("stpu", 1)
print(json.dumps({
    "float16": paddle.amp.is_float16_supported("stpu"),
    "bfloat16": paddle.amp.is_bfloat16_supported("stpu:1"),
    "properties": [props.name, props.major, props.minor, props.total_memory],
}))
"""


def test_paddle_gets_half_precision_and_device_properties_from_the_plugin(built_project):
    plugin_dir = next(built_project.glob("build/*/libpaddle-custom-stpu.so")).parent
    proc = subprocess.run(
        [str(paddle_python()), "-c", PROBES],
        capture_output=True,
        text=True,
        env={**os.environ, "CUSTOM_DEVICE_ROOT": str(plugin_dir), "GLOG_minloglevel": "2", "STPU_MEMORY_MB": "1024"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = json.loads(proc.stdout.splitlines()[-1])
    assert answers == {"float16": True, "bfloat16": True, "properties": ["STPU", 1, 0, 1024 << 20]}
