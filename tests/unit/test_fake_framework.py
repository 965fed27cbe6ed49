"""A third framework is data and adapters registered by name: nothing else in devkit names the
frameworks. The `fake_framework` fixture registers one (its data, a recipe pin and a stub
BuildAdapter: the tests are about the registry, not about building), and the tests read it back
through the command line, the settings and the build plan."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devkit.building.elf import AbiFinding
from devkit.building.frameworks import BUILD_ADAPTERS, BuildAdapter, build_adapter
from devkit.building.manylinux import SystemFloor
from devkit.building.options import BuildRequest
from devkit.building.placement import BuildPlace
from devkit.building.plan import plan_build
from devkit.building.sdk_abi import SdkExports
from devkit.cli.app import app
from devkit.project import recipes
from devkit.project.config import DevkitConfig
from devkit.project.config_parse import parse_config
from devkit.project.frameworks import FRAMEWORKS, Framework, find_framework
from devkit.project.project import Project
from devkit.project.recipes import Recipe, RuntimePin, find_recipe
from devkit.run.step import HostRunner
from devkit.util.errors import DevkitError, InputError
from devkit.verify.frameworks import VERIFY_ADAPTERS, VerifyAdapter
from devkit.verify.ops import OpsRequest, OpsResult
from devkit.verify.report import Report
from devkit.verify.request import run_verification
from devkit.verify.session import KernelCheck, VerifyOptions, VerifyResult
from devkit.verify.verify_modes import VerifyRequest


class StubBuild:
    """A BuildAdapter that answers without a runtime (mypy holds it to the protocol)."""

    label = "Fake"
    abi_checks = "nothing"

    def prefetch_runtime(self, cache: Path, recipe: Recipe, version: str, index_url: str) -> Path | None:
        return None

    def runtime_root(self, recipe: Recipe, version: str, prefetched: Path | None) -> Path:
        return Path("/nonexistent/fakefw")

    def require_abi(
        self,
        wheel: Path,
        recipe: Recipe,
        version: str,
        runtime_root: Path | None,
        sdk: SdkExports | None,
        say_warnings: bool,
    ) -> list[AbiFinding]:
        return []

    def provided_libraries(self, runtime_root: Path) -> tuple[set[str], SystemFloor]:
        return set(), SystemFloor({})

    def check_wheel(self, wheel: Path, recipe: Recipe, version: str, prefix: str) -> object:
        return {}

    def pinned_in(self, wheel: Path) -> str | None:
        return None

    def check_abi(self, path: Path, recipe: Recipe, version: str) -> list[AbiFinding]:
        return []

    def find_links(self, recipe: Recipe, version: str, index_url: str) -> Path | None:
        return None


@dataclass(frozen=True)
class FakeFramework:
    framework: Framework
    adapter: BuildAdapter
    recipe: Recipe  # x86_64, with the fake's runtime pinned


@pytest.fixture
def fake_framework(monkeypatch: pytest.MonkeyPatch) -> FakeFramework:
    """Registers `fakefw` (data, an x86_64 pin of its runtime 1.0, a stub BuildAdapter) for one test."""
    framework = Framework(
        name="fakefw",
        label="FakeFramework",
        runtime="fakefw-runtime",
        source_dir="fakefw",
        modes=("train",),
        package="fakefw",
        unpacked_runtime=True,  # compiled against its wheel unpacked: the plan names the pin's platform
        tree_suffix="-fakefw",
        wheel_label="FakeFramework adapter wheel",
    )
    adapter: BuildAdapter = StubBuild()
    monkeypatch.setitem(FRAMEWORKS, framework.name, framework)
    monkeypatch.setitem(BUILD_ADAPTERS, framework.name, adapter)
    pinned = tuple(
        replace(r, runtimes={**r.runtimes, "fakefw": RuntimePin("1.0", "manylinux_2_28_x86_64")})
        if r.name == "x86_64"
        else r
        for r in recipes.all_recipes()
    )
    monkeypatch.setattr(recipes, "all_recipes", lambda: pinned)
    return FakeFramework(framework, adapter, find_recipe("x86_64"))


def fake_project(root: Path) -> Project:
    """A project with the fake's adapter (its pyproject.toml names the wheel), built nowhere."""
    (root / "fakefw").mkdir(parents=True)
    (root / "fakefw" / "pyproject.toml").write_text('[project]\nname = "fakefw-stpu"\nversion = "0.1.0"\n')
    config = DevkitConfig(name="STPU", device_type="stpu", frameworks=("paddle", "torch", "fakefw"))
    return Project(root, "paddle-custom-stpu", "0.1.0", "STPU", "stpu", config)


def test_the_fake_is_found_by_name(fake_framework: FakeFramework) -> None:
    assert find_framework("FakeFW") is fake_framework.framework
    assert build_adapter(fake_framework.framework) is fake_framework.adapter
    assert fake_framework.framework.version(fake_framework.recipe) == "1.0"
    assert fake_framework.framework.version(find_recipe("armhf")) is None  # no pin: no runtime for the target


def test_build_help_offers_the_fakes_version_option(fake_framework: FakeFramework) -> None:
    result = CliRunner().invoke(app, ["build", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    for name in ("paddle", "torch", "fakefw"):
        assert f"--{name}-version" in result.output
    assert "FakeFramework to build or check against" in result.output


def test_the_fakes_version_option_reaches_the_build(fake_framework: FakeFramework, tmp_path: Path) -> None:
    """--fakefw-version is read by the build command: on a Paddle build it does not apply."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "CMakeLists.txt").write_text("")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "paddle-custom-stpu"\nversion = "0.1.0"\n'
        '[tool.devkit]\nname = "STPU"\ndevice-type = "stpu"\nframeworks = ["paddle", "fakefw"]\n'
    )
    result = CliRunner().invoke(app, ["build", str(project), "--fakefw-version", "1.0"])
    assert isinstance(result.exception, InputError)  # (devkit's main says it; the app itself raises)
    assert result.exception.problem == "--fakefw-version does not apply to a PaddlePaddle build"


def test_the_fakes_settings_are_keyed_by_its_name(fake_framework: FakeFramework) -> None:
    table = {
        "frameworks": ["fakefw"],
        "fakefw-versions": {"x86_64": ["1.0", "1.1"]},
        "fakefw": {"index-url": "https://example.org/simple"},
    }
    config = parse_config(table, name="STPU", device_type="stpu")
    assert config.versions(fake_framework.framework) == {"x86_64": ("1.0", "1.1")}
    assert config.index_url(fake_framework.framework) == "https://example.org/simple"
    with pytest.raises(DevkitError, match="armhf has no FakeFramework runtime"):
        parse_config({"fakefw-versions": {"armhf": ["1.0"]}}, name="STPU", device_type="stpu")


def test_a_build_plan_of_the_fake(fake_framework: FakeFramework, tmp_path: Path) -> None:
    project = fake_project(tmp_path / "project")
    options = BuildRequest(fake_framework.recipe, fake_framework.framework).options(project)
    place = BuildPlace(HostRunner(), find_recipe("x86_64"), tmp_path / "cache")
    plan = plan_build(project, options, place, tmp_path / "out", None, "stpu-device")
    argv = list(plan.argv)

    def flag(name: str) -> str:
        return str(argv[argv.index(name) + 1])

    assert (flag("--framework"), flag("--source"), flag("--runtime-version")) == ("fakefw", "fakefw", "1.0")
    assert flag("--runtime-platform") == "manylinux_2_28_x86_64"  # the recipe's pin of the fake's wheel
    assert plan.build_dir == "build/py3-none-linux_x86_64-fakefw" and not plan.reference_runtime
    assert plan.log == project.log_dir / "build-x86_64-fakefw.log"
    assert plan.title == "build STPU fakefw plugin wheel (fakefw 1.0) for x86_64"


class StubVerify:
    """A VerifyAdapter that trains nothing and records what it was asked (mypy holds it to the protocol)."""

    modes: tuple[str, ...] = ()  # plain training only

    def __init__(self) -> None:
        self.asked: list[tuple[Path, VerifyOptions, Path]] = []

    def train(self, wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
        self.asked.append((wheel, options, report_dir))
        return VerifyResult(Report.of([], framework=options.framework.name), report_dir / "report.json", None)

    def distributed(self, wheel: Path, options: VerifyOptions, report_dir: Path, ranks: int) -> VerifyResult:
        raise AssertionError("the fake supports no --distributed")

    def test_ops(self, request: OpsRequest) -> tuple[OpsResult, str]:
        raise AssertionError("not asked")

    def check_kernels(self, wheel: Path, options: VerifyOptions, report_dir: Path) -> KernelCheck:
        raise AssertionError("not asked")


def test_a_verify_request_for_the_fake(fake_framework: FakeFramework, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """`devkit verify --framework fakefw`: its adapter trains, with the fake's options and report directory;
    a mode its adapter does not name is refused, naming the frameworks that have it."""
    stub = StubVerify()
    adapter: VerifyAdapter = stub
    monkeypatch.setitem(VERIFY_ADAPTERS, fake_framework.framework.name, adapter)
    project = fake_project(tmp_path / "project")
    wheel = tmp_path / "fakefw_stpu-0.1.0-py3-none-any.whl"
    request = VerifyRequest(framework="fakefw", steps=20)
    result = run_verification(project, wheel, fake_framework.recipe, request, False, None)
    [(given, options, report_dir)] = stub.asked
    assert given == wheel and options.framework is fake_framework.framework and options.steps == 20
    assert report_dir == project.root / "reports" / "verify-x86_64-fakefw" and result.report.framework == "fakefw"
    with pytest.raises(InputError) as refused:
        run_verification(project, wheel, fake_framework.recipe, replace(request, amp="O1"), False, None)
    assert refused.value.problem.endswith("the FakeFramework adapter has no mixed-precision training")
    assert refused.value.fix == "drop --amp, or use --framework paddle | torch"
