"""What torch and the code written for torch.cuda ask of the {{ device_type }} device, through
torch's public APIs: generator state, device queries, memory information, pinned host memory,
an exit after a backward."""

import torch
import torch.utils.checkpoint
from conftest import run_python
from torch.utils.data import DataLoader, TensorDataset

MOD = torch.{{ device_type }}


def test_the_generator_state_round_trips_on_every_device(device):
    for index in range(MOD.device_count()):
        where = torch.device(device, index)
        MOD.manual_seed_all(11)
        state = MOD.get_rng_state(where)
        first = torch.rand(32, device=where).cpu()
        assert not torch.equal(torch.rand(32, device=where).cpu(), first)
        MOD.set_rng_state(state, where)
        assert torch.equal(torch.rand(32, device=where).cpu(), first)
    states = MOD.get_rng_state_all()
    drawn = [torch.rand(4, device=torch.device(device, i)).cpu() for i in range(MOD.device_count())]
    MOD.set_rng_state_all(states)
    assert all(torch.equal(torch.rand(4, device=torch.device(device, i)).cpu(), d) for i, d in enumerate(drawn))


def test_fork_rng_gives_the_device_generator_back(device):
    MOD.manual_seed(5)
    with torch.random.fork_rng(devices=range(MOD.device_count()), device_type=device):
        inside = torch.rand(16, device=device).cpu()
    assert torch.equal(torch.rand(16, device=device).cpu(), inside)


def test_seed_draws_a_new_seed(device):
    MOD.manual_seed(3)
    MOD.seed()
    assert MOD.initial_seed() != 3
    MOD.seed_all()


def _masked(x: torch.Tensor) -> torch.Tensor:
    return (x * (torch.rand_like(x) > 0.5)).sum()  # a random mask from the device's generator


def test_activation_checkpointing_recomputes_with_the_same_random_numbers(device):
    x = torch.randn(256, device=device, requires_grad=True)
    MOD.manual_seed(7)
    torch.utils.checkpoint.checkpoint(_masked, x, use_reentrant=False).backward()
    recomputed = x.grad.cpu()
    x.grad = None
    MOD.manual_seed(7)
    _masked(x).backward()
    assert torch.equal(recomputed, x.grad.cpu()) and 0 < int(recomputed.sum()) < 256


def test_device_queries(device):
    props = MOD.get_device_properties(0)
    assert MOD.get_device_name(0) == props.name == "{{ NAME }}"
    assert MOD.get_device_capability(0) == (props.major, props.minor) and props.major >= 1
    assert props.total_memory == MOD.mem_get_info(0)[1] > 0
    dtypes = torch.accelerator.get_device_capability(0)["supported_dtypes"]
    assert {torch.float32, torch.int64, torch.bool} <= dtypes and torch.complex64 not in dtypes
    assert MOD.is_bf16_supported() == (torch.bfloat16 in dtypes) == (torch.float16 in dtypes)
    assert MOD.is_bf16_supported() == (torch.bfloat16 in MOD.get_amp_supported_dtype())


def test_memory_info_counts_what_the_device_library_hands_out(device):
    MOD.empty_cache()
    free, total = torch.accelerator.get_memory_info(0)
    assert (free, total) == MOD.mem_get_info(0) and 0 < free <= total
    x = torch.empty(16 << 20, dtype=torch.float32, device=torch.device(device, 0))  # 64 MiB
    assert torch.accelerator.get_memory_info(0)[0] <= free - (64 << 20)
    assert torch.accelerator.memory_allocated(0) == MOD.memory_allocated(0) >= 64 << 20
    del x
    MOD.empty_cache()
    assert torch.accelerator.get_memory_info(0)[0] == free


def test_pinned_host_memory_is_reported_and_copies(device):
    pinned = torch.arange(6, dtype=torch.float32).pin_memory()
    assert pinned.is_pinned() and pinned[2:].is_pinned() and not torch.ones(3).is_pinned()
    assert pinned.to(device, non_blocking=True).cpu().tolist() == pinned.tolist()
    del pinned
    loader = DataLoader(TensorDataset(torch.arange(8.0)), batch_size=4, pin_memory=True)
    assert all(batch.is_pinned() for (batch,) in loader)


# A program that ends right after a backward on the device: torch's autograd device threads may
# still be freeing its graph, and one that asks for the GIL once Python finalizes aborts the
# process (status -6, now and then, after a run that succeeded). The plugin's exit handler ends
# them first; this handler, registered before torch's import, runs after it and counts them.
EXIT_AFTER_BACKWARD = """
import atexit, os
def autograd_threads():
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            names.append(open(f"/proc/self/task/{tid}/comm").read())
        except OSError:
            pass
    return sum(name.startswith("pt_autograd_") for name in names)
atexit.register(lambda: print("at_finalization", autograd_threads(), flush=True))
import torch
x = torch.ones(64, device="{{ device_type }}", requires_grad=True)
(x * torch.rand_like(x)).sum().backward()
print("after_backward", autograd_threads(), flush=True)
"""


def test_the_autograd_device_threads_end_before_python_finalizes():
    result = run_python(EXIT_AFTER_BACKWARD)
    assert result.returncode == 0, result.stderr[-2000:]
    counts = dict(line.split() for line in result.stdout.splitlines())
    assert int(counts["after_backward"]) >= 1 and counts["at_finalization"] == "0", counts
