"""How a quantized model's check reads its parts: the QDQ ops in a saved program (as Paddle 3.3.1
writes its JSON), and the levels' verdicts from the placement and the simulation."""

from __future__ import annotations

import json

from devkit.payload import quant_model

FOLDED = {"on_device": {"conv2d": 2, "matmul": 3}, "host_shape_ops": {"full_int_array": 2}, "cpu_fallback": {}}
EXACT = {"max_abs_diff": 0.0, "mean_abs_diff": 0.0, "top1_agree": True, "output_range": 4.9}


def test_qdq_ops_are_counted_by_their_op_name_not_where_the_words_appear(tmp_path):
    ops = [{"#": "1.quantize_linear"}, {"#": "1.dequantize_linear"}, {"#": "1.dequantize_linear"}]
    ops.append({"#": "1.conv2d", "A": [{"N": "name", "AT": {"D": "quantize_linear"}}]})  # an attribute, not an op
    program = tmp_path / "model.json"
    program.write_text(json.dumps({"program": {"regions": [{"blocks": [{"ops": ops}]}]}}, separators=(",", ":")))
    assert quant_model.qdq_counts(program) == {"quantize_linear": 1, "dequantize_linear": 2}
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"ops": [{"#": "1.conv2d"}]}))
    assert quant_model.qdq_counts(plain) == {"quantize_linear": 0, "dequantize_linear": 0}


def test_both_levels_pass_when_folded_on_the_device_and_the_simulation_agrees():
    record = quant_model.levels({"quantize_linear": 9, "dequantize_linear": 9}, FOLDED, True, EXACT, 1e-4)
    assert all(level["passed"] for level in record["levels"].values())
    assert record["levels"]["0"]["detail"].startswith("level 0 (deployment)")


def test_level_0_fails_when_qdq_ops_reached_the_kernels():
    unfolded = {**FOLDED, "on_device": {**FOLDED["on_device"], "dequantize_linear": 9}}
    level0 = quant_model.levels({}, unfolded, True, EXACT, 1e-4)["levels"]["0"]
    assert not level0["passed"] and "dequantize_linear left in the program" in level0["detail"]
    fell_back = quant_model.levels({}, {**FOLDED, "cpu_fallback": {"conv2d": 1}}, True, EXACT, 1e-4)
    assert not fell_back["levels"]["0"]["passed"]


def test_level_1_fails_beyond_the_relative_bound_or_on_another_class_and_is_not_run_for_a_saved_model():
    off = {**EXACT, "max_abs_diff": 1e-3}  # 1e-3 > 1e-4 x 4.9
    assert not quant_model.levels({}, FOLDED, True, off, 1e-4)["levels"]["1"]["passed"]
    wrong_class = {**EXACT, "top1_agree": False}
    assert not quant_model.levels({}, FOLDED, True, wrong_class, 1e-4)["levels"]["1"]["passed"]
    saved = quant_model.levels({}, FOLDED, True, None, 1e-4)["levels"]["1"]
    assert saved["not_run"] and not saved["passed"] and "not counted as passed" in saved["detail"]
