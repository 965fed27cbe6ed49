"""Parsing the `[tool.devkit]` table of a backend's pyproject.toml into the settings model
(config.py), once.

Every key is checked: an unknown key or a value of the wrong kind is an error that
names the key (`tool.devkit.verify.steps`), so a typo never silently means "default".
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from ..util.errors import DevkitError, InputError
from ..util.urls import is_url
from .config import (
    BUILDER_BASES,
    DEFAULT_INFERENCE_PASSES,
    INFER_MODELS,
    MAX_JOBS,
    MODES,
    PASS_NAME,
    RUNNERS,
    TRAIN_MODELS,
    URL_SETTINGS,
    CiSettings,
    DevkitConfig,
    FrameworkSettings,
    Tolerances,
    VerifySettings,
    kebab,
)
from .frameworks import FRAMEWORKS, Framework
from .naming import switch_prefix
from .recipes import build_machine_recipe, find_recipe
from .sdk import parse_sdk


def _fail(key: str, problem: str, fix: str) -> DevkitError:
    return InputError(f"pyproject.toml: tool.devkit.{key} {problem}", fix)


def _check_keys(table: dict[str, Any], known: set[str], prefix: str) -> None:
    for key in table:
        if key not in known:
            where = f"{prefix}.{key}" if prefix else key
            raise _fail(where, "is not a devkit setting", f"remove it or use one of: {', '.join(sorted(known))}")


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
    _check_keys(table, {kebab(f) for f in asdict(defaults)}, key)
    values = {}
    for name, default in asdict(defaults).items():
        if kebab(name) not in table:
            continue
        raw, where = table[kebab(name)], f"{key}.{kebab(name)}"
        if name in choices:
            values[name] = _choices(raw, where, choices[name], isinstance(default, tuple))
        elif isinstance(default, str):
            if not isinstance(raw, str) or not raw:
                raise _fail(where, f"= {raw!r} must be a non-empty string", f"e.g. {kebab(name)} = {default!r}")
            values[name] = _url(raw, where) if name in URL_SETTINGS else raw
        else:
            values[name] = _number(raw, where, type(default), 1 if name == "repeats" else 0)
    return cls(**values)


def _runtime_versions(table: Any, framework: Framework) -> dict[str, tuple[str, ...]]:
    section = f"{framework.name}-versions"
    if not isinstance(table, dict):
        machine = build_machine_recipe()
        raise _fail(
            section,
            "must be a table of target = [versions]",
            f'write e.g. [tool.devkit.{section}] then {machine.name} = ["{framework.version(machine)}"]',
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
    sections = {"verify", "tolerances", "ci", "sdk", *FRAMEWORKS, *(f"{f}-versions" for f in FRAMEWORKS)}
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
    values["framework_versions"] = {
        name: _runtime_versions(devkit[f"{name}-versions"], framework)
        for name, framework in FRAMEWORKS.items()
        if f"{name}-versions" in devkit
    }
    values["framework_settings"] = {
        name: _section(devkit[name], name, FrameworkSettings, {}) for name in FRAMEWORKS if name in devkit
    }
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
