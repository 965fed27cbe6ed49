"""The `[tool.devkit]` table of a backend's pyproject.toml, parsed once into frozen dataclasses.

Every key is checked: an unknown key or a value of the wrong kind is an error that
names the key (`tool.devkit.verify.steps`), so a typo never silently means "default".
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from .. import DISTRIBUTION, __version__
from ..payload.quant_model import QDQ_FOLDING
from ..project.frameworks import DEFAULT_FRAMEWORK, DEFAULT_MODEL, FRAMEWORKS, Framework
from ..project.naming import switch_prefix
from ..project.recipes import BUILD_MACHINE, all_recipes, find_recipe
from ..project.sdk import SdkSettings, parse_sdk
from ..util.errors import DevkitError, InputError
from ..util.schema import DRAFT, dataclass_schema, with_error_output
from ..util.urls import is_url

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
class TorchSettings:
    # Where pip gets torch for build and verify environments: "" is pip's own configuration
    # (here: the local CPU wheels); e.g. https://download.pytorch.org/whl/cpu elsewhere. Never
    # leave it to PyPI's default Linux torch, a CUDA build whose CMake config needs a CUDA toolkit.
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
    paddle_versions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # recipe name -> versions
    torch_versions: dict[str, tuple[str, ...]] = field(default_factory=dict)
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
    torch: TorchSettings = TorchSettings()
    sdk: SdkSettings | None = None  # [tool.devkit.sdk]: the vendor SDK the device library links (project/sdk.py)

    def index_url(self, framework: Framework) -> str:
        """Where pip gets the framework's runtime: its section's index-url ([tool.devkit.torch]), else pip's own."""
        return str(getattr(getattr(self, framework.name, None), "index_url", ""))

    def versions(self, framework: Framework) -> dict[str, tuple[str, ...]]:
        """[tool.devkit.<framework>-versions]: recipe name -> versions."""
        return dict(getattr(self, f"{framework.name}_versions"))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fail(key: str, problem: str, fix: str) -> DevkitError:
    return InputError(f"pyproject.toml: tool.devkit.{key} {problem}", fix)


def _check_keys(table: dict[str, Any], known: set[str], prefix: str) -> None:
    for key in table:
        if key not in known:
            where = f"{prefix}.{key}" if prefix else key
            raise _fail(where, "is not a devkit setting", f"remove it or use one of: {', '.join(sorted(known))}")


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def _number(value: Any, key: str, kind: type, minimum: float, maximum: float | None = None) -> Any:
    ok = isinstance(value, (int, float)) if kind is float else isinstance(value, int)
    if not ok or isinstance(value, bool) or value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise _fail(
            key,
            f"= {value!r} must be a{'n integer' if kind is int else ' number'} {bounds}",
            f"set e.g. {key.rsplit('.', 1)[-1]} = {kind(minimum) if minimum else kind(1)}",
        )
    return kind(value)


def _url(value: str, key: str) -> str:
    if not is_url(value, ("http", "https", "file")):
        raise _fail(
            key, f"= {value!r} is not an http(s) or file URL", 'e.g. index-url = "https://download.pytorch.org/whl/cpu"'
        )
    return value


def _choices(value: Any, key: str, allowed: tuple[str, ...], many: bool) -> Any:
    items = value if many else [value]
    if (many and not isinstance(value, list)) or not items or not all(isinstance(v, str) for v in items):
        raise _fail(
            key,
            f"= {value!r} must be {'a non-empty list of strings' if many else 'a string'}",
            f"use {key.rsplit('.', 1)[-1]} = {list(allowed) if many else repr(allowed[0])}",
        )
    for v in items:
        if v not in allowed:
            raise _fail(
                key, f"has {v!r}, which is not one of {', '.join(allowed)}", f"use one of: {', '.join(allowed)}"
            )
    return tuple(items) if many else value


def _section(table: Any, key: str, cls: type, choices: dict[str, tuple[str, ...]]) -> Any:
    if not isinstance(table, dict):
        raise _fail(key, "must be a table", f"write it as [tool.devkit.{key}]")
    defaults = cls()
    _check_keys(table, {_kebab(f) for f in asdict(defaults)}, key)
    values = {}
    for name, default in asdict(defaults).items():
        if _kebab(name) not in table:
            continue
        raw, where = table[_kebab(name)], f"{key}.{_kebab(name)}"
        if name in choices:
            values[name] = _choices(raw, where, choices[name], isinstance(default, tuple))
        elif isinstance(default, str):
            if not isinstance(raw, str) or not raw:
                raise _fail(where, f"= {raw!r} must be a non-empty string", f"e.g. {_kebab(name)} = {default!r}")
            values[name] = _url(raw, where) if name in URL_SETTINGS else raw
        else:
            values[name] = _number(raw, where, type(default), 1 if name == "repeats" else 0)
    return cls(**values)


def _runtime_versions(table: Any, framework: Framework) -> dict[str, tuple[str, ...]]:
    section = f"{framework.name}-versions"
    if not isinstance(table, dict):
        raise _fail(
            section,
            "must be a table of target = [versions]",
            f'write e.g. [tool.devkit.{section}] then x86_64 = ["{framework.version(find_recipe("x86_64"))}"]',
        )
    resolved: dict[str, tuple[str, ...]] = {}
    for target, versions in table.items():
        key = f"{section}.{target}"
        try:
            recipe = find_recipe(target)
        except DevkitError as exc:
            raise _fail(key, f"names an unknown target ({exc.fix})", "use a recipe name") from None
        pinned = framework.version(recipe)
        if pinned is None:
            raise _fail(key, f"is set, but {recipe.name} has no {framework.label} runtime", "remove it")
        if not isinstance(versions, list) or not versions:
            raise _fail(key, f"= {versions!r} must be a non-empty list", f'e.g. {target} = ["{pinned}"]')
        for v in versions:
            try:
                Version(str(v))
            except InvalidVersion:
                raise _fail(key, f"has {v!r}, which is not a version", f'e.g. {target} = ["{pinned}"]') from None
        resolved[recipe.name] = tuple(str(v) for v in versions)
    return resolved


def _pass_names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail("inference-passes", f"= {value!r} must be a list of pass names", _PASSES_FIX)
    for name in value:
        if not PASS_NAME.fullmatch(name):
            raise _fail("inference-passes", f"has {name!r}, which is not a pass name", _PASSES_FIX)
    return tuple(value)


_PASSES_FIX = "name Paddle's PIR passes, e.g. inference-passes = " + json.dumps(list(DEFAULT_INFERENCE_PASSES))


def parse_config(devkit: dict[str, Any], *, name: str, device_type: str, root: Path | None = None) -> DevkitConfig:
    """`devkit` is the [tool.devkit] table (name/device-type already read by the caller); `root`,
    the project directory, is what relative SDK paths are taken from."""
    sections = {"verify", "tolerances", "ci", "torch", "sdk", *(f"{f}-versions" for f in FRAMEWORKS)}
    scalars = {"name", "device-type", "targets", "modes", "frameworks", "runner", "builder-base", "jobs"}
    scalars.add("inference-passes")
    _check_keys(devkit, sections | scalars, "")
    values: dict[str, Any] = {"name": name, "device_type": device_type}
    if "targets" in devkit:
        targets = devkit["targets"]
        if not isinstance(targets, list) or not targets or not all(isinstance(t, str) for t in targets):
            raise _fail(
                "targets",
                f"= {targets!r} must be a non-empty list of target names",
                'e.g. targets = ["x86_64", "aarch64"]',
            )
        names = []
        for t in targets:
            try:
                names.append(find_recipe(t).name)
            except DevkitError as exc:
                raise _fail("targets", f"has {t!r}: {exc.problem}", exc.fix) from None
        values["targets"] = tuple(dict.fromkeys(names))
    if "modes" in devkit:
        values["modes"] = _choices(devkit["modes"], "modes", MODES, many=True)
    if "runner" in devkit:
        values["runner"] = _choices(devkit["runner"], "runner", RUNNERS, many=False)
    if "builder-base" in devkit:
        values["builder_base"] = _choices(devkit["builder-base"], "builder-base", tuple(BUILDER_BASES), many=False)
    if "jobs" in devkit:
        values["jobs"] = _number(devkit["jobs"], "jobs", int, 0, MAX_JOBS)
    if "inference-passes" in devkit:
        values["inference_passes"] = _pass_names(devkit["inference-passes"])
    if "frameworks" in devkit:
        values["frameworks"] = tuple(
            dict.fromkeys(_choices(devkit["frameworks"], "frameworks", tuple(FRAMEWORKS), True))
        )
    for framework in FRAMEWORKS.values():
        if f"{framework.name}-versions" in devkit:
            values[f"{framework.name}_versions"] = _runtime_versions(devkit[f"{framework.name}-versions"], framework)
    if "torch" in devkit:
        values["torch"] = _section(devkit["torch"], "torch", TorchSettings, {})
    if "verify" in devkit:
        values["verify"] = _section(
            devkit["verify"], "verify", VerifySettings, {"train_model": TRAIN_MODELS, "infer_models": INFER_MODELS}
        )
    if "tolerances" in devkit:
        values["tolerances"] = _section(devkit["tolerances"], "tolerances", Tolerances, {})
    if "ci" in devkit:
        values["ci"] = _section(devkit["ci"], "ci", CiSettings, {})
    if "sdk" in devkit:
        # the device's switches begin with its device type in upper case, and with its name's, when that differs
        switches = tuple(dict.fromkeys((switch_prefix(device_type), name.upper())))
        values["sdk"] = parse_sdk(devkit["sdk"], root, switches)
    return DevkitConfig(**values)


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
    return [(_kebab(f.name), toml_value(f.default), f.metadata["doc"]) for f in chosen]


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
    key, value, doc = next(row for row in top_level_rows() if row[0] == _kebab(name))
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


def config_show_schema() -> dict[str, Any]:
    """The schema of `devkit config show --json`: the settings model, generated from it."""
    schema = dataclass_schema(DevkitConfig)
    schema["properties"]["matrix"] = {
        "description": "the matrix entries' ids",
        "type": "array",
        "items": {"type": "string"},
    }
    schema["required"].append("matrix")
    return with_error_output({"$schema": DRAFT, "title": "devkit config show --json", **schema})
