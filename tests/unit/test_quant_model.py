"""How a quantized model's check reads its parts: the QDQ ops in a saved program (as Paddle 3.3.1
writes its JSON), and the levels' verdicts from the placement and the simulation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import payload_module

quant_engine, quant_model = payload_module("paddle", "quant_engine"), payload_module("paddle", "quant_model")
quant_program, int8_compare = payload_module("shared", "quant_program"), payload_module("numeric", "int8_compare")

NO_ENGINE = {"passed": False, "not_run": True, "detail": "level 2 (int8 engine): not run"}
FOLDED = {"on_device": {"conv2d": 2, "matmul": 3}, "host_shape_ops": {"full_int_array": 2}, "cpu_fallback": {}}
QDQ, AXES = {"quantize_linear": 9, "dequantize_linear": 9}, {"-1": 5, "0": 2, "1": 2}
EXACT = {"max_abs_diff": 0.0, "mean_abs_diff": 0.0, "top1_agree": True, "output_range": 4.9}


def test_qdq_ops_are_counted_by_their_op_name_not_where_the_words_appear(tmp_path):
    ops = [{"#": "1.quantize_linear"}, {"#": "1.dequantize_linear"}, {"#": "1.dequantize_linear"}]
    ops.append({"#": "1.conv2d", "A": [{"N": "name", "AT": {"D": "quantize_linear"}}]})  # an attribute, not an op
    program = tmp_path / "model.json"
    program.write_text(json.dumps({"program": {"regions": [{"blocks": [{"ops": ops}]}]}}, separators=(",", ":")))
    assert quant_program.qdq_counts(program) == {"quantize_linear": 1, "dequantize_linear": 2}
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"program": {"regions": [{"blocks": [{"ops": [{"#": "1.conv2d"}]}]}]}}))
    assert quant_program.qdq_counts(plain) == {"quantize_linear": 0, "dequantize_linear": 0}


def tensor(shape):
    """An op's output as Paddle 3.3.1's PIR JSON writes it (its type is named by "#" too)."""
    return {"%": 1, "TT": {"#": "0.t_dtensor", "D": [{"#": "0.t_f32"}, shape, "NCHW", [], 0]}}


# A small quantized program as Paddle 3.3.1 saves it: a parameter, the input, a QDQ pair, a conv,
# and an if whose branch (a region of the op) quantizes once more.
PIR_PROGRAM = {
    "base_code": {"magic": "pir", "trainable": False, "version": 4},
    "program": {
        "regions": [
            {
                "#": "region_0",
                "blocks": [
                    {
                        "#": "block_0",
                        "args": [],
                        "ops": [
                            {"#": "p", "A": [0, 1, 1, "conv2d_0.w_0"], "O": tensor([8, 1, 3, 3])},
                            {"#": "1.data", "A": [{"AT": {"#": "0.a_str", "D": "x"}, "N": "name"}], "O": [tensor([1])]},
                            {"#": "1.quantize_linear", "I": [{"%": 1}], "O": [tensor([1, 1, 8, 8])]},
                            {"#": "1.dequantize_linear", "I": [{"%": 2}], "O": [tensor([1, 1, 8, 8])]},
                            {"#": "1.conv2d", "I": [{"%": 3}], "O": [tensor([1, 8, 6, 6])]},
                            {
                                "#": "1.if",
                                "regions": [
                                    {
                                        "#": "region_1",
                                        "blocks": [
                                            {"#": "block_1", "ops": [{"#": "1.quantize_linear"}, {"#": "2.yield"}]}
                                        ],
                                    }
                                ],
                            },
                        ],
                    }
                ],
            }
        ]
    },
}


@pytest.mark.parametrize("indent", [None, 2, "\t"], ids=["compact", "pretty", "tabs"])
def test_ops_are_read_from_the_parsed_program_however_it_is_laid_out(tmp_path, indent):
    """Paddle loads a model.json pretty-printed as well as compact: its ops are the same."""
    program = tmp_path / "model.json"
    program.write_text(json.dumps(PIR_PROGRAM, indent=indent))
    assert quant_program.qdq_counts(program) == {"quantize_linear": 2, "dequantize_linear": 1}
    # an op's types (0.t_dtensor) and its regions and blocks are not ops; the if's branch's ops are
    ops = {"p": 1, "data": 1, "quantize_linear": 2, "dequantize_linear": 1, "conv2d": 1, "if": 1, "yield": 1}
    assert quant_program.op_counts(program) == ops


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{ not json", "not JSON"),
        ("\udcff\xff", "not JSON"),
        ('{"program": 1}', 'no "program" object'),
        ('{"ops": [{"#": "1.quantize_linear"}]}', 'no "program" object'),
        ('{"program": {"regions": {}}}', '"regions" that is not a list'),
        ('{"program": {"regions": [{"blocks": [{"ops": [3]}]}]}}', 'an op without its "#" name'),
    ],
    ids=["broken", "binary", "number", "no-program", "regions-dict", "op-not-object"],
)
def test_a_file_that_is_no_pir_program_is_refused_not_counted_empty(tmp_path, text, why):
    program = tmp_path / "model.json"
    program.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError, match=re.escape(why)):
        quant_program.qdq_counts(program)


def test_both_levels_pass_when_folded_on_the_device_and_the_simulation_agrees():
    record = quant_model.levels(QDQ, AXES, FOLDED, True, EXACT, 1e-4, NO_ENGINE)
    assert record["levels"]["0"]["passed"] and record["levels"]["1"]["passed"] and record["levels"]["2"]["not_run"]
    assert record["levels"]["0"]["detail"].startswith("level 0 (deployment)")
    assert "5 quantizers with one scale, 4 with a scale per channel" in record["levels"]["1"]["detail"]
    assert record["scale_axes"] == AXES


def test_quantizers_are_counted_by_the_axis_of_their_scales_wherever_the_attribute_sits(tmp_path):
    def quantize(axis, first=True):
        attrs = [{"AT": {"#": "0.a_i32", "D": 8}, "N": "bit_length"}]
        axis_attr = {"AT": {"#": "0.a_i32", "D": axis}, "N": "quant_axis"}
        return {"#": "1.quantize_linear", "A": [axis_attr, *attrs] if first else [*attrs, axis_attr]}

    ops = [quantize(-1), quantize(0), quantize(-1, first=False), quantize(1, first=False)]
    ops.append({"#": "1.dequantize_linear", "A": [{"AT": {"#": "0.a_i32", "D": 0}, "N": "quant_axis"}]})
    program = tmp_path / "model.json"
    program.write_text(json.dumps({"program": {"regions": [{"blocks": [{"ops": ops}]}]}}, separators=(",", ":")))
    assert quant_model.scale_axes(program) == {"-1": 2, "0": 1, "1": 1}
    assert quant_model.scale_axes(tmp_path / "model.pdmodel") == {}  # a ProgramDesc is not read for this


def test_level_0_fails_when_qdq_ops_reached_the_kernels():
    unfolded = {**FOLDED, "on_device": {**FOLDED["on_device"], "dequantize_linear": 9}}
    level0 = quant_model.levels({}, {}, unfolded, True, EXACT, 1e-4, NO_ENGINE)["levels"]["0"]
    assert not level0["passed"] and "dequantize_linear left in the program" in level0["detail"]
    fell_back = quant_model.levels({}, {}, {**FOLDED, "cpu_fallback": {"conv2d": 1}}, True, EXACT, 1e-4, NO_ENGINE)
    assert not fell_back["levels"]["0"]["passed"]


def test_level_1_fails_beyond_the_relative_bound_or_on_another_class_and_is_not_run_for_a_saved_model():
    off = {**EXACT, "max_abs_diff": 1e-3}  # 1e-3 > 1e-4 x 4.9
    assert not quant_model.levels({}, {}, FOLDED, True, off, 1e-4, NO_ENGINE)["levels"]["1"]["passed"]
    wrong_class = {**EXACT, "top1_agree": False}
    assert not quant_model.levels({}, {}, FOLDED, True, wrong_class, 1e-4, NO_ENGINE)["levels"]["1"]["passed"]
    saved = quant_model.levels({}, {}, FOLDED, True, None, 1e-4, NO_ENGINE)["levels"]["1"]
    assert saved["not_run"] and not saved["passed"] and "not counted as passed" in saved["detail"]


ENGINE = {
    "model": {"max_abs_diff": 1e-6, "max_lsb": 0.0, "mean_lsb": 0.0, "top1": 8, "reference_top1": 8, "top1_gap_lsb": 0},
    "deployment_top1_agree": True,
    "units": [{"layer": "conv2d", "max_lsb": 0.0, "passed": True}, {"layer": "fc", "max_lsb": 0.3, "passed": True}],
    "latency_ms": {"avg_ms": 0.8, "min_ms": 0.7, "max_ms": 0.9},
}
PROGRAM = {"conv2d": 2, "matmul": 3, "relu": 2, "pool2d": 2, "quantize_linear": 14}
ENGINE_RUN = {  # conv2d/matmul: in the engine, which also put 4 activations on their int8 grid
    "on_device": {"relu": 2, "pool2d": 2, "add": 5},
    "cpu_fallback": {},
    "engine": {"conv2d": 2, "matmul": 3, "activation": 4},
}


def test_level_2_counts_the_engines_ops_and_says_why_the_rest_stayed_float():
    level2 = quant_engine.level2(ENGINE, PROGRAM, ENGINE_RUN)
    assert level2["passed"] and level2["int8_ops"] == {"conv2d": 2, "matmul": 3}
    assert set(level2["float32_ops"]) == {"relu", "pool2d", "add"} and all(level2["float32_ops"].values())
    assert "5 of 5 conv/fc ops in int8" in level2["detail"] and level2["int8_activations"] == 4
    assert "4 activations on their int8 grid in the engine" in level2["detail"]


def test_level_2_counts_the_relus_and_poolings_the_engine_ran_on_the_integers():
    engine = {"conv2d": 2, "matmul": 3, "relu": 2, "max_pool2d": 1, "avg_pool2d": 1}
    level2 = quant_engine.level2(ENGINE, PROGRAM, {**ENGINE_RUN, "on_device": {"add": 5}, "engine": engine})
    # a max and an average pooling are both the program's pool2d
    assert level2["passed"] and level2["int8_ops"] == {"conv2d": 2, "matmul": 3, "relu": 2, "pool2d": 2}
    assert level2["int8_activations"] == 4 and set(level2["float32_ops"]) == {"add"}
    assert "4 activations on their int8 grid in the engine, relu 2 and pool2d 2 on their integers" in level2["detail"]


def test_level_2_counts_the_adds_and_concats_the_engine_took_apart_from_the_activations():
    engine = {"conv2d": 2, "matmul": 3, "activation": 4, "add": 2, "concat": 1}
    level2 = quant_engine.level2(ENGINE, PROGRAM, {**ENGINE_RUN, "on_device": {"add": 3}, "engine": engine})
    assert level2["passed"] and level2["int8_ops"] == {"conv2d": 2, "matmul": 3, "add": 2, "concat": 1}
    assert level2["int8_activations"] == 4 and "; add 2 and concat 1 of int8 operands;" in level2["detail"]
    # (the adds left: a conv/fc's bias on its float output)
    assert "an add whose operands are not both quantized" in level2["float32_ops"]["add"]


def test_level_2_takes_another_top1_than_the_deployments_only_where_the_simulated_int8_model_has_one_too():
    # the float model's class, not the quantized model's: the engine must still pick the simulated one's
    moved = {**ENGINE, "deployment_top1_agree": False, "simulated_deployment_top1_agree": False}
    level2 = quant_engine.level2(moved, PROGRAM, ENGINE_RUN)
    assert (
        level2["passed"]
        and "the deployment's float top-1 differs, as the simulated int8 model's does" in (level2["detail"])
    )
    engine_alone = {**ENGINE, "deployment_top1_agree": False, "simulated_deployment_top1_agree": True}
    level2 = quant_engine.level2(engine_alone, PROGRAM, ENGINE_RUN)
    assert not level2["passed"] and "but DIFFERS from the deployment's" in level2["detail"]


def test_engine_ops_counts_one_call_per_engine_op_from_the_device_op_dump():
    dump = "\n".join(
        [
            "I1127 21:40:01 pass.cc:10] --- Running PIR pass [stpu_int8_engine_pass]",
            "[STPU] int8_engine: quantize_linear",  # (each op quantizes its x: not counted)
            "[STPU] int8_engine: conv2d_int8",
            "[STPU] int8_engine: requantize",
            "[STPU] int8_engine_activation: quantize_linear",
            "[STPU] int8_engine_activation: dequantize_linear",
            "[STPU] int8_engine: gemm_int8",
            "[STPU] int8_engine_relu: binary",
            "[STPU] int8_engine_relu: dequantize_linear",
            "[STPU] int8_engine_max_pool2d: pool2d_forward",
            "[STPU] int8_engine_max_pool2d: dequantize_linear",
            "[STPU] int8_engine_avg_pool2d: quantize_linear",
            "[STPU] int8_engine_avg_pool2d: avg_pool2d_int8",
            "[STPU] int8_engine_add: quantize_linear",
            "[STPU] int8_engine_add: add_int8",
            "[STPU] int8_engine_softmax: softmax_int8",
            "[STPU] int8_engine_concat: concat_int8",
            "[STPU] relu: relu",
            "[STPU] int8_engine: conv2d_int8 trailing",  # not a dump line
        ]
    )
    assert quant_engine.engine_ops(dump) == {
        "conv2d": 1,
        "matmul": 1,
        "activation": 1,
        "relu": 1,
        "max_pool2d": 1,
        "avg_pool2d": 1,
        "add": 1,
        "softmax": 1,
        "concat": 1,
    }


def test_level_2_fails_on_a_layer_past_1_lsb_a_conv_left_out_or_another_class():
    units = [*ENGINE["units"], {"layer": "depthwise", "max_lsb": 1.5, "passed": False}]
    assert not quant_engine.level2({**ENGINE, "units": units}, PROGRAM, ENGINE_RUN)["passed"]
    left = {**ENGINE_RUN, "on_device": {**ENGINE_RUN["on_device"], "conv2d": 1}}
    outside = quant_engine.level2(ENGINE, PROGRAM, left)
    assert not outside["passed"] and "NOT in the engine: {'conv2d': 1}" in outside["detail"]
    other = {**ENGINE, "model": {**ENGINE["model"], "top1": 3, "top1_gap_lsb": 2.2}}
    level2 = quant_engine.level2(other, PROGRAM, ENGINE_RUN)
    assert not level2["passed"] and "top-1 is class 3, 2.20 LSB below the reference's 8: DIFFERS" in level2["detail"]
    drifted = {**ENGINE, "model": {**ENGINE["model"], "mean_lsb": 1.4}}
    assert not quant_engine.level2(drifted, PROGRAM, ENGINE_RUN)["passed"]


def test_level_2_takes_a_top1_tied_with_the_reference_within_2_lsb():
    tied = {**ENGINE, "model": {**ENGINE["model"], "top1": 3, "top1_gap_lsb": 1.26}}
    level2 = quant_engine.level2(tied, PROGRAM, ENGINE_RUN)
    assert (
        level2["passed"]
        and "is class 3, 1.26 LSB below the reference's 8 (a tie at int8 resolution: <= 2 LSB)" in level2["detail"]
    )


def test_compare_measures_the_engines_top1_against_the_reference_in_lsb():
    import numpy as np

    reference = np.array([[0.0, 127.0, 126.5, -20.0]], dtype="float32")  # LSB = 1.0
    found = int8_compare.compare(np.array([[0.0, 126.0, 127.0, -20.0]], dtype="float32"), reference)
    assert found["top1"] == 2 and found["reference_top1"] == 1 and found["top1_gap_lsb"] == 0.5
    assert found["max_lsb"] == 1.0 and found["mean_lsb"] == 0.375


def test_level_2_without_an_engine_is_not_run_and_not_passed():
    level2 = quant_engine.level2({"unavailable": "Pass stpu_int8_engine_pass has not been registered"}, PROGRAM, {})
    assert level2["not_run"] and not level2["passed"] and "has not been registered" in level2["detail"]


def test_level_2_fails_when_the_engine_raises():
    level2 = quant_engine.level2({"error": "stpu device op conv2d_int8 failed: UNSUPPORTED"}, PROGRAM, {})
    assert not level2["passed"] and not level2["not_run"] and "conv2d_int8 failed" in level2["detail"]


def test_verify_names_a_bundle_without_its_int8_check_and_does_not_count_a_missing_bundle(tmp_path):
    from types import SimpleNamespace

    from devkit.util.archives import write_tar_gz
    from devkit.verify.frameworks.paddle_infer import InferOptions, bundle_check

    root = tmp_path / "old" / "paddle-custom-stpu-inference-0.1.0-x86_64"  # as an older devkit made it
    (root / "lib").mkdir(parents=True)
    (root / "run.sh").write_text("#!/bin/sh\n")
    archive = tmp_path / f"{root.name}.tar.gz"
    write_tar_gz(root, archive, root.name)
    session = SimpleNamespace(work=tmp_path / "work")  # (nothing runs: the check is refused before)
    old = bundle_check(InferOptions(bundle=archive), session)
    assert not old["passed"] and "has no check/: rebuild it with this devkit's `devkit build --infer`" in old["detail"]
    missing = bundle_check(InferOptions(bundle=None), session)
    assert (
        missing["not_run"] and not missing["passed"] and "build with `devkit build --infer` first" in missing["detail"]
    )


def test_layer_checks_judge_each_of_the_models_layers_alone_within_1_lsb(tmp_path):
    import numpy as np

    layers = tmp_path / "model.layers"
    layers.mkdir()
    (layers / "layers.json").write_text(json.dumps(["conv1.0", "fc"]))
    outputs = {}
    for n in range(2):
        outputs[str(layers / f"layer{n}")] = np.array([[127.0, -3.0, 10.0]], dtype="float32")  # LSB = 1.0
        np.save(layers / f"layer{n}.input.npy", np.full([1, 4], n, dtype="float32"))
        np.save(layers / f"layer{n}.output.npy", outputs[str(layers / f"layer{n}")])
    seen = []

    def engine(prefix, x):  # the fc 1.5 LSB off in one element
        seen.append((Path(prefix).name, float(x[0, 0])))
        return outputs[prefix] + (np.array([[0.0, 1.5, 0.0]], dtype="float32") if prefix.endswith("1") else 0)

    found = quant_engine.layer_checks(layers, engine)
    assert seen == [("layer0", 0.0), ("layer1", 1.0)]  # each fed its own recorded input
    assert [(f["layer"], f["passed"]) for f in found] == [("conv1.0", True), ("fc", False)]
    level2 = quant_engine.level2({**ENGINE, "layers": found}, PROGRAM, ENGINE_RUN)
    assert not level2["passed"]
    assert (
        "each of the model's 2 conv/fc layers alone, fed the simulated model's input: max 1.50 LSB (fc)"
        in (level2["detail"])
    )
    assert "past 1 LSB: fc" in level2["detail"]


def test_layer_checks_of_a_saved_model_are_not_measured(tmp_path):
    assert quant_engine.layer_checks(tmp_path / "model.layers", lambda prefix, x: None) == []
    assert "the model's layers alone: not measured" in quant_engine.level2(ENGINE, PROGRAM, ENGINE_RUN)["detail"]


def test_a_unit_passes_only_where_an_engine_op_of_its_kind_ran_it():
    # the engine's add gives the float add's result bit for bit: only the op dump tells them apart
    unit = {"layer": "residual add", "kind": "add", "max_lsb": 0.0, "passed": True}
    ran = quant_engine.units_in_engine([unit, {**unit, "layer": "fc", "kind": "matmul"}], [{"add": 1}, {"add": 1}])
    assert [(u["in_engine"], u["passed"]) for u in ran] == [(True, True), (False, False)]
    assert not quant_engine.units_in_engine([unit], [])[0]["passed"]  # (no probe of it)
    level2 = quant_engine.level2({**ENGINE, "units": ran}, PROGRAM, ENGINE_RUN)
    assert not level2["passed"] and "fc 0.00 LSB (NOT in the engine)" in level2["detail"]
    assert "residual add 0.00 LSB," in level2["detail"]


def test_level_2_counts_a_flatten_the_fcs_engine_op_took_and_names_one_it_left():
    program = {**PROGRAM, "flatten": 1}
    taken = quant_engine.level2(ENGINE, program, ENGINE_RUN)
    assert taken["int8_ops"]["flatten"] == 1 and "; flatten 1 in the fc's engine op" in taken["detail"]
    left = quant_engine.level2(ENGINE, program, {**ENGINE_RUN, "on_device": {**ENGINE_RUN["on_device"], "flatten": 1}})
    assert "flatten" not in left["int8_ops"] and "where no engine fc reads it" in left["float32_ops"]["flatten"]


def test_level_2_says_how_far_the_reference_itself_moves_with_float64_sums():
    spread = {**ENGINE, "reference_spread": {"max_lsb": 1.89, "mean_lsb": 0.4}}
    level2 = quant_engine.level2(spread, PROGRAM, ENGINE_RUN)
    assert "mean 0.00 LSB (the reference itself, its sums in float64: max 1.89, mean 0.40 LSB)," in level2["detail"]
    failed = quant_engine.level2({**ENGINE, "reference_spread": {"error": "no float64 conv"}}, PROGRAM, ENGINE_RUN)
    assert failed["passed"] and "(the reference in float64: not measured, no float64 conv)" in failed["detail"]
