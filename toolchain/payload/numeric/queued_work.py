"""The "queued work" check of both frameworks: on a device whose streams run work later, a result
is read the moment the op that makes it returns. A chain of matmuls is read at once (the copy to
the host must wait for the queue), and a non-blocking copy to the host is read at once (the
adapter must not hand back memory the queue has yet to write). Numpy only: the frameworks'
payloads run the ops and give the results here."""

from __future__ import annotations

import numpy as np
from records import CheckRecord

STEPS = 16


def chain_input() -> np.ndarray:
    """128x128, entries in [0, 1/128): y <- y @ a + a stays bounded over the steps."""
    return (np.random.RandomState(3).rand(128, 128) / 128).astype(np.float32)


def verdict(a: np.ndarray, chain: np.ndarray, tripled: np.ndarray) -> CheckRecord:
    want = a.astype(np.float64)
    for _ in range(STEPS):
        want = want @ a + a
    chain_ok = bool(np.allclose(chain, want, rtol=1e-3, atol=1e-6))
    copy_ok = bool(np.array_equal(tripled, a * np.float32(3)))
    return {
        "name": "queued work",
        "kind": "basics",
        "passed": chain_ok and copy_ok,
        "detail": f"{STEPS} queued matmul+add read at once {'match' if chain_ok else 'DIFFER from'} numpy "
        f"(max |diff| {float(np.abs(chain - want).max()):.1e}); a non-blocking copy to the host read at once "
        f"{'matches' if copy_ok else 'is STALE'}",
    }
