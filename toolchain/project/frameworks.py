"""The frameworks a backend plugs into, as data.

A project has one device library and one adapter per framework: Paddle's in paddle/ (its wheel
built from the project's root), PyTorch's in pytorch/. Each framework names its reference
runtime (the wheel a plugin is compiled against and verified with); a recipe pins that
wheel's version and platform tag under the framework's name ([runtimes.<name>]). Nothing else
in devkit branches on a framework's name to find these. What a build does per framework is
building/frameworks/ (one module per framework), what verify does is verify/frameworks/.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..util.errors import InputError
from .recipes import Recipe

# LeNet on MNIST: what every framework's adapter trains, and what `verify` trains and runs by default.
DEFAULT_MODEL = "mnist"


@dataclass(frozen=True, kw_only=True)
class Framework:
    name: str  # what --framework and [tool.devkit] frameworks say
    label: str  # for people
    runtime: str  # the reference runtime's distribution on the package index
    source_dir: str  # the adapter's pyproject.toml directory, relative to the project
    modes: tuple[str, ...]  # matrix modes the adapter supports
    package: str  # the runtime's import package (its headers and libraries live in it)
    # Builds compile against the target's runtime wheel unpacked (as cross builds do) instead of an
    # installed one: the adapter uses no Python C API, so the builder's Python (3.9 on bullseye, for
    # which torch publishes no wheel) does not matter.
    unpacked_runtime: bool = False
    verify_extras: tuple[str, ...] = ()  # installed next to the runtime in verify environments
    # Modules the checks import beyond the runtime's package: a reference environment imports
    # them once when it is made, so their bytecode is written there (pip writes none).
    verify_imports: tuple[str, ...] = ("numpy",)
    # test-ops' own imports of the runtime's test databases, and the modules they import that verify
    # environments lack (stood in for by a module with a TestCase, as payload/torch/torch_suites.py
    # does): warmed in a reference environment too, except under emulation, where no test-ops runs.
    # (measured: a torch test-ops run's checks 5.4 -> 5.0 s in a fresh verify environment)
    test_ops_imports: tuple[str, ...] = ()
    test_ops_stand_ins: tuple[str, ...] = ()
    plugin_glob: str = ""  # a venv path pattern that exists once a plugin of this framework is installed
    sdist: bool = False  # `devkit build --sdist` writes the adapter's source distribution
    wheel_label: str = ""  # what its wheel is called in messages
    train_models: tuple[str, ...] = (DEFAULT_MODEL,)  # what `verify` can train (the first: the default)
    amp_levels: tuple[str, ...] = ()  # what `verify --amp` takes: the framework's mixed-precision levels
    # The releases (major.minor) whose compiler seam the adapter targets (torch.compile's Inductor
    # device registration): `verify --compile` checks those; empty: the framework has no compiler backend.
    compiler_seam: tuple[str, ...] = ()
    # In the names of build trees, logs and locks (Paddle's, the first adapter, are unsuffixed).
    tree_suffix: str = ""
    # What `test-ops --suite` takes (the first: the default): the framework's test databases run on
    # the device vs its CPU; `--framework-src DIR` adds the framework's own test files.
    op_suites: tuple[str, ...] = ("ops",)
    # What `test-ops --dtypes` may name (default: the suites' own choice, by what the device has).
    op_dtypes: tuple[str, ...] = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "bool")

    def version(self, recipe: Recipe) -> str | None:
        """The runtime version the recipe pins; None when the target has no runtime."""
        return recipe.runtime_version(self.name)

    def wheel_platform(self, recipe: Recipe) -> str:
        """The platform tag of the runtime's wheel for the target (what pip download --platform takes)."""
        pin = recipe.runtimes.get(self.name)
        return pin.wheel_platform if pin else ""


PADDLE = Framework(
    name="paddle",
    label="PaddlePaddle",
    runtime="paddlepaddle",
    source_dir=".",
    modes=("train", "infer", "distributed"),
    package="paddle",
    plugin_glob="lib/python3*/site-packages/paddle_custom_device",
    sdist=True,
    wheel_label="Paddle plugin wheel",
    train_models=(DEFAULT_MODEL, "resnet_bn", "transformer"),  # LeNet, then the model battery
    amp_levels=("O1", "O2"),  # paddle.amp.auto_cast levels (O2: paddle.amp.decorate)
)
TORCH = Framework(
    name="torch",
    label="PyTorch",
    runtime="torch",
    source_dir="pytorch",
    modes=("train", "distributed"),
    package="torch",
    unpacked_runtime=True,
    verify_extras=("numpy",),  # torch does not require it; the checks compare with it
    amp_levels=("O1",),  # torch.autocast (float16 with torch.amp.GradScaler, and bfloat16)
    compiler_seam=("2.13",),  # torch.compile with Inductor, the default backend
    verify_imports=("numpy", "torch.utils.data", "torch.profiler"),
    test_ops_imports=tuple(
        f"torch.testing._internal.{module}"
        for module in ("common_methods_invocations", "common_modules", "common_optimizers")
    ),
    test_ops_stand_ins=("expecttest",),
    plugin_glob="lib/python3*/site-packages/torch_*/_build_info.py",
    tree_suffix="-torch",
    wheel_label="PyTorch adapter wheel",
    # OpInfo forward samples and their out=/in-place variants, OpInfo gradients, module_db, optim_db
    op_suites=("ops", "grads", "modules", "optims"),
    # (payload/torch/torch_test_ops.py ALL_DTYPES: its default is the device's, or all with --all)
    op_dtypes=("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64")
    + ("float16", "bfloat16", "complex64", "complex128"),
)
# The registry: every framework devkit knows, by name (a test registers a third one here).
FRAMEWORKS: dict[str, Framework] = {f.name: f for f in (PADDLE, TORCH)}
# A project that names no frameworks has this one's adapter; a bare wheel without a pin is checked as it.
DEFAULT_FRAMEWORK = PADDLE


def find_framework(name: str) -> Framework:
    try:
        return FRAMEWORKS[name.lower()]
    except KeyError:
        raise InputError(f"unknown framework {name!r}", f"use --framework {' | '.join(FRAMEWORKS)}") from None
