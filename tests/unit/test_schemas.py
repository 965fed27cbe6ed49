"""The JSON Schemas devkit ships for its --json outputs: one per command that takes --json, each a
valid schema, the settings one generated from the settings model. (The e2e tests validate every
command's real output against them.)"""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import check_json_output, devkit, json_commands

from devkit.project.config import config_show_schema
from devkit.util.schema import load_schema, schema_path


def test_every_json_command_has_a_valid_schema():
    names = {c.replace(" ", "-") for c in json_commands()}
    shipped = {p.stem for p in schema_path("build").parent.glob("*.json")}
    assert names == shipped
    for name in shipped:
        jsonschema.Draft202012Validator.check_schema(load_schema(name))


def test_the_settings_schema_is_generated_from_the_settings_model():
    assert load_schema("config-show") == config_show_schema(), (
        'regenerate: python -c "import json; from devkit.project.config import config_show_schema; '
        'print(json.dumps(config_show_schema(), indent=2))" > toolchain/schemas/config-show.json'
    )


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
