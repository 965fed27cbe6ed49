"""Names checked with full matches: `re.match` with `$` lets a trailing newline through (`$`
matches before a final newline), which would reach generated C++, CMake and file names."""

from __future__ import annotations

import pytest
from test_bad_input import run_cli

from devkit.project.naming import parse_backend_name
from devkit.util.errors import DevkitError, ExitCode


@pytest.mark.parametrize(("name", "device_type"), [("STPU\n", None), ("STPU", "stpu\n")])
def test_a_trailing_newline_is_refused(name, device_type):
    with pytest.raises(DevkitError, match="invalid"):
        parse_backend_name(name, device_type)


def test_new_backend_with_a_trailing_newline_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path / "cache"))
    code, _, err = run_cli(["new-backend", "STPU\n", "--out", str(tmp_path / "out")])
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert (
        code == ExitCode.INPUT and len(errors) == 1 and "letters, digits or _" in errors[0] and "Fix:" in errors[0]
    ), err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
