"""Wheel tagging with the real auditwheel and patchelf on libraries the real g++ builds:
the tag, the floor, what is excluded, what is grafted, and the one-line failures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from devkit.building.manylinux import SystemFloor, tag_manylinux
from devkit.building.publish import check_index_ready, check_wheel_consistency
from devkit.util.errors import DevkitError
from devkit.util.tools import run_module

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host g++ (.ci/run installs it)")

PADDLE_FLOOR = SystemFloor({"GLIBC": (2, 28), "GLIBCXX": (3, 4, 22)})
SOURCE = """
#include <cmath>
#include <string>
extern "C" double framework_entry(double);
extern "C" double plugin_entry(double x) { return std::exp(x) + std::string("stpu").size() + framework_entry(x); }
"""


def compile_so(tmp: Path, name: str, source: str, *link: str) -> Path:
    src = tmp / f"{name}.cc"
    src.write_text(source)
    out = tmp / name
    argv = ["g++", "-shared", "-fPIC", "-O1", f"-Wl,-soname,{name}", "-o", str(out), str(src), *link]
    subprocess.run(argv, check=True)
    return out


def make_wheel(tmp: Path, so: Path, name="paddle_custom_stpu", version="0.1.0", tag="py3-none-linux_x86_64") -> Path:
    tmp.mkdir(exist_ok=True)
    wheel = tmp / f"{name}-{version}-{tag}.whl"
    dist_info = f"{name}-{version}.dist-info"
    metadata = (
        f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n"
        "Summary: test plugin\nRequires-Dist: paddlepaddle==3.3.1\nDescription-Content-Type: text/markdown\n\n# hi\n"
    )
    files = {
        f"paddle_custom_device/{so.name}": so.read_bytes(),
        f"{dist_info}/METADATA": metadata.encode(),
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    record = "".join(f"{n},,\n" for n in files) + f"{dist_info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for n, data in {**files, f"{dist_info}/RECORD": record.encode()}.items():
            zf.writestr(zipfile.ZipInfo(n, (2022, 1, 1, 0, 0, 0)), data)
    return wheel


@pytest.fixture
def framework(tmp_path) -> Path:
    """A stand-in for libphi_core.so: a library the framework's wheel provides at run time."""
    return compile_so(tmp_path, "libframework.so", 'extern "C" double framework_entry(double x) { return x; }')


def test_framework_library_is_excluded_and_the_tag_is_manylinux(tmp_path, framework):
    so = compile_so(tmp_path, "libplugin.so", SOURCE, str(framework))
    framework.unlink()  # not on this machine either: only the exclusion lets auditwheel pass
    wheel = make_wheel(tmp_path, so)
    tagged, report = tag_manylinux(wheel, tmp_path / "out", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log")
    assert tagged.name.startswith("paddle_custom_stpu-0.1.0-py3-none-manylinux_2_")
    assert report.excluded == ("libframework.so",) and report.grafted == ()
    assert report.floor.get("GLIBC") and report.floor.get("GLIBCXX")
    assert report.policy == tagged.name.removesuffix(".whl").split("-")[-1]
    # The policy is the lowest that admits the floor: never below it.
    major, minor = map(int, report.policy.split("_")[1:3])
    assert (major, minor) >= report.floor.versions["GLIBC"][:2]
    check_index_ready([tagged], tmp_path / "log")  # WHEEL, RECORD and the name agree after retagging
    # Same input, same bytes: retagging keeps the build reproducible.
    again, _ = tag_manylinux(wheel, tmp_path / "out2", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log")
    assert again.read_bytes() == tagged.read_bytes()


def _auditwheel(wheel: Path, out: Path, log: Path) -> Path:
    """auditwheel itself on `wheel`, as tag_manylinux runs it (the framework excluded)."""
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "SOURCE_DATE_EPOCH": "1640995200"}
    code, output = run_module(
        "auditwheel", ["repair", "-w", str(out), "--exclude", "libframework.so", str(wheel)], log, env
    )
    assert code == 0, output
    (made,) = out.glob("*.whl")
    return made


def test_a_rebuild_that_changed_only_code_reuses_the_tagging_byte_for_byte(tmp_path, framework, monkeypatch):
    """One-file edits change a library's code, not what it links or imports: the last tagging is
    reused (auditwheel does not run) and the wheel is the one auditwheel would have written."""
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    first = make_wheel(tmp_path / "a", compile_so(tmp_path, "libplugin.so", SOURCE, str(framework)))
    tag_manylinux(first, tmp_path / "out1", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log1")
    assert "auditwheel repair" in (tmp_path / "log1").read_text()
    edited = SOURCE.replace("std::exp(x) +", "std::exp(x) * 3.0 +")  # other code, the same imports
    rebuilt = make_wheel(tmp_path / "b", compile_so(tmp_path, "libplugin.so", edited, str(framework)))
    tagged, report = tag_manylinux(rebuilt, tmp_path / "out2", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log2")
    log = (tmp_path / "log2").read_text()
    assert (
        "auditwheel repair" not in log and "tagging of paddle_custom_stpu-0.1.0-py3-none-linux_x86_64.whl reused" in log
    )
    reference = _auditwheel(rebuilt, tmp_path / "reference", tmp_path / "log3")
    assert tagged.name == reference.name and tagged.read_bytes() == reference.read_bytes()
    assert report.policy == tagged.name.removesuffix(".whl").split("-")[-1] and report.grafted == ()
    check_index_ready([tagged], tmp_path / "log2")


def test_a_rebuild_that_imports_another_symbol_asks_auditwheel_again(tmp_path, framework, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    first = make_wheel(tmp_path / "a", compile_so(tmp_path, "libplugin.so", SOURCE, str(framework)))
    tag_manylinux(first, tmp_path / "out1", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log1")
    imports_more = SOURCE + 'extern "C" double plugin_log(double x) { return std::log(x) + std::sqrt(x); }\n'
    rebuilt = make_wheel(tmp_path / "b", compile_so(tmp_path, "libplugin.so", imports_more, str(framework)))
    tagged, _ = tag_manylinux(rebuilt, tmp_path / "out2", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log2")
    assert "auditwheel repair" in (tmp_path / "log2").read_text()
    assert tagged.read_bytes() == _auditwheel(rebuilt, tmp_path / "reference", tmp_path / "log3").read_bytes()


def test_a_damaged_kept_tagging_is_dropped_and_auditwheel_runs(tmp_path, framework, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    wheel = make_wheel(tmp_path / "a", compile_so(tmp_path, "libplugin.so", SOURCE, str(framework)))
    first, _ = tag_manylinux(wheel, tmp_path / "out1", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log1")
    (kept,) = (tmp_path / "cache" / "manylinux-tagging").glob("*/*/*.whl")
    kept.write_bytes(kept.read_bytes()[:100])  # cut short, as by a full disk
    again, _ = tag_manylinux(wheel, tmp_path / "out2", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log2")
    assert "auditwheel repair" in (tmp_path / "log2").read_text() and again.read_bytes() == first.read_bytes()
    (kept,) = (tmp_path / "cache" / "manylinux-tagging").glob("*/*/*.whl")  # kept again, whole
    assert kept.read_bytes() == first.read_bytes()


def test_a_missing_library_is_one_line_naming_it(tmp_path, framework):
    vendor = compile_so(tmp_path, "libvendorsdk.so", 'extern "C" double framework_entry(double x) { return x; }')
    so = compile_so(tmp_path, "libplugin.so", SOURCE, str(vendor))
    vendor.unlink()
    with pytest.raises(DevkitError) as info:
        tag_manylinux(make_wheel(tmp_path, so), tmp_path / "out", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log")
    assert "libplugin.so links libvendorsdk.so" in info.value.one_line()
    assert "\n" not in info.value.one_line()
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_vendor_library_is_grafted_and_reported(tmp_path, framework, monkeypatch):
    """A vendor SDK the device code links (found through its RPATH) is in no policy: grafted, and said so."""
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    sdk = tmp_path / "sdk"
    sdk.mkdir()
    vendor = compile_so(sdk, "libvendorsdk.so", 'extern "C" int vendor_init() { return 0; }')
    uses_sdk = SOURCE + 'extern "C" int vendor_init();\nextern "C" int init() { return vendor_init(); }\n'
    so = compile_so(tmp_path, "libplugin.so", uses_sdk, str(framework), str(vendor), f"-Wl,-rpath,{sdk}")
    tagged, report = tag_manylinux(
        make_wheel(tmp_path, so), tmp_path / "out", {"libframework.so"}, PADDLE_FLOOR, tmp_path / "log"
    )
    assert [g.split("-")[0] for g in report.grafted] == ["libvendorsdk"]
    assert "grafted libvendorsdk" in report.summary()
    assert any(".libs/libvendorsdk" in n for n in zipfile.ZipFile(tagged).namelist())
    assert not (tmp_path / "cache" / "manylinux-tagging").exists()  # a grafting is never reused


def test_floor_names_distros_and_the_framework_gap():
    floor = SystemFloor({"GLIBC": (2, 29), "GLIBCXX": (3, 4, 26)})
    assert floor.distros()[0] == "Ubuntu 20.04" and "Debian 10" not in floor.distros()
    assert SystemFloor({"GLIBC": (2, 17)}).distros()[0] == "RHEL/Rocky 8"


def test_renamed_wheel_is_refused(tmp_path, framework):
    so = compile_so(tmp_path, "libplugin.so", SOURCE, str(framework))
    wheel = make_wheel(tmp_path, so)
    renamed = wheel.with_name("paddle_custom_stpu-0.1.0-py3-none-manylinux_2_17_x86_64.whl")
    wheel.rename(renamed)
    with pytest.raises(DevkitError, match="WHEEL file declares py3-none-linux_x86_64"):
        check_wheel_consistency(renamed)
    other = make_wheel(tmp_path, so, version="0.2.0")
    relabeled = other.with_name("paddle_custom_stpu-0.3.0-py3-none-linux_x86_64.whl")
    other.rename(relabeled)
    with pytest.raises(DevkitError, match="METADATA says paddle-custom-stpu 0.2.0"):
        check_wheel_consistency(relabeled)


def test_twine_check_refusal_is_one_line(tmp_path, framework):
    so = compile_so(tmp_path, "libplugin.so", SOURCE, str(framework))
    wheel = make_wheel(tmp_path, so)
    with zipfile.ZipFile(wheel) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist()}
    meta = "paddle_custom_stpu-0.1.0.dist-info/METADATA"
    # A reStructuredText description that does not render: PyPI would refuse the upload.
    entries[meta] = entries[meta].replace(b"text/markdown\n\n# hi\n", b"text/x-rst\n\n`broken <\n")
    with zipfile.ZipFile(wheel, "w") as zf:
        for n, data in entries.items():
            zf.writestr(n, data)
    with pytest.raises(DevkitError) as info:
        check_index_ready([wheel], tmp_path / "log")
    assert info.value.one_line().startswith("twine check refuses paddle_custom_stpu-0.1.0-py3-none-linux_x86_64.whl")
    assert "\n" not in info.value.one_line()


def test_portability_warnings_are_one_line_said_by_the_build_only(capsys):
    """Each library x symbol family used to be its own line, printed by the build and again by
    verify: six lines on the default path for one fact."""
    from devkit.building.abi import require_findings
    from devkit.building.elf import AbiFinding

    def finding(lib: str, family: str, ours: str, paddles: str) -> AbiFinding:
        floor = ("Paddle 3.3.1", family, ours, paddles)
        return AbiFinding(lib, f"needs {family}_{ours}", "older toolchain", severity="warning", floor=floor)

    warnings = [
        finding("libpaddle-custom-stpu.so", "GLIBC", "2.34", "2.28"),
        finding("libpaddle-custom-stpu-impl.so", "GLIBC", "2.34", "2.28"),
        finding("libpaddle-custom-stpu-impl.so", "GLIBCXX", "3.4.26", "3.4.22"),
    ]
    assert require_findings(Path("plugin.whl"), warnings) == warnings
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "! libpaddle-custom-stpu-impl.so, libpaddle-custom-stpu.so need GLIBC_2.34, GLIBCXX_3.4.26, newer than "
        "Paddle 3.3.1's own libraries (GLIBC_2.28, GLIBCXX_3.4.22), so they will not load on older systems where "
        "that Paddle does. Fix: build in devkit's builder container on its oldest base (--runner docker, "
        'builder-base = "bullseye"), or state this minimum to your users'
    ]
    require_findings(Path("plugin.whl"), warnings, say_warnings=False)
    assert capsys.readouterr().err == ""


def test_the_summary_says_where_the_wheel_needs_more_than_the_framework():
    """On the oldest builder base there is no portability warning to act on: the summary line
    carries the fact (Ubuntu 20.04 and newer, where Paddle itself also loads on RHEL 8)."""
    from devkit.building.manylinux import PlatformReport, SystemFloor

    def report(glibc: tuple[int, ...]) -> PlatformReport:
        floor = SystemFloor({"GLIBC": glibc, "GLIBCXX": (3, 4, 26)})
        paddle = SystemFloor({"GLIBC": (2, 28), "GLIBCXX": (3, 4, 22)})
        return PlatformReport("py3-none-manylinux_2_31_x86_64", "manylinux_2_31_x86_64", floor, paddle, (), ())

    assert report((2, 29)).summary() == (
        "manylinux_2_31_x86_64: needs glibc 2.29, libstdc++ GLIBCXX_3.4.26; loads on Ubuntu 20.04 and newer; "
        "beyond the framework's own libraries: GLIBC_2.29 > GLIBC_2.28, GLIBCXX_3.4.26 > GLIBCXX_3.4.22"
    )
    assert (
        "beyond"
        not in PlatformReport(
            "t", "manylinux_2_28_x86_64", SystemFloor({"GLIBC": (2, 28)}), SystemFloor({"GLIBC": (2, 28)}), (), ()
        ).summary()
    )
