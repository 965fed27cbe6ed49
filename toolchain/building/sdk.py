"""Providing a declared vendor SDK ([tool.devkit.sdk], project/sdk.py) to a build.

Every kind ends as a directory the build runner can read, the SDK's root, into which the
declared include and library directories lead:
- `dir`: the directory itself (mounted into a container build);
- `archive`: fetched (a path or an http(s) URL), its sha256 checked before anything is
  unpacked, unpacked once into the build cache (a single top directory is the root);
- `debian`: `apt-get download` of exactly the listed packages, `dpkg-deb -x` into a prefix in
  the build cache, on the runner the build uses (so the builder image's Debian release, and
  for `name:arm64` the target's libraries, never the build machine's); every build first asks
  apt which versions it would download (none left to choose when each is pinned `name=version`),
  and downloads exactly those;
- `pip`: `pip install --target` into a prefix (for a cross build, the target's platform).
A provided prefix is keyed by what was asked for (kind, packages, target, runner) and, for
Debian packages, the versions apt resolved, so a second build does not fetch it again and a
build that resolves other versions does; it is made in a staging directory and moved into place
whole. The index (sdk_abi.SdkExports) records it per place: the host, or a builder image on a
platform.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..project.recipes import Recipe
from ..project.sdk import SdkSettings, SdkSource
from ..run.engine import engine_files_mode
from ..run.envs import cache_root
from ..run.step import Runner, Step
from ..util.archives import extract_tar, open_regular, sha256_file
from ..util.errors import DevkitError, EnvironmentProblem, InputError
from ..util.fsutil import exclusive_lock, staging_dir, write_atomic
from .sdk_abi import SdkExports, shared_libraries
from .sdk_debian import debian_resolved, download_debian, sdk_place

MARKER = "devkit-sdk.json"


@dataclass(frozen=True)
class ProvidedSdk:
    settings: SdkSettings
    recipe: Recipe
    root: Path  # on the build machine
    place: str = "host"  # sdk_place of the runner it was provided on
    packages: tuple[str, ...] = ()  # a Debian SDK's packages as downloaded: name:arch=version

    def report(self) -> dict[str, object]:
        """The SDK in the build's report: which, where, and a Debian SDK's exact package versions."""
        s = self.settings
        described = {"name": s.name, "version": s.version, "root": str(self.root), "provided_on": self.place}
        return {**described, **({"debian": list(self.packages)} if self.packages else {})}

    @property
    def include_dirs(self) -> tuple[Path, ...]:
        return tuple(self.root / d for d in self.settings.dirs(self.recipe, self.settings.include_dirs))

    @property
    def lib_dirs(self) -> tuple[Path, ...]:
        return tuple(self.root / d for d in self.settings.dirs(self.recipe, self.settings.lib_dirs))

    def library_files(self) -> list[Path]:
        """The SDK's shared libraries (what check-abi resolves the plugin's symbols against)."""
        return shared_libraries(self.lib_dirs)

    def build_env(self, runner: Runner) -> dict[str, str]:
        """What the generated CMake reads (device/CMakeLists.txt), paths as the runner sees them."""
        s, v = self.settings, self.settings.variable
        return {
            **s.env,
            "DEVKIT_SDK": v,
            "DEVKIT_SDK_NAME": s.name,
            f"{v}_SDK_ROOT": runner.path(self.root),
            f"{v}_SDK_VERSION": s.version,
            "DEVKIT_SDK_INCLUDE_DIRS": ";".join(runner.path(d) for d in self.include_dirs),
            "DEVKIT_SDK_LIB_DIRS": ";".join(runner.path(d) for d in self.lib_dirs),
            "DEVKIT_SDK_HEADERS": ";".join(s.headers),
            "DEVKIT_SDK_LIBRARIES": ";".join(s.libraries),
            "DEVKIT_SDK_RUNTIME_LIBS": ";".join(s.runtime_libs),
        }

    def exports(self) -> SdkExports:
        return SdkExports.read(f"the {self.settings.name} SDK {self.settings.version}", self.library_files())

    def wheel_rules(self) -> tuple[tuple[str, ...], tuple[Path, ...]]:
        """For auditwheel: the libraries never copied into a wheel, and where the others are."""
        return self.settings.runtime_libs, self.lib_dirs

    def check_runtime_libs(self) -> None:
        present = {p.name for p in self.library_files()}
        for lib in self.settings.runtime_libs:
            if lib not in present:
                raise InputError(
                    f"pyproject.toml: tool.devkit.sdk.runtime-libs names {lib}, which the {self.settings.name} SDK "
                    f"for {self.recipe.name} does not contain (looked in {', '.join(map(str, self.lib_dirs))})",
                    "fix the name (the file name the plugin's DT_NEEDED says, e.g. libOpenCL.so.1) or lib-dirs",
                )


def preflight_sdk(settings: SdkSettings, recipe: Recipe, source: SdkSource, root: Path | None, container: bool) -> None:
    """What can be known wrong before a build writes anything (`source`, `root`: the target's, as
    sdk_root found it; `container`: whether the build runs in one): a directory that lacks a runtime
    library, a local archive that is missing or whose sha256 differs, a kind a remote container
    engine cannot be given."""
    if source.kind != "dir" and container and engine_files_mode() == "copy":
        # provided into devkit's cache on this machine, which a remote engine's containers do not see
        raise EnvironmentProblem(
            f"pyproject.toml: tool.devkit.sdk.{source.key} is a {source.kind} SDK, which a remote container engine "
            f"(files copied) cannot be given: only a dir SDK is copied to it",
            f'unpack the {settings.name} SDK into a directory and declare {recipe.name} = {{ dir = "..." }}, '
            "or build with a local engine or --runner host",
        )
    if root is not None:
        ProvidedSdk(settings, recipe, root).check_runtime_libs()
    elif source.kind == "archive" and not re.match(r"https?://", source.path):
        _check_archive(Path(source.path).expanduser(), source, settings, local=True)


def sdk_root(settings: SdkSettings, source: SdkSource) -> Path | None:
    """A `dir` SDK's root on the build machine (what a container build must see); None for the
    kinds devkit provides into its cache."""
    if source.kind != "dir":
        return None
    root = Path(source.path).expanduser()
    if not root.is_dir():
        raise InputError(
            f"pyproject.toml: tool.devkit.sdk.{source.key}.dir = {source.path!r} does not exist on this machine",
            f"install the {settings.name} SDK {settings.version} there, or point dir at where it is",
        )
    return root.resolve()


def _check_archive(archive: Path, source: SdkSource, settings: SdkSettings, local: bool) -> None:
    if not archive.is_file():
        raise InputError(
            f"pyproject.toml: tool.devkit.sdk.{source.key}.archive = {source.path!r} does not exist on this machine",
            f"download the {settings.name} SDK {settings.version} archive there, or point archive at it",
        )
    digest = local_archive_digest(archive, source.sha256) if local else sha256_file(archive)
    if digest != source.sha256:
        raise InputError(
            f"the {settings.name} SDK archive {source.path} has sha256 {digest}, and "
            f"tool.devkit.sdk.{source.key}.sha256 says {source.sha256}",
            "download it again (it may be truncated or replaced), or correct sha256 if this archive is the one you want",
        )


def local_archive_digest(archive: Path, expected: str, opened: BinaryIO | None = None) -> str:
    """The sha256 of an archive on this machine (of `opened`, when the caller has it open, which is
    left at its start). One that matched `expected` is recorded and not hashed again while it is the
    same file unchanged: a vendor SDK archive is gigabytes, and every build checks it before anything
    runs. The record holds the file's device, inode, size, mtime and ctime (an owner can set mtime
    back, not ctime). A mismatch writes nothing (the build stops there)."""
    if opened is None:
        with open_regular(archive, "the SDK archive", "point tool.devkit.sdk's archive at a file") as f:
            return local_archive_digest(archive, expected, f)
    path, info = str(archive.expanduser().resolve()), os.fstat(opened.fileno())
    stamp = {"path": path, "dev": info.st_dev, "ino": info.st_ino, "size": info.st_size}
    stamp.update(mtime_ns=info.st_mtime_ns, ctime_ns=info.st_ctime_ns)
    record = cache_root() / "sdk-digests" / f"{hashlib.sha256(path.encode()).hexdigest()[:16]}.json"
    try:
        known = json.loads(record.read_text())
        if known["stamp"] == stamp and known["sha256"] == expected:
            return expected
    except (OSError, ValueError, KeyError, TypeError):  # none yet, or a damaged record: hash again
        pass
    opened.seek(0)
    digest = sha256_file(opened)
    opened.seek(0)
    if digest == expected:
        write_atomic(record, json.dumps({"stamp": stamp, "sha256": digest}))
    return digest


def provide_sdk(
    settings: SdkSettings,
    recipe: Recipe,
    runner: Runner,
    cache: Path,
    log: Path,
    source: SdkSource | None = None,
    root: Path | None = None,
) -> ProvidedSdk:
    """The SDK's root for a build of `recipe` on `runner` (`cache`: the runner's build cache, on the
    host; `source` and a dir SDK's `root`: the build's placement, which resolved them)."""
    source = source or settings.build_source(recipe)
    packages: tuple[str, ...] = ()
    if source.kind == "dir":
        root = root or sdk_root(settings, source)
        assert root is not None  # (a dir source has one)
    else:
        resolved = debian_resolved(source, settings, recipe, runner, cache, log) if source.kind == "debian" else ()
        request = {
            **{"name": settings.name, "version": settings.version, "target": recipe.name, "runner": runner.key},
            **{"kind": source.kind, "path": source.path, "sha256": source.sha256, "packages": list(source.packages)},
            **({"hashes": dict(source.hashes)} if source.hashes else {}),
            **({"resolved": list(resolved)} if resolved else {}),
        }
        key = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:16]
        root = cache / "sdk" / f"{settings.name}-{settings.version}-{recipe.name}-{key}"
        with exclusive_lock(root.parent / f".{root.name}.lock", lambda holder: None):
            if not (root / MARKER).is_file():
                shutil.rmtree(root, ignore_errors=True)
                with staging_dir(root, replace=True) as stage:
                    record: dict[str, object] = dict(request)
                    if source.kind == "debian":
                        wanted = resolved or source.packages
                        record["debian"] = download_debian(source, settings, recipe, runner, stage, log, wanted, cache)
                    else:
                        made = {"archive": _unpack_archive, "pip": _pip}[source.kind]
                        made(source, settings, recipe, runner, stage, log)
                    (stage / MARKER).write_text(json.dumps(record))
        if source.kind == "debian":
            packages = _downloaded(root)
            with log.open("a") as f:
                f.write(f"[devkit] {settings.name} SDK {settings.version} for {recipe.name}: {' '.join(packages)}\n")
        if source.kind == "archive":
            tops = [p for p in root.iterdir() if p.name != MARKER]
            root = tops[0] if len(tops) == 1 and tops[0].is_dir() else root
    provided = ProvidedSdk(settings, recipe, root, sdk_place(runner), packages)
    provided.check_runtime_libs()
    # check-abi and verify of the wheel find the SDK here (by the name and version the library embeds)
    index = SdkExports.index_entry(settings.name, settings.version, recipe.name, provided.place)
    entry = {"root": str(root), "lib_dirs": [str(d) for d in provided.lib_dirs], "runner": runner.name}
    write_atomic(index, json.dumps({**entry, **({"debian": list(packages)} if packages else {})}))
    return provided


def _unpack_archive(
    source: SdkSource, settings: SdkSettings, recipe: Recipe, runner: Runner, stage: Path, log: Path
) -> None:
    fix = f"point tool.devkit.sdk.{source.key}.archive at the {settings.name} SDK {settings.version} archive"
    download = stage.parent / f".{stage.name}.download"
    try:
        if re.match(r"https?://", source.path):
            try:
                with urllib.request.urlopen(source.path, timeout=60) as response, download.open("wb") as f:
                    shutil.copyfileobj(response, f)
            except OSError as exc:
                raise EnvironmentProblem(
                    f"cannot download the {settings.name} SDK from {source.path}: {exc}", fix
                ) from None
            archive = download
        else:
            archive = Path(source.path).expanduser()
        what = f"the {settings.name} SDK archive"
        with open_regular(archive, what, fix) as f:  # one open file: what was hashed is what is unpacked
            digest = local_archive_digest(archive, source.sha256, f) if archive != download else sha256_file(f)
            if digest != source.sha256:
                _check_archive(archive, source, settings, local=archive != download)  # names the mismatch
                raise EnvironmentProblem(f"{what} {source.path} changed while it was read", "run the build again")
            f.seek(0)
            extract_tar(archive, stage, what, fix, fileobj=f)
    finally:
        download.unlink(missing_ok=True)


def _downloaded(root: Path) -> tuple[str, ...]:
    """A Debian prefix's packages as its marker records them."""
    try:
        listed = json.loads((root / MARKER).read_text()).get("debian", [])
    except (OSError, ValueError, AttributeError):
        return ()
    return tuple(p for p in listed if isinstance(p, str))


def _pip(source: SdkSource, settings: SdkSettings, recipe: Recipe, runner: Runner, stage: Path, log: Path) -> None:
    # Pinned requirements (project/sdk.py refuses anything else); with hashes, pip checks every file
    # it downloads against them (--require-hashes takes them from a requirements file).
    requirements = stage / ".devkit-requirements.txt"
    hashed = bool(source.hashes)
    if hashed:
        requirements.write_text("".join(f"{line}\n" for line in source.requirements()))
    try:
        runner.run(
            Step(
                title=f"{settings.name} SDK {settings.version} for {recipe.name}: pip install {' '.join(source.packages)}",
                argv=[
                    runner.python,
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-deps",
                    "--only-binary=:all:",
                    # the target's platform (pip widens a manylinux tag to the older ones), or a pure wheel
                    *("--platform", f"manylinux_2_28_{recipe.wheel_platform.removeprefix('linux_')}"),
                    *("--platform", recipe.wheel_platform, "--target", runner.path(stage)),
                    *(("--require-hashes", "-r", runner.path(requirements)) if hashed else ("--", *source.packages)),
                ],
                log=log,
                fails_as=EnvironmentProblem,
            )
        )
    except DevkitError as exc:
        if "DO NOT MATCH THE HASHES" not in exc.details:
            raise
        raise InputError(
            f"pyproject.toml: tool.devkit.sdk.{source.key}.hashes do not match what pip downloaded for "
            f"{' '.join(source.packages)}",
            "check the hashes (pip download NAME==VERSION --no-deps, then sha256sum the file): a file that "
            "changed under the same version is suspect",
            log=log,
        ) from None
    finally:
        requirements.unlink(missing_ok=True)


def record_sdk_in_wheel(wheel: Path, settings: SdkSettings) -> None:
    """`Requires-External: opencl (==3.0)` in the wheel's METADATA (core metadata's field for a
    dependency pip cannot install) and its RECORD line updated; every other entry unchanged."""
    with zipfile.ZipFile(wheel) as zf:
        infos = zf.infolist()
        data = {info.filename: zf.read(info) for info in infos}
    metadata = next(n for n in data if n.endswith(".dist-info/METADATA"))
    record = next(n for n in data if n.endswith(".dist-info/RECORD"))
    head, gap, body = data[metadata].decode().partition("\n\n")
    head = "\n".join(line for line in head.splitlines() if not line.startswith("Requires-External:"))
    data[metadata] = f"{head}\nRequires-External: {settings.name} (=={settings.version}){gap}{body}".encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data[metadata]).digest()).rstrip(b"=").decode()
    data[record] = "".join(
        f"{metadata},sha256={digest},{len(data[metadata])}\n" if line.startswith(f"{metadata},") else line
        for line in data[record].decode().splitlines(keepends=True)
    ).encode()
    staged = wheel.with_name(f".{wheel.name}.tmp")
    try:
        with zipfile.ZipFile(staged, "w") as out:
            for info in infos:
                out.writestr(info, data[info.filename], compress_type=info.compress_type)
        os.replace(staged, wheel)
    finally:
        staged.unlink(missing_ok=True)
