"""Getting a plugin onto a package index: what an index checks before it accepts a file,
the sdist, and `devkit publish` (twine upload)."""

from __future__ import annotations

import hashlib
import re
from email.message import Message
from email.parser import Parser
from importlib.metadata import version as installed_version
from pathlib import Path

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from ..payload.shared.problems import INDEX_FIX, index_unreachable
from ..run.envs import cache_root
from ..util.archives import tar_archive, wheel_metadata, zip_archive
from ..util.errors import BuildFailure, EnvironmentProblem, InputError
from ..util.fsutil import write_atomic
from ..util.tools import run_module

_LEVEL = re.compile(r"^(ERROR|WARNING|FAILED)\s+")


def _first_problem(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    flagged = [line for line in lines if line.startswith(("ERROR", "WARNING", "FAILED")) or "error" in line.lower()]
    return _LEVEL.sub("", (flagged or lines or ["no output"])[0])


def check_wheel_consistency(wheel: Path) -> None:
    """The file name agrees with METADATA (name, version) and WHEEL (tags), as an index requires."""
    fix = "rebuild it with devkit build; do not rename wheel files"
    name, version, _, tags = parse_wheel_filename(wheel.name)
    with zip_archive(wheel, "wheel", fix) as zf:
        metadata = wheel_metadata(zf, wheel, "wheel", fix)
        wheel_files = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/WHEEL")]
        if len(wheel_files) != 1:
            raise BuildFailure(f"{wheel.name} has {len(wheel_files)} *.dist-info/WHEEL files, not 1", fix)
        wheel_file = Parser().parsestr(zf.read(wheel_files[0]).decode())
    _check_release(wheel, "METADATA", metadata, name, version, fix)
    declared = {tag.strip() for tag in wheel_file.get_all("Tag") or []}
    if declared != {str(t) for t in tags}:
        raise BuildFailure(
            f"{wheel.name}: its WHEEL file declares {', '.join(sorted(declared)) or 'no tags'}, the file name "
            f"{', '.join(sorted(str(t) for t in tags))}",
            fix,
        )


def check_sdist_consistency(sdist: Path) -> None:
    name, version = parse_sdist_filename(sdist.name)
    fix = "rebuild it with devkit build --sdist"
    with tar_archive(sdist, "sdist", fix) as tar:
        stem = sdist.name.removesuffix(".tar.gz")
        member = tar.extractfile(f"{stem}/PKG-INFO") if f"{stem}/PKG-INFO" in tar.getnames() else None
        if member is None:
            raise BuildFailure(f"{sdist.name} has no {stem}/PKG-INFO", fix)
        pkg_info = Parser().parsestr(member.read().decode())
    _check_release(sdist, "PKG-INFO", pkg_info, name, version, fix)


def _check_release(path: Path, source: str, fields: Message, name: str, version: Version, fix: str) -> None:
    """The name and version in a file's name agree with its core metadata."""
    if canonicalize_name(fields.get("Name", "")) != name or Version(fields.get("Version", "0")) != version:
        raise BuildFailure(
            f"{path.name} names {name} {version} but its {source} says {fields.get('Name')} {fields.get('Version')}",
            fix,
        )


def twine_check(files: list[Path], log: Path | None) -> None:
    """`twine check --strict`: the metadata and long description render as PyPI would show them.
    What it reads is each file's name and core metadata, so files it passed are recorded by those
    (and twine's version) and not checked again: a rebuild after a source edit changes neither, and
    the check's own process took 0.25-0.34 s of every rebuild."""
    record = cache_root() / "twine-checked" / _twine_key(files)
    if record.is_file():
        return
    code, output = run_module("twine", ["check", "--strict", *map(str, files)], log)
    if code != 0:
        raise BuildFailure(
            f"twine check refuses {', '.join(f.name for f in files)}: {_first_problem(output)}",
            "fix the project's README.md or pyproject.toml [project] metadata",
            log=log,
        )
    write_atomic(record, "")


def _twine_key(files: list[Path]) -> str:
    """A digest of what twine check reads: twine's version, each file's name and core metadata."""
    h = hashlib.blake2b(installed_version("twine").encode(), digest_size=16)
    for path in files:
        h.update(b"\0" + path.name.encode() + b"\0" + _core_metadata(path))
    return h.hexdigest()


def _core_metadata(path: Path) -> bytes:
    """A wheel's .dist-info/METADATA or an sdist's PKG-INFO, as stored."""
    if path.suffix == ".whl":
        fix = "rebuild it with devkit build; do not rename wheel files"
        with zip_archive(path, "wheel", fix) as zf:
            names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            return b"".join(zf.read(n) for n in names)
    with tar_archive(path, "sdist", "rebuild it with devkit build --sdist") as tar:
        member = tar.extractfile(f"{path.name.removesuffix('.tar.gz')}/PKG-INFO")
        return member.read() if member is not None else b""


def check_index_ready(files: list[Path], log: Path | None) -> None:
    for path in files:
        if path.suffix == ".whl":
            check_wheel_consistency(path)
        else:
            check_sdist_consistency(path)
    twine_check(files, log)


def build_sdist(project_root: Path, out_dir: Path, paddle_version: str, log: Path) -> Path:
    """`python -m build --sdist` through the project's backend (scikit-build-core), in an isolated
    environment; PADDLE_VERSION feeds the pin the metadata provider writes into PKG-INFO."""
    code, output = run_module(
        "build",
        ["--sdist", "--outdir", str(out_dir), str(project_root)],
        log,
        env={"PADDLE_VERSION": paddle_version},
    )
    sdists = sorted(out_dir.glob("*.tar.gz"))
    if code != 0 or len(sdists) != 1:
        raise BuildFailure(f"building the sdist failed: {_first_problem(output)}", "inspect the log", log=log)
    return sdists[0]


def upload(files: list[Path], repository_url: str, log: Path | None) -> None:
    """twine upload; credentials come from TWINE_USERNAME/TWINE_PASSWORD or the keyring, and
    never reach the command line or the log."""
    check_index_ready(files, log)
    code, output = run_module(
        "twine",
        ["upload", "--non-interactive", "--disable-progress-bar", "--repository-url", repository_url, *map(str, files)],
        log,
    )
    unreachable = index_unreachable(output)
    if code != 0 and "Credential not found" in output:
        raise InputError(
            f"no credentials for {repository_url}",
            "set TWINE_USERNAME and TWINE_PASSWORD (an API token: TWINE_USERNAME=__token__) or store them in the "
            "keyring; devkit never takes them on the command line",
            log=log,
        )
    if code != 0 and unreachable:
        raise EnvironmentProblem(f"{repository_url}: {unreachable}", INDEX_FIX, log=log)
    if code != 0:
        raise EnvironmentProblem(
            f"uploading to {repository_url} failed: {_first_problem(output)}",
            "check the URL and TWINE_USERNAME / TWINE_PASSWORD (or your keyring); a file already on the index "
            "cannot be uploaded again",
            log=log,
        )
