"""compile.sh's choice of installer: pip's settings as uv's, or pip when one has no uv equivalent."""

import subprocess
import sys
from pathlib import Path

from devkit.util.pip_config_for_uv import uv_environment


def test_the_index_settings_become_uv_settings_with_pips_precedence(tmp_path):
    links = tmp_path / "wheels"
    links.mkdir()
    env = uv_environment(
        [
            "global.index-url='https://mirror.example/simple'",
            "global.extra-index-url='https://a.example/simple\\nhttps://b.example/simple'",
            f"global.find-links='{links} {tmp_path / 'missing'} https://c.example/links'",
            "global.constraint='/etc/pip/constraints.txt'",
            "install.index-url='https://install.example/simple'",  # [install] over [global]
            ":env:.cert='/etc/ssl/bundle.pem'",
            ":env:.default-timeout='60.5'",
            ":env:.disable-pip-version-check='1'",
            "download.proxy='http://proxy:3128'",  # not what `pip install` reads
        ]
    )
    assert env == {
        "UV_INDEX_STRATEGY": "unsafe-best-match",  # every index weighed alike, as pip does
        "UV_DEFAULT_INDEX": "https://install.example/simple",
        "UV_INDEX": "https://a.example/simple https://b.example/simple",
        "UV_FIND_LINKS": f"{links},https://c.example/links",  # (the missing directory left out, as pip does)
        "UV_CONSTRAINT": "/etc/pip/constraints.txt",
        "SSL_CERT_FILE": "/etc/ssl/bundle.pem",
        "UV_HTTP_TIMEOUT": "60",
    }


def test_the_environment_overrides_the_files():
    env = uv_environment(["global.index-url='https://file.example'", ":env:.index-url='https://env.example'"])
    assert env is not None and env["UV_DEFAULT_INDEX"] == "https://env.example"


def test_a_setting_uv_cannot_take_leaves_the_install_to_pip():
    for setting in ("global.trusted-host='mirror.local'", ":env:.proxy='http://proxy:3128'", "install.user='1'"):
        assert uv_environment(["global.index-url='https://mirror.example'", setting]) is None, setting


def test_output_pip_did_not_write_leaves_the_install_to_pip():
    assert uv_environment(["global.index-url=https://unquoted"]) is None
    assert uv_environment(["no equals sign"]) is None
    assert uv_environment([":env:.default-timeout='soon'"]) is None


def test_without_settings_uv_gets_only_the_strategy():
    assert uv_environment([]) == {"UV_INDEX_STRATEGY": "unsafe-best-match"}


def test_as_compile_sh_runs_it_the_pairs_are_nul_terminated_data(tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = https://mirror.example/simple?a=$(touch x)\n")
    script = __import__("devkit.util.pip_config_for_uv", fromlist=["x"]).__file__
    env = {"PIP_CONFIG_FILE": str(config), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, script], capture_output=True, check=True, env=env, cwd=tmp_path).stdout
    pairs = dict(item.decode().split("=", 1) for item in out.split(b"\0") if item)
    assert pairs["UV_DEFAULT_INDEX"] == "https://mirror.example/simple?a=$(touch x)"
    assert out.endswith(b"\0") and not (tmp_path / "x").exists()


def test_compile_sh_refuses_an_installer_it_does_not_know(tmp_path):
    compile_sh = Path(__file__).resolve().parents[2] / "compile.sh"
    env = {"PATH": "/usr/bin:/bin", "INSTALLER": "uv", "VENV": str(tmp_path / "venv")}
    proc = subprocess.run(["bash", str(compile_sh)], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "compile.sh: INSTALLER=uv is not auto or pip: unset it, or set INSTALLER=pip to set up with pip"
    )
    assert not (tmp_path / "venv").exists()  # refused before anything was made
