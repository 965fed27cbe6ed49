"""ContainerRunner: runs build and verify steps in throw-away containers."""

from __future__ import annotations

import os
import subprocess
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import docker.errors

from .console import status
from .engine import Engine
from .errors import DevkitError
from .runner import Step, failure


@dataclass(frozen=True)
class Mount:
    host: Path
    target: str
    read_only: bool = True


def host_pip_settings() -> tuple[dict[str, str], list[Mount]]:
    """The host's pip index and CA bundle, passed in at run time (never baked into an image).

    Behind a TLS-intercepting proxy pip needs the host's CA bundle; it is mounted at
    a path of its own so the container's ca-certificates package stays intact.
    """
    env: dict[str, str] = {}
    mounts: list[Mount] = []
    settings = _pip_config()
    for key, var in (("index-url", "PIP_INDEX_URL"), ("extra-index-url", "PIP_EXTRA_INDEX_URL"),
                     ("trusted-host", "PIP_TRUSTED_HOST")):
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
        out = subprocess.run(["python3", "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=30).stdout
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

    def __init__(self, engine: Engine, image: str, platform: str, mounts: list[Mount],
                 env: dict[str, str] | None = None, fix_hint: str = "read the lines above and the log") -> None:
        self.engine = engine
        self.image = image
        self.platform = platform
        pip_env, pip_mounts = host_pip_settings()
        self.mounts = [*mounts, *pip_mounts]
        self.env = {**pip_env, **(env or {})}
        self.fix_hint = fix_hint
        self.name = f"docker:{image}"
        self.key = image.replace(":", "-").replace("/", "-")

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
            raise DevkitError(f"{host} is not mounted into the container", "this is a devkit bug; report it")
        m, rel = best
        return m.target if str(rel) == "." else f"{m.target}/{rel.as_posix()}"

    def run(self, step: Step) -> str:
        step.log.parent.mkdir(parents=True, exist_ok=True)
        for m in self.mounts:
            if not m.read_only:
                m.host.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in {**self.env, **step.env}.items() if v is not None}
        volumes = {str(m.host.resolve()): {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in self.mounts}
        tail: deque[str] = deque(maxlen=4000)
        container = None
        try:
            container = self.engine.client.containers.create(
                self.image, command=step.argv, working_dir=str(step.cwd) if step.cwd else None,
                environment=env, volumes=volumes, user=f"{os.getuid()}:{os.getgid()}", platform=self.platform,
                labels={"org.devkit.step": step.title[:60]},
            )
            with step.log.open("a") as log, status(f"[bold]{step.title}[/] [dim](container)[/]…") as live:
                log.write(f"$ [{self.image} {self.platform}] {' '.join(step.argv)}\n")
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
        except docker.errors.APIError as exc:
            raise DevkitError(f"{step.title}: the container engine refused the step ({exc.explanation or exc})",
                              "check the image and the engine with `devkit doctor`", log=step.log) from None
        finally:
            if container is not None:
                try:
                    container.remove(force=True)  # also on failure and Ctrl-C
                except docker.errors.APIError:
                    pass
        output = "\n".join(tail)
        if returncode != 0:
            raise failure(step, returncode, output, self.fix_hint)
        return output
