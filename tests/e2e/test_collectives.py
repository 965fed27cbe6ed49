"""The device library's collectives on a shared machine (issue 30): what another local user can
reach of a communicator, ranks in separate pid namespaces, and /dev/shm left as it was found.
The ranks are the device test binary of the session's built project (`--ccl-rank`, as its own
C++ tests start them); the attacker runs as `nobody`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import build_tools_bin, standalone_build

pytestmark = pytest.mark.e2e

SHM = Path("/dev/shm")

# Run as nobody with the directory of a live communicator: every way in must be refused.
ATTACKER = r"""
import json, os, sys
d = sys.argv[1]
tries = {
    "list the directory": lambda: os.listdir(d),
    "read the control block": lambda: open(os.path.join(d, "control"), "rb").read(),
    "plant rank 0's message to rank 1": lambda: open(os.path.join(d, "m0-1.1"), "xb").write(b"evil"),
    "plant rank 0's data": lambda: open(os.path.join(d, "c1.r0"), "xb").write(b"evil"),
    "link a rank's data file elsewhere": lambda: os.symlink("/etc/passwd", os.path.join(d, "c2.r1")),
    "replace the directory": lambda: os.rename(d, d + "-moved"),
}
said = {}
for what, attempt in tries.items():
    try:
        attempt()
        said[what] = "succeeded"
    except OSError as exc:
        said[what] = type(exc).__name__
print(json.dumps(said))
"""


def as_nobody(*argv: str) -> list[str]:
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv]


@pytest.fixture(scope="module")
def device_test(built_project) -> Path:
    """The device library's test binary, built alone (-DWITH_PADDLE=OFF) from the session's project
    with the build tools its build used."""
    build, env = standalone_build(built_project, "collectives-device-test", build_tools_bin())
    configure = ["cmake", "-S", str(built_project), "-B", str(build), "-G", "Ninja", "-DWITH_PADDLE=OFF"]
    subprocess.run(configure, check=True, env=env, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "test_stpu_device"], check=True, env=env)
    return build / "test_stpu_device"


@pytest.fixture(scope="module")
def made_ids() -> Iterator[list[str]]:
    """The unique ids this module makes; afterwards none of their directories is left in /dev/shm."""
    ids: list[str] = []
    yield ids
    left = [i for i in ids if (SHM / i.rsplit("-", 1)[0]).exists()]
    assert not left, f"communicators left in /dev/shm: {left}"


def unique_id(device_test: Path, made_ids: list[str]) -> str:
    proc = subprocess.run([device_test, "--ccl-unique-id"], capture_output=True, text=True, check=True)
    made_ids.append(proc.stdout.strip())
    return made_ids[-1]


def rank(device_test: Path, comm: str, r: int, mode: str, *prefix: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "STPU_CCL_TIMEOUT_S": "60"}
    return subprocess.Popen(
        [*prefix, device_test, "--ccl-rank", comm, str(r), "2", mode], env=env, text=True, stdout=subprocess.PIPE, **kw
    )


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to act as nobody")
def test_another_user_can_neither_reach_nor_plant_a_communicator(device_test, made_ids, tmp_path):
    comm = unique_id(device_test, made_ids)
    directory = SHM / comm.rsplit("-", 1)[0]
    assert directory.stat().st_mode & 0o777 == 0o700
    ranks = [rank(device_test, comm, r, "gated", stdin=subprocess.PIPE) for r in range(2)]
    try:
        assert [p.stdout.readline().strip() for p in ranks] == ["joined", "joined"]
        attack = subprocess.run(
            as_nobody("/usr/bin/python3", "-c", ATTACKER, str(directory)), capture_output=True, text=True, check=True
        )
        said = json.loads(attack.stdout)
        assert all(outcome == "PermissionError" for outcome in said.values()), said
    finally:
        for p in ranks:
            p.stdin.write("go\n")
            p.stdin.flush()  # communicate() below closes it
    outs = [p.communicate(timeout=120)[0] for p in ranks]
    # their send/recv ring and every collective got the other rank's values, not an attacker's
    assert [p.returncode for p in ranks] == [0, 0], outs

    # A communicator's name is random: a user who makes one where an id points (or links one
    # there) gets refused, never joined.
    planted = SHM / "stpuccl-PLANTEDbyANY"
    linked = SHM / "stpuccl-LINKEDbyANYo"
    mine = tmp_path / "private"
    mine.mkdir(mode=0o700)
    plant = f"import os; os.mkdir('{planted}', 0o777); os.chmod('{planted}', 0o777); open('{planted}/control', 'wb')"
    subprocess.run(as_nobody("/usr/bin/python3", "-c", plant), check=True)
    subprocess.run(as_nobody("ln", "-s", str(mine), str(linked)), check=True)
    try:
        for where, said in ((planted, "belongs to uid 65534, not to this user"), (linked, "symbolic links")):
            proc = subprocess.run(
                [device_test, "--ccl-rank", f"{where.name}-secret", "0", "1", "all"], capture_output=True, text=True
            )
            assert proc.returncode != 0 and said in proc.stderr, proc.stderr
            assert f"{where}" in proc.stderr
        assert list(mine.iterdir()) == []
    finally:
        shutil.rmtree(planted, ignore_errors=True)
        linked.unlink()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root for unshare --pid")
def test_ranks_in_separate_pid_namespaces_complete_and_a_lost_one_is_named(device_test, made_ids):
    """Rank 1 in a pid namespace of its own (sharing /dev/shm, as containers with a shared IPC
    namespace do): its pid means nothing to rank 0, whose liveness check goes by heartbeat."""
    unshare = ("unshare", "--pid", "--fork")
    comm = unique_id(device_test, made_ids)
    ranks = [rank(device_test, comm, r, "all", *(unshare if r else ())) for r in (0, 1)]
    outs = [p.communicate(timeout=120)[0] for p in ranks]
    assert [p.returncode for p in ranks] == [0, 0], outs
    # rank 1 joins and exits: rank 0's all_reduce names it within seconds, not the 60 s timeout
    comm = unique_id(device_test, made_ids)
    ranks = [rank(device_test, comm, r, "exit", *(unshare if r else ())) for r in (0, 1)]
    outs = [p.communicate(timeout=60)[0] for p in ranks]
    assert [p.returncode for p in ranks] == [0, 3], outs


# LD_PRELOAD into the process that sweeps: its clock (time()) runs SHIFT_S seconds ahead, so that
# its sweep sees the ranks' last heartbeat as old as after a stop that long, without the wait.
TIME_SHIFT = r"""
#include <stdlib.h>
#include <time.h>
time_t time(time_t* out) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  time_t t = now.tv_sec + atol(getenv("SHIFT_S"));
  if (out) *out = t;
  return t;
}
"""

# Both ranks in one pid namespace of their own, each gated on a pipe of its own (fds $2 and $3,
# opened by path: dash's <& takes one digit); the shell prints their exit statuses.
TWO_GATED_RANKS = (
    '"$0" --ccl-rank "$1" 0 2 gated <"/dev/fd/$2" & a=$!; "$0" --ccl-rank "$1" 1 2 gated <"/dev/fd/$3" & b=$!; '
    'wait $a; s0=$?; wait $b; echo "exit $s0 $?"'
)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root for unshare --pid")
def test_stopped_ranks_in_another_pid_namespace_outlive_a_sweep(device_test, made_ids, tmp_path):
    """Issue 52: two ranks in a pid namespace of their own are stopped (SIGSTOP, as docker pause, a
    debugger or Ctrl-Z do) while a process of the same user makes a unique id, whose sweep sees their
    heartbeat 70 s silent (its clock shifted: the old sweep removed a communicator after 60 s). Their
    pids mean nothing to it, and silence is no evidence of death: the directory stays, and resumed,
    the ranks finish every collective."""
    shim = tmp_path / "time_shift.so"
    (tmp_path / "time_shift.c").write_text(TIME_SHIFT)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", shim, tmp_path / "time_shift.c"], check=True)
    comm = unique_id(device_test, made_ids)
    directory = SHM / comm.rsplit("-", 1)[0]
    gates = [os.pipe() for _ in range(2)]
    env = {**os.environ, "STPU_CCL_TIMEOUT_S": "60"}
    script = ["sh", "-c", TWO_GATED_RANKS, str(device_test), comm, str(gates[0][0]), str(gates[1][0])]
    ranks = subprocess.Popen(
        ["unshare", "--pid", "--fork", *script],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        pass_fds=[read for read, _ in gates],
        start_new_session=True,
    )
    for read, _ in gates:
        os.close(read)
    swept: list[str] = []
    try:
        assert [ranks.stdout.readline().strip() for _ in range(2)] == ["joined", "joined"]
        os.killpg(ranks.pid, signal.SIGSTOP)
        time.sleep(0.5)
        sweep = subprocess.run(
            [device_test, "--ccl-unique-id"],
            env={**os.environ, "LD_PRELOAD": str(shim), "SHIFT_S": "70"},
            capture_output=True,
            text=True,
            check=True,
        )
        swept.append(sweep.stdout.strip())
        assert directory.exists(), "the sweep removed the communicator of two stopped ranks"
    finally:
        os.killpg(ranks.pid, signal.SIGCONT)
        for _, write in gates:
            with contextlib.suppress(BrokenPipeError):  # (ranks that ended already: the assertion says why)
                os.write(write, b"go\n")
            os.close(write)
        for other in swept:  # (the sweeper's own id: no rank joins it)
            shutil.rmtree(SHM / other.rsplit("-", 1)[0], ignore_errors=True)
    out = ranks.communicate(timeout=120)[0]
    assert ranks.returncode == 0 and out.strip().endswith("exit 0 0"), out
