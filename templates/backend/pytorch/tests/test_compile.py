"""torch.compile with its default backend (Inductor) on the device: the seam in torch_{{ p }}/_inductor.py."""

import re

import pytest
import torch
from conftest import run_python
from torch._inductor.utils import run_and_get_code


def f(x, y):
    return torch.relu(x * 2 + y).sum(dim=1) / 3

{% if compiled_kernels %}

def test_compiled_kernels_are_launched_on_the_device_queue(device):
    x, y = torch.randn(6, 5), torch.randn(6, 5)
    out, code = run_and_get_code(torch.compile(f), x.to(device), y.to(device))
    torch.testing.assert_close(out.cpu(), f(x, y), rtol=1e-5, atol=1e-6)
    kernels = re.findall(r"^(\w+) = async_compile\.cpp_pybinding\(", code[0], re.M)
    assert kernels, code[0]
    for kernel in kernels:  # launched through the device library, never called on the host
        assert re.search(rf"{{ p }}_launch\({kernel}, ", code[0]), code[0]
        assert not re.search(rf"^\s*{kernel}\(", code[0], re.M), code[0]
    assert torch.{{ device_type }}.fallback_counts() == {}


def test_device_kernels_run_on_one_thread_and_cpu_kernels_keep_theirs(device):
    # The device runs a kernel on its stream's worker: no OpenMP team taking the host's cores.
    # Inductor's CPU kernels keep their threads (the same function compiled for the CPU).
    x, y = torch.randn(256, 4096), torch.randn(256, 4096)
    torch._dynamo.reset()
    _, on_device = run_and_get_code(torch.compile(f), x.to(device), y.to(device))
    assert "cpp_pybinding" in on_device[0] and "#pragma omp parallel" not in on_device[0], on_device[0]
    if torch.get_num_threads() > 1:
        torch._dynamo.reset()
        _, on_cpu = run_and_get_code(torch.compile(f), x, y)
        assert "#pragma omp parallel" in on_cpu[0], on_cpu[0]


def test_max_pooling_runs_the_devices_kernels_from_the_first_compile():
    # Inductor's own pooling loops are many times slower than the device's kernels (LeNet's
    # compiled step lost to eager): on the device, forward and backward call the aten ops. A fresh
    # process with Inductor's caches off compiles before the adapter's _inductor.py is imported:
    # the first graph already keeps them. The CPU's compiles keep Inductor's loops.
    code = """
import torch
from torch._inductor.utils import run_and_get_code
def step(x):
    torch.nn.functional.max_pool2d(torch.relu(x * 2), 2).sum().backward()
    return x.grad
x = torch.randn(2, 3, 8, 8)
want = step(x.clone().requires_grad_())
dev = x.to("{{ device_type }}").requires_grad_()
got, code = run_and_get_code(torch.compile(step), dev)
torch.testing.assert_close(got.cpu(), want)
assert "aten.max_pool2d_with_indices.default(" in code[0] and "max_pool2d_with_indices_backward.default(" in code[1], code
assert torch.{{ device_type }}.fallback_counts() == {}
from torch._inductor.decomposition import select_decomp_table
from torch._subclasses.fake_tensor import FakeTensorMode
decompose = select_decomp_table()[torch.ops.aten.max_pool2d_with_indices.default]
with FakeTensorMode():  # what AOT autograd traces with: Inductor's decomposition for the CPU
    assert decompose(torch.empty(1, 1, 4, 4), [2, 2]) is not NotImplemented
    assert decompose(torch.empty(1, 1, 4, 4, device="{{ device_type }}"), [2, 2]) is NotImplemented
print("ok")
"""
    result = run_python(code, TORCHINDUCTOR_AUTOGRAD_CACHE="0", TORCHINDUCTOR_FX_GRAPH_CACHE="0")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr[-3000:]


def test_launch_takes_only_kernels_the_adapter_loaded(device):
    # launch_kernel takes a handle load_kernel gave out, never an address: an unknown handle, a
    # module that is no compiled kernel and arguments that are not the kernel's are refused.
    x, y = torch.randn(6, 5, device=device), torch.randn(6, 5, device=device)
    torch.compile(f)(x, y)
    with pytest.raises(RuntimeError, match=r"launch_kernel: 4660 \(for k\) is no kernel handle load_kernel gave out"):
        torch.ops.{{ p }}.launch_kernel(0x1234, "k", 0, "b", [x], [], [])
    with pytest.raises(RuntimeError, match=r"is no kernel torch.compile generated for {{ device_type }}"):
        torch.ops.{{ p }}.load_kernel(torch._C.__file__)
    from torch_{{ p }} import _inductor

    handle = next(iter(_inductor._handles.values()))  # a kernel the compile above loaded
    with pytest.raises(RuntimeError, match=r"takes arguments of kinds '\w+', not 'b'"):
        torch.ops.{{ p }}.launch_kernel(handle, "k", 0, "b", [x], [], [])
    torch.{{ device_type }}.synchronize()
    torch.testing.assert_close(torch.compile(f)(x, y).cpu(), f(x.cpu(), y.cpu()), rtol=1e-5, atol=1e-6)


def test_training_step_on_the_second_card_matches_cpu():
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    dev = torch.device("{{ device_type }}", torch.{{ device_type }}.device_count() - 1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model.load_state_dict(cpu.state_dict())
    model.to(dev)
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    # Adam's step compiled too: its kernels on the card read the step count, a zero-dim CPU tensor
    cpu_adam, adam = torch.optim.Adam(cpu.parameters()), torch.optim.Adam(model.parameters())
    compiled = (torch.compile(model), (x.to(dev), y.to(dev)), torch.compile(adam.step))
    for m, inputs, update in ((cpu, (x, y), cpu_adam.step), compiled):
        loss = torch.nn.functional.mse_loss(m(inputs[0]), inputs[1])
        loss.backward()
        update()
    for a, b in zip(cpu.parameters(), model.parameters()):
        torch.testing.assert_close(b.grad.cpu(), a.grad, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(b.detach().cpu(), a.detach(), rtol=1e-5, atol=1e-6)


def test_cpp_wrapper_is_refused_in_one_line(device):
    with pytest.raises(Exception, match="cpp_wrapper and AOTInductor .* are not supported on {{ device_type }}"):
        torch.compile(f, options={"cpp_wrapper": True})(torch.ones(2, 2, device=device), torch.ones(2, 2, device=device))


def test_a_host_dereference_in_a_generated_wrapper_faults_naming_the_allocation():
    # The generated Python with one launch replaced by a direct call: the host runs the kernel on
    # device memory, which it cannot read. The device library's fault handler names the address
    # and its allocation, and the process ends.
    code = """
import re, torch
from torch._inductor.codecache import PyCodeCache
from torch._inductor.utils import run_and_get_code
f = lambda x: torch.relu(x * 2)
x = torch.randn(1000, device="{{ device_type }}")
_, code = run_and_get_code(torch.compile(f), x)
host = re.sub(r"{{ p }}_launch\\((\\w+), '\\w+', \\w+, '\\w*', \\[(.*)\\], \\[\\], \\[\\]\\)", r"\\1(\\2)", code[0])
assert host != code[0]
PyCodeCache.load(host).call([x])
torch.{{ device_type }}.synchronize()
print("no fault")
"""
    result = run_python(code)
    assert result.returncode != 0 and "no fault" not in result.stdout, result.stdout + result.stderr
    fault = [line for line in result.stderr.splitlines() if "host access to device memory" in line]
    assert len(fault) == 1 and re.search(r"byte \d+ of the \d+-byte allocation at 0x", fault[0]), result.stderr
{% else %}

def test_inductor_is_refused_in_one_line_by_this_flavour(device):
    # This device library cannot launch compiled kernels: Inductor says so, and names the fallback.
    with pytest.raises(Exception, match='cannot launch compiled kernels: compile with torch.compile\\(model, backend="aot_eager"\\)'):
        torch.compile(f)(torch.ones(2, 2, device=device), torch.ones(2, 2, device=device))
    out = torch.compile(f, backend="aot_eager")(torch.ones(2, 2, device=device), torch.ones(2, 2, device=device))
    torch.testing.assert_close(out.cpu(), f(torch.ones(2, 2), torch.ones(2, 2)))
{% endif %}
