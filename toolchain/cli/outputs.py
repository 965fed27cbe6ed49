"""What the commands outside verify's print with --json: one dataclass each (util/outputs.py: the
dataclass is the JSON, its schema generated from it; cli/schemas.py lists every command's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from ..building.manylinux import PlatformReport
from ..building.plugin import BuildResult
from ..matrix.outputs import EntrySummary, StepSummary
from ..project.config import DevkitConfig
from ..run.doctor import DoctorCheck
from ..run.engine import ImageInfo
from ..util.archives import sha256_file
from ..util.outputs import output_field

CiProvider = Literal["github", "gitlab"]  # project.config.CI_PROVIDERS (a unit test holds them equal)
ArtifactKind = Literal["wheel", "device-bundle"]


@dataclass(frozen=True)
class NewBackendOutput:
    """the rendered project"""

    out_dir: Path
    device_type: str
    sdk: str | None = output_field("the device library flavour (--sdk); null: the host-backed device")
    files: list[str] = output_field("the rendered files, relative to out_dir")
    seconds: float = output_field()


@dataclass(frozen=True)
class PlatformOutput:
    tag: str = output_field("the wheel's full tag, e.g. py3-none-manylinux_2_31_x86_64")
    policy: str = output_field("its platform part")
    floor: dict[str, str | None] = output_field("the newest glibc, glibcxx, cxxabi the plugin's libraries need")
    framework_floor: dict[str, str | None] = output_field("the same of the framework's libraries")
    excluded: list[str] = output_field("framework libraries left to the framework's wheel")
    grafted: list[str] = output_field("libraries auditwheel copied into the wheel")
    oldest_distro: str = output_field("the oldest of devkit's reference distributions the wheel loads on")
    exceeds_framework: list[str] = output_field("where the plugin needs more than the framework's own libraries")

    @classmethod
    def of(cls, report: PlatformReport) -> PlatformOutput:
        return cls(
            tag=report.tag,
            policy=report.policy,
            floor=report.floor.as_dict(),
            framework_floor=report.framework_floor.as_dict(),
            excluded=list(report.excluded),
            grafted=list(report.grafted),
            oldest_distro=report.oldest_distro(),
            exceeds_framework=report.exceeds_framework(),
        )


@dataclass(frozen=True)
class SdkOutput:
    name: str
    version: str
    root: str
    provided_on: str
    debian: list[str] | None = output_field("each package as downloaded, name:arch=version", omit_none=True)

    @classmethod
    def of(cls, report: Mapping[str, object]) -> SdkOutput:
        """From the build's SDK record (building.sdk.ProvidedSdk.report)."""
        debian = report.get("debian")
        return cls(
            name=str(report["name"]),
            version=str(report["version"]),
            root=str(report["root"]),
            provided_on=str(report["provided_on"]),
            debian=[str(p) for p in debian] if isinstance(debian, list) else None,
        )


@dataclass(frozen=True)
class BuildOutput:
    """one target's build"""

    artifact: Path = output_field("the wheel, or for a target without the framework's runtime the device bundle")
    kind: ArtifactKind = output_field()
    arch: str = output_field()
    framework: str = output_field()
    runtime_version: str | None = output_field("the framework runtime built against; null without one")
    versions: dict[str, str | None] = output_field(
        "<framework>_version: the same runtime version", flatten=True, pattern="^[a-z]+_version$"
    )
    seconds: float = output_field()
    compiled_files: int = output_field()
    log: Path = output_field()
    runner: str = output_field("host, or docker:IMAGE")
    device_bundle: Path = output_field(
        "the device library, its conformance suite and golden checker (dist/*-device-*.tar.gz)"
    )
    inference_bundle: Path | None = output_field("with --infer")
    sha256: str = output_field("the artifact's")
    inference_bundle_sha256: str | None = output_field()
    platform: PlatformOutput | None = output_field("a wheel's manylinux tag and glibc/libstdc++ floor")
    sdist: Path | None = output_field("with --sdist")
    sdk: SdkOutput | None = output_field("the vendor SDK the build provided ([tool.devkit.sdk])")
    wheel: Path | None = output_field("the wheel (the artifact, when it is one)", omit_none=True)

    @classmethod
    def of(cls, result: BuildResult) -> BuildOutput:
        return cls(
            artifact=result.artifact,
            kind=cast(ArtifactKind, result.kind),
            arch=result.arch,
            framework=result.framework,
            runtime_version=result.runtime_version,
            versions={f"{result.framework}_version": result.runtime_version},
            seconds=round(result.seconds, 2),
            compiled_files=result.compiled_files,
            log=result.log,
            runner=result.runner,
            device_bundle=result.device_bundle,
            inference_bundle=result.bundle,
            sha256=sha256_file(result.artifact),
            inference_bundle_sha256=sha256_file(result.bundle) if result.bundle else None,
            platform=PlatformOutput.of(result.platform) if result.platform else None,
            sdist=result.sdist,
            sdk=SdkOutput.of(result.sdk) if result.sdk else None,
            wheel=result.artifact if result.kind == "wheel" else None,
        )


@dataclass(frozen=True)
class BuildMatrixOutput:
    """with --all: every matrix entry's build"""

    passed: bool
    report: Path
    junit: Path
    seconds: float
    entries: list[StepSummary]


@dataclass(frozen=True)
class MatrixRunOutput:
    """the entry, built and verified"""

    entry: EntrySummary
    passed: bool
    report: Path
    junit: Path
    steps: list[StepSummary] = output_field("the build, then each verification")


@dataclass(frozen=True)
class CiOutput:
    """the workflow written"""

    provider: CiProvider
    path: Path = output_field("the workflow written")
    jobs: list[str] = output_field("one per matrix entry, by its id")


@dataclass(frozen=True)
class ConfigShowOutput:
    """the settings, defaults filled in, and the matrix they make"""

    config: DevkitConfig = output_field(flatten=True)
    matrix: list[str] = output_field("the matrix entries' ids")


@dataclass(frozen=True)
class PublishOutput:
    """what was uploaded"""

    repository_url: str
    files: list[Path] = output_field("the wheels and sdist uploaded")


@dataclass(frozen=True)
class ImageBootstrapOutput:
    """the base image made"""

    image: str
    platform: str
    seconds: float


@dataclass(frozen=True)
class ImageRow:
    """one of devkit's images"""

    tag: str
    platform: str
    size_mb: int

    @classmethod
    def of(cls, info: ImageInfo) -> ImageRow:
        return cls(info.tag, info.platform, round(info.size_mb))


@dataclass(frozen=True)
class PruneOutput:
    """the images removed"""

    removed: list[str] = output_field("the tags removed")


@dataclass(frozen=True)
class DoctorRow:
    """one check of the machine, and its fix"""

    check: str
    ok: bool
    detail: str
    fix: str
    required: bool = output_field("doctor fails while a required check is not ok")

    @classmethod
    def of(cls, check: DoctorCheck) -> DoctorRow:
        return cls(check.name, check.ok, check.detail, check.fix, check.required)
