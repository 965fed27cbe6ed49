"""torch.accelerator.Graph on the device: a capture records what the current stream queues, a
replay queues it again as one item that reads the static inputs' current values, and what the
capture allocated stays the graph's (a replay writes into it) until the graph is reset."""

import gc
import warnings

import pytest
import torch

mod = torch.{{ device_type }}
if not hasattr(torch.accelerator, "Graph"):
    pytest.skip(f"torch {torch.__version__} has no torch.accelerator.Graph (torch 2.13 added it)", allow_module_level=True)


def capture_refusal() -> str:
    """Why capture_begin() refuses on this device ("": it captures). A device library without
    stream capture (an SDK flavour may stub it) is refused in one line naming the missing feature."""
    graph = torch.accelerator.Graph()
    with torch.Stream():
        try:
            graph.capture_begin()
        except RuntimeError as error:
            return str(error)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (an empty graph)
            graph.capture_end()
    return ""


REFUSAL = capture_refusal()
needs_capture = pytest.mark.skipif(bool(REFUSAL), reason=f"no graph capture on this device: {REFUSAL}")


@pytest.fixture(autouse=True)
def release_graphs():
    """Graphs a test left in reference cycles (pytest.raises keeps the frame) give their private
    pools back before the next test counts memory. Only what the test made is collected: what was
    there before is frozen (gc.freeze), or each collection would walk the ~440,000 objects torch,
    Dynamo and Inductor hold, seconds apiece."""
    gc.freeze()
    yield
    gc.collect()
    gc.unfreeze()


def capture(fn, graph=None):
    """fn() captured on a side stream, as torch.cuda.graph does; returns (graph, its output)."""
    graph = graph if graph is not None else torch.accelerator.Graph()
    side = torch.Stream()
    side.wait_stream(torch.accelerator.current_stream())
    with side, graph:
        out = fn()
    torch.accelerator.current_stream().wait_stream(side)
    return graph, out


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert len(message.strip().splitlines()) == 1, message
    return message


def test_capture_begins_or_names_the_missing_device_feature_in_one_line():
{% if not sdk_flavour %}    assert REFUSAL == ""  # the built-in device library captures
{% endif %}    if REFUSAL:
        assert REFUSAL.startswith("{{ device_type }} graph capture is unavailable: this device library does not implement stream capture"), REFUSAL
        assert len(REFUSAL.strip().splitlines()) == 1, REFUSAL


@needs_capture
def test_a_replayed_mlp_forward_matches_eager_bit_for_bit(device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(device)
    static_x = torch.randn(32, 64).to(device)
    with torch.no_grad():
        graph, static_y = capture(lambda: model(static_x))
        replayed = []
        for seed in range(3):
            x = torch.randn(32, 64, generator=torch.Generator().manual_seed(seed))
            static_x.copy_(x.to(device))
            graph.replay()
            eager = model(x.to(device)).cpu()
            assert torch.equal(static_y.cpu(), eager), seed
            replayed.append(eager)
    assert not torch.equal(replayed[0], replayed[1])  # each replay read the new input


@needs_capture
def test_capture_on_the_default_stream_is_refused_in_one_line(device):
    graph = torch.accelerator.Graph()
    with pytest.raises(RuntimeError, match="non-default stream") as error:
        graph.capture_begin()
    one_line(error)
    x = torch.ones(8, device=device)
    graph, out = capture(lambda: x + 1, graph)  # the refusal left nothing behind
    graph.replay()
    assert torch.equal(out.cpu(), torch.full((8,), 2.0))


@needs_capture
def test_what_the_capture_allocated_stays_the_graphs(device):
    static_x = torch.ones(4096, device=device)
    graph, out = capture(lambda: static_x * 2 + 1)  # static_x * 2: freed inside the capture
    others = [torch.full((4096,), 7.0, device=device) for _ in range(4)]  # not from the graph's blocks
    static_x.fill_(3.0)
    graph.replay()
    assert torch.equal(out.cpu(), torch.full((4096,), 7.0))
    assert all(torch.equal(o.cpu(), torch.full((4096,), 7.0)) for o in others), "a replay wrote into another tensor"
    mod.empty_cache()  # gives cached blocks back to the device library, none of the graph's
    static_x.fill_(0.0)
    graph.replay()  # (the device library refuses a replay into freed memory)
    assert torch.equal(out.cpu(), torch.ones(4096))


@needs_capture
def test_reset_gives_the_graphs_memory_back(device):
    static_x = torch.ones(1 << 16, device=device)
    mod.empty_cache()
    reserved = mod.memory_reserved()
    graph, out = capture(lambda: static_x * 2 + 1)
    held = mod.memory_reserved()
    assert held >= reserved + 2 * static_x.nbytes  # the temporary and the output (and the scalars)
    mod.empty_cache()
    assert mod.memory_reserved() == held  # the graph's: not the cache's to give back
    graph.reset()
    assert mod.memory_reserved() == reserved + static_x.nbytes  # the output's block: the tensor holds it
    del out
    assert mod.memory_reserved() == reserved
    with pytest.raises(RuntimeError, match="without a capture") as error:
        graph.replay()
    one_line(error)


@needs_capture
def test_a_replay_into_a_freed_input_fails_naming_the_allocation(device):
    static_x = torch.ones(4096, device=device)
    graph, out = capture(lambda: static_x * 2)
    del static_x
    mod.empty_cache()  # the input's block goes back to the device library
    with pytest.raises(RuntimeError, match=r"node \d+ .*16384-byte allocation at 0x[0-9a-f]+ .*freed since the capture"):
        graph.replay()


@needs_capture
@pytest.mark.filterwarnings("ignore:the captured .* graph is empty")
def test_a_block_another_stream_used_waits_while_that_stream_captures(device):
    """The allocator cannot ask a capturing stream whether it has run its reads of a freed block:
    the block stays unused until the capture ends."""
    side = torch.Stream()
    x = torch.ones(1 << 16, device=device)
    ptr = x.data_ptr()
    side.wait_stream(torch.accelerator.current_stream())
    with side:
        doubled = [x * 2 for _ in range(20)]  # queued on the side stream, reading x
    x.record_stream(side)
    del x
    graph = torch.accelerator.Graph()
    with side:
        graph.capture_begin()
    try:
        assert torch.full((1 << 16,), 7.0, device=device).data_ptr() != ptr
    finally:
        with side:
            graph.capture_end()
    mod.synchronize()
    assert all(torch.equal(d.cpu(), torch.full((1 << 16,), 2.0)) for d in doubled)


@needs_capture
def test_graphs_share_a_pool_and_replay_in_capture_order(device):
    x = torch.arange(1024, dtype=torch.float32, device=device)
    first, doubled = capture(lambda: x * 2)
    second, plus_one = capture(lambda: doubled + 1, torch.accelerator.Graph(keep_graph=True, pool=first.pool()))
    assert second.pool() == first.pool()
    x.copy_(torch.full((1024,), 5.0).to(device))
    first.replay()
    second.replay()  # keep_graph: instantiated here
    assert torch.equal(plus_one.cpu(), torch.full((1024,), 11.0))


@needs_capture
def test_a_host_synchronising_call_in_a_capture_is_refused_in_one_line(device):
    x = torch.ones(8, device=device)
    graph = torch.accelerator.Graph()
    with torch.Stream():
        graph.capture_begin()
        try:
            with pytest.raises(RuntimeError, match="captur") as error:
                (x * 2).cpu()
        finally:
            graph.capture_end()
    one_line(error)
    assert torch.equal((x * 2).cpu(), torch.full((8,), 2.0))  # the stream runs eagerly again


@needs_capture
@pytest.mark.filterwarnings("ignore:the captured .* graph is empty")
def test_random_numbers_are_refused_in_a_capture(device):
    """Their seed is drawn when captured: every replay would repeat the same numbers."""
    out = torch.empty(16, device=device)
    graph = torch.accelerator.Graph()
    with torch.Stream():
        graph.capture_begin()
        try:
            with pytest.raises(RuntimeError, match="repeat on every replay") as error:
                out.uniform_()
        finally:
            graph.capture_end()
    one_line(error)
