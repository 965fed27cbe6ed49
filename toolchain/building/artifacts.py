"""Checks on built artifacts before devkit reports them as built."""

from __future__ import annotations

import io
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename

from ..project.recipes import Recipe
from ..util.archives import wheel_metadata, zip_archive
from ..util.errors import BuildFailure


def elf_machine(data: bytes) -> str:
    # pyelftools is imported by what reads ELF files, not by every command
    from elftools.elf.elffile import ELFFile

    return str(ELFFile(io.BytesIO(data))["e_machine"])


def check_elf_bytes(data: bytes, what: str, recipe: Recipe) -> None:
    machine = elf_machine(data)
    if machine != recipe.elf_machine:
        raise BuildFailure(
            f"{what} is built for {machine}, not {recipe.elf_machine} ({recipe.name})",
            f"rebuild with devkit build --arch {recipe.name}",
        )


def requirements_on(
    wheel: Path, distribution: str, fix: str = "pass a wheel built by `devkit build`"
) -> list[Requirement]:
    """The wheel's Requires-Dist entries on `distribution`."""
    with zip_archive(wheel, "wheel", fix) as zf:
        metadata = wheel_metadata(zf, wheel, "wheel", fix)
    return [r for r in map(Requirement, metadata.get_all("Requires-Dist") or []) if r.name == distribution]


def check_wheel_libraries(
    wheel: Path, recipe: Recipe, package: str, framework: str, fix: str, rebuild: str
) -> list[str]:
    """The wheel's `package`/*.so, each built for the target; an error when there is none."""
    with zip_archive(wheel, "wheel", rebuild) as zf:
        libs = [n for n in zf.namelist() if n.startswith(f"{package}/") and n.endswith(".so")]
        if not libs:
            raise BuildFailure(f"{wheel.name} contains no {package}/*.so, so {framework} would load nothing", fix)
        for lib in libs:
            check_elf_bytes(zf.read(lib), f"{lib} in {wheel.name}", recipe)
    return libs


def fitting_tag(wheel: Path, recipe: Recipe, pyproject: str) -> str:
    """The wheel's py3-none tag for the target's platform, or an error naming the tags it has."""
    tags = parse_wheel_filename(wheel.name)[3]
    fitting = [
        str(t) for t in tags if (t.interpreter, t.abi) == ("py3", "none") and recipe.is_wheel_platform(t.platform)
    ]
    if not fitting:
        raise BuildFailure(
            f"{wheel.name} has tags {', '.join(sorted(map(str, tags)))}, expected py3-none-manylinux_X_Y_"
            f"{recipe.wheel_arch} (or {recipe.wheel_tag})",
            f'keep wheel.py-api = "py3" in {pyproject} and build for the right target',
        )
    return fitting[0]
