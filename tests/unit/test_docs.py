"""The documentation against the code: the generated blocks (options tables, --json fields, settings,
exit codes, the generated project's layout, the error catalogue, benchmark results) equal what
`python -m devkit.docs_gen` writes now; every command has a page in the site and its --help names it;
every devkit line of Getting started and the README's quick start parses as the command line parses
it; the generated project's layout table has a row for every entry a rendered project has."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from devkit import docs_gen
from devkit.cli.app import app
from devkit.docs import catalogue, commands, schema_tables
from devkit.docs.markdown import cell
from devkit.project.naming import parse_backend_name
from devkit.scaffold.flavours import load_flavour
from devkit.scaffold.render import render_backend

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = f"regenerate them: reinstall devkit (bash compile.sh test --co -q), then {docs_gen.REGENERATE}"


def test_the_generated_blocks_are_what_the_code_says_now():
    stale = [rel for rel, text in docs_gen.generated_files(ROOT).items() if _read(ROOT / rel) != text]
    assert stale == [], f"these files' generated parts differ from the code: {stale}; {REGENERATE}"


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def test_a_changed_option_makes_the_drift_test_fail(monkeypatch):
    """The drift test can fail: a help text changed in the CLI changes the command's page."""
    before = commands.command_reference("build")
    real = commands.cli_commands

    def edited() -> dict[str, Any]:
        commands = real()
        next(p for p in commands["build"].params if p.name == "clean").help = "Something else."
        return commands

    monkeypatch.setattr(commands, "cli_commands", edited)
    after = commands.command_reference("build")
    assert after != before and "Something else." in after


def test_every_command_has_a_page_in_the_site_and_its_help_names_it():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    listed = set(re.findall(r"commands/[\w-]+\.md", str(nav)))
    runner = CliRunner()
    for name in commands.cli_commands():
        page = commands.docs_page(name)
        assert (ROOT / page).is_file() and page.removeprefix("docs/") in listed, f"{page}: missing, or not in nav"
        shown = runner.invoke(app, [*name.split(), "--help"], prog_name="devkit", terminal_width=200)
        assert shown.exit_code == 0 and f"Docs: {page}" in shown.output, (name, shown.output[-300:])
    top = runner.invoke(app, ["--help"], prog_name="devkit", terminal_width=200).output
    assert "docs/index.md" in top and (ROOT / "docs/index.md").is_file()


def devkit_lines(markdown: str) -> list[str]:
    """The devkit command lines of a page's bash code blocks (comments and VAR=value prefixes removed)."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", markdown, re.S):
        for line in block.splitlines():
            for command in re.split(r"\s(?:&&|\|\||;)\s", line):
                found += _devkit_line(command)
    return found


def _devkit_line(command: str) -> list[str]:
    words = shlex.split(command, comments=True)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words.pop(0)
    return [shlex.join(words)] if words and words[0] == "devkit" else []


def parse_invocation(line: str) -> None:
    """Parse `line` as devkit's command line would, without running it: the command, options,
    option values and arguments must all be valid (a path need not exist)."""
    args = shlex.split(line)[1:]
    command: Any = typer.main.get_command(app)
    path = ["devkit"]
    while hasattr(command, "commands"):
        if args and args[0].startswith("--"):  # devkit's own options (--version, --debug)
            assert args[0] in {o for p in command.params for o in p.opts}, f"{line}: no option {args[0]}"
            args.pop(0)
            if not args:  # (devkit --version)
                return
            continue
        assert args and args[0] in command.commands, f"{line}: {' '.join(path)} has no command {args[:1]}"
        command = command.commands[args[0]]
        path.append(args.pop(0))
    if "--json" in args:  # (its callback reserves stdout; the option's existence is what matters here)
        args.remove("--json")
    command.make_context(" ".join(path), args)


PAGES_WITH_COMMANDS = ("docs/getting-started.md", "README.md", "docs/index.md")


@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS)
def test_each_devkit_line_of_the_walkthroughs_is_a_valid_invocation(page):
    lines = devkit_lines((ROOT / page).read_text())
    assert lines, f"{page} shows no devkit command"
    for line in lines:
        try:
            parse_invocation(line)
        except Exception as exc:  # the parser's own error names the problem
            pytest.fail(f"{page}: `{line}` is not a valid devkit command line: {exc}")


def test_the_invocation_check_refuses_what_devkit_refuses():
    for bad in ("devkit build STPU --bogus", "devkit verify STPU --runner nowhere", "devkit nope", "devkit check-abi"):
        with pytest.raises((AssertionError, Exception)):
            parse_invocation(bad)
    parse_invocation("devkit matrix run x86_64-train-paddle3.3.1 STPU")


def test_getting_started_walks_every_step_to_verified_paddle_and_torch_wheels():
    lines = devkit_lines((ROOT / "docs/getting-started.md").read_text())
    for step in ("new-backend", "build", "verify", "test-ops", "publish", "ci", "matrix run"):
        assert any(line.startswith(f"devkit {step} ") for line in lines), step
    for needed in ("--arch aarch64", "--framework torch"):
        assert any(line.startswith("devkit build") and needed in line for line in lines), needed
        assert any(line.startswith("devkit verify") and needed in line for line in lines), needed


@pytest.mark.parametrize("sdk", [None, "opencl"])
def test_the_layout_table_has_a_row_for_every_entry_of_a_rendered_project(tmp_path, sdk):
    flavour = load_flavour(sdk)
    project = render_backend(parse_backend_name("STPU"), tmp_path / "STPU", flavour=flavour).out_dir
    rows = {row.path for row in docs_gen.LAYOUT}
    missing = [entry for entry in docs_gen.layout_entries(project) if entry not in rows]
    assert missing == [], f"no row in devkit.docs_gen.LAYOUT for {missing}; add one, then {docs_gen.REGENERATE}"
    readme = (project / "README.md").read_text()
    assert docs_gen.layout_table() in readme, "the generated project's README lacks the layout table"
    assert docs_gen.layout_table() in (ROOT / "docs/generated-project.md").read_text()


def test_the_readme_is_short_and_quotes_no_dated_figure():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    dated = re.findall(r".*\b20\d\d-\d\d-\d\d\b.*", readme)
    assert dated == [], f"README.md quotes dated figures (they belong in docs/performance.md): {dated}"


def test_the_troubleshooting_page_lists_every_error_devkit_raises():
    page = (ROOT / "docs/troubleshooting.md").read_text()
    refusals = catalogue.refusals(Path(docs_gen.__file__).resolve().parent)
    assert len(refusals) > 100  # the catalogue is read from the sources, not typed in
    missing = [r for r in refusals if f"| `{r.module}` |" not in page or cell(r.fix)[:40] not in page]
    assert missing == [], f"{missing[:3]}: {REGENERATE}"


def test_each_json_command_page_lists_its_output_fields():
    """A schema shape the generator cannot read (a $ref, a top-level anyOf) must not leave an empty table."""
    for name, command in commands.cli_commands().items():
        if any("--json" in getattr(p, "opts", ()) for p in command.params):
            summary = schema_tables.schema_tables(name).split("Form 2")[0]  # (the error object comes last)
            assert re.search(r"^\| `(\[\]\.)?[\w<]", summary, re.M), f"devkit {name}: no field of its --json output"
