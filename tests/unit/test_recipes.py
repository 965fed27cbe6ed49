"""Targets are data: what devkit derives from a recipe."""

from __future__ import annotations


def test_cross_toolchain_files_are_written_from_the_recipes(tmp_path):
    from devkit.building.cmake_toolchain import write_toolchain_file
    from devkit.project.recipes import find_recipe

    for arch, processor in (("aarch64", "aarch64"), ("armhf", "armv7l")):
        recipe = find_recipe(arch)
        text = write_toolchain_file(recipe, tmp_path).read_text()
        assert f"set(CMAKE_SYSTEM_PROCESSOR {processor})" in text
        assert f"set(CMAKE_CXX_COMPILER {recipe.triple}-g++)" in text
        assert f"set(CMAKE_FIND_ROOT_PATH /usr/{recipe.triple})" in text


def test_each_recipe_file_is_read_once_per_process(monkeypatch):
    """Every step asks for recipes (find_recipe at ~35 call sites); the files are parsed once."""
    from devkit.project import recipes

    reads = []
    real_load = recipes._load
    monkeypatch.setattr(recipes, "_load", lambda path: reads.append(path.name) or real_load(path))
    recipes.all_recipes.cache_clear()
    try:
        for _ in range(5):
            for name in ("x86_64", "aarch64", "armhf", "armv8"):
                recipes.find_recipe(name)
    finally:
        recipes.all_recipes.cache_clear()  # the next caller reads the unpatched files again
    assert sorted(reads) == ["aarch64.toml", "armhf.toml", "x86_64.toml"]


def test_build_machine_facts_come_from_the_recipes():
    """The builder image installs the cross compilers the recipes name; doctor looks for their qemu handlers."""
    from devkit.project.recipes import find_recipe
    from devkit.run.images import builder_spec

    args = builder_spec().buildargs()
    assert args["CROSS_COMPILERS"].split() == ["g++-aarch64-linux-gnu", "g++-arm-linux-gnueabihf"]
    assert [find_recipe(a).qemu_handler for a in ("x86_64", "aarch64", "armhf")] == ["", "qemu-aarch64", "qemu-arm"]


def test_without_arch_the_target_is_this_machine():
    import platform

    from devkit.cli.options import target_recipe

    assert target_recipe(None).matches(platform.machine())
    assert target_recipe("armv8").name == "aarch64"
