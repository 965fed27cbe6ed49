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
