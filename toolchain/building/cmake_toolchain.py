"""The CMake toolchain file of a cross build, written from the target's recipe (triple and
processor): a new target needs a recipe, not a hand-written toolchain file."""

from __future__ import annotations

from pathlib import Path

from ..project.recipes import Recipe
from ..util.fsutil import write_atomic


def cmake_toolchain(recipe: Recipe) -> str:
    t = recipe.triple
    return f"""# Cross-compiling for {t} with Debian's cross g++ (in the devkit builder image).
# Written by devkit from recipes/{recipe.name}.toml; edit the recipe, not this file.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR {recipe.cmake_system_processor})
set(CMAKE_C_COMPILER {t}-gcc)
set(CMAKE_CXX_COMPILER {t}-g++)
set(CMAKE_FIND_ROOT_PATH /usr/{t})
# Programs run on the build machine; libraries and headers come from the target.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
"""


def toolchain_file_path(recipe: Recipe, build_root: Path) -> Path:
    """Under the project's build/, which every runner sees."""
    return build_root / f"toolchain-{recipe.name}.cmake"


def write_toolchain_file(recipe: Recipe, build_root: Path) -> Path:
    """Write it (at toolchain_file_path) and return its path."""
    return write_atomic(toolchain_file_path(recipe, build_root), cmake_toolchain(recipe))
