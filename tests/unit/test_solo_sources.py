"""Which sources a build compiles alone, out of their unity batch (payload/shared/solo_sources.py):
those edited or added since the build tree was made, kept alone until the tree is made again;
a tree made from nothing (first build, --clean) puts every file in its batch."""

from __future__ import annotations

import json
from pathlib import Path

from devkit.payload.shared.solo_sources import RECORD, solo_env, solo_sources


def _project(root: Path) -> Path:
    for name, text in {
        "device/src/activation_ops.cc": "int relu;\n",
        "device/src/matmul_ops.cc": "int gemm;\n",
        "paddle/kernels/activation_kernels.cc": "int kernel;\n",
        "pytorch/csrc/activation.cpp": "int torch_relu;\n",
        "device/include/stpu_device.h": "int header;\n",  # not a source: never alone
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _configured(build: Path) -> Path:
    """A build tree CMake has configured (what solo_sources takes for one made before)."""
    build.mkdir(parents=True, exist_ok=True)
    (build / "CMakeCache.txt").write_text("")
    return build


def test_a_tree_made_from_nothing_keeps_every_file_in_its_batch(tmp_path: Path) -> None:
    project, build = _project(tmp_path / "p"), tmp_path / "p" / "build" / "x86_64"
    (project / "device/src/activation_ops.cc").write_text("int relu2;\n")
    assert solo_sources(project, build) == []
    assert "device/src/activation_ops.cc" in json.loads((build / RECORD).read_text())["digests"]


def test_an_edited_file_is_alone_from_its_edit_on_until_the_tree_is_made_again(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    build = tmp_path / "p" / "build" / "x86_64"
    assert solo_sources(project, build) == []  # the first build
    _configured(build)
    assert solo_sources(project, build) == []  # a no-op build
    (project / "device/src/activation_ops.cc").write_text("int relu2;\n")
    assert solo_sources(project, build) == ["device/src/activation_ops.cc"]
    # unchanged since, still alone (back in its batch its batch would recompile); a second edit adds one
    (project / "paddle/kernels/activation_kernels.cc").write_text("int kernel2;\n")
    assert solo_sources(project, build) == ["device/src/activation_ops.cc", "paddle/kernels/activation_kernels.cc"]
    (project / "pytorch/csrc/new_op.cpp").write_text("int added;\n")  # a new file joins no batch either
    assert "pytorch/csrc/new_op.cpp" in solo_sources(project, build)
    (build / "CMakeCache.txt").unlink()  # --clean: the tree made again
    assert solo_sources(project, build) == []


def test_a_header_edit_or_an_unreadable_record_moves_nothing(tmp_path: Path) -> None:
    project, build = _project(tmp_path / "p"), _configured(tmp_path / "b")
    solo_sources(project, build)
    (project / "device/include/stpu_device.h").write_text("int header2;\n")
    assert solo_sources(project, build) == []
    (build / RECORD).write_text("{not json")
    (project / "device/src/matmul_ops.cc").write_text("int gemm2;\n")
    assert solo_sources(project, build) == []  # nothing known of before: nothing taken out
    (project / "device/src/matmul_ops.cc").write_text("int gemm3;\n")
    assert solo_sources(project, build) == ["device/src/matmul_ops.cc"]  # the record written again


def test_names_cmake_would_misread_stay_in_their_batch(tmp_path: Path) -> None:
    project, build = _project(tmp_path / "p"), _configured(tmp_path / "b")
    solo_sources(project, build)
    for odd in ("device/src/a;b.cc", "device/src/with space.cc", "device/src/.hidden.cc"):
        (project / odd).write_text("int odd;\n")
    assert solo_sources(project, build) == []


def test_the_build_environment_names_them_for_cmake(tmp_path: Path, capsys) -> None:
    project, build = _project(tmp_path / "p"), _configured(tmp_path / "b")
    assert solo_env(project, build) == {"DEVKIT_SOLO_SOURCES": ""}
    (project / "device/src/activation_ops.cc").write_text("int relu2;\n")
    (project / "device/src/matmul_ops.cc").write_text("int gemm2;\n")
    assert solo_env(project, build) == {"DEVKIT_SOLO_SOURCES": "device/src/activation_ops.cc;device/src/matmul_ops.cc"}
    assert (
        "compiled alone (edited since this build tree was made): device/src/activation_ops.cc"
        in capsys.readouterr().out
    )
