"""What a build and its checks do differently per framework, declared once per framework and
chosen by the framework's name: the runtime a wheel is compiled and checked against, its ABI
check, the libraries the framework's wheel provides (auditwheel leaves them out), the check of
the built wheel and the pin that tells whose wheel it is. The build (building/plugin.py), verify's
wheel check and check-abi run the same steps for every framework and never ask which it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from ..project.frameworks import Framework
from ..project.recipes import Recipe
from .abi import check_abi as check_paddle_abi
from .abi import paddle_root_for, require_abi
from .artifacts import check_plugin_wheel, paddle_requirements
from .elf import AbiFinding
from .manylinux import SystemFloor, paddle_framework
from .sdk_abi import SdkExports
from .torch_wheel import (
    check_torch_abi,
    check_torch_wheel,
    fetch_torch,
    pinned_torch,
    require_torch_abi,
    torch_framework,
    torch_root_for,
    torch_wheel_dir,
)


@dataclass(frozen=True)
class BuildAdapter:
    label: str  # the runtime as check-abi names it
    abi_checks: str  # what its ABI check covers beyond machine and symbols
    # (cache, target, version, index url): the runtime fetched before a build writes anything;
    # None when the build's payload fetches it
    prefetch_runtime: Callable[[Path, Recipe, str, str], Path | None]
    # (target, version, what prefetch_runtime gave): the runtime's package the built wheel is checked against
    runtime_root: Callable[[Recipe, str, Path | None], Path]
    # (wheel, target, version, runtime package or None: found, SDK exports, say the warnings): raises when
    # the wheel would not load; the portability warnings are said once, by the build
    require_abi: Callable[[Path, Recipe, str, Path | None, SdkExports | None, bool], object]
    # the framework wheel's libraries (never copied into ours) and the glibc/libstdc++ they need
    provided_libraries: Callable[[Path], tuple[set[str], SystemFloor]]
    # (wheel, target, version, file name prefix): tags, contents, pin of a built wheel
    check_wheel: Callable[[Path, Recipe, str, str], object]
    # the runtime version a wheel requires exactly; None: it is not this framework's
    pinned_in: Callable[[Path], str | None]
    # check-abi (path, target, version): what keeps a wheel or library from loading, without loading it
    check_abi: Callable[[Path, Recipe, str], list[AbiFinding]]
    # (target, version, index url): where a verify environment's pip finds the runtime the build
    # compiled against; None: the package index
    find_links: Callable[[Recipe, str, str], Path | None]


def _exact_pin(requirements: list[Requirement]) -> str | None:
    return next((str(r.specifier)[2:] for r in requirements if str(r.specifier).startswith("==")), None)


PADDLE_BUILD = BuildAdapter(
    label="Paddle",
    abi_checks="build info, device_ext.h",
    prefetch_runtime=lambda cache, recipe, version, index_url: None,
    # once per build: a cached target wheel is re-hashed on each lookup
    runtime_root=lambda recipe, version, prefetched: paddle_root_for(recipe, version),
    require_abi=require_abi,
    provided_libraries=paddle_framework,
    check_wheel=lambda wheel, recipe, version, prefix: check_plugin_wheel(wheel, recipe, version),
    pinned_in=lambda wheel: _exact_pin(paddle_requirements(wheel)),
    check_abi=check_paddle_abi,
    find_links=lambda recipe, version, index_url: None,
)

TORCH_BUILD = BuildAdapter(
    label="torch",
    abi_checks="torch version, C++11 ABI",
    # by the host, whose pip configuration knows where the CPU builds are (a container's would take
    # PyPI's CUDA build): a torch that cannot be had is an error before anything is written
    prefetch_runtime=fetch_torch,
    runtime_root=lambda recipe, version, prefetched: prefetched or torch_root_for(recipe, version),
    require_abi=require_torch_abi,
    provided_libraries=torch_framework,
    check_wheel=check_torch_wheel,
    pinned_in=pinned_torch,
    check_abi=check_torch_abi,
    find_links=torch_wheel_dir,
)

BUILD_ADAPTERS: dict[str, BuildAdapter] = {"paddle": PADDLE_BUILD, "torch": TORCH_BUILD}


def build_adapter(framework: Framework) -> BuildAdapter:
    return BUILD_ADAPTERS[framework.name]
