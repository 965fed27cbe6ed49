"""Graph capture and replay on {{ device_type }} through Paddle's public API,
paddle.device.cuda.graphs.CUDAGraph(place=paddle.CustomPlace(...)): Paddle 3.3.1's custom-device
CUDAGraph calls the plugin's capture slots (before them, "The Custom Device blas handle is
nullptr"). A graph is reset before the interpreter exits: Paddle clears its devices at exit
before it destroys a live graph, which then aborts."""

import numpy as np
import paddle
import pytest
from paddle.device.cuda.graphs import CUDAGraph


@pytest.fixture
def graph():
    paddle.set_device("{{ device_type }}:0")
    g = CUDAGraph(place=paddle.CustomPlace("{{ device_type }}", 0))
    yield g
    if g._graph is not None:  # (a capture that ended: Paddle's CUDAGraph says so in no public attribute)
        g.reset()


def begin_capture(graph):
{%- if sdk_flavour %}
    try:
        graph.capture_begin()
    except OSError:  # this flavour's device library does not capture: refused before Paddle's state changed
        assert float((paddle.ones([2]) + 1).sum()) == 4.0
        pytest.skip("the device library does not capture graphs")
{%- else %}
    graph.capture_begin()
{%- endif %}


def test_a_replayed_lenet_forward_matches_eager_bit_for_bit(graph):
    paddle.seed(0)
    model = paddle.vision.models.LeNet()
    model.eval()
    batches = [np.random.default_rng(seed).standard_normal((4, 1, 28, 28), dtype="float32") for seed in range(3)]
    x = paddle.to_tensor(batches[0])
    with paddle.no_grad():
        model(x)  # (warm-up: what an op does once, such as choosing its kernel, stays out of the graph)
        begin_capture(graph)
        out = model(x)
        graph.capture_end()
        eager = [model(paddle.to_tensor(b)).numpy() for b in batches]
        for batch, expected in zip(batches, eager):
            paddle.assign(paddle.to_tensor(batch), x)  # new input, in the captured input's memory
            graph.replay()
            np.testing.assert_array_equal(out.numpy(), expected)


def test_a_call_the_graph_cannot_replay_is_refused_while_it_captures(graph, capfd):
    x = paddle.ones([4, 4])
    begin_capture(graph)
    y = x @ x
    with pytest.raises(OSError):
        y.numpy()  # the host would wait for work that is only recorded
    assert "is capturing a graph" in capfd.readouterr().err
    graph.capture_end()
    graph.replay()
    assert float(y.sum()) == 64.0


def test_a_random_op_is_refused_while_it_captures(graph):
    x = paddle.ones([1000])
    begin_capture(graph)
    try:
        # its seed would be drawn once, now: every replay would drop the same elements
        with pytest.raises(RuntimeError, match="would repeat on every replay"):
            paddle.nn.functional.dropout(x, 0.5)
        with pytest.raises(RuntimeError, match="would repeat on every replay"):
            paddle.rand([4])
    finally:
        graph.capture_end()


def test_printing_a_graph_as_dot_files_is_refused_in_words(graph, tmp_path, capfd):
    x = paddle.ones([4, 4])
    begin_capture(graph)
    x @ x
    graph.capture_end()
    with pytest.raises(OSError):  # (without the slot Paddle wrote nothing and said nothing)
        graph.print_to_dot_files(str(tmp_path))
    assert "names no graph nodes (this graph has 1)" in capfd.readouterr().err
