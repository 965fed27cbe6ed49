"""The JSON Schemas devkit ships for its --json outputs: one per command that takes --json, each a
valid schema generated from the dataclass the command prints (cli/schemas.py), and what the commands
print (built here from their real parts, or run for those that need no build) valid against them.
(The e2e tests validate every command's real output against them.)"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from conftest import check_json_output, devkit, json_commands

from devkit.cli.outputs import BuildMatrixOutput, CiProvider, MatrixRunOutput
from devkit.cli.schemas import JSON_OUTPUTS, schema_text
from devkit.matrix.entries import EntryOutcome, matrix_entries
from devkit.matrix.outputs import StepsReport
from devkit.project.config import CI_PROVIDERS, DevkitConfig
from devkit.util.errors import ExitCode, InputError
from devkit.util.outputs import ErrorKind, json_value, output_field
from devkit.util.schema import dataclass_schema, load_schema, schema_path

REGENERATE = "regenerate: reinstall devkit (bash compile.sh test --co -q), then python -m devkit.docs_gen"


def test_every_json_command_has_a_valid_schema():
    names = {c.replace(" ", "-") for c in json_commands()}
    shipped = {p.stem for p in schema_path("build").parent.glob("*.json")}
    assert names == shipped == set(JSON_OUTPUTS)
    for name in shipped:
        jsonschema.Draft202012Validator.check_schema(load_schema(name))


@pytest.mark.parametrize("name", sorted(JSON_OUTPUTS))
def test_each_shipped_schema_is_the_one_generated_from_its_output(name):
    assert schema_path(name).read_text() == schema_text(name), f"toolchain/schemas/{name}.json: {REGENERATE}"


def test_the_literal_enums_are_the_code_s_own():
    assert typing.get_args(ErrorKind) == tuple(c.name.lower() for c in ExitCode if c not in _NOT_ERRORS)
    assert typing.get_args(CiProvider) == CI_PROVIDERS


_NOT_ERRORS = (ExitCode.OK, ExitCode.USAGE, ExitCode.INTERRUPTED)


@dataclass(frozen=True)
class _Inner:
    """an inner object"""

    size: int


@dataclass(frozen=True)
class _Sample:
    path: Path
    kind: typing.Literal["a", "b"]
    inner: _Inner = output_field(flatten=True)
    versions: dict[str, str] = output_field("a version", flatten=True, pattern="^[a-z]+_version$")
    items: list[_Inner] = output_field("the items")
    note: str | None = output_field(omit_none=True)


def test_the_generated_schema_takes_what_json_value_writes_and_nothing_else():
    schema = dataclass_schema(_Sample)
    sample = _Sample(Path("/x"), "a", _Inner(1), {"paddle_version": "3.3.1"}, [_Inner(2)], None)
    written = json_value(sample)
    assert written == {"path": "/x", "kind": "a", "size": 1, "paddle_version": "3.3.1", "items": [{"size": 2}]}
    jsonschema.validate(written, schema)
    jsonschema.validate(json_value(_Sample(Path("/x"), "b", _Inner(1), {}, [], "n")), schema)
    assert schema["properties"]["items"]["description"] == "the items"
    assert schema["properties"]["items"]["items"]["description"] == "an inner object"
    for wrong in ({"kind": "c"}, {"size": "1"}, {"torch_version": 2}, {"other": 1}, {"note": None}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**written, **wrong}, schema)
    with pytest.raises(jsonschema.ValidationError):  # a flattened object's field is required
        jsonschema.validate({k: v for k, v in written.items() if k != "size"}, schema)


def test_the_matrix_outputs_match_their_schemas(tmp_path):
    """`build --all` and `matrix run` print their entries' steps (and write them to report.json): a
    passed build and a failed one, of every entry of the default matrix."""
    entries = matrix_entries(DevkitConfig(name="STPU", device_type="stpu"))
    failure = InputError("no such thing", "fix it", log=tmp_path / "build.log")
    outcomes = [EntryOutcome(e, passed=True, seconds=1.25, artifacts=[tmp_path / "a.whl"]) for e in entries]
    outcomes += [EntryOutcome(e, error=failure.one_line(), log=failure.log, failed_as=InputError) for e in entries]
    steps = [o.summary() for o in outcomes]
    built = BuildMatrixOutput(False, tmp_path / "report.json", tmp_path / "junit.xml", 2.5, steps)
    check_json_output(["build"], json_value(built))
    ran = MatrixRunOutput(entries[0].summary(), False, tmp_path / "r.json", tmp_path / "j.xml", steps[:1])
    check_json_output(["matrix", "run"], json_value(ran))
    check_json_output(["matrix", "list"], json_value([e.summary() for e in entries]))
    assert json_value(steps[-1])["exit_code"] == ExitCode.INPUT and json_value(steps[0])["result"] == "passed"
    assert json_value(StepsReport("suite", False, steps))["entries"][0]["id"] == entries[0].id


@pytest.mark.parametrize("sdk", [[], ["--sdk", "opencl"]], ids=["plain", "opencl"])
def test_the_commands_that_need_no_build_match_their_schemas(tmp_path, sdk):
    project = tmp_path / "STPU"
    rendered = json.loads(devkit("new-backend", "STPU", *sdk, "--out", str(project), "--json").stdout)
    check_json_output(["new-backend"], rendered)
    for args in (["config", "show"], ["matrix", "list"], ["ci", "--provider", "gitlab"]):
        out = (
            devkit(*args[:2], str(project), *args[2:], "--json")
            if args[0] != "ci"
            else devkit(*args, str(project), "--json")
        )
        check_json_output(args, json.loads(out.stdout))
    # and a schema can fail: the settings without a required key
    shown = json.loads(devkit("config", "show", str(project), "--json").stdout)
    del shown["verify"]["steps"]
    with pytest.raises(AssertionError, match="does not match its schema"):
        check_json_output(["config", "show"], shown)
