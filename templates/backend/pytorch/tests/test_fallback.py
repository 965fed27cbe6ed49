"""The CPU fallback: it works and counts, strict mode refuses, FALLBACK_OPS removes kernels."""

import torch
from conftest import run_python


def test_fallback_runs_on_cpu_and_counts(device):
    x = torch.randn(10)
    d = torch.cumsum(x.to(device), 0)
    assert d.device.type == device
    torch.testing.assert_close(d.cpu(), torch.cumsum(x, 0))
    assert torch.{{ device_type }}.fallback_counts().get("aten::cumsum.out", 0) + \
        torch.{{ device_type }}.fallback_counts().get("aten::cumsum", 0) >= 1
    torch.{{ device_type }}.reset_fallback_counts()
    assert torch.{{ device_type }}.fallback_counts() == {}


def test_an_in_place_fallback_on_a_transposed_view_keeps_the_gradients(device):
    # exp_ has no kernel: the CPU fallback writes its result back into the view, whose base must
    # keep the layout autograd recorded (the gradient goes through the saved result)
    x, upstream = torch.randn(4, 3), torch.randn(3, 4)
    grads = []
    for where in ("cpu", device):
        leaf = x.clone().to(where).requires_grad_(True)
        leaf.clone().t().exp_().backward(upstream.to(where))
        grads.append(leaf.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


def test_strict_fallback_names_the_op():
    r = run_python("import torch; torch.sort(torch.ones(3, device='{{ device_type }}'))", {{ NAME }}_STRICT_FALLBACK="1")
    assert r.returncode != 0
    assert "op aten::sort" in r.stderr and "{{ NAME }}_STRICT_FALLBACK=1 forbids the CPU fallback" in r.stderr


def test_strict_fallback_is_lifted_for_a_block_only():
    r = run_python(
        "import torch\n"
        "x = torch.ones(3, device='{{ device_type }}')\n"
        "with torch.{{ device_type }}.strict_fallback(False):\n"
        "    print(torch.cumsum(x, 0).cpu().tolist())\n"
        "try:\n"
        "    torch.cumsum(x, 0)\n"
        "except RuntimeError as exc:\n"
        "    print('refused' if 'forbids the CPU fallback' in str(exc) else exc)\n",
        {{ NAME }}_STRICT_FALLBACK="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[1.0, 2.0, 3.0]", "refused"]


def test_fallback_ops_unregisters_kernels():
    r = run_python(
        "import torch\n"
        "x = torch.ones(3, device='{{ device_type }}')\n"
        "print((x + x).cpu().tolist())\n"
        "print(torch.{{ device_type }}.fallback_counts())\n"
        "print('aten::add.Tensor' in torch.{{ device_type }}.registered_kernels())",
        # add.Tensor alone would still reach our add.out kernel (structured ops delegate)
        {{ NAME }}_FALLBACK_OPS=r"aten::add\..*,mul\.Tensor")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "[2.0, 2.0, 2.0]"
    assert "'aten::add." in lines[1]
    assert lines[2] == "False"
    assert "not registering aten::add.Tensor, aten::add.out, aten::mul.Tensor" in r.stderr
