"""A `debian` vendor SDK ([tool.devkit.sdk], building/sdk.py): the versions apt resolves for the
declared packages, and exactly those downloaded and unpacked into a prefix, on the runner the build
uses (the builder image's Debian release, and for `name:arm64` the target's libraries).
"""

from __future__ import annotations

import re
import time
import urllib.parse
from pathlib import Path

from ..project.recipes import Recipe
from ..project.sdk import DEBIAN_PACKAGE, SdkSettings, SdkSource
from ..run.step import Runner, Step
from ..util.errors import DevkitError, EnvironmentProblem, InputError
from ..util.fsutil import exclusive_lock

# apt's lists for resolving Debian SDKs are refreshed when older than this: the archive changes a
# few times a day, and a run of builds (CI's) then resolves against the same lists
APT_LISTS_FRESH_SECONDS = 600


def sdk_place(runner: Runner) -> str:
    """Where a build provides its SDK, as the index names it: `host`, or the builder image and
    the platform its containers run on (another image or platform resolves an SDK of its own)."""
    platform = getattr(runner, "platform", "")
    return re.sub(r"[^A-Za-z0-9_.+-]", "-", f"{runner.key}-{platform}" if platform else runner.key)


# apt with its package lists and cache in devkit's build cache (one set per place and foreign
# architectures, kept between builds and refreshed when old): no root, no lock, nothing of the
# machine's apt changed, so any user (the container runs as the caller's uid) can provide the SDK.
# Foreign architectures ("name:arm64") are named to apt here, not added to dpkg. Its package
# cache is kept too (Debian's images turn it off), so a resolution takes 0.15 s, not 0.7 s. The
# packages are the script's arguments: data, never shell.
_APT = r"""apt() {
  if [ -z "$DEVKIT_APT_DIR" ]; then apt-get "$@"; return; fi
  c="$DEVKIT_APT_DIR/cache"
  set -- -o "Dir::State::Lists=$DEVKIT_APT_DIR/lists" -o "Dir::Cache=$c" -o Debug::NoLocking=1 \
    -o "Dir::Cache::pkgcache=$c/pkgcache.bin" -o "Dir::Cache::srcpkgcache=$c/srcpkgcache.bin" \
    -o "APT::Architectures::=$(dpkg --print-architecture)" $DEVKIT_APT_ARCHES "$@"
  if [ "$(id -u)" = 0 ]; then apt-get -o APT::Sandbox::User=root "$@"; else apt-get "$@"; fi
}
if [ -n "$DEVKIT_APT_UPDATE" ]; then
  mkdir -p "$DEVKIT_APT_DIR/lists/partial" "$DEVKIT_APT_DIR/cache/archives/partial"
  apt -qq update; touch "$DEVKIT_APT_DIR/updated"
fi
"""
# What apt would download: a line `'URI' name_version_arch.deb size hash` per package.
_RESOLVE_SCRIPT = f'set -e\n{_APT}apt download --print-uris -- "$@"'
# The .debs downloaded, each one's name:arch=version recorded as dpkg reads it, unpacked into the stage.
_DOWNLOAD_SCRIPT = (
    f'set -e; cd "$1"; shift\n{_APT}'
    + r"""apt download -- "$@"
for d in *.deb; do dpkg-deb --show --showformat='${Package}:${Architecture}=${Version}\n' "$d"; done >.devkit-debs
for d in *.deb; do dpkg-deb -x "$d" root; done; rm -f *.deb
mv root/* . 2>/dev/null || true; rmdir root 2>/dev/null || true"""
)
_PRINTED_URI = re.compile(r"^'[^']+' ([a-z0-9][a-z0-9+.-]+)_([^_\s]+)_([a-z0-9]+)\.deb \d+ \S+$", re.MULTILINE)
_DOWNLOADED = ".devkit-debs"


def debian_resolved(
    source: SdkSource, settings: SdkSettings, recipe: Recipe, runner: Runner, cache: Path, log: Path
) -> tuple[str, ...]:
    """The packages as apt would download them now, `name:arch=version` each, sorted: what the
    prefix is keyed by. Nothing to ask when each is pinned: apt has no version to choose."""
    if source.pinned:
        return ()
    what = f"{settings.name} SDK {settings.version} for {recipe.name}"
    title = f"{what}: the versions apt resolves for {' '.join(source.packages)}"
    output = _apt(source, recipe, runner, cache, log, title, [_RESOLVE_SCRIPT, "sh", *source.packages])
    resolved = sorted(f"{m[1]}:{m[3]}={urllib.parse.unquote(m[2])}" for m in _PRINTED_URI.finditer(output))
    if len(resolved) != len(source.packages) or not all(DEBIAN_PACKAGE.fullmatch(p) for p in resolved):
        raise EnvironmentProblem(
            f"{what}: apt resolved {' '.join(resolved) or 'nothing'} for {' '.join(source.packages)}",
            "list each package once in tool.devkit.sdk.build, and read the log for what apt said",
            log=log,
        )
    return tuple(resolved)


def download_debian(
    source: SdkSource,
    settings: SdkSettings,
    recipe: Recipe,
    runner: Runner,
    stage: Path,
    log: Path,
    packages: tuple[str, ...],
    cache: Path,
) -> list[str]:
    """Download exactly `packages` (resolved or pinned) and unpack them into `stage`; returns
    each .deb's name:arch=version."""
    title = f"{settings.name} SDK {settings.version} for {recipe.name}: apt-get download {' '.join(packages)}"
    _apt(source, recipe, runner, cache, log, title, [_DOWNLOAD_SCRIPT, "sh", runner.path(stage), *packages])
    record = stage / _DOWNLOADED
    downloaded = sorted(record.read_text().split())
    record.unlink()
    return downloaded


def _apt(
    source: SdkSource, recipe: Recipe, runner: Runner, cache: Path, log: Path, title: str, script: list[str]
) -> str:
    """Run an apt script (`sh -c` and its arguments) on `runner`; its lists refreshed first when
    older than APT_LISTS_FRESH_SECONDS. On the host, the machine's own lists serve its native
    packages; a container's image has none."""
    foreign = sorted({p.partition("=")[0].split(":", 1)[1] for p in source.packages if ":" in p.partition("=")[0]})
    system = runner.key == "host" and not foreign and any(Path("/var/lib/apt/lists").glob("*_Packages"))
    lists = cache / "sdk" / ".apt" / "-".join([sdk_place(runner), *foreign])
    lists.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(lists.parent / f".{lists.name}.lock", lambda holder: None):
        stamp = lists / "updated"
        stale = not stamp.is_file() or time.time() - stamp.stat().st_mtime > APT_LISTS_FRESH_SECONDS
        env = {
            "DEVKIT_APT_DIR": "" if system else runner.path(lists),
            "DEVKIT_APT_ARCHES": " ".join(f"-o APT::Architectures::={a}" for a in foreign),
            "DEVKIT_APT_UPDATE": "1" if stale and not system else "",
        }
        try:
            return runner.run(
                Step(title=title, argv=["sh", "-c", *script], log=log, env=env, fails_as=EnvironmentProblem)
            )
        except DevkitError as exc:
            raise _apt_cannot_find(exc, source, recipe, runner, log) or exc from None


def _apt_cannot_find(
    exc: DevkitError, source: SdkSource, recipe: Recipe, runner: Runner, log: Path
) -> DevkitError | None:
    """A declared package (or pinned version) apt does not have, named; None for other failures."""
    version = re.search(r"Version '(\S+)' for '(\S+)' was not found", exc.details)
    if version:
        return InputError(
            f"pyproject.toml: tool.devkit.sdk.{source.key}.debian has {version[2]}={version[1]}, a version apt "
            f"cannot find for {recipe.name} on {runner.name}",
            f"pin a version `apt-cache policy {version[2].split(':')[0]}` lists there, or leave it unpinned",
            log=log,
        )
    missing = re.search(
        r"Unable to locate package (\S+)|Can't select candidate version from package (\S+)", exc.details
    )
    if missing:
        package = missing[1] or missing[2]
        return InputError(
            f"pyproject.toml: tool.devkit.sdk.{source.key}.debian has {package}, which apt cannot find for "
            f"{recipe.name} on {runner.name}",
            f"check the name with `apt-cache policy {package.split(':')[0]}`",
            log=log,
        )
    return None
