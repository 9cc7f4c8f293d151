"""Run one child process under limits and collect bounded output; kill it on timeout, overflow, a
working directory past its size, or cancel."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from skillshelf.execution.containment import SIGKILL, Limits, RunCgroup, signal_group

logger = logging.getLogger(__name__)

TERM_GRACE_S = 0.5  # SIGTERM, then this long, then SIGKILL: a killed run ends within timeout + 1 s
PROGRESS_EVERY_S = 1.0
DRAIN_S = 1.0  # after the main process exits, how long output is still read from leftovers
WORK_DIR_CHECK_S = 0.2  # how often a working directory that no tmpfs bounds is measured
WORK_DIR_MAX_ENTRIES = 100_000  # more files than this is over the limit too (and measuring them slow)
ProgressCallback = Callable[[float, float], Awaitable[None]]


@dataclass
class RunOutcome:
    exit_code: int | None
    timed_out: bool
    output_limited: bool
    stdout: bytes
    stderr_tail: bytes
    stderr_truncated: bool
    duration_s: float
    work_dir_over: bool = False  # it wrote more into its working directory than allowed, and was stopped

    @property
    def signal_name(self) -> str | None:
        if self.exit_code is not None and self.exit_code < 0:
            try:
                return signal.Signals(-self.exit_code).name
            except ValueError:
                return f"signal {-self.exit_code}"
        return None


async def run_child(
    argv: list[str],
    stdin: bytes,
    *,
    env: Mapping[str, str],
    work_dir: Path,
    limits: Limits,
    cgroup: RunCgroup | None,
    on_progress: ProgressCallback | None = None,
    check_work_dir: bool = False,
) -> RunOutcome:
    """Run `argv` (env: children.skill_environment; it closes inherited fds itself, _child.py) until its
    main process exits. `check_work_dir`: no tmpfs bounds the working directory, so measure it while
    the run lasts and once at the end, and stop the run when it is over `limits.work_dir_bytes`."""
    started = time.monotonic()
    stdout = _CappedBuffer(limits.max_output_bytes)
    stderr = _TailBuffer(limits.max_stderr_bytes)
    process = await anyio.open_process(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=work_dir,
        env=dict(env),
        start_new_session=True,  # its own process group: one killpg reaches every descendant
    )
    timed_out = False
    disk = _WorkDirCheck(work_dir, limits.work_dir_bytes, lambda: _kill_now(process, cgroup))
    try:
        async with anyio.create_task_group() as progress_group:
            if on_progress is not None:
                progress_group.start_soon(_report_progress, on_progress, started, limits.timeout_s)
            if check_work_dir:
                progress_group.start_soon(disk.watch)
            with anyio.move_on_after(limits.timeout_s) as deadline:
                await _run_until_main_exits(process, stdin, stdout, stderr, cgroup)
            timed_out = deadline.cancelled_caught
            progress_group.cancel_scope.cancel()
        if check_work_dir:
            await disk.check()  # a run faster than the first check is measured too
    finally:
        with anyio.CancelScope(shield=True):
            await _terminate(process, cgroup)
    return RunOutcome(
        exit_code=process.returncode,
        timed_out=timed_out,
        output_limited=stdout.overflowed,
        stdout=stdout.data(),
        stderr_tail=stderr.data(),
        stderr_truncated=stderr.truncated,
        duration_s=time.monotonic() - started,
        work_dir_over=disk.over,
    )


async def _run_until_main_exits(
    process: Process, stdin: bytes, stdout: _CappedBuffer, stderr: _TailBuffer, cgroup: RunCgroup | None
) -> None:
    """Feed and collect until the skill's main process exits; then kill what it left behind.

    A daemon the skill started may hold stdout open forever: the run still ends with the main
    process, its leftovers are killed, and output already written is kept (read for at most
    DRAIN_S more, for leftovers that escaped every kill).
    """
    assert process.stdin and process.stdout and process.stderr
    drained = [anyio.Event(), anyio.Event()]
    async with anyio.create_task_group() as io_group:
        io_group.start_soon(_feed, process.stdin, stdin)
        io_group.start_soon(_collect, process.stdout, stdout, lambda: _kill_now(process, cgroup), drained[0])
        io_group.start_soon(_collect, process.stderr, stderr, None, drained[1])
        await process.wait()
        _kill_now(process, cgroup)  # the main process is gone: so is the run
        with anyio.move_on_after(DRAIN_S):
            for event in drained:
                await event.wait()
        io_group.cancel_scope.cancel()


class _WorkDirCheck:
    """Measures a working directory no tmpfs bounds; past the limit, the run is stopped.

    A check every WORK_DIR_CHECK_S, so a skill may overshoot by what it writes in that time (RLIMIT_FSIZE
    caps each file); it is honest bookkeeping, not a quota.
    """

    def __init__(self, path: Path, limit_bytes: int, stop: Callable[[], None]) -> None:
        self.path = path
        self.limit_bytes = limit_bytes
        self.stop = stop
        self.over = False

    async def watch(self) -> None:
        while not self.over:
            await anyio.sleep(WORK_DIR_CHECK_S)
            await self.check()

    async def check(self) -> None:
        if not self.over and await anyio.to_thread.run_sync(_over_size, self.path, self.limit_bytes):
            self.over = True
            self.stop()


def _over_size(path: Path, limit_bytes: int) -> bool:
    """Whether the tree under `path` uses more than `limit_bytes` of disk or holds too many entries
    (symlinks are not followed; it stops counting as soon as the answer is known)."""
    used = entries = 0
    pending = [str(path)]
    while pending:
        try:
            with os.scandir(pending.pop()) as listing:
                for entry in listing:
                    entries += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    used += getattr(info, "st_blocks", 0) * 512 or info.st_size
                    if used > limit_bytes or entries > WORK_DIR_MAX_ENTRIES:
                        return True
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue
    return False


async def _report_progress(on_progress: ProgressCallback, started: float, total: float) -> None:
    while True:
        await anyio.sleep(PROGRESS_EVERY_S)
        await on_progress(round(time.monotonic() - started, 1), total)


async def _feed(stream: ByteSendStream, data: bytes) -> None:
    try:
        if data:
            await stream.send(data)
        await stream.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, ConnectionResetError):
        pass  # the skill exited without reading its input: its exit status tells the story


class _CappedBuffer:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0
        self.overflowed = False

    def add(self, chunk: bytes) -> bool:
        """Keep up to the cap; False once it is exceeded (the caller stops the process)."""
        room = self.cap - self.size
        if len(chunk) > room:
            self.parts.append(chunk[:room])
            self.size = self.cap
            self.overflowed = True
            return False
        self.parts.append(chunk)
        self.size += len(chunk)
        return True

    def data(self) -> bytes:
        return b"".join(self.parts)


class _TailBuffer:
    """The last `cap` bytes: for errors, the end of stderr is what explains them."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.buffer = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> bool:
        self.buffer += chunk
        if len(self.buffer) > self.cap:
            del self.buffer[: len(self.buffer) - self.cap]
            self.truncated = True
        return True

    def data(self) -> bytes:
        return bytes(self.buffer)


async def _collect(
    stream: ByteReceiveStream,
    sink: _CappedBuffer | _TailBuffer,
    on_overflow: Callable[[], None] | None,
    done: anyio.Event,
) -> None:
    try:
        async for chunk in stream:
            if not sink.add(chunk):
                if on_overflow is not None:
                    on_overflow()
                return
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        return
    finally:
        done.set()


def _kill_now(process: Process, cgroup: RunCgroup | None) -> None:
    signal_group(process.pid, SIGKILL)
    if cgroup is not None:
        cgroup.kill_all()


async def _terminate(process: Process, cgroup: RunCgroup | None) -> None:
    """SIGTERM the whole group, give it a moment, SIGKILL what is left (group and cgroup), reap."""
    if process.returncode is None:
        signal_group(process.pid, signal.SIGTERM)
        with anyio.move_on_after(TERM_GRACE_S):
            await process.wait()
    signal_group(process.pid, SIGKILL)  # descendants may outlive the leader
    if cgroup is not None:
        for _ in range(100):
            if not cgroup.pids():
                break
            cgroup.kill_all()
            await anyio.sleep(0.01)
    with anyio.move_on_after(5):
        await process.wait()
    if process.returncode is not None:
        # aclose closes the pipe transports too, not only anyio's stream wrappers: otherwise the
        # asyncio subprocess transport stays open until garbage collection (ResourceWarning).
        await process.aclose()
        return
    for stream in (process.stdin, process.stdout, process.stderr):  # unkillable (D state): don't wait
        if stream is not None:
            await stream.aclose()


WORK_PREFIX = "skillshelf-run-"  # the working directory's (HOME, TMPDIR, cwd)
COPY_PREFIX = "skillshelf-skill-"  # where a run's copy of an approved skill's files is made (plan.RunPlan.in_copy)


def make_work_dir(prefix: str = WORK_PREFIX) -> Path:
    """A fresh folder only this user can enter (mkdtemp: 0o700)."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove_work_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
