"""`devkit doctor`: is this machine ready for container and cross builds?"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..project.config import DEFAULT_BUILDER_BASE
from ..project.recipes import all_recipes
from ..run.engine import Engine
from ..run.envs import cache_root
from ..run.images import base_tag
from ..run.select import host_recipe

BINFMT = Path("/proc/sys/fs/binfmt_misc")
MIN_FREE_GB = 10


@dataclass(frozen=True)
class DoctorCheck:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def check_engine() -> tuple[DoctorCheck, Engine | None]:
    if not Engine.available():
        return DoctorCheck(
            "container engine",
            False,
            "no engine answers the Docker API (DOCKER_HOST or the local socket)",
            "apt-get install docker.io && (dockerd >/var/log/dockerd.log 2>&1 &), or set DOCKER_HOST",
        ), None
    engine = Engine.connect()
    d = engine.describe()
    return DoctorCheck("container engine", True, f"{d['engine']} {d['version']} (API {d['api']}, {d['arch']})"), engine


def check_binfmt() -> list[DoctorCheck]:
    findings = []
    host = host_recipe()
    for recipe in all_recipes():
        if recipe.name == host.name:
            continue
        handler = recipe.qemu_handler
        if not handler:  # a target the host runs natively, though it is not the host's (recipes: qemu_handler)
            continue
        entry = BINFMT / handler
        fix = (
            "apt-get install qemu-user-static binfmt-support && mount -t binfmt_misc binfmt_misc "
            "/proc/sys/fs/binfmt_misc && update-binfmts --enable"
        )
        if not entry.is_file():
            findings.append(DoctorCheck(f"qemu for {recipe.name}", False, f"no binfmt handler {handler}", fix))
            continue
        text = entry.read_text()
        enabled = text.startswith("enabled")
        fixed = any(line.startswith("flags:") and "F" in line for line in text.splitlines())
        findings.append(
            DoctorCheck(
                f"qemu for {recipe.name}",
                enabled and fixed,
                f"{handler}: {'enabled' if enabled else 'disabled'}, flags {'include' if fixed else 'lack'} F "
                "(interpreter usable inside containers)",
                "" if enabled and fixed else fix,
            )
        )
    return findings


def check_disk() -> DoctorCheck:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    free_gb = shutil.disk_usage(root).free / 1e9
    return DoctorCheck(
        "disk space",
        free_gb >= MIN_FREE_GB,
        f"{free_gb:.0f} GB free under {root}",
        f"free at least {MIN_FREE_GB} GB or set DEVKIT_CACHE_DIR to a larger disk",
    )


def check_host_tools(engine: Engine | None) -> list[DoctorCheck]:
    findings = []
    host = host_recipe()
    for recipe in all_recipes():
        if recipe.name == host.name:
            continue
        compiler = f"{recipe.triple}-g++"
        found = shutil.which(compiler)
        findings.append(
            DoctorCheck(
                f"cross compiler {recipe.name}",
                bool(found),
                found or f"{compiler} not on PATH",
                f"apt-get install g++-{recipe.triple} (only for --runner host; the builder image has it)",
                required=False,
            )
        )
    wanted = [base_tag(r) for r in all_recipes()] + [base_tag(host, DEFAULT_BUILDER_BASE)]
    bases = [tag for tag in wanted if engine is None or engine.image(tag) is None]
    if bases:
        have = shutil.which("debootstrap")
        findings.append(
            DoctorCheck(
                "offline base images",
                bool(have),
                f"missing {', '.join(bases)}; debootstrap {'found' if have else 'not installed'}",
                "apt-get install debootstrap (devkit bootstraps base images on first use)",
            )
        )
    else:
        findings.append(DoctorCheck("offline base images", True, "all present"))
    return findings


def run_doctor() -> list[DoctorCheck]:
    engine_finding, engine = check_engine()
    return [engine_finding, *check_binfmt(), check_disk(), *check_host_tools(engine)]
