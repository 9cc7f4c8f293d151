"""Running a skill inside bubblewrap (`bwrap`) when it is installed and works here.

The sandbox is built from an empty root: the system's runtime read-only (`/usr` and the usual
top-level links, a few files of `/etc`, the Python and Node installations the run needs), the
skill's own files read-only, and two sized tmpfs writable: the working directory (HOME and cwd)
and `/tmp` (bubblewrap 0.8+; an older one binds the host's working directory instead). New pid,
ipc, uts, cgroup, user and network namespaces (the network is shared only for skills the
configuration allows), no capabilities, a fresh `/proc` that shows only the run's processes, and
the sandbox dies with its parent. The user's home, other projects, the library's index, `/sys`
(cgroup files) and the server's processes are simply not there.

Where bubblewrap is missing or cannot create namespaces (macOS, containers without user
namespaces), runs fall back to the resource limits alone, and every result says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from skillshelf.library import children

IsolationKind = Literal["bubblewrap", "rlimits-only"]

# Top-level system folders a runtime may need; on merged-/usr systems most are symlinks into /usr.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The parts of /etc programs read at start-up (dynamic linker, users, locale, TLS, name resolution);
# not /etc as a whole (shadow, ssh host keys, credentials some tools keep there).
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "resolv.conf",
    "host.conf",
    "gai.conf",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "mime.types",
    "os-release",
    "debian_version",
)
HIDDEN = "your home, other projects, the library index, /sys, the server's processes and environment"
PROBE_TIMEOUT_S = 10


@dataclass(frozen=True)
class Isolation:
    kind: IsolationKind
    note: str  # what the sandbox hides, or why there is none
    bwrap: str | None = None
    sized_tmpfs: bool = False  # bwrap takes --size (0.8+): the working directory can be a bounded tmpfs

    @property
    def sandboxed(self) -> bool:
        return self.kind == "bubblewrap"


def isolation(use_bubblewrap: bool) -> Isolation:
    """Which isolation a run gets here (the bubblewrap probe runs once per process)."""
    if not use_bubblewrap:
        return Isolation("rlimits-only", "bubblewrap is turned off in the configuration (execution.bubblewrap)")
    return _probe()


@lru_cache(maxsize=1)
def _probe() -> Isolation:
    if not sys.platform.startswith("linux"):
        return Isolation("rlimits-only", f"bubblewrap needs Linux; this is {sys.platform}")
    binary = shutil.which("bwrap")
    if binary is None:
        return Isolation("rlimits-only", "bubblewrap (bwrap) is not installed; install the `bubblewrap` package")
    argv = [binary, *_namespace_args(network=False), *_system_args(), "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = children.run(argv, timeout=PROBE_TIMEOUT_S)
        usage = children.run([binary, "--help"], timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Isolation("rlimits-only", f"bubblewrap could not start: {exc}")
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return Isolation("rlimits-only", f"bubblewrap cannot create namespaces here ({reason})")
    return Isolation("bubblewrap", f"hidden: {HIDDEN}", binary, sized_tmpfs="--size" in usage.stdout + usage.stderr)


def _namespace_args(*, network: bool) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if network:
        args.append("--share-net")
    return args


def _system_args() -> list[str]:
    args: list[str] = []
    for folder in SYSTEM_DIRS:
        path = Path(folder)
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def runtime_dirs(binaries: Iterable[str]) -> list[Path]:
    """Installations outside /usr the run needs read-only: Python's prefixes, a Node from nvm, ..."""
    dirs = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    for binary in binaries:
        if binary:
            real = Path(os.path.realpath(binary))
            dirs.add(real.parent.parent if real.parent.name == "bin" else real.parent)
    system = tuple(Path(folder) for folder in SYSTEM_DIRS)
    kept = sorted(d for d in dirs if d.is_dir() and d != Path("/") and not any(d.is_relative_to(s) for s in system))
    return [d for d in kept if not any(d != other and d.is_relative_to(other) for other in kept)]


def bwrap_argv(
    isolation: Isolation,
    *,
    work_dir: Path,
    work_dir_bytes: int,
    tmp_bytes: int,
    read_only: Iterable[Path],
    runtimes: Iterable[Path],
    network: bool,
    command: list[str],
) -> list[str]:
    """The bubblewrap command line that runs `command` in the run's sandbox.

    With `sized_tmpfs` the working directory and /tmp are tmpfs of at most `work_dir_bytes` and
    `tmp_bytes` (memory, charged to the run's memory cgroup): a write past them fails with ENOSPC.
    Without, /tmp is an unsized tmpfs and the working directory the host's (the runner checks its size).
    """
    assert isolation.bwrap is not None
    args = [isolation.bwrap, *_namespace_args(network=network), *_system_args(), "--proc", "/proc", "--dev", "/dev"]
    args += [*_size(isolation, tmp_bytes), "--tmpfs", "/tmp"]  # before the binds below: they may live under /tmp
    for path in [*runtimes, *read_only]:
        args += ["--ro-bind", str(path), str(path)]
    if isolation.sized_tmpfs:
        args += [*_size(isolation, work_dir_bytes), "--tmpfs", str(work_dir)]
    else:
        args += ["--bind", str(work_dir), str(work_dir)]
    args += ["--chdir", str(work_dir), "--hostname", "skillshelf"]
    return [*args, "--", *command]


def _size(isolation: Isolation, size_bytes: int) -> list[str]:
    return ["--size", str(size_bytes)] if isolation.sized_tmpfs else []
