"""Kernels against CPU: forward and backward, broadcasting, empty, 0-d, non-contiguous."""

import pytest
import torch
import torch.nn.functional as F

SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((0, 4), (4,)), ((), ()), ((2, 3), ())]


def close(a, b, tol=1e-5):
    torch.testing.assert_close(a.cpu(), b, rtol=tol, atol=tol)


@pytest.mark.parametrize("a_shape,b_shape", SHAPES)
@pytest.mark.parametrize("op", [torch.add, torch.sub, torch.mul, torch.div])
def test_binary_forward_backward(device, op, a_shape, b_shape):
    a, b = torch.randn(a_shape, requires_grad=True), torch.randn(b_shape, requires_grad=True)
    da, db = a.detach().to(device).requires_grad_(), b.detach().to(device).requires_grad_()
    out, dout = op(a, b), op(da, db)
    close(dout, out)
    out.sum().backward()
    dout.sum().backward()
    close(da.grad, a.grad)
    close(db.grad, b.grad)
    assert torch.{{ device_type }}.fallback_counts() == {}


def test_scalars_dtypes_alpha_inplace_out(device):
    x = torch.arange(6).reshape(2, 3)
    d = x.to(device)
    close(d * 2.5, x * 2.5)
    close(d + d, x + x)
    close(d / 4, x / 4)
    close(torch.add(d, d, alpha=3), torch.add(x, x, alpha=3))
    y = torch.randn(3, 4)
    dy = y.to(device)
    close(dy.t() * 2, y.t() * 2)                       # non-contiguous input
    dy.t().add_(1.0)                                   # in place into a view
    close(dy, y.t().add(1.0).t())
    out = torch.empty(0, device=device)
    torch.mul(dy, dy, out=out)
    close(out, (y + 1) * (y + 1))
    close(d == 2, x == 2)
    close(d.eq(d), x.eq(x))
    assert torch.{{ device_type }}.fallback_counts() == {}


def test_reductions_and_argmax(device):
    x = torch.randn(4, 5, 6)
    d = x.to(device)
    close(d.sum(), x.sum(), 1e-4)
    close(d.sum((0, 2), keepdim=True), x.sum((0, 2), keepdim=True), 1e-4)
    close(d.mean(1), x.mean(1))
    close(d.argmax(1), x.argmax(1))
    close(d.argmax(), x.argmax())
    close(torch.arange(5).to(device).sum(), torch.arange(5).sum())
    assert torch.{{ device_type }}.fallback_counts() == {}


@pytest.mark.parametrize("shape", [(2, 3), (4, 10), (1, 1)])
def test_cross_entropy_forward_backward(device, shape):
    logits = torch.randn(shape, requires_grad=True)
    target = torch.randint(0, shape[1], (shape[0],))
    dl = logits.detach().to(device).requires_grad_()
    loss, dloss = F.cross_entropy(logits, target), F.cross_entropy(dl, target.to(device))
    close(dloss, loss)
    loss.backward()
    dloss.backward()
    close(dl.grad, logits.grad)


def test_conv_pool_linear_forward_backward(device):
    x = torch.randn(2, 3, 9, 9, requires_grad=True)
    conv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=1, groups=1)
    lin = torch.nn.Linear(36, 5)  # 4 channels x 3x3 after conv and ceil-mode pooling
    def net(inp, c, l):
        h = F.max_pool2d(F.relu(c(inp)), 2, ceil_mode=True)
        return l(h.flatten(1))
    out = net(x, conv, lin)
    out.sum().backward()
    dx = x.detach().to(device).requires_grad_()
    dconv, dlin = conv.to(device), lin.to(device)
    dconv.zero_grad(), dlin.zero_grad()
    dout = net(dx, dconv, dlin)
    close(dout, out, 1e-4)
    dout.sum().backward()
    close(dx.grad, x.grad, 1e-4)
    assert torch.{{ device_type }}.fallback_counts() == {}


def test_matmul_variants(device):
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    close(torch.bmm(a.to(device), b.to(device)), torch.bmm(a, b), 1e-4)
    close(a[0].to(device) @ b[0].to(device), a[0] @ b[0], 1e-4)
    close(a.to(device).transpose(1, 2)[0].t() @ b[0].to(device), a[0] @ b[0], 1e-4)
    close(torch.mm(torch.empty(3, 0, device=device), torch.empty(0, 2, device=device)), torch.zeros(3, 2))


def test_matmul_out_writes_the_product_in_place(device):
    # torch.compile's extern kernels call mm/addmm with out=: the product goes straight into out
    # (one gemm, no copy after it), unless out shares memory with an operand.
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    a, b, c = torch.randn(5, 3), torch.randn(3, 4), torch.randn(4)
    da, db, dc = a.to(device), b.to(device), c.to(device)
    db_columns = db.t().contiguous().t()  # column-major: gemm reads it transposed, no copy
    mm, addmm = torch.empty(5, 4, device=device), torch.empty(5, 4, device=device)
    with profile(activities=[ProfilerActivity.PrivateUse1]) as prof:
        torch.mm(da, db, out=mm)
        torch.addmm(dc, da, db_columns, beta=0.5, out=addmm)
        torch.{{ device_type }}.synchronize()
    names = [e.name for e in prof.events() if e.device_type == DeviceType.PrivateUse1]
    assert names.count("gemm") == 2 and "strided_copy" not in names, names
    close(mm, a @ b, 1e-5)
    close(addmm, torch.addmm(c, a, b, beta=0.5), 1e-5)
    square = torch.randn(4, 4)
    aliased = square.to(device)
    torch.mm(aliased, aliased, out=aliased)  # out is an operand: computed apart, then stored
    close(aliased, square @ square, 1e-5)
    assert torch.{{ device_type }}.fallback_counts() == {}


def test_copies_between_dtypes_and_layouts(device):
    x = torch.randn(4, 6)
    for dtype in (torch.float64, torch.int32, torch.int64, torch.bool, torch.float16):
        d = x.to(device).to(dtype)
        close(d, x.to(dtype))
        close(d.t().contiguous(), x.to(dtype).t().contiguous())
    close(x.to(device)[:, ::2].cpu(), x[:, ::2])
    assert x.to(device)[1, 2].item() == x[1, 2].item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_group_norm_rounds_half_precision_once(device, dtype):
    """16-bit group norm computed in float32 and rounded once, as on the CPU (torch's composite
    for PrivateUse1 rounded every step: off by an ulp or two in bfloat16)."""
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 6, 5, 3), torch.randn(6), torch.randn(6)
    x, w, b = (t.to(dtype).requires_grad_() for t in (x, w, b))
    dx, dw, db = (t.detach().to(device).requires_grad_() for t in (x, w, b))
    want, got = F.group_norm(x, 3, w, b, 0.5), F.group_norm(dx, 3, dw, db, 0.5)
    if dtype == torch.float32:
        close(got, want)
    else:
        assert torch.equal(got.cpu(), want), (got.cpu().float() - want.float()).abs().max()
    close(F.group_norm(dx, 3), F.group_norm(x, 3), 1e-5 if dtype == torch.float32 else 1e-2)
    want.sum().backward()
    got.sum().backward()
    for d, c in ((dx, x), (dw, w), (db, b)):
        close(d.grad.float(), c.grad.float(), 1e-4 if dtype == torch.float32 else 5e-2)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_sparse_layouts_are_refused_in_one_line(device):
    """The device has strided tensors only: a sparse one is refused naming the op and the layout."""
    for to_device in (lambda: torch.eye(3).to_sparse().to(device), lambda: torch.eye(3, device=device).to_sparse()):
        with pytest.raises(NotImplementedError) as err:
            to_device()
        assert len(str(err.value).splitlines()) == 1 and "has no Sparse tensors" in str(err.value), err.value
    csr = torch.eye(3).to_sparse_csr().to(device)
    with pytest.raises(NotImplementedError, match=r"^aten::\w+.*: {{ device_type }} has no SparseCsr tensors"):
        csr @ torch.ones(3, 2, device=device)


def test_relu_keeps_nan_as_on_the_cpu(device):
    """relu, relu_ and threshold_backward pass NaN through as torch's CPU kernels do (the device's
    plain relu is Paddle's, NaN to 0: LPPool's pow of a negative input with a fractional norm
    lost its NaN there)."""
    x = torch.tensor([float("nan"), -1.0, 0.0, 2.0, float("nan"), -0.5])
    grad = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    for dtype in (torch.float32, torch.float64):
        c, g = x.to(dtype).detach().requires_grad_(), grad.to(dtype)
        d = c.detach().to(device).requires_grad_()
        want, got = torch.relu(c), torch.relu(d)
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)
        torch.testing.assert_close(d.detach().clone().relu_().cpu(), want.detach(), equal_nan=True)
        want.backward(g)
        got.backward(g.to(device))
        torch.testing.assert_close(d.grad.cpu(), c.grad, equal_nan=True)
        backward = torch.ops.aten.threshold_backward
        torch.testing.assert_close(backward(g.to(device), d.detach(), 0).cpu(), backward(g, c.detach(), 0))
    assert torch.{{ device_type }}.fallback_counts() == {}


@pytest.mark.parametrize("memory_format", [torch.channels_last, torch.channels_last_3d])
def test_elementwise_results_keep_channels_last(device, memory_format):
    """Element-wise results keep a channels_last input's layout as on the CPU (they came back
    contiguous: torch's Dropout2d/Dropout3d tests on channels_last input failed), with its values."""
    torch.manual_seed(0)
    shape = (2, 3, 4, 5) if memory_format == torch.channels_last else (2, 3, 2, 4, 5)
    x = torch.randn(shape).to(memory_format=memory_format)
    bias, other = torch.randn(3, *[1] * (len(shape) - 2)), torch.randn(shape)
    cases = {
        "add": lambda t, b, o: t + t,
        "mul broadcast": lambda t, b, o: t * b,
        "add broadcast first": lambda t, b, o: b + t,
        "mul scalar": lambda t, b, o: t * 2.5,
        "sub contiguous": lambda t, b, o: t - o,
        "div_": lambda t, b, o: t.clone().div_(b),
        "eq": lambda t, b, o: t == t,
        "relu": lambda t, b, o: torch.relu(t),
        "relu_": lambda t, b, o: t.clone().relu_(),
        "sigmoid": lambda t, b, o: torch.sigmoid(t),
        "neg": lambda t, b, o: -t,
    }
    d = x.to(device)
    assert d.is_contiguous(memory_format=memory_format)
    for name, op in cases.items():
        want, got = op(x, bias, other), op(d, bias.to(device), other.to(device))
        assert got.stride() == want.stride(), (name, got.stride(), want.stride())
        close(got, want)
    dropout = torch.nn.Dropout2d(0.5) if memory_format == torch.channels_last else torch.nn.Dropout3d(0.5)
    got = dropout(d)
    assert got.stride() == x.stride()
    kept, zeroed = ((got.cpu() == v).flatten(2).all(2) for v in (2 * x, 0))
    assert (kept | zeroed).all()  # whole channels, each kept (scaled by 1 / (1 - p)) or zeroed


def test_elementwise_results_of_strided_views_take_the_cpus_layout(device):
    """A view that is not dense (every other column of a channels_last tensor, a permutation):
    torch's CPU lays the result out in the order of the view's strides; the device's copies it so
    too (torch's own test_dropout: Dropout3d on such a 4-D view is its 5-D unsqueeze)."""
    base = torch.randn(2, 3, 3, 6).to(memory_format=torch.channels_last)
    views = {
        "channels_last, every other column": lambda t: t[..., ::2],
        "its 5-D unsqueeze": lambda t: t[..., ::2].unsqueeze(0),
        "permuted, every other column": lambda t: t.permute(3, 1, 0, 2)[::2],
    }
    for name, view in views.items():
        x, d = view(base), view(base.to(device))
        for op_name, op in {"mul": lambda t: t * 2.0, "add": lambda t: t + t, "relu": torch.relu}.items():
            want, got = op(x), op(d)
            assert got.stride() == want.stride(), (name, op_name, got.stride(), want.stride())
            close(got, want)
    got = torch.nn.Dropout3d(1e-10)(views["channels_last, every other column"](base.to(device)))
    assert got.is_contiguous(memory_format=torch.channels_last)


def test_ihfft_out_is_written_though_the_cpus_out_is_not(device):
    """torch 2.13's own CPU fft.ihfft2/ihfftn with out= leave `out` unwritten for some arguments, and
    the CPU fallback inherited that; the device's out= forms store the functional result."""
    x = torch.randn(5, 6, 7)
    for fn, kwargs in ((torch.fft.ihfft2, {"dim": 0}), (torch.fft.ihfftn, {"s": (8,)}), (torch.fft.ihfftn, {})):
        want = fn(x, **kwargs)
        out = torch.zeros_like(want, device=device)
        fn(x.to(device), **kwargs, out=out)
        close(out, want)
