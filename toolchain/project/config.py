"""The `[tool.devkit]` table of a backend's pyproject.toml, parsed once into frozen dataclasses.

The model and what is written from it (the generated pyproject.toml's settings, the docs' table,
`config show`'s schema); parsing and checking the table is config_parse.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any

from .. import DISTRIBUTION, __version__
from ..payload.shared.quant_program import QDQ_FOLDING
from ..project.frameworks import DEFAULT_FRAMEWORK, DEFAULT_MODEL, FRAMEWORKS, Framework
from ..project.recipes import BUILD_MACHINE, all_recipes
from ..project.sdk import SdkSettings

MODES = ("train", "infer", "distributed")  # distributed: opt-in, native targets only


class RunnerChoice(str, Enum):
    """Where steps run: --runner and [tool.devkit] runner."""

    auto = "auto"
    docker = "docker"
    host = "host"


RUNNERS = tuple(r.value for r in RunnerChoice)
# every model some adapter trains (plugin_checks.py: LeNet, the battery), the default first
TRAIN_MODELS = tuple(dict.fromkeys(model for f in FRAMEWORKS.values() for model in f.train_models))
INFER_MODELS = (DEFAULT_MODEL, "mobilenet_v1", "resnet50")
CI_PROVIDERS = ("github", "gitlab")
# Debian releases the builder image can be based on, with what they bring. The base decides
# the glibc/libstdc++ a plugin links against, so the manylinux tag auditwheel gives it.
BUILDER_BASES = {"bullseye": "glibc 2.31, GCC 10", "bookworm": "glibc 2.36, GCC 12"}
DEFAULT_BUILDER_BASE = "bullseye"  # the oldest that compiles the C++17 backend: closest to the frameworks' floor
MAX_JOBS = 1024  # matrix lanes: far more than any matrix has entries, far fewer than threads a process may start
# settings whose value is a URL pip is pointed at: never an option, a path or a word
URL_SETTINGS = frozenset({"index_url"})
VERIFY_SUITE = "bookworm"  # verify images run Python 3.11, which every pinned framework wheel supports


# The CPU's first passes in Paddle 3.3.1 (paddle_pass_builder.cc, kPirCpuPasses): QDQ folding.
DEFAULT_INFERENCE_PASSES = QDQ_FOLDING
# A pass name as Paddle's pass registry spells them: it reaches C++ source as a string literal.
PASS_NAME = re.compile(r"[a-z][a-z0-9_]*")


def default_targets() -> tuple[str, ...]:
    """Every recipe, the build machine's (where Paddle publishes the most) first."""
    names = [r.name for r in all_recipes()]
    return tuple(sorted(names, key=lambda n: n != BUILD_MACHINE))


def setting(default: Any, doc: str) -> Any:
    """A [tool.devkit] setting: its default and what it means, written once here. The generated
    project's pyproject.toml and the README's settings table are produced from these."""
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class Tolerances:
    op_rtol: float = setting(1e-4, "forward op results vs the framework's CPU kernels")
    op_atol: float = setting(1e-5, "and absolute")
    grad_rtol: float = setting(1e-3, "gradients vs the CPU")
    grad_atol: float = setting(1e-4, "and absolute")
    min_loss_drop: float = setting(0.5, "MNIST: last 10 losses' mean <= (1 - this) x the first 10's")
    min_accuracy: float = setting(0.85, "MNIST held-out accuracy")
    max_curve_diff: float = setting(0.05, "MNIST: per-step difference of the loss on the device from the CPU's")
    infer_rtol: float = setting(1e-4, "inference outputs vs Paddle on the CPU")
    infer_atol: float = setting(1e-5, "and absolute")


@dataclass(frozen=True)
class VerifySettings:
    train_model: str = setting(DEFAULT_MODEL, " | ".join(TRAIN_MODELS))
    steps: int = setting(200, "MNIST steps on native targets")
    emulated_steps: int = setting(100, "and under qemu (about 10x slower)")
    infer_models: tuple[str, ...] = setting((DEFAULT_MODEL,), " | ".join(INFER_MODELS))
    warmup: int = setting(10, "inference runs before timing")
    repeats: int = setting(30, "timed inference runs")


@dataclass(frozen=True)
class CiSettings:
    devkit_requirement: str = setting(
        f"{DISTRIBUTION}=={__version__}",
        "what CI jobs pip-install to get devkit: the devkit that rendered the project, or a version on "
        "your index, a git URL or a wheel path",
    )
    python: str = setting("3.11", "the jobs' Python")


@dataclass(frozen=True)
class FrameworkSettings:
    """[tool.devkit.<framework>]: one per framework."""

    # Where pip gets the framework's runtime for build and verify environments: "" is pip's own
    # configuration (here: the local CPU wheels); e.g. https://download.pytorch.org/whl/cpu for torch
    # elsewhere. Never leave torch to PyPI's default Linux build, a CUDA build whose CMake config
    # needs a CUDA toolkit.
    index_url: str = ""


@dataclass(frozen=True)
class DevkitConfig:
    name: str
    device_type: str
    targets: tuple[str, ...] = field(default_factory=lambda: default_targets())
    modes: tuple[str, ...] = setting(
        ("train", "infer"), "train | infer | distributed (2-process data parallel, x86_64); PyTorch has no infer"
    )
    # Adapters the project has; commands without --framework act on the first. A project without
    # the key predates the PyTorch adapter: Paddle only.
    frameworks: tuple[str, ...] = (DEFAULT_FRAMEWORK.name,)
    # [tool.devkit.<framework>-versions]: framework name -> recipe name -> versions
    framework_versions: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    runner: str = setting("auto", " | ".join(RUNNERS))
    builder_base: str = setting(
        DEFAULT_BUILDER_BASE,
        "the builder image's Debian: "
        + " | ".join(f"{name} ({what})" for name, what in BUILDER_BASES.items())
        + "; the older links plugins that load on more systems (a lower manylinux tag)",
    )
    jobs: int = setting(0, "parallel matrix lanes (one per target); 0: one per 2 CPUs")
    inference_passes: tuple[str, ...] = setting(
        DEFAULT_INFERENCE_PASSES,
        "the PIR passes Paddle Inference runs on programs for the device (the generated runtime hands them to "
        "Paddle, which runs no device passes of its own for a custom device); the default folds quantized "
        "models' QDQ pairs, as on the CPU",
    )
    verify: VerifySettings = VerifySettings()
    tolerances: Tolerances = Tolerances()
    ci: CiSettings = CiSettings()
    # [tool.devkit.<framework>]: framework name -> its settings (a framework without a table: the defaults)
    framework_settings: dict[str, FrameworkSettings] = field(default_factory=dict)
    sdk: SdkSettings | None = None  # [tool.devkit.sdk]: the vendor SDK the device library links (project/sdk.py)

    def index_url(self, framework: Framework) -> str:
        """Where pip gets the framework's runtime: its section's index-url ([tool.devkit.torch]), else pip's own."""
        return self.framework_settings.get(framework.name, FrameworkSettings()).index_url

    def versions(self, framework: Framework) -> dict[str, tuple[str, ...]]:
        """[tool.devkit.<framework>-versions]: recipe name -> versions."""
        return dict(self.framework_versions.get(framework.name, {}))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def kebab(name: str) -> str:
    """A setting's name as [tool.devkit] spells it."""
    return name.replace("_", "-")


# The [tool.devkit.<section>] tables whose every key is a plain setting of one dataclass.
SETTINGS_SECTIONS: dict[str, type] = {"verify": VerifySettings, "tolerances": Tolerances, "ci": CiSettings}


def toml_value(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    return repr(value)


def _rows(model: type, names: tuple[str, ...] | None = None) -> list[tuple[str, str, str]]:
    """(key, default as TOML, what it means) of the model's settings (`names`: those only)."""
    chosen = [f for f in fields(model) if names is None or f.name in names]
    return [(kebab(f.name), toml_value(f.default), f.metadata["doc"]) for f in chosen]


def settings_rows(section: str) -> list[tuple[str, str, str]]:
    """The settings of [tool.devkit.<section>]."""
    return _rows(SETTINGS_SECTIONS[section])


TOP_LEVEL_SETTINGS = (
    "modes",
    "runner",
    "builder_base",
    "jobs",
    "inference_passes",
)  # [tool.devkit] keys with a plain default


def top_level_rows() -> list[tuple[str, str, str]]:
    return _rows(DevkitConfig, TOP_LEVEL_SETTINGS)


def _explained(line: str, doc: str, width: int) -> list[str]:
    """A key's line with its meaning: after it, at `width`; a long one on a line of its own above."""
    if len(doc) > 60:
        return [f"# {doc}", line]
    return [f"{line.ljust(width)}# {doc}" if doc else line]


def setting_line(name: str) -> str:
    """One top-level [tool.devkit] key at its default, explained, as the generated project writes it."""
    key, value, doc = next(row for row in top_level_rows() if row[0] == kebab(name))
    line = f"{key} = {value}"
    return "\n".join(_explained(line, doc, len(line) + 2))


def settings_toml(section: str) -> str:
    """The section as the generated pyproject.toml writes it: every key at its default, explained
    (the short explanations aligned)."""
    rows = [(f"{key} = {value}", doc) for key, value, doc in settings_rows(section)]
    width = max(len(line) for line, doc in rows if len(doc) <= 60) + 2
    lines = [f"[tool.devkit.{section}]"]
    for line, doc in rows:
        lines += _explained(line, doc, width)
    return "\n".join(lines) + "\n"


def settings_markdown() -> str:
    """The README's table of these settings (a unit test holds the README to it)."""
    rows = [("", row) for row in top_level_rows()]
    rows += [(f"{section}.", row) for section in SETTINGS_SECTIONS for row in settings_rows(section)]
    lines = ["| setting | default | meaning |", "|---|---|---|"]
    for prefix, (key, value, doc) in rows:
        lines.append(f"| `{prefix}{key}` | `{value}` | {doc.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"
