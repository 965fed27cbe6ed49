"""The bad-input catalogue: every kind of wrong input a user can hand devkit, each answered by
exactly one `error:` line that names the problem and the fix, a non-zero exit, no traceback,
and nothing written (the files under the test's directory and devkit's cache are unchanged).

The CLI runs in-process (`devkit.cli.main`, the console script's entry point) so that the
catalogue stays cheap; tests/unit/test_cli.py runs the usage errors through the installed devkit
(`python -m devkit`).
"""

from __future__ import annotations

import io
import math
import os
import shutil
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from devkit import cli
from devkit.util.errors import ExitCode


@dataclass(frozen=True)
class Case:
    id: str
    args: Callable[[Inputs], list[str]]  # the command line, given the prepared inputs
    message: str  # part of the one error line
    code: int = ExitCode.INPUT  # the exit code of the error's kind
    env: tuple[tuple[str, str], ...] = ()  # set for the run


class Inputs:
    """Bad (and good) inputs, made once for the whole catalogue in one directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.project = self._render("STPU")
        self.wheel = self._fake_wheel("paddle_custom_stpu-0.1.0-py3-none-linux_x86_64.whl")
        raw = self.wheel.read_bytes()
        self.truncated_wheel = self._write("broken/paddle_custom_stpu-0.1.0-py3-none-linux_x86_64.whl", raw[:1000])
        self.text_wheel = self._write("text/paddle_custom_stpu-0.1.0-py3-none-linux_x86_64.whl", b"not a zip\n")
        self.badly_named_wheel = self._write("named/plugin.whl", raw)
        self.wheel_without_metadata = self._zip(
            "nometa/paddle_custom_stpu-0.1.0-py3-none-linux_x86_64.whl", {"paddle_custom_device/libx.so": b"\x7fELF"}
        )
        self.traversing_wheel = self._zip(
            "evil/paddle_custom_stpu-0.1.0-py3-none-linux_x86_64.whl",
            {**self._wheel_files(), "../../outside.txt": b"x"},
        )
        self.not_elf = self._write("lib/libplugin.so", b"#!/bin/sh\n")
        self.truncated_elf = self._write("lib/libtrunc.so", Path(sys.executable).resolve().read_bytes()[:200])
        self.empty_dir = self.root / "empty"
        self.empty_dir.mkdir()
        self.a_file = self._write("a-file.txt", b"x")
        # Projects whose pyproject.toml is wrong in one way each.
        self.bad_toml = self._project_with("bad-toml", lambda t: t.replace("[tool.devkit]", "[tool.devkit"))
        self.non_utf8 = self._project_with("non-utf8", lambda t: t, raw_suffix=b"\n# \xff\xfe\n")
        self.no_device_type = self._project_with("no-device-type", lambda t: t.replace('device-type = "stpu"', ""))
        self.numeric_name = self._project_with(
            "numeric-name", lambda t: t.replace('name = "paddle-custom-stpu"', "name = 5")
        )
        self.bad_runner = self._project_with("bad-runner", lambda t: t.replace('runner = "auto"', 'runner = "cloud"'))
        self.bad_target = self._project_with(
            "bad-target", lambda t: t.replace('targets = ["x86_64", "aarch64", "armhf"]', 'targets = ["riscv64"]')
        )
        self.negative_steps = self._project_with("neg-steps", lambda t: t.replace("steps = 200", "steps = -1"))
        self.text_tolerance = self._project_with("text-tol", lambda t: t.replace("op-rtol = 0.0001", 'op-rtol = "x"'))
        self.unknown_key = self._project_with(
            "unknown-key", lambda t: t.replace('runner = "auto"', 'runner = "auto"\ncolour = "red"')
        )
        self.bad_paddle_pin = self._project_with(
            "bad-pin", lambda t: t.replace('x86_64 = ["3.3.1"]', 'x86_64 = ["3.x"]')
        )
        self.bad_builder_base = self._project_with(
            "bad-base", lambda t: t.replace('builder-base = "bullseye"', 'builder-base = "buster"')
        )
        self.bad_mode = self._project_with(
            "bad-mode", lambda t: t.replace('modes = ["train", "infer"]', 'modes = ["debug"]')
        )
        self.bad_train_model = self._project_with(
            "bad-model", lambda t: t.replace('train-model = "mnist"', 'train-model = "gpt"')
        )
        # [tool.devkit.sdk] declarations wrong in one way each.
        self.sdk_dir = self.root / "opencl-sdk"
        (self.sdk_dir / "include" / "CL").mkdir(parents=True)
        (self.sdk_dir / "include" / "CL" / "cl.h").write_text("/* headers only: no libOpenCL */\n")
        (self.sdk_dir / "lib").mkdir()
        self.sdk_archive = self._write("opencl-sdk.tar.gz", b"\x1f\x8b not really a tarball")
        sdk = 'name = "opencl"\nversion = "3.0"\nruntime-libs = ["libOpenCL.so.1"]\n'
        self.sdk_unknown_key = self._with_sdk("sdk-key", sdk + 'colour = "red"\n', 'x86_64 = { dir = "/opt" }')
        self.sdk_two_sources = self._with_sdk(
            "sdk-two", sdk, 'x86_64 = { dir = "/opt", debian = ["opencl-c-headers"] }'
        )
        self.sdk_no_sha = self._with_sdk("sdk-nosha", sdk, f'x86_64 = {{ archive = "{self.sdk_archive}" }}')
        self.sdk_bad_soname = self._with_sdk(
            "sdk-soname", sdk.replace("libOpenCL.so.1", "OpenCL"), f'x86_64 = {{ dir = "{self.sdk_dir}" }}'
        )
        self.sdk_missing_dir = self._with_sdk("sdk-nodir", sdk, 'x86_64 = { dir = "/nonexistent/opencl-3.0" }')
        self.sdk_no_runtime_lib = self._with_sdk("sdk-nolib", sdk, f'x86_64 = {{ dir = "{self.sdk_dir}" }}')
        self.sdk_other_target = self._with_sdk("sdk-target", sdk, f'aarch64 = {{ dir = "{self.sdk_dir}" }}')
        self.sdk_wrong_sha = self._with_sdk(
            "sdk-sha", sdk, f'x86_64 = {{ archive = "{self.sdk_archive}", sha256 = "{"0" * 64}" }}'
        )
        # values that would reach the build's environment, generated code, CMake or pip unchecked
        with_dir = f'x86_64 = {{ dir = "{self.sdk_dir}" }}'
        self.sdk_env_reserved = self._with_sdk("sdk-env", sdk + 'env = { LD_PRELOAD = "/tmp/x.so" }\n', with_dir)
        self.sdk_env_devkit = self._with_sdk("sdk-env2", sdk + 'env = { CCACHE_DIR = "/tmp/c" }\n', with_dir)
        self.sdk_env_name = self._with_sdk("sdk-env3", sdk + 'runtime-env = { "A B" = "1" }\n', with_dir)
        self.sdk_runtime_lib_code = self._with_sdk(
            "sdk-code", sdk.replace('"libOpenCL.so.1"', """'lib",__import__("os").system("id"),".so'"""), with_dir
        )
        self.sdk_version_space = self._with_sdk("sdk-ver", sdk.replace('"3.0"', '"3.0 "'), with_dir)
        self.sdk_include_up = self._with_sdk("sdk-up", sdk + 'include-dirs = ["../../../etc"]\n', with_dir)
        self.sdk_pip_option = self._with_sdk(
            "sdk-pipopt", sdk, 'x86_64 = { pip = ["--index-url=https://evil.example/simple", "vendor-sdk==3.0"] }'
        )
        self.sdk_pip_unpinned = self._with_sdk("sdk-pippin", sdk, 'x86_64 = { pip = ["vendor-sdk>=3.0"] }')
        self.sdk_pip_hash = self._with_sdk(
            "sdk-piphash", sdk, 'x86_64 = { pip = ["vendor-sdk==3.0"], hashes = { vendor-sdk = ["sha256:abc"] } }'
        )
        self.sdk_relative_dir = self._with_sdk("sdk-rel", sdk, 'x86_64 = { dir = "opencl-sdk" }')
        self.sdk_debian = self._with_sdk("sdk-deb", sdk, 'x86_64 = { debian = ["ocl-icd-libopencl1"] }')
        # Device bundles (armhf) in a project's dist/: truncated, and one with a member escaping the directory.
        self.truncated_bundle_project = self._project_with("trunc-bundle", lambda t: t)
        self._write_bundle(self.truncated_bundle_project, lambda data: data[:40])
        self.evil_bundle_project = self._project_with("evil-bundle", lambda t: t)
        self._write_bundle(self.evil_bundle_project, None)
        # Data a user points devkit at.
        self.truncated_mnist = self._mnist("mnist-truncated", truncate=True)
        self.wrong_magic_mnist = self._mnist("mnist-magic", magic=1234)
        self.golden_missing_bin = self._golden(
            "golden-missing", "1 relu x=x.bin:2,2 expected=y.bin:2,2\n", {"x.bin": 16}
        )
        self.golden_short_bin = self._golden(
            "golden-short", "1 relu x=x.bin:2,2 expected=y.bin:2,2\n", {"x.bin": 16, "y.bin": 8}
        )
        self.golden_escaping = self._golden("golden-escape", "1 relu x=../x.bin:1 expected=y.bin:1\n", {"y.bin": 4})
        self.golden_empty = self._golden("golden-empty", "# golden data: nothing\n", {})
        self.model_broken_json = self.root / "model-json"
        self.model_broken_json.mkdir()
        (self.model_broken_json / "inference.json").write_text("{ not json")
        (self.model_broken_json / "inference.pdiparams").write_bytes(b"\0" * 8)

    # -- helpers that make the inputs
    def _render(self, name: str) -> Path:
        path = self.root / name
        run_cli(["new-backend", name, "--out", str(path)], expect=0)
        return path

    def _write(self, rel: str, data: bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    @staticmethod
    def _wheel_files() -> dict[str, bytes]:
        meta = "Metadata-Version: 2.1\nName: paddle-custom-stpu\nVersion: 0.1.0\nRequires-Dist: paddlepaddle==3.3.1\n"
        return {
            "paddle_custom_device/libpaddle-custom-stpu.so": os.urandom(4096),
            "paddle_custom_stpu-0.1.0.dist-info/METADATA": meta.encode(),
            "paddle_custom_stpu-0.1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-linux_x86_64\n",
        }

    def _zip(self, rel: str, files: dict[str, bytes]) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files.items():
                zf.writestr(name, data)
        return path

    def _fake_wheel(self, name: str) -> Path:
        return self._zip(f"wheel/{name}", self._wheel_files())

    def _with_sdk(self, out: str, sdk: str, build: str) -> Path:
        return self._project_with(out, lambda t: f"{t}\n[tool.devkit.sdk]\n{sdk}\n[tool.devkit.sdk.build]\n{build}\n")

    def _project_with(self, out: str, edit: Callable[[str], str], raw_suffix: bytes = b"") -> Path:
        """A copy of the STPU project rendered first (a render each took ~0.6 s of this fixture's
        ~25 s), its pyproject.toml edited."""
        path = self.root / out
        shutil.copytree(self.project, path, symlinks=True)
        pyproject = path / "pyproject.toml"
        pyproject.write_bytes(edit(pyproject.read_text()).encode() + raw_suffix)
        return path

    def _write_bundle(self, project: Path, damage: Callable[[bytes], bytes] | None) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            name = "paddle-custom-stpu-device-0.1.0-armhf"
            for member in (f"{name}/tests/test_stpu_device", f"{name}/../../escaped" if damage is None else None):
                if member:
                    info = tarfile.TarInfo(member)
                    info.size = 4
                    tar.addfile(info, io.BytesIO(b"\x7fELF"))
        data = buf.getvalue()
        self._write(
            f"{project.name}/dist/paddle-custom-stpu-device-0.1.0-armhf.tar.gz", damage(data) if damage else data
        )

    def _mnist(self, rel: str, truncate: bool = False, magic: int | None = None) -> Path:
        def idx(dims: list[int]) -> bytes:
            header = (magic or (0x800 | len(dims))).to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims)
            payload = bytes(math.prod(dims))
            return header + (payload[: len(payload) // 2] if truncate else payload)

        directory = self.root / rel
        directory.mkdir()
        for split, n in (("train", 4), ("t10k", 2)):
            (directory / f"{split}-images-idx3-ubyte").write_bytes(idx([n, 28, 28]))
            (directory / f"{split}-labels-idx1-ubyte").write_bytes(idx([n]))
        return directory

    def _golden(self, rel: str, manifest: str, files: dict[str, int]) -> Path:
        directory = self.root / rel
        directory.mkdir()
        (directory / "manifest.txt").write_text("# golden data: test\n" + manifest)
        for name, size in files.items():
            (directory / name).write_bytes(b"\0" * size)
        return directory


def run_cli(argv: list[str], expect: int | None = None) -> tuple[int, str, str]:
    """Run devkit's entry point in-process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv, sys.stdout, sys.stderr
    sys.argv, sys.stdout, sys.stderr = ["devkit", *argv], out, err
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv, sys.stdout, sys.stderr = saved
    if expect is not None:
        assert code == expect, f"devkit {' '.join(argv)} exited {code}:\n{err.getvalue()}"
    return code, out.getvalue(), err.getvalue()


P = lambda i: str(i.project)  # noqa: E731
CASES = [
    # names
    Case(
        "name-starts-with-digit",
        lambda i: ["new-backend", "1abc", "--out", str(i.root / "n1")],
        "must start with a letter",
    ),
    Case(
        "name-is-paddle-device", lambda i: ["new-backend", "cpu", "--out", str(i.root / "n2")], "already used by Paddle"
    ),
    Case("name-is-cxx-keyword", lambda i: ["new-backend", "int", "--out", str(i.root / "n3")], "C/C++ keyword"),
    Case("name-too-long", lambda i: ["new-backend", "X" * 40, "--out", str(i.root / "n4")], "more than 32"),
    Case("name-with-dash", lambda i: ["new-backend", "ab-c", "--out", str(i.root / "n5")], "letters, digits"),
    Case(
        "device-type-upper-case",
        lambda i: ["new-backend", "STPU", "--device-type", "Bad-Type", "--out", str(i.root / "n6")],
        "device type",
    ),
    Case(
        "device-type-with-digit",  # fine for Paddle, not for torch.device()
        lambda i: ["new-backend", "Zeta7", "--out", str(i.root / "n7")],
        "cannot name a PyTorch device",
    ),
    Case(
        "device-type-torch-owns",
        lambda i: ["new-backend", "STPU", "--device-type", "meta", "--out", str(i.root / "n8")],
        "already used by PyTorch",
    ),
    Case(
        "sdk-flavour-unknown",
        lambda i: ["new-backend", "STPU", "--sdk", "cuda", "--out", str(i.root / "n9")],
        "--sdk 'cuda' is neither a device library devkit ships nor a directory holding flavour.toml",
    ),
    # output paths
    Case("out-is-a-file", lambda i: ["new-backend", "STPU", "--out", str(i.a_file)], "is not a directory"),
    Case("out-is-non-empty", lambda i: ["new-backend", "STPU", "--out", str(i.project)], "--force"),
    # projects
    Case("project-missing", lambda i: ["build", str(i.root / "nowhere")], "is not a backend project"),
    Case("project-empty-dir", lambda i: ["build", str(i.empty_dir)], "is not a backend project"),
    Case("pyproject-bad-toml", lambda i: ["build", str(i.bad_toml)], "is not valid TOML"),
    Case("pyproject-not-utf8", lambda i: ["build", str(i.non_utf8)], "is not UTF-8"),
    Case("pyproject-no-device-type", lambda i: ["build", str(i.no_device_type)], "tool.devkit.device-type is missing"),
    Case("pyproject-numeric-name", lambda i: ["build", str(i.numeric_name)], "project.name is 5"),
    # [tool.devkit] keys
    Case("config-runner", lambda i: ["build", str(i.bad_runner)], "tool.devkit.runner has 'cloud'"),
    # vendor SDKs ([tool.devkit.sdk])
    Case(
        "sdk-unknown-key", lambda i: ["build", str(i.sdk_unknown_key)], "tool.devkit.sdk.colour is not an SDK setting"
    ),
    Case(
        "sdk-two-sources",
        lambda i: ["build", str(i.sdk_two_sources)],
        "tool.devkit.sdk.build.x86_64 must name exactly one of dir, archive, debian, pip",
    ),
    Case("sdk-archive-without-sha256", lambda i: ["build", str(i.sdk_no_sha)], "must be the archive's sha256"),
    Case("sdk-runtime-lib-not-a-file-name", lambda i: ["build", str(i.sdk_bad_soname)], "has 'OpenCL', which is not"),
    Case(
        "sdk-dir-missing",
        lambda i: ["build", str(i.sdk_missing_dir), "--runner", "host"],
        "dir = '/nonexistent/opencl-3.0' does not exist on this machine",
    ),
    Case(
        "sdk-runtime-lib-not-in-sdk",
        lambda i: ["build", str(i.sdk_no_runtime_lib), "--runner", "host"],
        "names libOpenCL.so.1, which the opencl SDK for x86_64 does not contain",
    ),
    Case(
        "sdk-no-source-for-target",
        lambda i: ["build", str(i.sdk_other_target), "--runner", "host"],
        "tool.devkit.sdk.build has no entry for x86_64",
    ),
    Case(
        "sdk-archive-sha256-differs",
        lambda i: ["build", str(i.sdk_wrong_sha), "--runner", "host"],
        "sha256 says 0000",
    ),
    Case(
        "sdk-env-loader-variable",
        lambda i: ["build", str(i.sdk_env_reserved)],
        "tool.devkit.sdk.env has LD_PRELOAD, which devkit, the compiler or the loader sets or reads itself",
    ),
    Case("sdk-env-devkit-variable", lambda i: ["build", str(i.sdk_env_devkit)], "tool.devkit.sdk.env has CCACHE_DIR"),
    Case(
        "sdk-runtime-env-not-a-name",
        lambda i: ["build", str(i.sdk_env_name)],
        "tool.devkit.sdk.runtime-env has 'A B', which is not an environment variable name",
    ),
    Case(
        "sdk-runtime-lib-with-code",
        lambda i: ["build", str(i.sdk_runtime_lib_code)],
        'tool.devkit.sdk.runtime-libs has \'lib",__import__("os").system("id"),".so\', which is not',
    ),
    Case("sdk-version-whitespace", lambda i: ["build", str(i.sdk_version_space)], "sdk.version = '3.0 ' is not a"),
    Case(
        "sdk-include-dir-leaves-the-sdk",
        lambda i: ["build", str(i.sdk_include_up)],
        "tool.devkit.sdk.include-dirs has '../../../etc', which is not a directory inside the SDK",
    ),
    Case(
        "sdk-pip-option",
        lambda i: ["build", str(i.sdk_pip_option)],
        "tool.devkit.sdk.build.x86_64.pip has '--index-url=https://evil.example/simple', which is not a pinned",
    ),
    Case(
        "sdk-pip-unpinned",
        lambda i: ["build", str(i.sdk_pip_unpinned)],
        "tool.devkit.sdk.build.x86_64.pip has 'vendor-sdk>=3.0', which is not a pinned requirement (name==version)",
    ),
    Case(
        "sdk-pip-hash",
        lambda i: ["build", str(i.sdk_pip_hash)],
        "tool.devkit.sdk.build.x86_64.hashes.vendor-sdk has 'sha256:abc', which is not a hash",
    ),
    Case(
        "sdk-relative-dir-is-the-project-s",
        lambda i: ["build", str(i.sdk_relative_dir), "--runner", "host"],
        "sdk-rel/opencl-sdk' does not exist on this machine",
    ),
    Case(
        "sdk-debian-on-a-remote-engine",
        lambda i: ["build", str(i.sdk_debian), "--runner", "docker"],
        "tool.devkit.sdk.build.x86_64 is a debian SDK, which a remote container engine (files copied) cannot",
        ExitCode.ENVIRONMENT,
        env=(("DEVKIT_ENGINE_FILES", "copy"),),
    ),
    Case("config-target", lambda i: ["config", "show", str(i.bad_target)], "tool.devkit.targets has 'riscv64'"),
    Case("config-steps", lambda i: ["config", "show", str(i.negative_steps)], "tool.devkit.verify.steps = -1"),
    Case("config-tolerance", lambda i: ["config", "show", str(i.text_tolerance)], "tool.devkit.tolerances.op-rtol"),
    Case(
        "config-unknown-key",
        lambda i: ["config", "show", str(i.unknown_key)],
        "tool.devkit.colour is not a devkit setting",
    ),
    Case("config-paddle-version", lambda i: ["matrix", "list", str(i.bad_paddle_pin)], "'3.x', which is not a version"),
    Case("config-mode", lambda i: ["matrix", "list", str(i.bad_mode)], "'debug', which is not one of"),
    Case(
        "config-builder-base",
        lambda i: ["build", str(i.bad_builder_base)],
        "tool.devkit.builder-base has 'buster', which is not one of bullseye, bookworm",
    ),
    Case(
        "images-unknown-builder-base",
        lambda i: ["images", "build", "--builder-base", "buster"],
        "'buster' is not a builder base devkit knows",
    ),
    Case("sdist-without-wheel", lambda i: ["build", P(i), "--arch", "armhf", "--sdist"], "builds no plugin wheel"),
    Case("publish-no-url", lambda i: ["publish", P(i)], "no --repository-url"),
    Case("publish-not-a-url", lambda i: ["publish", P(i), "--repository-url", "ftp://x"], "is not an http(s) URL"),
    Case(
        "publish-nothing-built", lambda i: ["publish", P(i), "--repository-url", "http://127.0.0.1:9/"], "no wheel of"
    ),
    Case("config-train-model", lambda i: ["config", "show", str(i.bad_train_model)], "'gpt', which is not one of"),
    # wheels
    Case("wheel-missing", lambda i: ["verify", "--wheel", str(i.root / "none.whl")], "does not exist"),
    Case("wheel-truncated", lambda i: ["verify", "--wheel", str(i.truncated_wheel)], "is damaged or not a zip"),
    Case("wheel-not-a-zip", lambda i: ["verify", "--wheel", str(i.text_wheel)], "is damaged or not a zip"),
    Case("wheel-bad-file-name", lambda i: ["verify", "--wheel", str(i.badly_named_wheel)], "is not named like a wheel"),
    Case("wheel-no-metadata", lambda i: ["verify", "--wheel", str(i.wheel_without_metadata)], "no .dist-info/METADATA"),
    Case(
        "wheel-path-traversal", lambda i: ["verify", "--wheel", str(i.traversing_wheel)], "leaves the target directory"
    ),
    Case("wheel-is-a-directory", lambda i: ["verify", "--wheel", str(i.empty_dir)], "is not a file"),
    Case("check-abi-truncated-wheel", lambda i: ["check-abi", str(i.truncated_wheel)], "is damaged or not a zip"),
    Case("check-abi-not-elf", lambda i: ["check-abi", str(i.not_elf)], "neither a wheel nor an ELF library"),
    Case(
        "check-abi-truncated-elf",
        lambda i: ["check-abi", str(i.truncated_elf), "--paddle-version", "3.3.1"],
        "is not a readable ELF library",
    ),
    Case("test-ops-truncated-wheel", lambda i: ["test-ops", "--wheel", str(i.truncated_wheel)], "is damaged"),
    Case("check-kernels-truncated-wheel", lambda i: ["check-kernels", "--wheel", str(i.truncated_wheel)], "is damaged"),
    # bundles
    Case(
        "device-bundle-truncated",
        lambda i: ["verify", str(i.truncated_bundle_project), "--arch", "armhf"],
        "is damaged or not a tar archive",
    ),
    Case(
        "device-bundle-escaping-member",
        lambda i: ["verify", str(i.evil_bundle_project), "--arch", "armhf"],
        "is unsafe to unpack",
    ),
    # arches and versions
    Case("build-unknown-arch", lambda i: ["build", P(i), "--arch", "riscv64"], "unknown target architecture 'riscv64'"),
    Case("verify-unknown-arch", lambda i: ["verify", P(i), "--arch", "sparc"], "unknown target architecture 'sparc'"),
    Case(
        "verify-one-rank", lambda i: ["verify", P(i), "--distributed", "1"], "--distributed 1: data parallelism needs 2"
    ),
    Case(
        "verify-distributed-emulated",
        lambda i: ["verify", P(i), "--distributed", "2", "--arch", "aarch64"],
        "which emulation of aarch64 makes too slow",
    ),
    Case(
        "verify-distributed-infer",
        lambda i: ["verify", P(i), "--distributed", "2", "--infer"],
        "--infer is one process",
    ),
    Case("verify-amp-level", lambda i: ["verify", P(i), "--amp", "O3"], "--amp 'O3' is not a PaddlePaddle mixed"),
    Case(
        "verify-amp-torch-level",
        lambda i: ["verify", P(i), "--framework", "torch", "--amp", "O2"],
        "--amp 'O2' is not a PyTorch mixed-precision level",
    ),
    Case(
        "verify-amp-infer", lambda i: ["verify", P(i), "--amp", "O1", "--infer"], "--amp trains a model on one device"
    ),
    Case(
        "verify-amp-distributed",
        lambda i: ["verify", P(i), "--amp", "O2", "--model", "resnet_bn", "--distributed", "2"],
        "--amp trains a model on one device",
    ),
    Case(
        "verify-compile-paddle",
        lambda i: ["verify", P(i), "--compile"],
        "--compile checks torch.compile; the PaddlePaddle adapter has no compiler backend",
    ),
    Case(
        "verify-compile-amp",
        lambda i: ["verify", P(i), "--framework", "torch", "--compile", "--amp", "O1"],
        "--compile checks compiled models of its own on one process",
    ),
    Case(
        "verify-compile-other-seam",  # the aarch64 reference is torch 2.9.1
        lambda i: ["verify", P(i), "--framework", "torch", "--compile", "--arch", "aarch64"],
        "--compile: the device's Inductor backend needs torch 2.13",
    ),
    Case(
        "verify-profile-infer",
        lambda i: ["verify", P(i), "--profile", "--infer"],
        "--profile traces a training step of one process; --infer checks something else",
    ),
    Case(
        "verify-profile-distributed",
        lambda i: ["verify", P(i), "--profile", "--distributed", "2"],
        "--profile traces a training step of one process; --distributed checks something else",
    ),
    Case(
        "verify-quant-dtype",
        lambda i: ["verify", P(i), "--infer", "--quant", "int4"],
        "--quant 'int4' is not a quantization devkit verifies",
    ),
    Case(
        "verify-quant-without-infer",
        lambda i: ["verify", P(i), "--quant", "int8"],
        "--quant verifies quantized inference with Paddle Inference",
    ),
    Case(
        "verify-quant-torch",
        lambda i: ["verify", P(i), "--framework", "torch", "--infer", "--quant", "int8"],
        "--quant verifies quantized inference with Paddle Inference",
    ),
    Case(
        "verify-quant-distributed",
        lambda i: ["verify", P(i), "--infer", "--quant", "int8", "--distributed", "2"],
        "--quant checks inference on one device",
    ),
    Case(
        "check-abi-arch-without-paddle",
        lambda i: ["check-abi", str(i.not_elf), "--arch", "armhf"],
        "has no PaddlePaddle runtime",
    ),
    Case("paddle-version-not-a-version", lambda i: ["build", P(i), "--paddle-version", "latest"], "is not a version"),
    Case(
        "paddle-version-on-armhf",
        lambda i: ["build", P(i), "--arch", "armhf", "--paddle-version", "3.3.1"],
        "has no PaddlePaddle runtime",
    ),
    Case(
        "infer-dir-without-infer",
        lambda i: ["build", P(i), "--paddle-inference-dir", str(i.empty_dir)],
        "applies to inference builds",
    ),
    # models and data
    Case(
        "verify-unknown-model", lambda i: ["verify", "--wheel", str(i.wheel), "--model", "gpt"], "unknown model 'gpt'"
    ),
    Case("verify-too-few-steps", lambda i: ["verify", "--wheel", str(i.wheel), "--steps", "3"], "too few"),
    Case(
        "infer-unknown-model",
        lambda i: ["verify", "--wheel", str(i.wheel), "--infer", "--model", "gpt"],
        "unknown inference model 'gpt'",
    ),
    Case(
        "model-dir-missing",
        lambda i: ["verify", "--wheel", str(i.wheel), "--infer", "--model-dir", str(i.root / "nomodel")],
        "is not a directory",
    ),
    Case(
        "model-dir-empty",
        lambda i: ["verify", "--wheel", str(i.wheel), "--infer", "--model-dir", str(i.empty_dir)],
        "holds no exported model",
    ),
    Case(
        "model-dir-broken-json",
        lambda i: ["verify", "--wheel", str(i.wheel), "--infer", "--model-dir", str(i.model_broken_json)],
        "is not a valid Paddle program",
    ),
    Case(
        "data-dir-missing",
        lambda i: ["verify", "--wheel", str(i.wheel), "--data", str(i.root / "nodata")],
        "is not a directory",
    ),
    Case(
        "data-dir-without-mnist",
        lambda i: ["verify", "--wheel", str(i.wheel), "--data", str(i.empty_dir)],
        "does not contain the four MNIST idx files",
    ),
    Case(
        "mnist-truncated",
        lambda i: ["verify", "--wheel", str(i.wheel), "--data", str(i.truncated_mnist)],
        "is truncated",
    ),
    Case(
        "mnist-wrong-magic",
        lambda i: ["verify", "--wheel", str(i.wheel), "--data", str(i.wrong_magic_mnist)],
        "is not an MNIST idx file",
    ),
    Case(
        "golden-dir-missing",
        lambda i: ["test-ops", P(i), "--arch", "armhf", "--golden", str(i.root / "nogold")],
        "does not exist",
    ),
    Case(
        "golden-missing-bin",
        lambda i: ["test-ops", P(i), "--arch", "armhf", "--golden", str(i.golden_missing_bin)],
        "names y.bin, which is missing",
    ),
    Case(
        "golden-short-bin",
        lambda i: ["test-ops", P(i), "--arch", "armhf", "--golden", str(i.golden_short_bin)],
        "holds 8 bytes",
    ),
    Case(
        "golden-escaping-path",
        lambda i: ["test-ops", P(i), "--arch", "armhf", "--golden", str(i.golden_escaping)],
        "outside the golden directory",
    ),
    Case(
        "golden-no-cases",
        lambda i: ["test-ops", P(i), "--arch", "armhf", "--golden", str(i.golden_empty)],
        "lists no cases",
    ),
    Case(
        "golden-both-directions",
        lambda i: ["test-ops", P(i), "--gen-golden", str(i.root / "g1"), "--golden", str(i.golden_empty)],
        "exclude each other",
    ),
    Case("test-ops-no-paddle-arch", lambda i: ["test-ops", P(i), "--arch", "armhf"], "has no Paddle runtime"),
    # CI
    Case("ci-unknown-provider", lambda i: ["ci", "--provider", "jenkins", P(i)], "unknown CI provider 'jenkins'"),
    # the machine, not the input (exit 5)
    Case(
        "engine-unreachable",
        lambda i: ["build", P(i), "--runner", "docker"],
        "no container engine answers",
        ExitCode.ENVIRONMENT,
        env=(("DOCKER_HOST", "unix:///nonexistent/devkit-test.sock"),),
    ),
    Case("matrix-unknown-entry", lambda i: ["matrix", "run", "riscv-train", P(i)], "no matrix entry 'riscv-train'"),
    # runners and usage (exit 2: the command line itself is wrong)
    Case(
        "runner-unknown", lambda i: ["build", P(i), "--runner", "cloud"], "Invalid value for '--runner'", ExitCode.USAGE
    ),
    Case("jobs-zero", lambda i: ["build", P(i), "--all", "--jobs", "0"], "Invalid value for '--jobs'", ExitCode.USAGE),
    Case("unknown-option", lambda i: ["build", P(i), "--frobnicate"], "No such option: --frobnicate", ExitCode.USAGE),
    Case(
        "unknown-framework",
        lambda i: ["build", P(i), "--framework", "tensorflow"],
        "unknown framework 'tensorflow'. Fix: use --framework paddle | torch",
    ),
    Case(
        "verify-unknown-framework",
        lambda i: ["verify", P(i), "--framework", "tensorflow"],
        "unknown framework 'tensorflow'",
    ),
    Case(
        "torch-version-on-paddle-build",
        lambda i: ["build", P(i), "--framework", "paddle", "--torch-version", "2.13.0"],
        "--torch-version does not apply to a PaddlePaddle build",
    ),
    Case(
        "torch-build-infer",
        lambda i: ["build", P(i), "--framework", "torch", "--infer"],
        "apply to the Paddle plugin, not the PyTorch adapter",
    ),
    Case(
        "torch-verify-infer",
        lambda i: ["verify", P(i), "--framework", "torch", "--infer"],
        "the PyTorch adapter has no inference mode",
    ),
    Case(
        "torch-version-not-a-version",
        lambda i: ["build", P(i), "--framework", "torch", "--torch-version", "newest"],
        "--torch-version 'newest' is not a version",
    ),
    Case(
        "torch-version-on-armhf",
        lambda i: ["build", P(i), "--framework", "torch", "--arch", "armhf", "--torch-version", "2.13.0"],
        "target armhf has no PyTorch runtime",
    ),
    Case(
        "torch-that-does-not-exist",
        lambda i: ["build", P(i), "--framework", "torch", "--torch-version", "1.99.0"],
        "cannot get torch==1.99.0 for x86_64",
    ),
    Case(
        "torch-verify-without-a-build",
        lambda i: ["verify", P(i), "--framework", "torch"],
        "no x86_64 PyTorch wheel in",
    ),
    Case("unknown-command", lambda i: ["buld", P(i)], "No such command 'buld'", ExitCode.USAGE),
    Case("missing-argument", lambda i: ["new-backend"], "Missing argument", ExitCode.USAGE),
]


def snapshot(*roots: Path, files_only: tuple[Path, ...] = ()) -> dict[str, tuple[int, int]]:
    """Every file and directory under `roots` (only the files under `files_only`: devkit's cache
    may gain an empty work directory) with its size and modification time."""
    state = {}
    for root in (*roots, *files_only):
        for path in [root, *root.rglob("*")] if root.exists() else []:
            if root in files_only and path.is_dir():
                continue
            st = path.lstat()
            state[str(path)] = (st.st_size if path.is_file() else -1, st.st_mtime_ns)
    return state


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Inputs:
    return Inputs(tmp_path_factory.mktemp("bad-input"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


def test_catalogue_is_large_enough():
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gets_one_error_line(case: Case, inputs: Inputs, tmp_path, monkeypatch):
    for name, value in case.env:
        monkeypatch.setenv(name, value)
    argv = case.args(inputs)
    watched = (inputs.root, Path.cwd() / "devkit-report")
    before = snapshot(*watched, files_only=(tmp_path / "cache",))
    code, out, err = run_cli(argv)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == case.code, f"devkit {' '.join(argv)} exited {code}:\n{err}"
    assert len(errors) == 1 and case.message in errors[0] and "Fix:" in errors[0], err
    assert "Traceback" not in err and "internal error" not in err
    assert snapshot(*watched, files_only=(tmp_path / "cache",)) == before, f"devkit {' '.join(argv)} wrote files"
