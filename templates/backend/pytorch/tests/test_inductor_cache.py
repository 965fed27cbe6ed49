"""torch.compile's cache (torch_{{ p }}/_inductor_cache.py): with TORCHINDUCTOR_CACHE_DIR unset the
adapter points Inductor at a directory of the user's own, never /tmp/torchinductor_<user>, and
refuses one that is not theirs alone. Compiling and `import torch` in a fresh interpreter with its
own XDG_CACHE_HOME and TMPDIR (where Inductor's default would be), the adapter's variables unset."""

import json
import os
import re
import stat
import subprocess
import sys

import pytest
from torch_{{ p }} import _inductor_cache

NOBODY = 65534
ADAPTER_VARIABLES = (_inductor_cache.VARIABLE, _inductor_cache.PRECOMPILED_HEADERS)
# Compile on the device when its library launches compiled kernels; Inductor is refused on it
# otherwise, and the cache is the same for a CPU compile.
ON = "{{ device_type if compiled_kernels else 'cpu' }}"
COMPILE = f"""
import json, os, torch, torch_{{ p }}
f = torch.compile(lambda x: torch.relu(x * 2) + 1)
assert torch.equal(f(torch.ones(8, device="{ON}")).cpu(), torch.full((8,), 3.0))
from torch._inductor.runtime.cache_dir_utils import cache_dir
print(json.dumps(cache_dir()))
"""


def run_fresh(tmp_path, code):
    """`code` in a fresh interpreter where the two variables the adapter sets are unset."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ADAPTER_VARIABLES}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(tmp_path / "tmp"))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)


def test_an_unset_cache_dir_becomes_a_private_one_of_the_users(tmp_path):
    result = run_fresh(tmp_path, COMPILE)
    assert result.returncode == 0, result.stderr[-3000:]
    used = json.loads(result.stdout.splitlines()[-1])
    inductor = tmp_path / "cache" / "torch_{{ p }}" / "inductor"
    assert used == str(inductor / _inductor_cache.generator_key()), used  # this build's own
    for directory in (inductor.parent, inductor, inductor / _inductor_cache.generator_key()):
        found = os.lstat(directory)
        assert stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid(), directory
        assert stat.S_IMODE(found.st_mode) == 0o700, oct(found.st_mode)
    assert list((tmp_path / "cache").rglob("*.so")), "no compiled module in the private cache"
    # nothing in Inductor's default, not even the precompiled headers it puts there whatever the cache
    assert list((tmp_path / "tmp").glob("torchinductor_*")) == [], "Inductor's default was used"


def _owned_by_another_user(directory):
    directory.mkdir(parents=True)
    os.chmod(directory, 0o777)
    os.chown(directory, NOBODY, NOBODY)
    return f"belongs to uid {NOBODY}, not to you (uid 0)"


def _world_writable(directory):
    directory.mkdir(parents=True)
    os.chmod(directory, 0o777)
    return "can be written by others (mode 777)"


def _symbolic_link(directory):
    elsewhere = directory.parent / "elsewhere"
    elsewhere.mkdir(parents=True, mode=0o700)
    directory.symlink_to(elsewhere)
    return "is a symbolic link"


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user owns needs root")
def test_another_users_cache_dir_is_refused_not_adopted(tmp_path):
    # what `import torch` meets: one line, no compile, the directory as it was, nothing in /tmp
    directory = tmp_path / "cache" / "torch_{{ p }}" / "inductor"
    problem = _owned_by_another_user(directory)
    before = os.lstat(directory)
    result = run_fresh(tmp_path, COMPILE)
    assert result.returncode != 0 and not result.stdout, result.stdout
    refusals = [line for line in result.stderr.splitlines() if line.startswith("RuntimeError: torch_{{ p }}: ")]
    assert len(refusals) == 1 and f"cache directory {directory} {problem}, and" in refusals[0], result.stderr[-3000:]
    assert refusals[0].endswith("remove it, or set TORCHINDUCTOR_CACHE_DIR to one of yours"), refusals[0]
    after = os.lstat(directory)
    assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid), "the refused directory was changed"
    assert list((tmp_path / "tmp").glob("torchinductor_*")) == []


@pytest.mark.parametrize("make", [_world_writable, _symbolic_link])
def test_a_cache_dir_others_can_write_to_or_a_link_is_refused(tmp_path, monkeypatch, make):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    directory = tmp_path / "cache" / "torch_{{ p }}" / "inductor"
    problem = make(directory)
    with pytest.raises(RuntimeError, match=f"cache directory {re.escape(str(directory))} {re.escape(problem)}, and"):
        _inductor_cache.use_private_caches()
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ
