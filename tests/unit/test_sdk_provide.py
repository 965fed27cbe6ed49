"""Providing a declared SDK (building/sdk.py): where a build records it, per runner, and what a
Debian SDK's prefix is keyed by (the versions apt resolved, not only the names asked for)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tomllib
from pathlib import Path

import pytest

from devkit.building.sdk import provide_sdk
from devkit.building.sdk_abi import SdkExports
from devkit.project.recipes import find_recipe
from devkit.project.sdk import parse_sdk
from devkit.run.envs import cache_root
from devkit.run.step import HostRunner, Step

X86_64 = find_recipe("x86_64")


class BuilderContainer:
    """A container runner as provide_sdk sees it: its key and platform name where it provides, and
    its steps are apt's (faked: what these tests are about is keying and recording, not apt): the
    resolution prints `apt-get download --print-uris` lines for `versions`, the download unpacks
    an empty prefix and writes the record the real script writes from each .deb."""

    name = "docker:devkit-builder-bookworm:0123456789ab"
    key = "devkit-builder-bookworm-0123456789ab"
    platform = "linux/amd64"
    python = "/usr/bin/python3"
    concurrent_steps = True

    def __init__(self, versions: dict[str, str] | None = None) -> None:
        self.versions = versions or {}
        self.downloads: list[list[str]] = []
        self.resolutions = 0

    def path(self, host: Path) -> str:
        return str(host)

    def run(self, step: Step) -> str:
        if "--print-uris" in step.argv[2]:  # the script given to sh -c
            self.resolutions += 1
            return "\n".join(
                f"'http://deb.debian.org/debian/pool/main/o/ocl-icd/{name}_{version}_amd64.deb' "
                f"{name}_{version.replace(':', '%3a')}_amd64.deb 11620 SHA256:{'ab' * 32}"
                for name, version in self.versions.items()
            )
        stage, packages = Path(step.argv[4]), step.argv[5:]
        assert stage.is_absolute() and stage.is_dir(), step.argv  # the staging directory
        self.downloads.append(packages)
        (stage / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
        pinned = [p if ":" in p.partition("=")[0] else p.replace("=", ":amd64=", 1) for p in packages]
        (stage / ".devkit-debs").write_text("".join(f"{p}\n" for p in pinned))
        return ""


def opencl(packages: str) -> str:
    return (
        'name = "opencl"\nversion = "3.0"\nlib-dirs = ["usr/lib/{triple}"]\n'
        f"[build]\nx86_64 = {{ debian = [{packages}] }}\n"
    )


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    return cache_root()


def test_a_host_build_and_a_container_build_of_a_target_each_keep_their_sdk_record(tmp_path, cache):
    """Before: the index was keyed by name, version and target, so the second build's record
    replaced the first's and check-abi resolved against the other runner's SDK."""
    tree = io.BytesIO()
    with tarfile.open(fileobj=tree, mode="w:gz") as tar:
        data = b"not an ELF file: read and skipped"
        info = tarfile.TarInfo("vendor-sdk-1.0/lib/libvendor.so.1")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    archive = tmp_path / "vendor-sdk-1.0.tar.gz"
    archive.write_bytes(tree.getvalue())
    declared = f'archive = "{archive}", sha256 = "{hashlib.sha256(tree.getvalue()).hexdigest()}"'
    settings = parse_sdk(tomllib.loads(f'name = "vendor"\nversion = "1.0"\n[build]\nx86_64 = {{ {declared} }}\n'))
    host = provide_sdk(settings, X86_64, HostRunner(), cache / "host", tmp_path / "host.log")
    container = provide_sdk(settings, X86_64, BuilderContainer(), cache / "container", tmp_path / "c.log")
    assert host.root != container.root  # each runner's build cache has its own copy
    records = [json.loads(p.read_text()) for p in (cache / "sdk-index").rglob("*.json")]
    assert sorted(r["root"] for r in records) == sorted([str(host.root), str(container.root)])
    recorded = SdkExports.recorded("vendor", "1.0", "x86_64")
    assert {place: entry["root"] for place, entry in recorded.items()} == {
        "host": str(host.root),
        "devkit-builder-bookworm-0123456789ab-linux-amd64": str(container.root),
    }
    assert recorded["host"]["runner"] == "host"
    for place in recorded:
        assert SdkExports.provided("vendor", "1.0", "x86_64", place) is not None
    assert SdkExports.provided("vendor", "1.0", "x86_64", "elsewhere") is None
    assert SdkExports.provided("vendor", "1.0", "x86_64") is not None  # the latest build's, when unsaid


def test_a_debian_sdk_is_keyed_by_the_versions_apt_resolved(tmp_path, cache):
    """Before: the prefix was keyed by the package names only, so once made it was reused even
    when apt resolved other versions (a point release, another builder image's lists)."""
    settings = parse_sdk(tomllib.loads(opencl('"ocl-icd-opencl-dev", "ocl-icd-libopencl1"')))
    runner = BuilderContainer({"ocl-icd-opencl-dev": "2.3.1-1", "ocl-icd-libopencl1": "2.3.1-1"})
    first = provide_sdk(settings, X86_64, runner, cache / "container", tmp_path / "build.log")
    runner.versions["ocl-icd-libopencl1"] = "1:2.3.2-1"  # apt's lists moved on (an epoch, too)
    second = provide_sdk(settings, X86_64, runner, cache / "container", tmp_path / "build.log")
    assert first.root != second.root and len(runner.downloads) == 2
    # what was resolved is what is downloaded: pinned, so apt cannot pick another version meanwhile
    assert runner.downloads[1] == ["ocl-icd-libopencl1:amd64=1:2.3.2-1", "ocl-icd-opencl-dev:amd64=2.3.1-1"]
    assert second.packages == ("ocl-icd-libopencl1:amd64=1:2.3.2-1", "ocl-icd-opencl-dev:amd64=2.3.1-1")
    marker = json.loads((second.root / "devkit-sdk.json").read_text())
    assert marker["debian"] == list(second.packages)
    assert marker["packages"] == ["ocl-icd-opencl-dev", "ocl-icd-libopencl1"]  # as declared
    assert second.report()["debian"] == list(second.packages)
    (entry,) = SdkExports.recorded("opencl", "3.0", "x86_64").values()
    assert entry["debian"] == list(second.packages)
    again = provide_sdk(settings, X86_64, runner, cache / "container", tmp_path / "build.log")
    assert again.root == second.root and len(runner.downloads) == 2  # same versions: reused


def test_a_pinned_debian_package_reaches_apt_as_pinned(tmp_path, cache):
    """`name=version` in the declaration is what apt is asked for; every package pinned needs no
    resolution (nothing apt could choose), so a cached prefix is reused without apt's lists."""
    settings = parse_sdk(
        tomllib.loads(opencl('"ocl-icd-opencl-dev=2.3.1-1", "opencl-c-headers:amd64=3.0~2023.02.06-1"'))
    )
    runner = BuilderContainer()
    provided = provide_sdk(settings, X86_64, runner, cache / "container", tmp_path / "build.log")
    assert runner.downloads == [["ocl-icd-opencl-dev=2.3.1-1", "opencl-c-headers:amd64=3.0~2023.02.06-1"]]
    assert runner.resolutions == 0
    assert provided.packages == ("ocl-icd-opencl-dev:amd64=2.3.1-1", "opencl-c-headers:amd64=3.0~2023.02.06-1")
    provide_sdk(settings, X86_64, runner, cache / "container", tmp_path / "build.log")
    assert len(runner.downloads) == 1 and runner.resolutions == 0
