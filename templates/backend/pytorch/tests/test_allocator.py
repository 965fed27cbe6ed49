"""The caching allocator: a freed block is reused on its stream without the device library,
a block used on another stream waits for it, the cache is given back on empty_cache() and when
the device runs out, and torch.{{ device_type }} / torch.accelerator report its statistics."""

import pytest
import torch
from conftest import run_python

mod = torch.{{ device_type }}


def device_allocs() -> int:
    return mod.memory_stats()["num_device_alloc"]


def test_a_freed_block_is_reused_without_the_device_library(device):
    torch.empty(1000, device=device)  # its size class is cached from here on
    before = device_allocs()
    for _ in range(50):
        x = torch.empty(1000, device=device)
        del x
    assert device_allocs() == before


def test_blocks_stay_with_their_stream(device):
    x = torch.empty(4096, device=device)
    ptr = x.data_ptr()
    del x
    side = mod.Stream()
    with side:
        y = torch.empty(4096, device=device)
    assert y.data_ptr() != ptr, "a block freed on the default stream went to another stream's tensor"
    assert torch.empty(4096, device=device).data_ptr() == ptr


def test_record_stream_keeps_the_block_until_that_stream_is_done(device):
    side = mod.Stream()
    x = torch.ones(1 << 16, device=device)
    ptr = x.data_ptr()
    side.wait_stream(mod.current_stream())
    with side:
        doubled = [x * 2 for _ in range(20)]  # queued on the side stream, reading x
    x.record_stream(side)
    del x
    y = torch.full((1 << 16,), 7.0, device=device)  # on the default stream
    if y.data_ptr() == ptr:  # reused: only allowed once the side stream had run its reads
        assert side.query()
    mod.synchronize()
    assert all(torch.equal(d.cpu(), torch.full((1 << 16,), 2.0)) for d in doubled)
    del y
    assert torch.empty(1 << 16, device=device).data_ptr() == ptr  # reused once the stream is done


def test_empty_cache_gives_cached_blocks_back(device):
    x = torch.empty(3 << 20, dtype=torch.uint8, device=device)
    del x
    stats = mod.memory_stats()
    assert mod.memory_reserved() > mod.memory_allocated()
    mod.empty_cache()
    after = mod.memory_stats()
    assert mod.memory_reserved() == mod.memory_allocated()
    assert after["num_device_free"] > stats["num_device_free"]
    free, total = mod.mem_get_info()
    assert 0 < free <= total


def test_peak_and_reset(device):
    mod.reset_peak_memory_stats()
    base = mod.memory_allocated()
    x = torch.empty(1 << 20, device=device)
    del x
    assert mod.max_memory_allocated() >= base + (4 << 20)
    mod.reset_peak_memory_stats()
    assert mod.max_memory_allocated() == mod.memory_allocated()
    mod.reset_accumulated_memory_stats()
    assert mod.memory_stats()["num_device_alloc"] == 0


def test_out_of_memory_empties_the_cache_then_names_the_request():
    r = run_python(
        "import torch, torch_{{ p }}\n"
        "x = torch.empty(40 << 20, dtype=torch.uint8, device='{{ device_type }}')\n"
        "del x\n"  # cached: 40 MiB of the 64 the device has
        "y = torch.empty(48 << 20, dtype=torch.uint8, device='{{ device_type }}')\n"
        "print('retries', torch.{{ device_type }}.memory_stats()['num_alloc_retries'])\n"
        "try:\n"
        "    torch.empty(100 << 20, dtype=torch.uint8, device='{{ device_type }}')\n"
        "except torch.OutOfMemoryError as e:\n"
        "    print('oom', e)\n",
        {{ NAME }}_MEMORY_MB="64",
    )
    assert r.returncode == 0, r.stderr
    assert "retries 1" in r.stdout
    assert "oom {{ device_type }}:0 out of memory: tried to allocate 104857600 bytes" in r.stdout


@pytest.mark.skipif(not hasattr(torch, "accelerator") or not hasattr(torch.accelerator, "memory_allocated"),
                    reason="this torch has no torch.accelerator memory API (2.9 added it)")
def test_torch_accelerator_reaches_the_allocator(device):
    x = torch.empty(1 << 18, device=device)
    assert torch.accelerator.memory_allocated() == mod.memory_allocated() > 0
    assert torch.accelerator.memory_stats()["allocated_bytes.all.current"] == mod.memory_allocated()
    del x
    torch.accelerator.empty_cache()
    assert mod.memory_reserved() == mod.memory_allocated()
