"""Stops torch's autograd device threads at exit, while Python can still serve them.

A backward on the {{ device_type }} device runs on torch's thread for that device index
(pt_autograd_<index>). When it finishes, that thread may still drop the last reference to the
backward's task, whose thread-local state holds Python objects: freeing them takes the GIL.
Once Python finalizes, a thread asking for the GIL is ended inside a C++ destructor and the
process aborts ("terminate called without an active exception", status -6) after a run that
succeeded. An atexit handler runs before that: it lets the threads finish and end, then
finalization finds none.
"""

from __future__ import annotations

import atexit
import os
import time

_THREAD_NAME = "pt_autograd_"  # what torch's engine names its device threads
_WAIT_SECONDS = 2.0  # a thread stuck in a user's hook must not hold the exit for long


def autograd_threads() -> int:
    """How many of torch's autograd device threads this process has."""
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as comm:
                count += comm.read().startswith(_THREAD_NAME)
        except OSError:  # the thread ended meanwhile
            pass
    return count


def install(torch) -> None:
    owner = os.getpid()

    def stop() -> None:
        # A forked child has none of the parent's threads (and the engine's count is the parent's).
        if os.getpid() != owner or not autograd_threads():
            return
        torch.ops.{{ p }}.stop_autograd_device_threads()  # returns once each has left its loop
        deadline = time.monotonic() + _WAIT_SECONDS
        while autograd_threads() and time.monotonic() < deadline:
            time.sleep(0.001)  # without the GIL: each takes it once more, to end

    atexit.register(stop)
