"""torch.compile's cache in a directory of the user's own.

Inductor keeps the modules it compiles (which the {{ device_type }} device then runs) and dynamo
its profiles (pickles) in TORCHINDUCTOR_CACHE_DIR, by default /tmp/torchinductor_<user>: a name
any local user can create first, world-writable, and Inductor adopts it
(torch/_inductor/runtime/cache_dir_utils.py, cache_dir: os.makedirs(..., exist_ok=True)). So
when the variable is unset, the adapter sets it, at registration (before anything compiles:
dynamo reads the directory when torch.compile first traces), to <XDG_CACHE_HOME or
~/.cache>/torch_{{ p }}/inductor/<this build's generator key>, made mode 0700 and refused if another user owns it, others can
write to it or it is a symbolic link. A directory the user names in TORCHINDUCTOR_CACHE_DIR is
theirs to choose and left as it is.

Inductor also precompiles the headers its C++ kernels include into
/tmp/torchinductor_<user>/precompiled_headers whatever TORCHINDUCTOR_CACHE_DIR says
(torch/_inductor/codecache.py, _HEADER_DIR from default_cache_dir()) and uses a header found
there: turned off (TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS=0) unless the user sets it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys

VARIABLE = "TORCHINDUCTOR_CACHE_DIR"
PRECOMPILED_HEADERS = "TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS"


def default_dir() -> str:
    """<XDG_CACHE_HOME or ~/.cache>/torch_{{ p }}/inductor/<generator_key()> (a relative XDG_CACHE_HOME
    is ignored, as the XDG spec says)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torch_{{ p }}", "inductor", generator_key())


def generator_key() -> str:
    """This build's code generator: a hash of _inductor.py, _inductor_extern.py and _build_info.json.
    Inductor's cache key covers the graph, torch and its config but not the device's Scheduling,
    wrapper and lowerings, so
    kernels another build generated (an edited _inductor.py, another torch) would be served from
    the cache: each build gets a directory of its own."""
    here = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for name in ("_inductor.py", "_inductor_extern.py", "_build_info.json"):
        with open(os.path.join(here, name), "rb") as file:
            digest.update(file.read())
    return digest.hexdigest()[:16]


def use_private_caches() -> None:
    """Before anything compiles: Inductor's caches in the user's own directory, and no headers
    precompiled into /tmp (RuntimeError, one line, for a directory that is not the user's alone)."""
    use_private_dir()
    if PRECOMPILED_HEADERS not in os.environ:
        os.environ[PRECOMPILED_HEADERS] = "0"  # what Inductor's config and its compile workers read
        config = sys.modules.get("torch._inductor.config")
        if config is not None:  # (imported before the adapter: it read the variable already)
            config.cpp_cache_precompile_headers = False


def use_private_dir() -> None:
    """Point Inductor at default_dir() unless TORCHINDUCTOR_CACHE_DIR is set (RuntimeError, one
    line, when that directory is not private to this user or cannot be made)."""
    if os.environ.get(VARIABLE):  # (Inductor reads an empty value as the working directory)
        return
    path = default_dir()
    inductor = os.path.dirname(path)
    product = os.path.dirname(inductor)
    try:
        os.makedirs(os.path.dirname(product), mode=0o700, exist_ok=True)
        parent = os.open(os.path.dirname(product), os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        raise _cannot_make(path, error) from None
    try:
        for child_path in (product, inductor, path):
            child = _private_child(parent, child_path)
            os.close(parent)
            parent = child
    finally:
        os.close(parent)
    os.environ[VARIABLE] = path


def _private_child(parent: int, path: str) -> int:
    """The directory `path` (in `parent`), made 0700 if missing and opened without following a
    link; a RuntimeError if it is not this user's alone."""
    name = os.path.basename(path)
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        pass
    except OSError as error:
        raise _cannot_make(path, error) from None
    try:
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError:
        link = stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode)
        raise _refusal(path, "is a symbolic link" if link else "is not a directory") from None
    found = os.fstat(child)
    problem = None
    if found.st_uid != os.geteuid():
        problem = f"belongs to uid {found.st_uid}, not to you (uid {os.geteuid()})"
    elif found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"can be written by others (mode {stat.S_IMODE(found.st_mode):o})"
    if problem:
        os.close(child)
        raise _refusal(path, problem)
    os.fchmod(child, 0o700)  # ours and not writable by others: private from now on
    return child


def _refusal(path: str, problem: str) -> RuntimeError:
    return RuntimeError(
        f"torch_{{ p }}: torch.compile's cache directory {path} {problem}, and it must be a directory only you "
        f"can write to (another user could swap the kernels in it): remove it, or set {VARIABLE} to one of yours"
    )


def _cannot_make(path: str, error: OSError) -> RuntimeError:
    return RuntimeError(
        f"torch_{{ p }}: cannot make torch.compile's cache directory {path} ({error.strerror}): set {VARIABLE} "
        "(or XDG_CACHE_HOME) to a directory only you can write to"
    )
