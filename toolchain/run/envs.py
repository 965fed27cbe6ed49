"""devkit's cache and the fresh Python environments verify creates."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.utils import NormalizedName, canonicalize_name, parse_wheel_filename

from ..project.frameworks import DEFAULT_FRAMEWORK, Framework
from ..run.step import HostRunner, Runner, Step
from ..util.errors import DevkitError, EnvironmentProblem
from ..util.fsutil import exclusive_lock

# The stamp, written last: what the env holds and how it was made. An env without it, or with
# another, is made again (one an emulated pip made holds no bytecode: verify images set
# PYTHONDONTWRITEBYTECODE, so every emulated import compiled the framework again).
REFERENCE_MARKER = "devkit-reference-env.json"


def cache_root() -> Path:
    root = os.environ.get("DEVKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "devkit"
    )
    return Path(root)


def create_env(
    runner: Runner,
    root: Path,
    packages: list[str],
    title: str,
    log: Path,
    warm_imports: tuple[str, ...] = (),
    stand_ins: tuple[str, ...] = (),
) -> str:
    """Create a venv at host path `root` (as the runner sees it), install `packages`
    (requirements or paths as the runner sees them); return its python.

    With `warm_imports`, pip writes no bytecode (`--no-compile`: for torch or paddle that is
    thousands of modules, minutes under qemu) and importing those modules once writes it for
    what they load, which is what a verification imports (`stand_ins`: see warm_bytecode)."""
    python = create_venv(runner, root, title, log)
    pip_install(runner, python, (["--no-compile"] if warm_imports else []) + packages, title, log)
    if warm_imports:
        warm_bytecode(runner, python, warm_imports, title, log, stand_ins)
    return python


def pip_install(runner: Runner, python: str, arguments: list[str], title: str, log: Path) -> None:
    """`python -m pip install ARGUMENTS` where the runner runs."""
    runner.run(
        Step(
            title=f"{title}: install {' '.join(Path(p).name if '/' in p else p for p in arguments if not p.startswith(('-', 'http')))}",
            argv=[python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", *arguments],
            log=log,
            fails_as=EnvironmentProblem,
        )
    )


def create_venv(runner: Runner, root: Path, title: str, log: Path) -> str:
    """A venv (with the Python's own pip) at host path `root`; returns its python as the runner sees it."""
    venv = runner.path(root)
    runner.run(
        Step(
            title=f"{title}: create venv",
            argv=[runner.python, "-m", "venv", venv],
            log=log,
            fails_as=EnvironmentProblem,
        )
    )
    return f"{venv}/bin/python"


def warm_bytecode(
    runner: Runner, python: str, imports: tuple[str, ...], title: str, log: Path, stand_ins: tuple[str, ...] = ()
) -> None:
    """Import `imports` once, writing the bytecode of what they load (verify images set
    PYTHONDONTWRITEBYTECODE, which would make this write nothing); `stand_ins`: modules that are
    not installed, stood in for by a module with a TestCase."""
    prelude = ["import sys, types, unittest"] if stand_ins else []
    prelude += [
        f"sys.modules.setdefault({name!r}, types.SimpleNamespace(TestCase=unittest.TestCase))" for name in stand_ins
    ]
    runner.run(
        Step(
            title=f"{title}: bytecode of what {', '.join(imports)} import",
            argv=[python, "-c", "; ".join([*prelude, *(f"import {m}" for m in imports)])],
            log=log,
            env={"PYTHONDONTWRITEBYTECODE": ""},
            fails_as=EnvironmentProblem,
        )
    )


def fill_from_host(runner: Runner, venv: Path, packages: list[str], links: Path | None, title: str, log: Path) -> bool:
    """A venv at host path `venv` holding `packages` (pip arguments as the runner sees them) as the
    runner's Python and pip would make it, unpacked by the host's pip: the target's pip only resolves
    (a dry run, which reads metadata), then the host's pip installs exactly those releases for the
    target's Python and wheel tags, the very files (`links`: the host's path of a find-links directory
    in `packages`). Under qemu,
    the venv's ensurepip took 32 s and pip's install 67 s of a Paddle env's 133 s.

    Bytecode: written by the host's Python when its minor version is the target's (bytecode is
    per Python version, not per machine): returns whether it was."""
    python = f"{runner.path(venv)}/bin/python"
    ensurepip_wheels = venv / "devkit-ensurepip"
    runner.run(
        Step(
            title=f"{title}: create venv (its pip: the wheels the Python's ensurepip holds)",
            argv=["sh", "-c", '"$0" -m venv --without-pip "$1" && "$0" -c "$2" "$3"', runner.python]
            + [runner.path(venv), _COPY_ENSUREPIP_WHEELS, runner.path(ensurepip_wheels)],
            log=log,
            fails_as=EnvironmentProblem,
        )
    )
    site = site_packages(venv)
    version = site.parent.name.removeprefix("python")  # lib/python3.11/site-packages
    arguments = ["--no-index", "--find-links", str(ensurepip_wheels), *ENSUREPIP_PACKAGES]
    # (ensurepip's scripts are headed for the venv's namesake of the Python that made it: python3)
    ensurepip_title = f"{title}: install pip (ensurepip's) with the host's pip"
    _host_pip(runner, venv, version, arguments, ensurepip_title, log, PurePosixPath(runner.python).name)
    config = venv / "pyvenv.cfg"  # as `python -m venv` with its ensurepip records the command
    config.write_text(config.read_text().replace(" -m venv --without-pip ", " -m venv "))
    shutil.rmtree(ensurepip_wheels)
    resolution = venv / "devkit-resolution.json"
    pip_install(runner, python, ["--dry-run", "--quiet", f"--report={runner.path(resolution)}", *packages], title, log)
    chosen = [item["download_info"] for item in json.loads(resolution.read_text())["install"]]
    resolution.unlink()
    files = [unquote(PurePosixPath(urlsplit(info["url"]).path).name) for info in chosen]
    if not all(file.endswith(".whl") for file in files):  # a source distribution: the target's pip builds it
        pip_install(runner, python, ["--no-compile", *packages], title, log)
        return False
    wheels = {name: (ver, tags) for name, ver, _, tags in map(parse_wheel_filename, files)}
    platforms = sorted({t.platform for _, tags in wheels.values() for t in tags} - {"any"})
    abis = sorted({t.abi for _, tags in wheels.values() for t in tags} - {"none", "abi3"})
    target = ["--only-binary=:all:", "--implementation", "cp", "--python-version", version]
    target += [*(f"--platform={p}" for p in platforms), *(f"--abi={a}" for a in abis)]
    # the very files the target's pip chose (their hashes checked), and only those, installed
    downloads = venv / "devkit-wheels"
    HostRunner().run(
        Step(
            title=f"{title}: download the {len(files)} wheels the target's pip chose, with the host's pip",
            argv=[sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--progress-bar", "off"]
            + ["--no-deps", "--dest", str(downloads), *target]
            + [_host_url(info, file, links) for info, file in zip(chosen, files, strict=True)],
            log=log,
            env=target_pip_env(),
            fails_as=EnvironmentProblem,
        )
    )
    compiled = _host_pip(
        runner,
        venv,
        version,
        [
            "--no-index",
            "--find-links",
            str(downloads),
            *target,
            *(f"{name}=={ver}" for name, (ver, _) in wheels.items()),
        ],
        f"{title}: install them for Python {version} ({', '.join(platforms)}) with the host's pip",
        log,
    )
    shutil.rmtree(downloads)
    _mark_requested(site, set(wheels), packages)
    return compiled


def _host_url(download_info: dict[str, Any], file: str, links: Path | None) -> str:
    """Where the host's pip gets a file the target's pip chose: its index URL, or for the runner's
    find-links directory (a file: URL as the runner sees it) that directory on the host; with the
    hash the target's pip recorded, which pip checks."""
    url = download_info["url"] if not download_info["url"].startswith("file:") or links is None else str(links / file)
    digest = download_info.get("archive_info", {}).get("hash", "")
    return f"{url}#{digest}" if digest and not url.startswith("/") else url


# The wheels `python -m venv` has ensurepip install (CPython's own, or the distribution's directory
# of them, as Debian's), copied into argv[1].
ENSUREPIP_PACKAGES = ("setuptools", "pip")
_COPY_ENSUREPIP_WHEELS = (
    "import ensurepip, glob, os, shutil, sys, sysconfig; "
    "d = sysconfig.get_config_var('WHEEL_PKG_DIR') or os.path.join(os.path.dirname(ensurepip.__file__), '_bundled'); "
    "os.makedirs(sys.argv[1]); "
    f"[shutil.copy(w, sys.argv[1]) for n in {ENSUREPIP_PACKAGES!r} for w in glob.glob(os.path.join(d, n + '-*.whl'))]"
)


def _host_pip(
    runner: Runner, venv: Path, version: str, arguments: list[str], title: str, log: Path, python: str = "python"
) -> bool:
    """The host's pip, configured as the target's, installing into `venv` (the runner's, for its
    Python `version`): packages into site-packages, console scripts into bin/ for the venv's python.
    Returns whether it wrote bytecode (only for the host's own Python version)."""
    compiles = version == f"{sys.version_info.major}.{sys.version_info.minor}"
    site = site_packages(venv)
    HostRunner().run(
        Step(
            title=title,
            argv=[sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off"]
            + ["--no-deps", "--target", str(site), *([] if compiles else ["--no-compile"]), *arguments],
            log=log,
            env=target_pip_env(),
            fails_as=EnvironmentProblem,
        )
    )
    _move_scripts(site, venv, f"{runner.path(venv)}/bin/{python}")
    return compiles


def _mark_requested(site: Path, installed: set[NormalizedName], packages: list[str]) -> None:
    """pip's REQUESTED mark only on the distributions `packages` ask for, as the target's pip marks them
    (the host's pip, given every distribution by name, marks them all)."""
    requested = {
        canonicalize_name(re.split(r"[=<>!~ \[;]", p, maxsplit=1)[0]) for p in packages if not p.startswith("-")
    }
    for info in site.glob("*.dist-info"):
        name = canonicalize_name(info.name.rsplit("-", 2)[0])
        if name in installed and name not in requested:
            (info / "REQUESTED").unlink(missing_ok=True)


def target_pip_env() -> dict[str, str | None]:
    """The host's pip configured as verify containers configure theirs (container.host_pip_settings:
    no pip config files, no local indexes), so that it sees the index the target's pip resolved from."""
    from .container import host_pip_settings

    settings, mounts = host_pip_settings()
    cert = {m.target: str(m.host) for m in mounts}
    return {
        **dict.fromkeys((k for k in os.environ if k.startswith("PIP_")), None),
        **{k: cert.get(v, v) for k, v in settings.items()},
        "PIP_CONFIG_FILE": os.devnull,
    }


# pip's header of a console script for the host's Python: a #! line, or for a long path its /bin/sh
# trampoline (scripts a wheel ships as they are, e.g. Paddle's bash one, keep theirs)
_SCRIPT_HEADER = re.compile(
    rb"\A(?:#!"
    + re.escape(sys.executable.encode())
    + rb"\n|#!/bin/sh\n'''exec' \"?"
    + re.escape(sys.executable.encode())
    + rb"\"?"
    + rb" [^\n]*\n' '''\n)"
)


def _move_scripts(site: Path, venv: Path, python: str) -> None:
    """pip --target leaves console scripts in the target's bin/, headed for the host's Python, and
    data files (man pages) in its share/: moved into the venv's bin/ (headed for its `python`, as
    the runner sees it) and share/, where the target's pip puts them, and recorded there."""
    for scheme in ("bin", "share"):
        if not (site / scheme).is_dir():
            continue
        if scheme == "bin":
            for script in (site / "bin").iterdir():
                moved = venv / "bin" / script.name
                moved.write_bytes(_SCRIPT_HEADER.sub(f"#!{python}\n".encode(), script.read_bytes(), count=1))
                moved.chmod(script.stat().st_mode)
            shutil.rmtree(site / "bin")
        else:
            shutil.copytree(site / scheme, venv / scheme, dirs_exist_ok=True)
            shutil.rmtree(site / scheme)
        for record in site.glob("*.dist-info/RECORD"):
            text = record.read_text()
            if re.search(rf"(?m)^{scheme}/", text):
                record.write_text(re.sub(rf"(?m)^{scheme}/", f"{os.path.relpath(venv / scheme, site)}/", text))


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise EnvironmentProblem(f"{venv} has no site-packages", f"delete {venv}; devkit makes it again")
    return found[0]


def verify_root() -> Path:
    """Where verifications get their work directories, and where verify containers keep their
    reference envs: one file system, so the host can hard-link a reference env into a work directory."""
    return cache_root() / "verify"


def inductor_probes() -> Path:
    """Inductor's probes of the CPU (payload/torch/torch_compile.py), kept between verifications:
    a directory per runner key (where they were compiled and loaded), mounted in verify containers."""
    return cache_root() / "inductor-probes"


def container_reference_envs() -> Path:
    return verify_root() / "reference-envs"


def reference_env(
    runner: Runner,
    version: str,
    log: Path,
    framework: Framework = DEFAULT_FRAMEWORK,
    index_url: str = "",
    links: Path | None = None,
    emulated: bool = False,
) -> Path | None:
    """A cached venv holding only the framework runtime (paddlepaddle==V, or torch==V and NumPy),
    which each verification clones (hard links: well under a second, against a fresh venv and a pip
    install of a ~200 MB wheel each time, which under qemu takes minutes).

    On the host, one per Python; for a container, one per image, made inside it (the runner must
    mount container_reference_envs()). The reference env never receives a plugin; the clone does,
    and the clone is removed with the verification. None when the runner cannot see one.
    `links`: a directory holding the runtime's wheel (pip prefers it to the index); `emulated`: the
    runner's Python runs under qemu (then the host's pip unpacks: fill_from_host).
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
    by_host = emulated and importlib.util.find_spec("pip") is not None
    stamp = {framework.runtime: version, **({"unpacked_by": "the host's pip"} if by_host else {})}
    root.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(root.parent / f".{root.name}.lock", lambda holder: None):
        if _stamp_of(root) != stamp:  # first use, or made otherwise (or half-made) by an older devkit
            shutil.rmtree(root, ignore_errors=True)
            for interrupted in root.parent.glob(f".{root.name}.*.partial"):
                shutil.rmtree(interrupted, ignore_errors=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.", suffix=".partial", dir=root.parent))
            try:
                _make_reference_env(runner, staging, framework, version, index_url, links, by_host, log)
                _relocate(staging, runner.path(staging), runner.path(root))
                (staging / REFERENCE_MARKER).write_text(json.dumps(stamp))
                staging.rename(root)  # whole, stamped, or not there at all
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
    if any(root.glob(framework.plugin_glob)):
        raise EnvironmentProblem(
            f"the cached reference environment {root} holds a plugin, so verifications would see it",
            f"delete {root}; devkit makes it again",
        )
    return root


def _make_reference_env(
    runner: Runner,
    venv: Path,
    framework: Framework,
    version: str,
    index_url: str,
    links: Path | None,
    by_host: bool,
    log: Path,
) -> None:
    title = f"reference environment ({framework.runtime} {version}, cached)"
    packages = runtime_requirements(framework, version, index_url, runner.path(links) if links else "")
    warm_imports = (framework.package, *framework.verify_imports)
    if not by_host:  # (test-ops' imports too: one process imports the runtime once for all of them)
        all_imports = (*warm_imports, *framework.test_ops_imports)
        create_env(runner, venv, packages, title, log, all_imports, framework.test_ops_stand_ins)
        return
    if not fill_from_host(runner, venv, packages, links, title, log):
        warm_bytecode(runner, f"{runner.path(venv)}/bin/python", warm_imports, title, log)


def _stamp_of(root: Path) -> object:
    try:
        return json.loads((root / REFERENCE_MARKER).read_text())
    except (OSError, ValueError):
        return None


def _relocate(venv: Path, made_at: str, moved_to: str) -> None:
    """A venv made at `made_at` (as its runner sees it), to be moved to `moved_to`: the paths venv
    and pip wrote into pyvenv.cfg, the activate scripts and the console scripts' #! lines."""
    for path in [venv / "pyvenv.cfg", *(venv / "bin").iterdir()]:
        if path.is_file() and not path.is_symlink() and made_at.encode() in (data := path.read_bytes()):
            path.write_bytes(data.replace(made_at.encode(), moved_to.encode()))


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
    (dest / REFERENCE_MARKER).unlink(missing_ok=True)
    return str(dest / "bin" / "python")
