"""Compiled templates kept in devkit's cache (scaffold/compiled_templates.py): a render compiles
each template once, an edited template again, and a cache that cannot be used changes nothing
but the time."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest

from devkit.project.naming import parse_backend_name
from devkit.scaffold.compiled_templates import template_environment
from devkit.scaffold.render import render_backend


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def compiled_while(monkeypatch, action) -> int:
    """How many templates Jinja compiled from source while `action` ran."""
    real, count = jinja2.Environment.compile, [0]

    def counting(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    action()
    monkeypatch.setattr(jinja2.Environment, "compile", real)
    return count[0]


def kept_directory(cache: Path) -> Path:
    """The directory a render with devkit's cache at `cache` keeps its compiled templates in."""
    return Path(template_environment([], cache).bytecode_cache.directory)  # type: ignore[union-attr]


def tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_second_render_loads_the_templates_compiled_and_writes_the_same_project(cache, tmp_path, monkeypatch):
    name = parse_backend_name("STPU")
    first = compiled_while(monkeypatch, lambda: render_backend(name, tmp_path / "one"))
    directory = kept_directory(cache)
    assert len(list(directory.iterdir())) > 100 and (directory.stat().st_mode & 0o777) == 0o700
    second = compiled_while(monkeypatch, lambda: render_backend(name, tmp_path / "two"))
    # only the file names with a field (torch_{{p}}/...) compile again: they are no templates of their own
    assert first > 170 and second < 20, (first, second)
    assert tree(tmp_path / "one") == tree(tmp_path / "two")


def test_an_edited_template_compiles_again(tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "a.txt").write_text("one {{ x }}")
    assert template_environment([str(templates)], tmp_path).get_template("a.txt").render(x=1) == "one 1"
    (templates / "a.txt").write_text("two {{ x }}")
    assert template_environment([str(templates)], tmp_path).get_template("a.txt").render(x=1) == "two 1"


def test_unreadable_kept_files_compile_again(cache, tmp_path):
    name = parse_backend_name("STPU")
    render_backend(name, tmp_path / "one")
    for kept in kept_directory(cache).iterdir():
        kept.write_bytes(kept.read_bytes()[:40])  # cut short: Jinja's header, then no code
    render_backend(name, tmp_path / "two")
    assert tree(tmp_path / "one") == tree(tmp_path / "two")


@pytest.mark.parametrize("problem", ["open to others", "a link"])
def test_a_directory_that_is_not_private_is_passed_over(cache, tmp_path, problem):
    directory = cache / "templates" / kept_directory(tmp_path / "elsewhere-cache").name
    if problem == "a link":
        directory.parent.mkdir(parents=True)
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        directory.symlink_to(tmp_path / "elsewhere")
    else:
        directory.mkdir(parents=True)
        os.chmod(directory, 0o777)
    assert template_environment([str(tmp_path)], cache).bytecode_cache is None
    render_backend(parse_backend_name("STPU"), tmp_path / "out")
    assert (tmp_path / "out" / "CMakeLists.txt").is_file()
    assert not any((tmp_path / "elsewhere").iterdir()) if problem == "a link" else not any(directory.iterdir())


def test_options_that_change_the_generated_code_keep_it_apart(tmp_path):
    from devkit.scaffold.compiled_templates import cache_directory

    ours = template_environment([], tmp_path)
    assert Path(ours.bytecode_cache.directory) == cache_directory(tmp_path, ours)  # type: ignore[union-attr]
    for option in ({"trim_blocks": True}, {"keep_trailing_newline": False}, {"variable_start_string": "${"}):
        other = jinja2.Environment(**{"keep_trailing_newline": True, **option})  # type: ignore[arg-type]
        assert cache_directory(tmp_path, other) != cache_directory(tmp_path, ours), option
