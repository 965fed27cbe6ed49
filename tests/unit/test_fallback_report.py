"""The fallback report's reading of Paddle's kernel-choice log and the device library's op dump:
where each kernel ran, by dtype, and what mixed precision must have run on the device. The lines
are in the form Paddle 3.3.1 and the device library print them."""

from __future__ import annotations

from conftest import payload_module

fallback_report = payload_module("paddle", "fallback_report")

LOG = """\
I1126 17:49:53.1 1 api.cc:100] conv2d API kernel key: [stpu, NCHW, float16]
I1126 17:49:53.1 1 api.cc:101] conv2d kernel: {"input":[
I1126 17:49:53.2 1 api.cc:100] relu API kernel key: [stpu, NCHW, float32]
I1126 17:49:53.2 1 api.cc:101] relu kernel: {"input":[
I1126 17:49:53.3 1 api.cc:100] full_ API kernel key: [CPU, NCHW, float32]
I1126 17:49:53.3 1 api.cc:101] full_ kernel: {"input":[
I1126 17:49:53.4 1 api.cc:100] matmul API kernel key: [stpu, NCHW, float16]
I1126 17:49:53.4 1 kernel_factory.cc:3] missing stpu kernel: matmul, expected_kernel_key:..., fallbacking to CPU one!
I1126 17:49:53.4 1 api.cc:101] matmul kernel: {"input":[
I1126 17:49:53.5 1 backward_api_base.cc:9] conv2d_grad API kernel key: [stpu, NCHW, float16]
I1126 17:49:53.5 1 backward_api_base.cc:9] conv2d_grad kernel: {"input":[
[STPU] conv2d: conv2d_forward
[STPU] check_finite_and_unscale: fill
[STPU] check_finite_and_unscale: check_finite_and_unscale
[OTHER] matmul: gemm
"""


def test_placements_are_counted_by_kernel_and_by_the_dtype_of_its_key():
    placements, by_dtype = fallback_report.parse(LOG.splitlines(), "stpu")
    assert placements["conv2d"]["device"] == 1 and placements["matmul"]["cpu_fallback"] == 1
    assert placements["full_"]["cpu_inputs"] == 1 and placements["relu"]["device"] == 1
    assert by_dtype["conv2d"]["float16"]["device"] == 1 and by_dtype["relu"]["float32"]["device"] == 1
    assert by_dtype["matmul"]["float16"]["cpu_fallback"] == 1 and not by_dtype["matmul"]["float16"]["device"]


def test_the_op_dump_names_what_reached_the_device_library_for_its_own_prefix_only():
    ops = fallback_report.device_library_ops(LOG.splitlines(), "STPU")
    assert ops == {"check_finite_and_unscale": ["check_finite_and_unscale", "fill"], "conv2d": ["conv2d_forward"]}


def test_mixed_precision_names_what_did_not_run_in_float16_on_the_device():
    _, by_dtype = fallback_report.parse(LOG.splitlines(), "stpu")
    library_ops = fallback_report.device_library_ops(LOG.splitlines(), "STPU")
    problems = fallback_report.amp_problems(by_dtype, library_ops, "mnist")
    # matmul fell back and neither grad of matmul ran; conv2d and its grad ran in float16 on the device
    assert problems == [
        "matmul did not run in float16 on the device",
        "matmul_grad did not run in float16 on the device",
    ]
    assert set(by_dtype) == {"conv2d", "relu", "full_", "matmul", "conv2d_grad"}  # (asking added nothing)
    assert "the GradScaler's check_finite_and_unscale never reached the device library" in fallback_report.amp_problems(
        by_dtype, {}, "mnist"
    )
    # each model's GEMMs: the transformer has no convolution to ask for
    assert fallback_report.amp_problems(by_dtype, library_ops, "transformer") == problems
    assert fallback_report.amp_problems(by_dtype, library_ops, "resnet_bn") == problems
