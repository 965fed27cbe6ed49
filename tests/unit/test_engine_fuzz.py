"""The int8 engine fuzz's mutations (payload paddle/engine_mutations.py; the fuzz itself runs in
tests/e2e/test_engine_validation.py): which attributes it finds, and what each mutation writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import payload_module

engine_fuzz = payload_module("paddle", "engine_fuzz")
engine_mutations = payload_module("paddle", "engine_mutations")


def ints(*values: int) -> dict:
    return {"#": "0.a_array", "D": [{"#": "0.a_i32", "D": v} for v in values]}


PROGRAM = {
    "base_code": {"magic": "pir", "version": 4},
    "program": {
        "regions": [
            {
                "blocks": [
                    {
                        "ops": [
                            {
                                "#": "1.full",
                                "A": [{"N": "value", "AT": {"#": "0.a_f64", "D": 1.0}}],
                                "I": [],
                                "O": [{"%": 1}],
                            },
                            {"#": "1.concat", "A": [], "I": [{"%": 0}, {"%": 1}], "O": [{"%": 2}]},
                            {
                                "#": "1.conv2d",
                                "A": [
                                    {"N": "strides", "AT": ints(2, 2)},
                                    {"N": "groups", "AT": {"#": "0.a_i32", "D": 1}},
                                    {"N": "struct_name", "AT": {"#": "0.a_str", "D": "/Conv2D/"}},
                                ],
                                "I": [{"%": 2}],
                                "O": [{"%": 3}],
                            },
                            {"#": "1.relu", "A": [{"N": "x", "AT": {"#": "0.a_i32", "D": 1}}], "I": [], "O": []},
                        ]
                    }
                ]
            }
        ]
    },
}


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    for model in engine_mutations.models():
        (tmp_path / f"{model}.json").write_text(json.dumps(PROGRAM))
    return tmp_path


def test_the_attributes_the_engine_reads_are_found_with_the_operands_they_hide_in():
    ops = engine_mutations.ops_of(PROGRAM)
    found = [(index, label, name) for index, label, name, _ in engine_mutations.fuzzed_attributes(ops)]
    # a concat's axis is its full operand's value; names and ops the engine does not take are left
    assert found == [(0, "concat#0", "axis (its full operand)"), (2, "conv2d#0", "strides"), (2, "conv2d#0", "groups")]


def test_mutations_write_the_attribute_changed_and_nothing_else(programs):
    found = engine_mutations.plan(programs, 0, 0)
    by_case = {(m["model"], m["op"], m["attribute"], m["change"]): m for m in found}
    ops = lambda m: engine_mutations.ops_of(json.loads(engine_mutations.mutated_program(programs, m)))  # noqa: E731
    conv = ops(by_case["convnet", "conv2d#0", "strides", "empty"])[2]
    assert (
        conv["A"][0] == {"N": "strides", "AT": {"#": "0.a_array", "D": []}}
        and conv["A"][1:] == PROGRAM["program"]["regions"][0]["blocks"][0]["ops"][2]["A"][1:]
    )
    assert ops(by_case["convnet", "conv2d#0", "strides", "zeros"])[2]["A"][0]["AT"] == ints(0, 0)
    assert ops(by_case["convnet", "conv2d#0", "groups", "a string"])[2]["A"][1]["AT"] == {"#": "0.a_str", "D": "1"}
    assert [a["N"] for a in ops(by_case["convnet", "conv2d#0", "groups", "missing"])[2]["A"]] == [
        "strides",
        "struct_name",
    ]
    assert ops(by_case["concat", "concat#0", "axis (its full operand)", "huge"])[0]["A"][0]["AT"]["D"] == 1e9
    # the inputs: the model's own first (the baseline), then other channels and ranks
    assert [m["change"] for m in found[:4]] == ["unchanged", "channels doubled", "one rank less", "one rank more"]
    assert [m["id"] for m in found] == list(range(len(found)))


def test_the_budget_takes_each_attribute_s_first_variant_before_any_second(programs):
    first = engine_mutations.plan(programs, 15, 0)
    assert len(first) == 15
    attributes = [m for m in first if m["attribute"] != "input"]
    assert len({(m["model"], m["op"], m["attribute"]) for m in attributes}) == len(attributes)


def test_named_cases_are_run_alone_and_an_unknown_one_is_refused(programs):
    cases = [["convnet", "conv2d#0", "groups", "zero"], ["add", "data", "input", "one rank less"]]
    assert [
        [m["model"], m["op"], m["attribute"], m["change"]] for m in engine_mutations.plan(programs, 0, 0, cases)
    ] == cases
    with pytest.raises(SystemExit, match="no such mutations"):
        engine_mutations.plan(programs, 0, 0, [["convnet", "conv2d#0", "groups", "purple"]])


def test_an_error_needs_words():
    assert engine_fuzz.has_words("(InvalidArgument) stpu int8 engine: pd_op.conv2d's attribute strides is []")
    assert not engine_fuzz.has_words("Segmentation fault 0x0")
    assert not engine_fuzz.has_words("RuntimeError: std::exception")
    assert not engine_fuzz.has_words("[/paddle/paddle/common/layout.h:103]")
    said = "ValueError: (InvalidArgument) The stride of conv2d must be > 0.\n  [Hint: x] (at a.cc:1)\n  [operator < x > error]"
    assert engine_fuzz.last_line(said) == "ValueError: (InvalidArgument) The stride of conv2d must be > 0."
