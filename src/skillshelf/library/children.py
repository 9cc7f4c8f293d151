"""What every child process of the server gets: file descriptors, environment, dumpability, bytecode.

One place decides, and every place that starts a process goes through it (tests/test_children.py
finds them all by reading the source):

- **File descriptors**: 0-2 only. `run` and `popen` close the rest (`close_fds`); a skill's own
  first code closes them too (execution/_child.py), because uvloop, the server's event loop, ignores
  `close_fds` when it starts a process: a skill used to get the HTTP listener as fd 3.
- **Environment**: skillshelf's helpers (the file watcher, parse workers, tools such as bwrap or
  pip) get `helper_environment()`: what an interpreter needs to start, never the server's tokens,
  keys or credentials, so `/proc/<helper>/environ` shows nothing worth reading. Skills get
  `skill_environment()`, an allow-list. HTTP worker processes start with the helper environment
  and receive the server's own through the spawn pipe, once they are non-dumpable (server/http.py).
- **Dumpability**: a process that holds the server's settings or environment (the server, the HTTP
  supervisor and workers) is made non-dumpable (`make_nondumpable`) before a skill could look at it,
  so its `/proc/<pid>/environ`, `mem` and `fd` belong to root.
- **Bytecode**: a skill's Python never writes `__pycache__` into the library (`-B` and
  PYTHONDONTWRITEBYTECODE) nor reads one there (its first process compiles the skill's modules from
  source, execution/_child.py; every Python it starts looks for bytecode under PYTHONPYCACHEPREFIX, a
  folder of the run's own), and neither do skillshelf's own imports of library files
  (`import_without_bytecode`).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.machinery
import importlib.util
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import IO, Any

logger = logging.getLogger(__name__)

# What the server reads from its environment and must never hand on (only digests are kept).
SECRET_VARIABLES = frozenset({"SKILLSHELF_TOKENS"})
SERVER_PREFIX = "SKILLSHELF_"  # the server's settings (SKILLSHELF_DATABASE_URL holds a password): never a skill's
# What an interpreter or a system tool needs to start where the server started; nothing secret.
HELPER_VARIABLES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
        "VIRTUAL_ENV", "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT",
    }
)  # fmt: skip
HELPER_PREFIXES = ("LC_", "PYTHON")  # locale, and how Python finds its modules (PYTHONPATH, ...)
PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


def helper_environment() -> dict[str, str]:
    """The environment of skillshelf's own helper processes: enough to start, no secrets."""
    return {
        name: value
        for name, value in os.environ.items()
        if (name in HELPER_VARIABLES or name.startswith(HELPER_PREFIXES)) and name not in SECRET_VARIABLES
    }


def server_environment() -> dict[str, str]:
    """The server's environment without what it must not hand on: for a process that is the server
    (an HTTP worker) or acts for the user (pip fetching a model)."""
    return {name: value for name, value in os.environ.items() if name not in SECRET_VARIABLES}


PYCACHE_FOLDER = ".pycache"  # in a run's working directory: where any Python it starts looks for bytecode


def skill_environment(work_dir: Path, skill_dir: Path, passthrough: Sequence[str]) -> dict[str, str]:
    """Only what a skill needs: never the server's own environment (tokens, keys, cloud credentials)."""
    env = _run_variables(work_dir, skill_dir)
    env.update({name: os.environ[name] for name in passed_names(passthrough) if name not in env})
    return env


def _run_variables(work_dir: Path, skill_dir: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(work_dir),
        "TMPDIR": str(work_dir),
        "SKILLSHELF_SKILL_DIR": str(skill_dir),
        "PYTHONDONTWRITEBYTECODE": "1",  # a Python the skill starts itself writes no __pycache__ either
        # ... nor reads one: no approval covers `__pycache__` (the digest leaves it out), so a planted
        # `helper.cpython-312.pyc` would run in place of the approved helper.py. Bytecode is looked up in this
        # folder of the run's own, never made (nothing is written), and removed with the working directory.
        "PYTHONPYCACHEPREFIX": str(work_dir / PYCACHE_FOLDER),
    }


# Set by skillshelf for every run: a skill's policy cannot ask for them (library/skill/policy.py).
RUN_VARIABLES = frozenset(_run_variables(Path(), Path()))


def passed_names(names: Sequence[str]) -> tuple[str, ...]:
    """Of the names a skill is granted, those it receives: set in the server's environment, and never the
    server's own configuration (SKILLSHELF_*, such as a database URL) or its secrets."""
    return tuple(
        name
        for name in names
        if name in os.environ and name not in SECRET_VARIABLES and not name.startswith(SERVER_PREFIX)
    )


def run(
    argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None, stdin: IO[bytes] | None = None
) -> subprocess.CompletedProcess[str]:
    """A short helper command (bwrap's probe, `node --version`, pip): output captured as text, stdin
    closed (or the file `stdin`: ssh-keygen verifies what it reads there), only fds 0-2, the helper
    environment unless another is given."""
    return subprocess.run(
        list(argv),
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        close_fds=True,
        env=dict(env) if env is not None else helper_environment(),
    )


def popen(argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """A long-lived helper process (the file watcher, a parse worker): only fds 0-2 plus its pipes,
    the helper environment."""
    options.setdefault("env", helper_environment())
    return subprocess.Popen(list(argv), close_fds=True, **options)


def make_nondumpable() -> bool:
    """Make this process non-dumpable: its /proc/<pid>/environ, mem and fd then belong to root.

    Without bubblewrap a skill runs as the same user, and could otherwise read a server process's
    environment (tokens) or memory. Root (CAP_SYS_PTRACE) still can; core dumps are off. Linux only;
    True when set. The flag is reset by exec, so each process sets it for itself.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0:
            return True
        return bool(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError) as exc:  # no libc.prctl (musl without it, seccomp): limits only
        logger.warning("could not make this process non-dumpable (%s)", exc)
        return False


def die_with_parent(parent_pid: int) -> bool:
    """Have the kernel send this process SIGTERM when its parent dies (Linux; True when set).

    For a process whose parent is a supervisor: without it, an HTTP worker outlived a supervisor
    killed with SIGKILL, still serving, with its watchers and multiprocessing's resource tracker.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent_pid:  # it died before the request was in place
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def seal_inherited_fds() -> None:
    """Mark every fd above 2 close-on-exec: whatever this process inherited (an HTTP worker gets the
    listener and its supervisor's pipes, made inheritable by the spawn) never reaches its children."""
    for fd in _open_fds():
        if fd > 2:
            with contextlib.suppress(OSError):
                os.set_inheritable(fd, False)


def _open_fds() -> list[int]:
    for listing in ("/proc/self/fd", "/dev/fd"):
        try:
            return [int(entry.name) for entry in Path(listing).iterdir()]
        except (OSError, ValueError):
            continue
    return []


@contextlib.contextmanager
def helper_environment_only() -> Iterator[None]:
    """For the block, this process's own environment is the helper environment (restored after).

    Only for a process that starts children through a library that cannot be given an environment
    (uvicorn's supervisor spawning its workers, and multiprocessing its resource tracker) and runs
    no other threads meanwhile.
    """
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(helper_environment())
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class _NoBytecodeLoader(importlib.machinery.SourceFileLoader):
    """Compiles from the source: SourceLoader neither reads nor writes `__pycache__` without the source's stats
    (execution/_child.py's SourceOnlyLoader, for a skill's own process, which imports nothing of skillshelf)."""

    def path_stats(self, path: str) -> Mapping[str, Any]:
        raise OSError("a library file is compiled from its source")


def import_without_bytecode(name: str, source: Path) -> ModuleType:
    """Import one Python file from the library without reading or writing `__pycache__` beside it (a planted
    one would run in place of the source nobody reviewed it against)."""
    loader = _NoBytecodeLoader(name, str(source))
    spec = importlib.util.spec_from_file_location(name, source, loader=loader)
    if spec is None:
        raise ImportError(f"cannot import {source.name}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
