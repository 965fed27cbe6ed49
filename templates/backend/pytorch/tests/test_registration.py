"""Registration, autoload, build info, the version-mismatch message, memory accounting."""

import pytest
import torch
import torch_{{ p }}
from conftest import run_python
from torch_{{ p }} import _build_info


def test_import_torch_alone_loads_the_device():
    r = run_python("import torch; print(torch.tensor([1, 2, 3], device='{{ device_type }}').cpu().tolist())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1, 2, 3]"


def test_module_api(device):
    mod = torch.{{ device_type }}
    assert mod.is_available() and mod.device_count() >= 1 and mod.current_device() == 0
    mod.set_device(0)
    mod.synchronize()
    mod.manual_seed(3)
    a = torch.empty(8, device=device).uniform_()
    mod.manual_seed_all(3)
    b = torch.empty(8, device=device).uniform_()
    assert torch.equal(a.cpu(), b.cpu())
    s = mod.Stream()
    e = mod.Event()
    e.record(s)
    e.synchronize()
    assert e.query() and s.query()
    assert mod.current_stream().device.type == device
    assert "aten::add.Tensor" in mod.registered_kernels()


def test_build_info_matches_installed_torch():
    assert _build_info.TORCH_VERSION == torch.__version__.split("+")[0]
    assert _build_info.CXX11_ABI in (0, 1)
    assert torch.ops.{{ p }}.build_info() == (
        f"{{ p }}-torch-build: torch={_build_info.TORCH_VERSION} cxx11_abi={_build_info.CXX11_ABI} "
        f"plugin={_build_info.PLUGIN_VERSION}")


def test_version_mismatch_message():
    with pytest.raises(RuntimeError) as info:
        torch_{{ p }}.check_torch_version("1.0.0+cpu")
    msg = str(info.value)
    for part in (f"torch-{{ p }} {_build_info.PLUGIN_VERSION}", f"built for torch {_build_info.TORCH_VERSION}",
                 "torch 1.0.0+cpu", f"pip install torch=={_build_info.TORCH_VERSION}", "devkit build --framework torch"):
        assert part in msg
    torch_{{ p }}.check_torch_version(torch.__version__)  # the installed one passes


def test_memory_accounting(device):
    mod = torch.{{ device_type }}
    before = mod.memory_allocated()
    mod.reset_peak_memory_stats()
    x = torch.empty(1 << 20, dtype=torch.float32, device=device)
    assert mod.memory_allocated() - before >= 4 << 20
    del x
    assert mod.memory_allocated() == before
    assert mod.max_memory_allocated() >= before + (4 << 20)
