"""A generated backend project on disk, as devkit sees it."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .config import DevkitConfig, parse_config
from .errors import DevkitError


@dataclass(frozen=True)
class Project:
    root: Path
    distribution: str   # the wheel's project name, e.g. paddle-custom-stpu
    version: str
    name: str           # backend name, e.g. STPU
    device_type: str    # e.g. stpu
    config: DevkitConfig

    @property
    def dist_dir(self) -> Path:
        return self.root / "dist"

    @property
    def log_dir(self) -> Path:
        return self.root / "build" / "devkit-logs"

    @property
    def wheel_prefix(self) -> str:
        return self.distribution.replace("-", "_") + "-"


def load_project(path: Path) -> Project:
    root = path.resolve()
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or not (root / "CMakeLists.txt").is_file():
        raise DevkitError(
            f"{root} is not a backend project (no pyproject.toml and CMakeLists.txt)",
            "pass the directory made by `devkit new-backend`, or create one with it",
        )
    try:
        data = tomllib.loads(pyproject.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise DevkitError(f"{pyproject} is not valid TOML: {exc}", "fix its syntax") from None
    devkit = data.get("tool", {}).get("devkit", {})
    if "device-type" not in devkit or "name" not in data.get("project", {}):
        raise DevkitError(
            f"{pyproject} has no [tool.devkit] device-type or [project] name",
            "restore them from a freshly rendered project (devkit new-backend NAME --out /tmp/x)",
        )
    name = devkit.get("name", devkit["device-type"].upper())
    return Project(
        root=root,
        distribution=data["project"]["name"],
        version=str(data["project"].get("version", "0")),
        name=name,
        device_type=devkit["device-type"],
        config=parse_config(devkit, name=name, device_type=devkit["device-type"]),
    )
