"""What loading a project checks (issue 52): the identities new-backend gave it, bounded and
well-formed settings, a runtime-env that cannot change the device under verify, TOML too deep to
parse; and the CLI's error paths (a full disk names the path, check-abi on a FIFO, --json errors
on stdout, the debugging switches' real prefix). Each through devkit's entry point in-process,
as the bad-input catalogue runs it: one `error:` line, the input error's exit code."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from conftest import devkit, json_commands
from test_bad_input import run_cli

from devkit.util.errors import ExitCode, InputError
from devkit.util.schema import load_schema


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rendered") / "STPU"
    run_cli(["new-backend", "STPU", "--out", str(path)], expect=0)
    return path


@pytest.fixture
def project_with(rendered, tmp_path) -> Callable[[Callable[[str], str]], Path]:
    """A copy of the rendered project with its pyproject.toml edited."""

    def make(edit: Callable[[str], str]) -> Path:
        path = tmp_path / "STPU"
        shutil.copytree(rendered, path)
        pyproject = path / "pyproject.toml"
        pyproject.write_text(edit(pyproject.read_text()))
        return path

    return make


def one_error(argv: list[str], code: int = ExitCode.INPUT) -> str:
    got, _, err = run_cli(argv)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert got == code, f"devkit {' '.join(argv)} exited {got}:\n{err}"
    assert len(errors) == 1 and "Fix:" in errors[0] and "Traceback" not in err, err
    return errors[0]


def replaced(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    return edit


def devkit_table(extra: str) -> Callable[[str], str]:
    """`extra` lines added to [tool.devkit] (before its first subtable)."""
    return replaced('device-type = "stpu"\n', f'device-type = "stpu"\n{extra}\n')


def with_sdk(runtime_env: str) -> Callable[[str], str]:
    sdk = f'name = "opencl"\nversion = "3.0"\nruntime-env = {{ {runtime_env} }}\n'
    return lambda t: f'{t}\n[tool.devkit.sdk]\n{sdk}\n[tool.devkit.sdk.build]\nx86_64 = {{ dir = "/opt" }}\n'


# -- 1. identities: the rules new-backend names a backend by, held again at load
IDENTITIES = [
    (replaced('device-type = "stpu"', 'device-type = "../../evil"'), "tool.devkit.device-type"),
    (replaced('device-type = "stpu"', 'device-type = "swp\\n"'), "tool.devkit.device-type"),
    (replaced('device-type = "stpu"', 'device-type = "cpu"'), "tool.devkit.device-type"),
    (replaced('name = "STPU"', """name = 'S W P"; rm -rf /'"""), "tool.devkit.name"),
    (replaced('name = "STPU"', 'name = "int"'), "tool.devkit.name"),
    (replaced('version = "0.1.0"', 'version = "1.0/../../../x"'), "project.version"),
    (replaced('version = "0.1.0"', 'version = " 1.0"'), "project.version"),
    (replaced('name = "paddle-custom-stpu"', 'name = "../paddle custom"'), "project.name"),
]


@pytest.mark.parametrize(("edit", "key"), IDENTITIES, ids=[f"{k}-{i}" for i, (_, k) in enumerate(IDENTITIES)])
@pytest.mark.parametrize("command", [["config", "show"], ["matrix", "list"]], ids=["config-show", "matrix-list"])
def test_a_project_s_identities_are_checked_where_it_is_loaded(project_with, edit, key, command):
    line = one_error([*command, str(project_with(edit))])
    assert f"pyproject.toml: {key} = " in line and "devkit new-backend" in line, line


def test_an_adapter_s_package_name_is_checked(project_with):
    from devkit.project.frameworks import find_framework
    from devkit.project.project import load_project

    project = project_with(lambda t: t)
    adapter = project / "pytorch" / "pyproject.toml"
    adapter.write_text(replaced('name = "torch-stpu"', 'name = "torch stpu;x"')(adapter.read_text()))
    with pytest.raises(InputError) as info:
        load_project(project).distribution_of(find_framework("torch"))
    assert "pytorch/pyproject.toml: project.name = 'torch stpu;x' is not a package name" in info.value.problem


def test_the_rendered_identities_load(rendered):
    assert run_cli(["config", "show", str(rendered)], expect=0)


# -- 2. bounded numbers and URLs
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (replaced("jobs = 0", "jobs = 1000000000000000000000000000000"), "tool.devkit.jobs = 10000"),
        (replaced("jobs = 0", "jobs = 1025"), "must be an integer from 0 to 1024"),
        (
            replaced('# index-url = "https://download.pytorch.org/whl/cpu"', 'index-url = "not a url"'),
            "tool.devkit.torch.index-url = 'not a url' is not an http(s) or file URL",
        ),
        (
            replaced('# index-url = "https://download.pytorch.org/whl/cpu"', 'index-url = "--extra-index-url=x"'),
            "is not an http(s) or file URL",
        ),
        (
            replaced('# index-url = "https://download.pytorch.org/whl/cpu"', 'index-url = "https://"'),
            "is not an http(s) or file URL",
        ),
    ],
)
def test_settings_are_bounded_and_urls_are_urls(project_with, edit, message):
    assert message in one_error(["config", "show", str(project_with(edit))])


def test_in_range_settings_and_urls_load(project_with):
    url = 'index-url = "https://download.pytorch.org/whl/cpu"'
    project = project_with(lambda t: t.replace("jobs = 0", "jobs = 1024").replace(f"# {url}", url))
    shown = json.loads(devkit("config", "show", str(project), "--json").stdout)
    assert (
        shown["jobs"] == 1024
        and shown["framework_settings"]["torch"]["index_url"] == "https://download.pytorch.org/whl/cpu"
    )


# -- 3. runtime-env cannot change the device under verify
@pytest.mark.parametrize(
    ("variable", "why"),
    [
        ("STPU_DUMP_OP_ARGS", "the device's own switches"),
        ("STPU_FALLBACK_OPS", "the device's own switches"),
        ("STPU_STRICT_FALLBACK", "the device's own switches"),
        ("stpu_memory_mb", "the device's own switches"),
        ("GLIBC_TUNABLES", "allocator"),
        ("MALLOC_ARENA_MAX", "allocator"),
        ("LD_PRELOAD", "the loader"),
        ("LD_AUDIT", "the loader"),
    ],
)
def test_runtime_env_cannot_change_the_device_under_verify(project_with, variable, why):
    line = one_error(["config", "show", str(project_with(with_sdk(f'{variable} = "3"')))])
    assert f"tool.devkit.sdk.runtime-env has {variable}, which" in line and why in line, line


def test_runtime_env_refuses_the_prefix_of_a_name_other_than_the_device_type(project_with):
    edit = replaced('name = "STPU"', 'name = "Lumen"')
    line = one_error(["config", "show", str(project_with(lambda t: with_sdk('LUMEN_AUTOCOMPARE = "1"')(edit(t))))])
    assert "runtime-env has LUMEN_AUTOCOMPARE" in line, line


def test_a_driver_s_runtime_env_still_loads(project_with):
    run_cli(["config", "show", str(project_with(with_sdk('POCL_DEVICES = "pthread pthread"')))], expect=0)


# -- 4. TOML too deep to parse is bad TOML
def test_deeply_nested_toml_is_bad_toml(project_with):
    project = project_with(devkit_table("a = " + "[" * 20000 + "]" * 20000))
    line = one_error(["config", "show", str(project)])
    assert f"{project / 'pyproject.toml'} is not valid TOML" in line and "nested" in line, line


# -- 5. a full disk names the path
def test_a_full_disk_names_the_file_being_written(tmp_path, monkeypatch):
    from devkit.cli.app import _os_problem
    from devkit.util import fsutil

    def no_space(src, dst, *args):  # what a write(2) on a full file system raises: no file name
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fsutil.shutil, "copyfileobj", no_space)
    source = tmp_path / "a.whl"
    source.write_bytes(b"x")
    with pytest.raises(OSError) as info:
        fsutil.publish_file(source, tmp_path / "dist")
    line = _os_problem(info.value).one_line()
    assert f"No space left on device ({tmp_path / 'dist' / 'a.whl'})" in line and "free space" in line, line
    assert list((tmp_path / "dist").iterdir()) == []


def test_the_error_edge_names_the_path_of_an_os_error():
    from devkit.cli.app import _os_problem

    line = _os_problem(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x/dist/a.whl")).one_line()
    assert line.startswith("No space left on device (/x/dist/a.whl). Fix: free space"), line


# -- 6. check-abi on what is not a regular file
def test_check_abi_on_a_fifo_or_a_device_says_not_a_regular_file(tmp_path):
    fifo = tmp_path / "plugin.so"
    os.mkfifo(fifo)  # opened, it would block: the check must stat, not open
    for path in (fifo, Path("/dev/zero")):
        line = one_error(["check-abi", str(path)])
        assert f"{path} is not a regular file" in line, line
    assert "does not exist" in one_error(["check-abi", str(tmp_path / "none.so")])


# -- 7. --json errors are JSON on stdout
def test_a_json_command_s_error_is_a_json_object_on_stdout(tmp_path):
    proc = devkit("build", str(tmp_path / "nowhere"), "--json", check=False)
    assert proc.returncode == ExitCode.INPUT and "error:" in proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["kind"] == "input" and error["exit_code"] == ExitCode.INPUT
    assert "is not a backend project" in error["problem"] and "devkit new-backend" in error["fix"]
    assert error["message"] == f"{error['problem']}. Fix: {error['fix']}"
    for command in json_commands():  # every --json command's schema takes it
        schema = load_schema(command.replace(" ", "-"))
        jsonschema.Draft202012Validator(schema).validate({"error": error})


def test_a_json_error_after_the_summary_adds_no_second_object(project_with, monkeypatch):
    """A command that printed its summary, then fails (verify: the checks failed), prints one object."""
    from devkit.cli import options
    from devkit.util import console

    def summary_then_fail(*args, **kwargs):
        options.emit_json({"passed": False})
        raise InputError("the checks failed", "see the report")

    stdout = io.StringIO()
    monkeypatch.setattr(console, "_json_stream", stdout)  # in-process: leave this process's fd 1 alone
    monkeypatch.setattr(console, "_json_written", False)
    monkeypatch.setattr("devkit.cli.matrix.matrix_entries", summary_then_fail)
    assert run_cli(["matrix", "list", str(project_with(lambda t: t)), "--json"])[0] == ExitCode.INPUT
    assert json.loads(stdout.getvalue()) == {"passed": False}


# -- 8. the debugging switches' prefix is the one the generated project reads
def test_the_switch_prefix_is_the_device_type_s_as_the_templates_derive_it():
    from devkit.project.naming import parse_backend_name, switch_prefix
    from devkit.scaffold.render import template_context

    backend = parse_backend_name("Lumen")
    assert switch_prefix(backend.device_type) == template_context(backend)["NAME"] == "LUMEN"


def test_test_ops_failure_names_the_real_switches(project_with, monkeypatch):
    from devkit.cli import verify as cli_verify

    project = project_with(replaced('name = "STPU"', 'name = "Lumen"'))

    class Report:
        passed, data, counts = False, {}, {}

    class Result:
        report, report_dir, failed = Report(), project / "reports", []

    monkeypatch.setattr("devkit.verify.ops.describe_failures", lambda result: "add [float32]")
    monkeypatch.setattr(cli_verify.views, "show_test_ops", lambda *a: None)
    from devkit.project.project import load_project

    with pytest.raises(Exception) as info:
        cli_verify._show_test_ops(Result(), None, "host", load_project(project), False)
    assert "STPU_FALLBACK_OPS or STPU_AUTOCOMPARE=1" in info.value.fix, info.value.fix


def test_torch_kernel_check_names_the_real_switches(monkeypatch, tmp_path):
    from devkit.verify.frameworks import torch as torch_verify

    class Check:
        passed, name, detail = False, "kernels", "add differs"

        def summary(self):
            return {}

    class Report:
        checks, failed = [Check()], [Check()]

    class Result:
        report, report_path, passed = Report(), tmp_path / "report.json", False

    monkeypatch.setattr(torch_verify, "run_torch_checks", lambda *a: Result())
    from devkit.project.recipes import find_recipe

    options = torch_verify.VerifyOptions(find_recipe("x86_64"), device_type="lumen")
    check = torch_verify.check_kernels(tmp_path / "torch_lumen-0.1.0-py3-none-any.whl", options, tmp_path)
    assert "LUMEN_FALLBACK_OPS or LUMEN_AUTOCOMPARE=1" in check.fix, check
