"""devkit's cache and the fresh Python environments verify creates."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
from pathlib import Path

from ..project.frameworks import DEFAULT_FRAMEWORK, Framework
from ..run.step import Runner, Step
from ..util.errors import DevkitError, EnvironmentProblem
from ..util.fsutil import exclusive_lock


def cache_root() -> Path:
    root = os.environ.get("DEVKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "devkit"
    )
    return Path(root)


def create_env(
    runner: Runner, root: Path, packages: list[str], title: str, log: Path, warm_imports: tuple[str, ...] = ()
) -> str:
    """Create a venv at host path `root` (as the runner sees it), install `packages`
    (requirements or paths as the runner sees them); return its python.

    With `warm_imports`, pip writes no bytecode (`--no-compile`: for torch or paddle that is
    thousands of modules, minutes under qemu) and importing those modules once writes it for
    what they load, which is what a verification imports."""
    venv = runner.path(root)
    runner.run(
        Step(
            title=f"{title}: create venv",
            argv=[runner.python, "-m", "venv", venv],
            log=log,
            fails_as=EnvironmentProblem,
        )
    )
    python = f"{venv}/bin/python"
    compile_flag = ["--no-compile"] if warm_imports else []
    runner.run(
        Step(
            title=f"{title}: install {' '.join(Path(p).name if '/' in p else p for p in packages if not p.startswith(('-', 'http')))}",
            argv=[python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off"]
            + compile_flag
            + packages,
            log=log,
            fails_as=EnvironmentProblem,
        )
    )
    if warm_imports:
        runner.run(
            Step(
                title=f"{title}: bytecode of what {', '.join(warm_imports)} import",
                argv=[python, "-c", "; ".join(f"import {m}" for m in warm_imports)],
                log=log,
                fails_as=EnvironmentProblem,
            )
        )
    return python


def verify_root() -> Path:
    """Where verifications get their work directories, and where verify containers keep their
    reference envs: one file system, so the host can hard-link a reference env into a work directory."""
    return cache_root() / "verify"


def container_reference_envs() -> Path:
    return verify_root() / "reference-envs"


def reference_env(
    runner: Runner,
    version: str,
    log: Path,
    framework: Framework = DEFAULT_FRAMEWORK,
    index_url: str = "",
    find_links: str = "",
) -> Path | None:
    """A cached venv holding only the framework runtime (paddlepaddle==V, or torch==V and NumPy),
    which each verification clones (hard links: well under a second, against a fresh venv and a pip
    install of a ~200 MB wheel each time, which under qemu takes minutes).

    On the host, one per Python; for a container, one per image, made inside it (the runner must
    mount container_reference_envs()). The reference env never receives a plugin; the clone does,
    and the clone is removed with the verification. None when the runner cannot see one.
    """
    name = f"{framework.name}-{version}"
    if runner.key == "host":
        py = f"py{sys.version_info.major}{sys.version_info.minor}"
        root = cache_root() / "host" / "reference-envs" / f"{py}-{name}"
    else:
        root = container_reference_envs() / f"{runner.key}-{name}"
        try:
            runner.path(root)
        except DevkitError:
            return None
    marker = root / "devkit-reference-env.json"
    with exclusive_lock(root.parent / f".{root.name}.lock", lambda holder: None):
        if not marker.is_file():  # first use, or an interrupted setup: made again
            shutil.rmtree(root, ignore_errors=True)
            create_env(
                runner,
                root,
                runtime_requirements(framework, version, index_url, find_links),
                f"reference environment ({framework.runtime} {version}, cached)",
                log,
                warm_imports=(framework.package, *framework.verify_imports),
            )
            marker.write_text(json.dumps({framework.runtime: version}))
    if any(root.glob(framework.plugin_glob)):
        raise EnvironmentProblem(
            f"the cached reference environment {root} holds a plugin, so verifications would see it",
            f"delete {root}; devkit makes it again",
        )
    return root


def reference_env_for_build(runner: Runner, version: str, framework: Framework, build_log: Path) -> Path:
    """The reference env a native build uses, made by `runner` (the host, or a container of the verify
    image) on first use, its log beside the build's: <build log>-reference-env.log."""
    reference = reference_env(runner, version, build_log.with_name(f"{build_log.stem}-reference-env.log"), framework)
    assert reference is not None  # both runners see their reference envs
    return reference


def runtime_requirements(framework: Framework, version: str, index_url: str = "", find_links: str = "") -> list[str]:
    """pip arguments installing the framework runtime: from its index when the project names one, and
    from `find_links` (a directory with the wheel the build used, as the runner sees it) first."""
    return [
        *(["--index-url", index_url] if index_url else []),
        *(["--find-links", find_links] if find_links else []),
        f"{framework.runtime}=={version}",
        *framework.verify_extras,
    ]


def site_package(venv: Path, package: str) -> Path:
    """An installed package's directory in a venv create_env made (the runtime's headers and libraries)."""
    found = sorted(venv.glob(f"lib/python3*/site-packages/{package}"))
    if not found:
        raise EnvironmentProblem(f"{venv} has no {package} package", f"delete {venv}; devkit makes it again")
    return found[0]


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.copy2(src, dst)


def clone_env(reference: Path, dest: Path) -> str:
    """A new venv at `dest` whose files are hard links to `reference`'s: Python replaces files it
    writes (bytecode) instead of writing into them, and pip adds new ones, so the reference stays
    as it was. Returns the clone's python. On another file system than the reference (a tmpfs
    /tmp), files are copied instead."""
    shutil.copytree(reference, dest, symlinks=True, copy_function=_link_or_copy)
    (dest / "devkit-reference-env.json").unlink(missing_ok=True)
    return str(dest / "bin" / "python")
