"""What a build and its checks do differently per framework: one BuildAdapter per framework, in
its own module (paddle.py, torch.py), chosen by the framework's name from BUILD_ADAPTERS. The
build (building/execute.py), verify's wheel check and check-abi run the same steps for every
framework and never ask which it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ...project.frameworks import Framework
from ...project.recipes import Recipe
from ..elf import AbiFinding
from ..manylinux import SystemFloor
from ..sdk_abi import SdkExports
from .paddle import PADDLE_BUILD
from .torch import TORCH_BUILD


class BuildAdapter(Protocol):
    """A framework's build steps: the runtime a wheel is compiled and checked against, its ABI
    check, the libraries its wheel provides (auditwheel leaves them out), the check of the built
    wheel and the pin that tells whose wheel it is."""

    label: str  # the runtime as check-abi names it
    abi_checks: str  # what its ABI check covers beyond machine and symbols

    def prefetch_runtime(self, cache: Path, recipe: Recipe, version: str, index_url: str) -> Path | None:
        """The target's runtime, fetched by the host before a build writes anything; None when the
        build's payload fetches it."""
        ...

    def runtime_root(self, recipe: Recipe, version: str, prefetched: Path | None) -> Path:
        """The runtime's package the built wheel is checked against (`prefetched`: prefetch_runtime's)."""
        ...

    def require_abi(
        self,
        wheel: Path,
        recipe: Recipe,
        version: str,
        runtime_root: Path | None,
        sdk: SdkExports | None,
        say_warnings: bool,
    ) -> list[AbiFinding]:
        """Raises when the wheel would not load (`runtime_root` None: found here); returns the
        portability warnings, said once by the build (`say_warnings`)."""
        ...

    def provided_libraries(self, runtime_root: Path) -> tuple[set[str], SystemFloor]:
        """The framework wheel's libraries (never copied into ours) and the glibc/libstdc++ they need."""
        ...

    def check_wheel(self, wheel: Path, recipe: Recipe, version: str, prefix: str) -> object:
        """Tags, contents and pin of a built wheel (`prefix`: its file name's)."""
        ...

    def pinned_in(self, wheel: Path) -> str | None:
        """The runtime version a wheel requires exactly; None: it is not this framework's."""
        ...

    def check_abi(self, path: Path, recipe: Recipe, version: str) -> list[AbiFinding]:
        """check-abi: what keeps a wheel or library from loading, without loading it."""
        ...

    def find_links(self, recipe: Recipe, version: str, index_url: str) -> Path | None:
        """Where a verify environment's pip finds the runtime the build compiled against; None: the index."""
        ...


# The registry: framework name -> its build steps (a test registers a third framework here).
BUILD_ADAPTERS: dict[str, BuildAdapter] = {"paddle": PADDLE_BUILD, "torch": TORCH_BUILD}


def build_adapter(framework: Framework) -> BuildAdapter:
    return BUILD_ADAPTERS[framework.name]
