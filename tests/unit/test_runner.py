import sys
from pathlib import Path

import pytest

from devkit.run.step import HostRunner, Step, diagnostic_lines
from devkit.util.errors import DevkitError, EnvironmentProblem


def test_host_runner_returns_output_and_logs(tmp_path):
    log = tmp_path / "step.log"
    out = HostRunner().run(Step("echo", [sys.executable, "-c", "print('hello')"], log=log))
    assert "hello" in out and "hello" in log.read_text()


def test_failure_carries_diagnostics_and_log(tmp_path):
    script = "import sys; print('ok line'); print('foo.cc:3:1: error: expected ;'); sys.exit(3)"
    with pytest.raises(DevkitError) as info:
        HostRunner().run(Step("compile", [sys.executable, "-c", script], log=tmp_path / "l.log"))
    assert "exit code 3" in info.value.problem
    assert info.value.details == "foo.cc:3:1: error: expected ;"
    assert info.value.log == tmp_path / "l.log"


def test_a_full_disk_under_the_log_is_the_steps_error_and_the_step_runs_to_its_end(tmp_path):
    """/dev/full refuses every write with ENOSPC, as a filled-up project disk refuses the log of a
    compile: the step is not killed by an OSError from the log; its title and the disk are the error."""
    done = tmp_path / "done"
    script = f"import pathlib; print('x' * 200_000); pathlib.Path({str(done)!r}).touch()"
    with pytest.raises(EnvironmentProblem) as info:
        HostRunner().run(Step("compile", [sys.executable, "-c", script], log=Path("/dev/full")))
    assert info.value.problem == "compile: the disk filled up (No space left on device)"
    assert "free space" in info.value.fix and done.exists()
    # a log that cannot be written for another reason is that error, as it was
    with pytest.raises(IsADirectoryError):
        HostRunner().run(Step("compile", [sys.executable, "-c", "pass"], log=tmp_path))


def test_a_process_that_dies_after_the_device_library_spoke_reports_its_line(tmp_path):
    """A real process killed by SIGABRT after printing a device library's line (as the fault
    handler does); a death without such a line keeps the exit code."""
    line = "[STPU] host access to device memory at 0x7f00 (device 0, byte 4 of the 64-byte allocation at 0x7f00)"
    script = f"import os, sys; print('noise'); print({line!r}, file=sys.stderr, flush=True); os.abort()"
    with pytest.raises(DevkitError) as info:
        HostRunner().run(Step("checks", [sys.executable, "-c", script], log=tmp_path / "l.log"))
    assert info.value.problem == f"checks died (SIGABRT) after the device library printed: {line}"
    with pytest.raises(DevkitError) as info:
        HostRunner().run(Step("checks", [sys.executable, "-c", "import os; os.abort()"], log=tmp_path / "m.log"))
    assert info.value.problem == "checks failed (exit code -6)"


def test_a_step_that_ran_without_the_plugins_device_fails_with_the_plugins_line(tmp_path):
    """The framework went on on the CPU (exit 0) after the plugin said its device is unavailable:
    the step fails with that line, since every check after it would fail for that reason."""
    line = (
        "paddle-custom-stpu: the stpu device is unavailable: it needs the opencl 3.0 runtime, and libOpenCL.so.1 "
        "could not be loaded (libOpenCL.so.1: cannot open shared object file). Install the opencl 3.0 runtime"
    )
    script = f"import sys; print('I1124 init.cc:146] Try loading'); print({line!r}, file=sys.stderr); print('3.0')"
    with pytest.raises(DevkitError) as info:
        HostRunner().run(Step("checks on x86_64", [sys.executable, "-c", script], log=tmp_path / "l.log"))
    assert info.value.problem == f"checks on x86_64: {line}"
    assert "[tool.devkit.sdk.runtime]" in info.value.fix
    said = "print('a note: the device is unavailable: in prose, not a plugin line at the start')"
    assert "in prose" in HostRunner().run(Step("other", [sys.executable, "-c", said], log=tmp_path / "m.log"))


def test_env_none_removes_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_TEST_VAR", "set")
    out = HostRunner().run(
        Step(
            "env",
            [sys.executable, "-c", "import os; print(os.environ.get('DEVKIT_TEST_VAR'))"],
            log=tmp_path / "l",
            env={"DEVKIT_TEST_VAR": None},
        )
    )
    assert out.strip() == "None"


def test_cmake_messages_keep_their_continuation_lines():
    lines = ["-- ok", "CMake Error at cmake/FindPaddle.cmake:33 (message):", "  headers are missing", "", "-- done"]
    assert diagnostic_lines(lines) == lines[1:3]


def test_container_paths_map_through_the_deepest_mount(tmp_path):
    from pathlib import Path

    from devkit.run.container import ContainerRunner, Mount

    project = tmp_path / "proj"
    (project / "build").mkdir(parents=True)
    runner = ContainerRunner(
        engine=StubEngine("bind"),
        image="img:1",
        platform="linux/amd64",
        mounts=[Mount(project, "/src"), Mount(project / "build", "/src/build", read_only=False)],
    )
    assert runner.path(project) == "/src"
    assert runner.path(project / "kernels" / "a.cc") == "/src/kernels/a.cc"
    assert runner.path(project / "build" / "x") == "/src/build/x"
    with pytest.raises(DevkitError, match="not mounted"):
        runner.path(Path("/etc/passwd"))


def test_host_pip_settings_pass_the_ca_bundle_not_local_indexes(monkeypatch, tmp_path):
    from devkit.run import container

    cert = tmp_path / "ca.crt"
    cert.write_text("cert")
    monkeypatch.setattr(
        container,
        "_pip_config",
        lambda: {"cert": str(cert), "extra-index-url": "file:///opt/pypi/simple https://mirror/simple"},
    )
    monkeypatch.delenv("PIP_CERT", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    env, mounts = container.host_pip_settings()
    assert env["PIP_CERT"] == "/etc/devkit/ca-bundle.crt" and env["PIP_EXTRA_INDEX_URL"] == "https://mirror/simple"
    assert [(m.host, m.target, m.read_only) for m in mounts] == [(cert, "/etc/devkit/ca-bundle.crt", True)]


class StubEngine:
    """Stands in for the engine where the test is about path and file handling, not the engine."""

    def __init__(self, files_mode: str) -> None:
        self.files_mode = files_mode


def test_copy_mode_archive_holds_each_mount_once_and_no_caches(tmp_path):
    import io
    import tarfile

    from devkit.run.container import ContainerRunner, Mount

    project = tmp_path / "proj"
    (project / "build" / "obj").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref")
    (project / "CMakeLists.txt").write_text("project(x)")
    (project / "build" / "obj" / "a.o").write_text("o")
    (project / "build" / "devkit-logs").mkdir()
    (project / "build" / "devkit-logs" / "build-x86_64.log").write_text("the host writes this during the step")
    cache = tmp_path / "cache"
    (cache / "envs").mkdir(parents=True)
    (cache / "envs" / "big").write_text("x" * 1000)
    runner = ContainerRunner(
        engine=StubEngine("copy"),
        image="img:1",
        platform="linux/amd64",
        mounts=[
            Mount(project, "/src"),
            Mount(project / "build", "/src/build", read_only=False),
            Mount(cache, "/cache", read_only=False, cache=True),
        ],
    )
    archive = io.BytesIO()
    runner._archive_inputs(runner._copied(), archive)  # every non-cache mount (steps send read-only ones once)
    archive.seek(0)
    with tarfile.open(fileobj=archive) as tar:
        names = tar.getnames()
    assert "src/CMakeLists.txt" in names and "src/build/obj/a.o" in names
    assert names.count("src/build/obj/a.o") == 1  # from its own mount, not twice
    assert not any(n.startswith(("src/.git", "cache", "src/build/devkit-logs")) for n in names)
    assert runner.name.endswith("(files copied to a remote engine)")


class ArchiveContainer:
    """A container whose only part in the test is the archive it hands back."""

    def __init__(self, members: list[tuple[str, bytes, str]]) -> None:
        import io
        import tarfile

        self.data = io.BytesIO()
        with tarfile.open(fileobj=self.data, mode="w") as tar:
            for name, body, link in members:
                info = tarfile.TarInfo(name)
                if body is None:
                    info.type = tarfile.DIRTYPE
                elif link.startswith("hard:"):
                    info.type, info.linkname = tarfile.LNKTYPE, link[5:]
                elif link:
                    info.type, info.linkname = tarfile.SYMTYPE, link
                else:
                    info.size = len(body)
                tar.addfile(info, io.BytesIO(body) if body else None)

    def get_archive(self, path: str):
        return iter([self.data.getvalue()[:700], self.data.getvalue()[700:]]), {}


def _copy_back_runner(tmp_path):
    from devkit.run.container import ContainerRunner, Mount
    from devkit.run.step import Step

    build = tmp_path / "build"
    build.mkdir()
    runner = ContainerRunner(
        engine=StubEngine("copy"), image="img:1", platform="linux/amd64",
        mounts=[Mount(tmp_path, "/src"), Mount(build, "/src/build", read_only=False)],
    )  # fmt: skip
    return runner, build, Step("compile", ["true"], tmp_path / "log")


def test_copy_back_replaces_the_tree_through_devkits_writer(tmp_path):
    runner, build, step = _copy_back_runner(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (build / "lib.so").symlink_to(outside)  # left on the host: replaced, never written through
    container = ArchiveContainer(
        [
            ("build", None, ""),
            ("build/obj", None, ""),
            ("build/obj/a.o", b"object", ""),
            ("build/lib.so", b"library", ""),
            ("build/lib.so.1", b"", "lib.so"),
            ("build/obj/b.o", b"", "hard:build/obj/a.o"),
        ]
    )
    runner._copy_back(container, step)
    assert (build / "obj" / "a.o").read_bytes() == (build / "obj" / "b.o").read_bytes() == b"object"
    assert not (build / "lib.so").is_symlink() and (build / "lib.so").read_bytes() == b"library"
    assert (build / "lib.so.1").resolve() == (build / "lib.so").resolve()
    assert outside.read_text() == "keep"


def test_copy_back_refuses_a_link_out_of_the_tree_before_writing(tmp_path):
    from devkit.util.errors import DevkitError

    runner, build, step = _copy_back_runner(tmp_path)
    container = ArchiveContainer([("build/a.o", b"o", ""), ("build/out", b"", "../../etc"), ("build/out/x", b"x", "")])
    with pytest.raises(DevkitError) as exc:
        runner._copy_back(container, step)
    assert exc.value.problem.startswith("compile: what the step left in its container's /src/build is unsafe")
    assert list(build.iterdir()) == []


@pytest.mark.parametrize(
    "docker_host, forced, mode",
    [
        ("", "", "bind"),
        ("unix:///var/run/docker.sock", "", "bind"),
        ("tcp://arm64-box:2375", "", "copy"),
        ("ssh://me@arm64-box", "", "copy"),
        ("tcp://127.0.0.1:2375", "bind", "bind"),
        ("", "copy", "copy"),
    ],
)
def test_engine_files_mode(monkeypatch, docker_host, forced, mode):
    from devkit.run.engine import Engine

    monkeypatch.setenv("DOCKER_HOST", docker_host)
    monkeypatch.setenv("DEVKIT_ENGINE_FILES", forced)
    assert Engine(client=None).files_mode == mode


class ImageStubEngine:
    """An engine whose image builds take a while: the test is about who builds, not about images."""

    def __init__(self) -> None:
        import threading

        self.images: dict[str, object] = {"devkit-base:bookworm-amd64": type("Image", (), {"id": "sha256:base"})()}
        self.builds: list[str] = []
        self.lock = threading.Lock()

    def image(self, tag: str):
        with self.lock:
            return self.images.get(tag)

    def build_image(self, context, *, tag, **_):
        import time

        with self.lock:
            self.builds.append(tag)
        time.sleep(0.5)
        with self.lock:
            self.images[tag] = type("Image", (), {"id": f"sha256:{tag}"})()


def test_one_caller_builds_an_image_the_others_wait_for_it(tmp_path, monkeypatch):
    """`devkit images build` in the background and a test (or two devkit commands) asking for the
    same image at once: one builds it, the others wait and get the same tag."""
    from concurrent.futures import ThreadPoolExecutor

    from devkit.project.recipes import find_recipe
    from devkit.run import images

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the user's lock directory, here
    engine = ImageStubEngine()
    spec = images.verify_spec(find_recipe("x86_64"))
    with ThreadPoolExecutor(3) as pool:
        tags = list(pool.map(lambda _: images.ensure_image(engine, spec, tmp_path / "images.log"), range(3)))
    assert len(set(tags)) == 1 and engine.builds == tags[:1]
    assert (tmp_path / "devkit" / "locks" / "image-verify-x86_64.lock").exists()


def test_the_engine_is_asked_once_per_process(monkeypatch):
    """Every step decides where it runs; the engine is pinged on the first ask only (a stub client:
    what is counted is devkit's asking, not the engine)."""
    from types import SimpleNamespace

    import docker

    from devkit.run import engine as engine_module
    from devkit.run.select import build_cache, use_container

    pings = []

    class Client:
        api = SimpleNamespace(timeout=0)
        containers = SimpleNamespace(list=lambda **filters: [])

        def ping(self) -> bool:
            pings.append(1)
            return True

    monkeypatch.setattr(docker, "from_env", lambda timeout: Client())
    monkeypatch.setattr(engine_module, "_connected", {})
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/devkit-once.sock")
    for _ in range(4):
        assert use_container("docker") and use_container("auto")
        build_cache("docker")
    assert len(pings) == 1
    engine_module.Engine.connect(fresh=True)  # asked again only when told to
    assert len(pings) == 2
