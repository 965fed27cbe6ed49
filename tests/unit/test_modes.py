"""The reference device's modes: parsed from --modes, given to the device library as its
environment, described in reports."""

import pytest

from devkit.util.errors import DevkitError
from devkit.verify.modes import CHECK_MODES, DeviceModes


def test_checking_modes_are_the_unforgiving_ones():
    assert CHECK_MODES.env("stpu") == {
        "STPU_DEVICE_COUNT": "2",
        "STPU_SYNC": "0",
        "STPU_HOST_VISIBLE_MEMORY": "0",
        "STPU_STREAM_DELAY_US": "0",
    }
    assert CHECK_MODES.describe() == "2 devices, asynchronous streams, opaque device memory"
    assert DeviceModes.parse("") == CHECK_MODES


def test_modes_parse_over_the_checking_ones():
    modes = DeviceModes.parse(" sync , host-visible,devices=1,delay=500")
    assert modes == DeviceModes(devices=1, asynchronous=False, opaque_memory=False, stream_delay_us=500)
    assert modes.env("my_npu")["MY_NPU_SYNC"] == "1"
    assert modes.describe() == (
        "1 device, synchronous (inline) streams, host-visible device memory, 500 us delay per queued item"
    )
    assert modes.as_json()["summary"] == modes.describe()


@pytest.mark.parametrize("text", ["async", "sync=1", "devices=0", "devices=17", "devices=two", "delay=-5", "delay"])
def test_a_mode_devkit_does_not_know_is_refused(text):
    with pytest.raises(DevkitError) as info:
        DeviceModes.parse(f"sync,{text}")
    assert info.value.problem == f"--modes: {text!r} is not a device mode"
