"""Keeping a skill's processes contained: resource limits, cgroups where they can be made, killing.

RLIMIT_NPROC counts every process of the user and the kernel ignores it for root, so it is set to
"what the user runs now + the allowance", and when a pids cgroup can be created (root, or a
delegated cgroup v2 subtree) each run gets its own with `pids.max` — that also catches children that
left the process group with setsid. Where neither works, the timeout still kills the process group.

RLIMIT_AS bounds each process, not the run: twelve children of 250 MB hold 3 GB. A memory cgroup
(v1 `memory.limit_in_bytes`, v2 `memory.max`, no swap) bounds the run as a whole, the pages of the
sandbox's tmpfs it writes included; where none can be made, the run's total is only bounded by
`max_processes` x `memory_mb` (docs/security.md says so).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import anyio

logger = logging.getLogger(__name__)

V1_ROOT = Path("/sys/fs/cgroup")
# Windows has neither SIGKILL nor process groups: there, signals go to the child alone (os.kill ends it).
SIGKILL: signal.Signals = getattr(signal, "SIGKILL", signal.SIGTERM)
STALE_CGROUP_S = 60  # a cgroup is joined within milliseconds of its creation
FSIZE_BYTES = 256 * 1024 * 1024  # no single file a skill writes may exceed this
NODE_RESERVED_BYTES = 1024 * 1024 * 1024  # Node 20 needs ~700 MB of address space before it allocates
SANDBOX_OWN_PROCESSES = 1  # bubblewrap's init, counted with the run's own in the sandbox's user namespace


@dataclass(frozen=True)
class Limits:
    timeout_s: float
    cpu_s: int
    memory_bytes: int | None
    max_processes: int
    max_output_bytes: int
    max_stderr_bytes: int
    run_memory_bytes: int | None = None  # all the run's processes together (a memory cgroup)
    work_dir_bytes: int = FSIZE_BYTES  # the working directory's total size
    tmp_bytes: int = FSIZE_BYTES  # the sandbox's /tmp (a tmpfs: memory)

    def for_child(self, *, node: bool = False, sandboxed: bool = False) -> dict[str, int | None]:
        memory = self.memory_bytes
        if memory is not None and node:
            # V8 reserves address space it never uses (code range, heap cages): Node gets that on top
            # of the cap, so its heap (--max-old-space-size) and its Buffers stay near the limit.
            memory += NODE_RESERVED_BYTES
        nproc = sandbox_process_allowance if sandboxed else user_process_allowance
        return {
            "cpu_s": self.cpu_s,
            "memory_bytes": memory,
            "nproc": nproc(self.max_processes),
            "fsize_bytes": min(FSIZE_BYTES, self.work_dir_bytes),
        }


def user_process_allowance(extra: int) -> int | None:
    """RLIMIT_NPROC for the child: processes the user already has plus `extra` (None for root)."""
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return None  # the kernel does not apply RLIMIT_NPROC to root; the cgroup does the job
    return _processes_of(os.getuid()) + extra


def sandbox_process_allowance(extra: int) -> int | None:
    """RLIMIT_NPROC inside the sandbox: its user namespace counts only the processes in it (the run's
    and bubblewrap's init), not the user's others outside, which `user_process_allowance` adds and
    which let a sandboxed fork flood make that many more (None for root)."""
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return None
    return SANDBOX_OWN_PROCESSES + extra


def _processes_of(uid: int) -> int:
    """The user's processes, by real uid as RLIMIT_NPROC counts them. Not by the owner of /proc/PID:
    a non-dumpable process's (the server's own) belongs to root there."""
    count = 0
    try:
        entries = [entry for entry in os.scandir("/proc") if entry.name.isdigit()]
    except OSError:
        return 1024  # no /proc (macOS): a generous guess
    for entry in entries:
        try:
            with Path(entry.path, "status").open(encoding="ascii", errors="replace") as status:
                for line in status:
                    if line.startswith("Uid:"):
                        count += int(line.split()[1]) == uid
                        break
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return count


@dataclass(frozen=True)
class CgroupSupport:
    """Which limits a run here would get from cgroups (what a dry run reports, without creating any)."""

    pids: bool
    memory: bool


@dataclass(frozen=True)
class _Parent:
    path: Path
    controllers: frozenset[str]  # of "pids", "memory": what a cgroup created under it can limit


class RunCgroup:
    """Throwaway cgroups holding one run: `pids.max` bounds its processes, the memory limit all its
    memory at once (every process, and the pages of the sandbox's tmpfs it writes). Under cgroup v1
    these are two directories in two hierarchies, under v2 one; the child joins each."""

    def __init__(self, paths: list[Path], *, pids: bool, memory: bool) -> None:
        self.paths = paths
        self.limits_pids = pids
        self.limits_memory = memory

    @property
    def procs_files(self) -> list[Path]:
        return [path / "cgroup.procs" for path in self.paths]

    @classmethod
    def create(cls, max_processes: int, memory_bytes: int | None) -> RunCgroup | None:
        """Cgroups for one run, with whatever limits can be set here; None when none can be made."""
        wanted = {"pids": str(max_processes)}
        if memory_bytes is not None:
            wanted["memory"] = str(memory_bytes)
        paths: list[Path] = []
        done: set[str] = set()
        for parent in _candidate_parents():
            todo = [c for c in wanted if c in parent.controllers and c not in done]
            if not todo:
                continue
            path = _make_run_cgroup(parent.path, {c: wanted[c] for c in todo})
            if path is not None:
                paths.append(path)
                done.update(todo)
        if not paths:
            return None
        return cls(paths, pids="pids" in done, memory="memory" in done)

    @staticmethod
    def available() -> CgroupSupport:
        controllers = {c for parent in _candidate_parents() for c in parent.controllers}
        return CgroupSupport(pids="pids" in controllers, memory="memory" in controllers)

    def pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            try:
                found.update(int(line) for line in procs.read_text(encoding="ascii").split())
            except (OSError, ValueError):
                continue
        return sorted(found)

    def kill_all(self) -> None:
        for pid in self.pids():
            _kill(pid, SIGKILL)

    def discard(self) -> None:
        """Remove cgroups no process has joined yet."""
        for path in self.paths:
            with contextlib.suppress(OSError):
                path.rmdir()

    async def remove(self) -> None:
        """rmdir, retried briefly: killed processes leave the cgroup only once they are reaped."""
        for path in self.paths:
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    await anyio.sleep(0.01)
            else:
                logger.debug("cgroup %s still busy; a later run removes it", path.name)


def _make_run_cgroup(parent: Path, limits: dict[str, str]) -> Path | None:
    _sweep_stale(parent)
    path = parent / f"skillshelf-run-{uuid.uuid4().hex[:12]}"
    try:
        path.mkdir()
    except OSError:
        return None
    try:
        for controller, value in limits.items():
            _write_limit(path, controller, value)
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def _write_limit(path: Path, controller: str, value: str) -> None:
    if controller == "pids":
        (path / "pids.max").write_text(value, encoding="ascii")
        return
    if (path / "memory.max").exists():  # v2; no swap, so the limit is the memory the run holds
        (path / "memory.max").write_text(value, encoding="ascii")
        _write_optional(path / "memory.swap.max", "0")
        return
    (path / "memory.limit_in_bytes").write_text(value, encoding="ascii")  # v1
    _write_optional(path / "memory.memsw.limit_in_bytes", value)


def _write_optional(path: Path, value: str) -> None:
    """A limit some kernels lack (no swap accounting): set it where it exists."""
    with contextlib.suppress(OSError):
        path.write_text(value, encoding="ascii")


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


def _candidate_parents() -> list[_Parent]:
    """Where run cgroups can be created: under cgroup v1, the server's own cgroup (else the root) of
    the pids and memory hierarchies; under v2, the server's cgroup when it delegates the controllers."""
    parents = []
    for controller in ("pids", "memory"):
        v1 = _own_cgroup_v1(controller)
        if v1 is not None:
            parents.append(_Parent(v1, frozenset({controller})))
    own = _own_cgroup_v2()
    if own is not None and os.access(own, os.W_OK):
        delegated = frozenset(_read(own / "cgroup.subtree_control").split()) & {"pids", "memory"}
        if delegated:
            parents.append(_Parent(own, delegated))
    return parents


def _own_cgroup_v1(controller: str) -> Path | None:
    hierarchy = V1_ROOT / controller
    if not hierarchy.is_dir():
        return None
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _id, controllers, path = [*line.split(":", 2), "", ""][:3]
        if controller in controllers.split(","):
            own = hierarchy / path.strip("/")
            if own.is_dir() and os.access(own, os.W_OK):
                return own
    return hierarchy if os.access(hierarchy, os.W_OK) else None


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
