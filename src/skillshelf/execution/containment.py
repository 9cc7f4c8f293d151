"""Keeping a skill's processes contained: resource limits, a pids cgroup where one can be made, killing.

RLIMIT_NPROC counts every process of the user and the kernel ignores it for root, so it is set to
"what the user runs now + the allowance", and when a pids cgroup can be created (root, or a
delegated cgroup v2 subtree) each run gets its own with `pids.max` — that also catches children that
left the process group with setsid. Where neither works, the timeout still kills the process group.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import anyio

logger = logging.getLogger(__name__)

V1_PIDS = Path("/sys/fs/cgroup/pids")
# Windows has neither SIGKILL nor process groups: there, signals go to the child alone (os.kill ends it).
SIGKILL: signal.Signals = getattr(signal, "SIGKILL", signal.SIGTERM)
STALE_CGROUP_S = 60  # a cgroup is joined within milliseconds of its creation
FSIZE_BYTES = 256 * 1024 * 1024  # no single file a skill writes may exceed this
NODE_RESERVED_BYTES = 1024 * 1024 * 1024  # Node 20 needs ~700 MB of address space before it allocates


@dataclass(frozen=True)
class Limits:
    timeout_s: float
    cpu_s: int
    memory_bytes: int | None
    max_processes: int
    max_output_bytes: int
    max_stderr_bytes: int

    def for_child(self, *, node: bool = False) -> dict[str, int | None]:
        memory = self.memory_bytes
        if memory is not None and node:
            # V8 reserves address space it never uses (code range, heap cages): Node gets that on top
            # of the cap, so its heap (--max-old-space-size) and its Buffers stay near the limit.
            memory += NODE_RESERVED_BYTES
        return {
            "cpu_s": self.cpu_s,
            "memory_bytes": memory,
            "nproc": user_process_allowance(self.max_processes),
            "fsize_bytes": FSIZE_BYTES,
        }


def user_process_allowance(extra: int) -> int | None:
    """RLIMIT_NPROC for the child: processes the user already has plus `extra` (None for root)."""
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return None  # the kernel does not apply RLIMIT_NPROC to root; the cgroup does the job
    uid = os.getuid()
    try:
        count = sum(1 for entry in os.scandir("/proc") if entry.name.isdigit() and entry.stat().st_uid == uid)
    except OSError:
        count = 1024  # no /proc (macOS): a generous guess
    return count + extra


class PidsCgroup:
    """A throwaway cgroup limiting how many processes one run may have."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    @classmethod
    def create(cls, max_processes: int) -> PidsCgroup | None:
        for base in _candidate_parents():
            _sweep_stale(base)
            path = base / f"skillshelf-run-{uuid.uuid4().hex[:12]}"
            try:
                path.mkdir()
            except OSError:
                continue
            try:
                (path / "pids.max").write_text(str(max_processes), encoding="ascii")
            except OSError:
                path.rmdir()
                continue
            return cls(path)
        return None

    @staticmethod
    def available() -> bool:
        """Whether a run here would get a cgroup (what a dry run reports, without creating one)."""
        return bool(_candidate_parents())

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in self.procs_file.read_text(encoding="ascii").split()]
        except (OSError, ValueError):
            return []

    def kill_all(self) -> None:
        for pid in self.pids():
            _kill(pid, SIGKILL)

    async def remove(self) -> None:
        """rmdir, retried briefly: killed processes leave the cgroup only once they are reaped."""
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                await anyio.sleep(0.01)
        logger.debug("cgroup %s still busy; a later run removes it", self.path.name)


def _sweep_stale(base: Path) -> None:
    """Remove run cgroups a crashed server left behind: old ones only (a new one may be about to be
    joined), and the kernel refuses to remove one that still holds a process."""
    cutoff = time.time() - STALE_CGROUP_S
    try:
        stale = [p for p in base.glob("skillshelf-run-*") if p.stat().st_mtime < cutoff]
    except OSError:
        return
    for path in stale:
        with contextlib.suppress(OSError):
            path.rmdir()


def _candidate_parents() -> list[Path]:
    parents = []
    if V1_PIDS.is_dir() and os.access(V1_PIDS, os.W_OK):
        parents.append(V1_PIDS)
    own = _own_cgroup_v2()
    if own is not None and "pids" in _read(own / "cgroup.subtree_control").split() and os.access(own, os.W_OK):
        parents.append(own)
    return parents


def _own_cgroup_v2() -> Path | None:
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        if line.startswith("0::"):
            for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                if Path(mount, "cgroup.controllers").is_file():
                    return Path(mount + line[3:].rstrip("/"))
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        return ""


def _kill(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Signal the run's whole process group (the child leads it: started in a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if hasattr(os, "killpg"):
            os.killpg(pgid, sig)
        else:
            os.kill(pgid, sig)


PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def hide_server_from_skills() -> bool:
    """Make this (the server's) process non-dumpable before an unsandboxed skill runs.

    Without bubblewrap a skill runs as the same user, and /proc/<server pid>/environ, /mem and /fd
    are readable to it: the server's environment may hold tokens. A non-dumpable process's /proc
    files belong to root, so another process of the user can no longer read them (root, with
    CAP_SYS_PTRACE, still can). It also means no core dumps of the server. Linux only; True when set.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0:
            return True
        return bool(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError) as exc:  # no libc.prctl (musl without it, seccomp): limits only
        logger.warning("could not make the server non-dumpable (%s)", exc)
        return False
