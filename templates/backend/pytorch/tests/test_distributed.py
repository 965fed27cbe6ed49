"""The c10d backend "{{ p }}ccl": registered for the device, and its collectives in one process
(a group of one rank; `devkit verify --distributed 2` runs two ranks under torchrun)."""

import torch
import torch.distributed as dist
from conftest import run_python


def test_backend_is_registered_for_the_device():
    assert "{{ p }}ccl" in dist.Backend.backend_list
    assert dist.Backend.default_device_backend_map["{{ device_type }}"] == "{{ p }}ccl"


def test_collectives_of_a_one_rank_group(tmp_path):
    code = f"""
import torch, torch.distributed as dist
store = dist.FileStore({str(tmp_path / "store")!r}, 1)
dist.init_process_group(backend="{{ p }}ccl", store=store, rank=0, world_size=1)
x = torch.arange(6, dtype=torch.float32, device="{{ device_type }}")
dist.all_reduce(x, op=dist.ReduceOp.MAX)
out = [torch.empty(6, device="{{ device_type }}")]
dist.all_gather(out, x * 2)
cpu = torch.ones(3, dtype=torch.int64)
dist.broadcast(cpu, src=0)  # a CPU tensor: staged through the device
dist.barrier()
print(dist.group.WORLD.name(), x.cpu().tolist(), out[0].cpu().tolist(), cpu.tolist())
dist.destroy_process_group()
"""
    r = run_python(code)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[-2] == (
        "{{ p }}ccl [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] [0.0, 2.0, 4.0, 6.0, 8.0, 10.0] [1, 1, 1]"
    )
