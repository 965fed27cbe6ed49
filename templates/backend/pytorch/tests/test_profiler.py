"""torch.profiler with ProfilerActivity.PrivateUse1 on the {{ device_type }} device: each item the
device library queues (op, copy, collective, kernel launch) is a device event -- its name, device,
stream and duration, linked to the CPU op that queued it -- in prof.events(), key_averages() and
the Chrome trace."""

import json

import torch
{% if sdk_flavour %}from conftest import run_python
{% endif %}from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def _profiled(fn):
    with profile(activities=ACTIVITIES) as prof:
        fn()
    return prof


def _device_events(prof):
    return [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]


def _matmul_add(device):
    a = torch.randn(64, 64).to(device)
    b = torch.randn(64, 64).to(device)
    return lambda: ((a @ b) + a).relu().cpu()

{% if not sdk_flavour %}

def test_device_ops_are_device_events_linked_to_the_cpu_op_that_queued_them(device):
    prof = _profiled(_matmul_add(device))
    events = _device_events(prof)
    assert len(events) >= 4, [e.name for e in prof.events()]  # gemm, add, relu, the copy out
    cpu_ops = {e.id: e for e in prof.events() if e.device_type == DeviceType.CPU}
    for event in events:
        assert event.device_index == 0 and event.time_range.end >= event.time_range.start, event
        queued_by = cpu_ops.get(event.linked_correlation_id)
        assert queued_by is not None, f"{event.name} is linked to no CPU op"
        # one time base: the device ran the item after the CPU op queued it (clocks aligned to
        # within microseconds; unaligned, they differ by years)
        assert event.time_range.start >= queued_by.time_range.start - 50, (event, queued_by)
    assert sum(e.time_range.elapsed_us() for e in events) > 0
    linked = {cpu_ops[e.linked_correlation_id].name for e in events}
    assert {"aten::mm", "aten::add", "aten::relu"} <= linked | {n + ".Tensor" for n in linked}, linked
    assert {e.device_resource_id for e in events} == {events[0].device_resource_id}  # one stream


def test_key_averages_show_device_time_for_the_device_ops(device):
    prof = _profiled(_matmul_add(device))
    rows = {row.key: row for row in prof.key_averages()}
    assert rows["aten::mm"].device_time_total > 0, rows["aten::mm"]
    device_rows = [row for row in rows.values() if row.device_type == DeviceType.PrivateUse1]
    assert device_rows and all(row.self_device_time_total >= 0 for row in device_rows)
    assert sum(row.self_device_time_total for row in device_rows) > 0
    assert "Self {{ device_type | upper }}" in prof.key_averages().table(sort_by="device_time_total", row_limit=5)


def test_copies_are_memcpy_events_and_streams_are_rows(device):
    host = torch.ones(4096)

    def work():
        on_device = host.to(device)
        side = torch.{{ device_type }}.Stream()
        side.wait_stream(torch.{{ device_type }}.current_stream())
        with torch.{{ device_type }}.stream(side):
            doubled = on_device * 2
        torch.{{ device_type }}.current_stream().wait_stream(side)
        doubled.cpu()

    prof = _profiled(work)
    events = _device_events(prof)
    names = [e.name for e in events]
    assert any(n.startswith("memcpy_h2d") for n in names) and any(n.startswith("memcpy_d2h") for n in names), names
    assert len({e.device_resource_id for e in events}) >= 2, [(e.name, e.device_resource_id) for e in events]


def test_the_chrome_trace_has_device_rows_linked_to_cpu_ops(device, tmp_path):
    prof = _profiled(_matmul_add(device))
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in trace if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert len(kernels) == len(_device_events(prof)) >= 4, [e.get("cat") for e in trace]
    cpu_ids = {e["args"]["External id"] for e in trace if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    assert all(e["args"].get("External id") in cpu_ids for e in kernels), kernels[:3]
    assert all(e["pid"] == 0 and "stream" in e["args"] and e["dur"] >= 0 for e in kernels), kernels[:3]
    labels = {e["args"]["labels"] for e in trace if e.get("ph") == "M" and e.get("name") == "process_labels"}
    assert "{{ NAME }} 0" in labels, labels


def test_each_profile_holds_its_own_items_only(device):
    step = _matmul_add(device)
    first = _profiled(step)
    step()  # not profiled: not traced
    second = _profiled(step)
    assert len(_device_events(first)) == len(_device_events(second)) >= 4
{% else %}

# This flavour's device library may stub the tracer: then each profile has CPU events only, and
# the process says why once (torch's C++ warning, on stderr); with a tracer, the items are there.
TWO_PROFILES = """
import json, torch, torch_{{ p }}
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
a = torch.randn(64, 64).to("{{ device_type }}")
seen = []
for _ in range(2):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        ((a @ a) + a).cpu()
    events = prof.events()
    seen.append([any(e.name == "aten::mm" for e in events), sum(e.device_type == DeviceType.PrivateUse1 for e in events)])
print(json.dumps(seen))
"""


def test_the_profiler_shows_cpu_events_and_says_once_when_the_device_cannot_trace(device):
    result = run_python(TWO_PROFILES)
    assert result.returncode == 0, result.stderr[-3000:]
    (cpu_1, device_1), (cpu_2, device_2) = json.loads(result.stdout.splitlines()[-1])
    warned = result.stderr.count("device library has no tracer")
    assert cpu_1 and cpu_2, result.stdout
    assert (warned == 1 and device_1 == device_2 == 0) or (warned == 0 and device_1 == device_2 > 0), result.stderr
{% endif %}
