"""The container engine, spoken to through the Docker API.

Anything that answers the Docker API works: a local Docker Engine, a podman
system service socket, or a remote engine named by DOCKER_HOST (for example a
native arm64 machine). Only this module and run/container.py import the docker SDK, and
only when a command talks to an engine: with requests it takes ~0.1 s to import, which every
devkit command would pay.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..util.errors import EnvironmentProblem, InputError

if TYPE_CHECKING:
    import docker


def engine_errors() -> tuple[type[BaseException], ...]:
    """What the SDK raises when the engine refuses a call, or stops answering in the middle of one
    (a stream cut by a stopped engine surfaces from urllib3 or requests, not as a DockerException)."""
    import docker.errors
    import requests
    import urllib3

    return (docker.errors.DockerException, requests.RequestException, urllib3.exceptions.HTTPError, ConnectionError)


STEP_LABEL = "org.devkit.step"
OWNER_LABEL = "org.devkit.owner"  # host:pid of the devkit process that made the container


def owner_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


ENGINE_FIX = (
    "start a Docker Engine (Debian: apt-get install docker.io && dockerd &), point DOCKER_HOST at one, "
    "or use --runner host"
)


# The image docker/setup-qemu-action uses; pinned.
BINFMT_IMAGE = "tonistiigi/binfmt:qemu-v8.1.5"


@dataclass(frozen=True)
class ImageInfo:
    tag: str
    id: str
    platform: str
    size_mb: float
    labels: dict[str, str]


PING_TIMEOUT_S = 10
STEP_TIMEOUT_S = 600


class Engine:
    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client

    @classmethod
    def connect(cls, fresh: bool = False) -> Engine:
        """The engine DOCKER_HOST names, asked once per process: the first ask pings it (and
        removes what a killed devkit left there); every later step of the run reuses the answer.
        `fresh`: ask again (an engine that stopped answering may be back)."""
        key = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("DOCKER_")))
        engine = None if fresh else _connected.get(key)
        if engine is None:
            _connected.pop(key, None)
            import docker

            try:
                client = docker.from_env(timeout=PING_TIMEOUT_S)
                client.ping()
            except Exception as exc:  # the SDK raises several types for "no engine"
                raise EnvironmentProblem(f"no container engine answers ({_short(exc)})", ENGINE_FIX) from None
            client.api.timeout = STEP_TIMEOUT_S  # image builds and copies take minutes; a ping does not
            engine = _connected[key] = cls(client)
            engine.remove_orphans()
        return engine

    def remove_orphans(self) -> list[str]:
        """Remove step containers whose devkit process on this machine is gone: what a devkit that
        could not clean up (the engine stopped under it, or it was killed) left behind."""
        host = socket.gethostname()
        removed = []
        try:
            for container in self.client.containers.list(all=True, filters={"label": OWNER_LABEL}):
                owner_host, _, pid = container.labels.get(OWNER_LABEL, "").rpartition(":")
                if owner_host != host or not pid.isdigit() or _alive(int(pid)):
                    continue
                container.remove(force=True)
                removed.append(container.name)
        except engine_errors():
            pass  # best effort: the step that follows reports an engine that does not answer
        return removed

    @property
    def files_mode(self) -> str:
        return engine_files_mode()

    @staticmethod
    def available(fresh: bool = False) -> bool:
        try:
            Engine.connect(fresh)
            return True
        except EnvironmentProblem:
            return False

    def install_binfmt(self, platforms: list[str], image: str = BINFMT_IMAGE) -> str:
        """Register qemu handlers in the engine's kernel (binfmt_misc is kernel-wide, so
        a privileged container can do it for a remote or dind engine we have no shell on)."""
        import docker.errors

        try:
            out = self.client.containers.run(image, ["--install", ",".join(platforms)], privileged=True, remove=True)
        except docker.errors.DockerException as exc:
            raise EnvironmentProblem(
                f"installing qemu handlers with {image} failed ({_short(exc)})",
                "run it where the engine can pull images, or install qemu-user-static + "
                "binfmt-support on the engine's machine",
            ) from None
        return out.decode(errors="replace") if isinstance(out, bytes) else str(out)

    def describe(self) -> dict[str, str]:
        version = self.client.version()
        return {
            "engine": (version.get("Platform") or {}).get("Name") or "Docker Engine",
            "version": version.get("Version", "?"),
            "api": version.get("ApiVersion", "?"),
            "arch": version.get("Arch", "?"),
        }

    # ---- images ---------------------------------------------------------
    def image(self, tag: str) -> ImageInfo | None:
        import docker.errors

        try:
            img = self.client.images.get(tag)
        except docker.errors.ImageNotFound:
            return None
        attrs = img.attrs
        platform = f"{attrs.get('Os', '?')}/{attrs.get('Architecture', '?')}"
        if attrs.get("Variant"):
            platform += f"/{attrs['Variant']}"
        return ImageInfo(
            tag=tag,
            id=img.id,
            platform=platform,
            size_mb=attrs.get("Size", 0) / 1e6,
            labels=(attrs.get("Config") or {}).get("Labels") or {},
        )

    def images_with_label(self, label: str) -> list[ImageInfo]:
        found = []
        for img in self.client.images.list(filters={"label": label}):
            for tag in img.tags:
                info = self.image(tag)
                if info:
                    found.append(info)
        return found

    def remove_image(self, tag: str) -> None:
        self.client.images.remove(tag, force=True)

    def build_image(
        self,
        context: bytes,
        tag: str,
        platform: str,
        buildargs: dict[str, str],
        labels: dict[str, str],
        log: Path,
        on_line: Callable[[str], object] | None = None,
    ) -> ImageInfo:
        """Build from an in-memory tar context (classic builder: no buildx needed)."""
        import docker.errors

        log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with log.open("a") as out:
            try:
                stream = self.client.api.build(
                    fileobj=io.BytesIO(context),
                    custom_context=True,
                    tag=tag,
                    platform=platform,
                    buildargs=buildargs,
                    labels=labels,
                    rm=True,
                    forcerm=True,
                    decode=True,
                    pull=False,
                )
                error = None
                for chunk in stream:
                    text = chunk.get("stream") or chunk.get("status") or ""
                    if text:
                        out.write(text)
                        if on_line and text.strip():
                            on_line(text.strip())
                    if "error" in chunk:
                        error = chunk["error"]
                        out.write(f"ERROR: {error}\n")
            except docker.errors.APIError as exc:
                error = _short(exc)
            out.write(
                f"[devkit] image {tag}: {'failed' if error else 'built'} after {time.monotonic() - started:.1f} s\n"
            )
        if error:
            raise EnvironmentProblem(
                f"building image {tag} failed: {error.strip()}",
                "read the image build log; check network access to the Debian mirror",
                log=log,
            )
        info = self.image(tag)
        assert info is not None
        return info


def tar_context(files: dict[str, bytes | Path]) -> bytes:
    """A build context holding `files` (name -> content or file on disk)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in files.items():
            if isinstance(content, Path):
                tar.add(str(content), arcname=name)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _short(exc: BaseException) -> str:
    text = str(exc)
    try:
        text = json.loads(text).get("message", text)
    except Exception:
        pass
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def engine_files_mode() -> str:
    """How step files reach containers: "bind" mounts when the engine shares this machine's
    file system (a local socket), else "copy" (archives in and out, caches in named volumes).
    DEVKIT_ENGINE_FILES=bind|copy overrides (e.g. a tcp:// engine on this machine)."""
    forced = os.environ.get("DEVKIT_ENGINE_FILES", "")
    if forced:
        if forced not in ("bind", "copy"):
            raise InputError(f"DEVKIT_ENGINE_FILES={forced!r} is not bind or copy", "unset it or use bind | copy")
        return forced
    host = os.environ.get("DOCKER_HOST", "")
    return "bind" if not host or host.startswith(("unix://", "npipe://")) else "copy"


# Engines answered in this process, by the DOCKER_* variables that chose them.
_connected: dict[tuple[tuple[str, str], ...], Engine] = {}
