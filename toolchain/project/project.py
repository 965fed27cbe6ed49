"""A generated backend project on disk, as devkit sees it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..project.config import DevkitConfig
from ..project.config_parse import parse_config
from ..project.frameworks import Framework, find_framework
from ..project.layout import check_layout
from ..project.naming import check_device_type, check_name, is_package_name, is_version, switch_prefix
from ..util.errors import InputError
from ..util.tomlfile import read_toml

# devkit's logs, below the build tree; written on the host only (never sent to a container)
LOG_DIR_NAME = "devkit-logs"


@dataclass(frozen=True)
class Project:
    root: Path
    distribution: str  # the wheel's project name, e.g. paddle-custom-stpu
    version: str
    name: str  # backend name, e.g. STPU
    device_type: str  # e.g. stpu
    config: DevkitConfig

    @property
    def dist_dir(self) -> Path:
        return self.root / "dist"

    @property
    def log_dir(self) -> Path:
        return self.root / "build" / LOG_DIR_NAME

    @property
    def wheel_prefix(self) -> str:
        return self.distribution.replace("-", "_") + "-"

    def adapter_dir(self, framework: Framework) -> Path:
        """The directory of the framework adapter's pyproject.toml."""
        return (self.root / framework.source_dir).resolve()

    def distribution_of(self, framework: Framework) -> str:
        """The wheel's project name for the framework: [project] name of the adapter's pyproject.toml."""
        if framework.source_dir == ".":
            return self.distribution
        pyproject = self.adapter_dir(framework) / "pyproject.toml"
        restore = (
            f"restore {framework.source_dir}/ from a freshly rendered project (devkit new-backend NAME --out /tmp/x)"
        )
        try:
            name = read_toml(pyproject, restore)["project"]["name"]
        except (OSError, KeyError, TypeError):
            raise InputError(
                f"{pyproject} is missing or has no [project] name, so the {framework.label} adapter cannot be built",
                restore,
            ) from None
        _check_identity(pyproject, "project.name", str(name), is_package_name, "a package name (PEP 508)")
        return str(name)

    def wheel_prefix_of(self, framework: Framework) -> str:
        return self.distribution_of(framework).replace("-", "_") + "-"

    def framework(self, name: str | None) -> Framework:
        """--framework NAME, checked against [tool.devkit] frameworks; None: the first one declared."""
        framework = find_framework(name or self.config.frameworks[0])
        if framework.name not in self.config.frameworks:
            raise InputError(
                f"{self.name} does not declare the {framework.label} adapter "
                f"([tool.devkit] frameworks = {list(self.config.frameworks)})",
                f'add "{framework.name}" to frameworks in {self.root / "pyproject.toml"} '
                f"(and its {framework.source_dir}/ from a freshly rendered project), or drop --framework",
            )
        return framework


_KEEP_IDENTITY = (
    "set it back to what `devkit new-backend` wrote (a project is renamed by rendering it anew: "
    "devkit new-backend NAME --out DIR)"
)


def _check_identity(pyproject: Path, key: str, value: str, valid: Callable[[str], bool], what: str) -> None:
    if not valid(value):
        raise InputError(f"{pyproject}: {key} = {value!r} is not {what}", _KEEP_IDENTITY)


def check_identities(pyproject: Path, *, distribution: str, version: str, name: str, device_type: str) -> None:
    """The rules `devkit new-backend` names a project by, held again wherever one is loaded: these
    values become C identifiers, library, wheel and bundle file names and environment variables, so
    one edited by hand ("../x", "swp\\n", a quote) stops here, not in a path or a compiler."""
    for key, value, check in (
        ("tool.devkit.name", name, check_name),
        ("tool.devkit.device-type", device_type, check_device_type),
    ):
        try:
            check(value)
        except InputError as exc:
            raise InputError(f"{pyproject}: {key} = {value!r}, but {exc.problem}", _KEEP_IDENTITY) from None
    _check_identity(pyproject, "project.name", distribution, is_package_name, "a package name (PEP 508)")
    _check_identity(pyproject, "project.version", version, is_version, "a version (PEP 440, written plainly)")


def is_project_dir(path: Path) -> bool:
    """Whether `path` looks like a backend project (what load_project requires before reading it)."""
    return (path / "pyproject.toml").is_file() and (path / "CMakeLists.txt").is_file()


def load_project(path: Path) -> Project:
    root = path.resolve()
    pyproject = root / "pyproject.toml"
    if not is_project_dir(root):
        raise InputError(
            f"{root} is not a backend project (no pyproject.toml and CMakeLists.txt)",
            "pass the directory made by `devkit new-backend`, or create one with it",
        )
    check_layout(root)
    data = read_toml(pyproject)
    restore = "restore them from a freshly rendered project (devkit new-backend NAME --out /tmp/x)"
    project, tool = data.get("project"), data.get("tool", {})
    devkit = tool.get("devkit") if isinstance(tool, dict) else None
    if not isinstance(project, dict) or not isinstance(devkit, dict):
        raise InputError(f"{pyproject} has no [project] or [tool.devkit] table", restore)
    for table, key in (("project", "name"), ("project", "version"), ("tool.devkit", "device-type")):
        value = (project if table == "project" else devkit).get(key)
        if not isinstance(value, str) or not value:
            raise InputError(
                f"{pyproject}: {table}.{key} is {'missing' if value is None else repr(value)}, not a non-empty string",
                restore,
            )
    device_type = devkit["device-type"]
    name = devkit.get("name", switch_prefix(device_type))
    if not isinstance(name, str) or not name:
        raise InputError(f"{pyproject}: tool.devkit.name = {name!r} must be a non-empty string", restore)
    check_identities(
        pyproject, distribution=project["name"], version=project["version"], name=name, device_type=device_type
    )
    return Project(
        root=root,
        distribution=project["name"],
        version=project["version"],
        name=name,
        device_type=device_type,
        config=parse_config(devkit, name=name, device_type=device_type, root=root),
    )
