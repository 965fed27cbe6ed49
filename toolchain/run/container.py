"""ContainerRunner: runs build and verify steps in throw-away containers."""

from __future__ import annotations

import os
import subprocess
import tarfile
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..project.project import LOG_DIR_NAME
from ..run.engine import OWNER_LABEL, STEP_LABEL, Engine, engine_errors, owner_label
from ..run.step import Step, outcome
from ..run.step_log import StepLog
from ..util.archives import extract_tar
from ..util.console import status
from ..util.errors import EnvironmentProblem, InternalError

if TYPE_CHECKING:
    from docker.models.containers import Container


@dataclass(frozen=True)
class Mount:
    host: Path
    target: str
    read_only: bool = True
    cache: bool = False  # state kept between steps; on a remote engine a named volume, not copied

    @property
    def volume(self) -> str:
        return "devkit-" + self.target.strip("/").replace("/", "-")


SHM_SIZE = "2g"  # /dev/shm of a step's container (a distributed verify's collectives)


def host_pip_settings() -> tuple[dict[str, str], list[Mount]]:
    """The host's pip index and CA bundle, passed in at run time (never baked into an image).

    Behind a TLS-intercepting proxy pip needs the host's CA bundle; it is mounted at
    a path of its own so the container's ca-certificates package stays intact.
    """
    env: dict[str, str] = {}
    mounts: list[Mount] = []
    settings = _pip_config()
    for key, var in (
        ("index-url", "PIP_INDEX_URL"),
        ("extra-index-url", "PIP_EXTRA_INDEX_URL"),
        ("trusted-host", "PIP_TRUSTED_HOST"),
    ):
        value = os.environ.get(var) or settings.get(key, "")
        # file:// indexes and local find-links exist only on the host
        value = " ".join(v for v in value.split() if not v.startswith(("file:", "/")))
        if value:
            env[var] = value
    cert = os.environ.get("PIP_CERT") or settings.get("cert") or "/etc/ssl/certs/ca-certificates.crt"
    if Path(cert).is_file():
        mounts.append(Mount(Path(cert), "/etc/devkit/ca-bundle.crt"))
        env["PIP_CERT"] = "/etc/devkit/ca-bundle.crt"
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"):
        if os.environ.get(var):
            env[var] = os.environ[var]
    return env, mounts


def _pip_config() -> dict[str, str]:
    try:
        out = subprocess.run(
            ["python3", "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    settings = {}
    for line in out.splitlines():
        key, _, value = line.partition("=")
        settings[key.split(".", 1)[-1]] = value.strip().strip("'\"")
    return settings


class ContainerRunner:
    """Each step runs in a new container of `image`, removed when the step ends,
    fails or is interrupted. Files are written as the calling user."""

    python = "/usr/bin/python3"

    def __init__(
        self,
        engine: Engine,
        image: str,
        platform: str,
        mounts: list[Mount],
        env: dict[str, str] | None = None,
        fix_hint: str = "read the lines above and the log",
        key: str | None = None,
    ) -> None:
        self.engine = engine
        self.image = image
        self.platform = platform
        pip_env, pip_mounts = host_pip_settings()
        self.mounts = [*mounts, *pip_mounts]
        self.env = {**pip_env, **(env or {})}
        self.fix_hint = fix_hint
        self.files = engine.files_mode
        # copy mode: each step's files come back from its container whole, over another step's
        self.concurrent_steps = self.files != "copy"
        self.name = f"docker:{image}" + (" (files copied to a remote engine)" if self.files == "copy" else "")
        # the state it keeps in the cache is named after this image, or `key` (an image below it)
        self.key = (key or image).replace(":", "-").replace("/", "-")
        self._read_only_tar: IO[bytes] | None = None  # copy mode: the read-only mounts, tarred once

    def path(self, host: Path) -> str:
        """Where `host` is visible inside the container (deepest mount wins)."""
        host = host.resolve()
        best = None
        for m in self.mounts:
            try:
                rel = host.relative_to(m.host.resolve())
            except ValueError:
                continue
            if best is None or len(m.host.parts) > len(best[0].host.parts):
                best = (m, rel)
        if best is None:
            raise InternalError(f"{host} is not mounted into the container", "this is a devkit bug; report it")
        m, rel = best
        return m.target if str(rel) == "." else f"{m.target}/{rel.as_posix()}"

    def run(self, step: Step) -> str:
        import docker.errors  # (imported with the engine this runner holds)

        step.log.parent.mkdir(parents=True, exist_ok=True)
        for m in self.mounts:
            if not m.read_only:
                m.host.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in {**self.env, **step.env}.items() if v is not None}
        copy = self.files == "copy"
        if copy:  # the engine cannot see our files: caches live in its volumes, the rest is copied
            volumes = {m.volume: {"bind": m.target, "mode": "rw"} for m in self.mounts if m.cache}
        else:
            volumes = {
                str(m.host.resolve()): {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in self.mounts
            }
        tail: deque[str] = deque(maxlen=4000)
        started = time.monotonic()
        container = None
        try:
            container = self.engine.client.containers.create(
                self.image,
                command=step.argv,
                working_dir=str(step.cwd) if step.cwd else None,
                environment=env,
                volumes=volumes,
                platform=self.platform,
                labels={STEP_LABEL: step.title[:60], OWNER_LABEL: owner_label()},
                # the device's collectives exchange every rank's data through /dev/shm, which
                # Docker makes 64 MiB (a tmpfs: a limit, not memory taken up front)
                shm_size=SHM_SIZE,
                # copied files come back through an archive, so root in the container writes nothing of ours
                user="0:0" if copy else f"{os.getuid()}:{os.getgid()}",
            )
            with StepLog(step.log) as log, status(f"[bold]{step.title}[/] [dim](container)[/]…") as live:
                log.write(f"$ [{self.image} {self.platform}{', files copied' if copy else ''}] {' '.join(step.argv)}\n")
                if copy:
                    self._put_inputs(container)
                container.start()
                pending = ""
                for chunk in container.logs(stream=True, follow=True):
                    pending += chunk.decode(errors="replace")
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        log.write(line + "\n")
                        tail.append(line)
                        live.update(f"[bold]{step.title}[/] [dim]{line.strip()[:100]}[/]")
                if pending:
                    log.write(pending + "\n")
                    tail.append(pending)
                returncode = container.wait().get("StatusCode", 1)
                if copy:
                    self._copy_back(container, step)
        except docker.errors.APIError as exc:
            raise EnvironmentProblem(
                f"{step.title}: the container engine refused the step ({exc.explanation or exc})",
                "check the image and the engine with `devkit doctor`",
                log=step.log,
            ) from None
        except engine_errors() as exc:
            raise EnvironmentProblem(
                f"{step.title}: the container engine stopped answering ({type(exc).__name__})",
                "start the engine again (`devkit doctor` checks it) and rerun: the build tree is kept, "
                "and the next devkit run removes the container left behind",
                log=step.log,
            ) from None
        finally:
            if container is not None:
                try:
                    container.remove(force=True)  # also on failure and Ctrl-C
                except engine_errors():
                    pass
        return outcome(step, returncode, "\n".join(tail), self.fix_hint, started, log_full=log.full is not None)

    # ---- copy mode (remote engines) -----------------------------------------
    def _copied(self) -> list[Mount]:
        return [m for m in self.mounts if not m.cache]

    def _put_inputs(self, container: Container) -> None:
        """The non-cache mounts into the step's container, streamed from anonymous temporary files
        (never whole in memory: a vendor SDK directory is gigabytes). The read-only ones (the
        project, the payload, a dir SDK) are tarred once per runner, which is once per build; the
        writable ones (the build tree) every step, as the previous step left them."""
        if self._read_only_tar is None:
            self._read_only_tar = tempfile.TemporaryFile()  # noqa: SIM115 (kept for every step of the build)
            self._archive_inputs([m for m in self._copied() if m.read_only], self._read_only_tar)
        with tempfile.TemporaryFile() as writable:
            self._archive_inputs([m for m in self._copied() if not m.read_only], writable)
            for tar in (self._read_only_tar, writable):
                tar.seek(0)
                container.put_archive("/", tar)

    def _archive_inputs(self, mounts: list[Mount], into: IO[bytes]) -> None:
        """One tar, rooted at /, of `mounts`; a deeper mount's files come from its own."""
        targets = {m.target for m in self._copied()}
        with tarfile.open(fileobj=into, mode="w") as tar:
            for m in mounts:
                root = m.host.resolve()
                if root.is_file():
                    tar.add(str(root), arcname=m.target.lstrip("/"))
                    continue
                tar.add(str(root), arcname=m.target.lstrip("/"), recursive=False)
                deeper = [t for t in targets if t.startswith(m.target + "/")]
                for path in sorted(root.rglob("*")):
                    rel = path.relative_to(root)
                    inner = f"{m.target}/{rel.as_posix()}"
                    # (.git stays home, and so do devkit's logs: the host keeps writing them during the
                    # step, and a copy sent in would come back over them)
                    if ".git" in rel.parts or LOG_DIR_NAME in rel.parts:
                        continue
                    if any(inner == t or inner.startswith(t + "/") for t in deeper):
                        continue
                    tar.add(str(path), arcname=inner.lstrip("/"), recursive=False)

    def _copy_back(self, container: Container, step: Step) -> None:
        """Bring writable mounts' contents back (build tree, artifacts, reports)."""
        for m in self._copied():
            if m.read_only:
                continue
            stream, _ = container.get_archive(m.target)
            # Spooled to an anonymous file (a build tree is gigabytes), then unpacked by devkit's
            # checker and writer: what a container wrote is not trusted onto the host's tree.
            with tempfile.TemporaryFile() as spool:
                for chunk in stream:
                    spool.write(chunk)
                spool.seek(0)
                extract_tar(
                    Path(m.target),
                    m.host,
                    f"{step.title}: what the step left in its container's",
                    f"see what the step wrote under {m.target} (links out of it are refused)",
                    fileobj=spool,
                    strip_top=True,
                )
