"""Parsing many files on every core, lazily, in batches a caller can store as they come.

The workers are `python -m skillshelf.library.indexing.parallel` processes started through
library/children.py, not multiprocessing's: they get the helper environment and only their two
pipes (multiprocessing hands its workers and its resource tracker the server's whole environment),
and a worker exits when its stdin closes. A server killed with SIGKILL therefore takes its workers
with it: multiprocessing's workers, holding both ends of their queue, outlived it with the tracker.
Where a worker cannot start or dies, the rest is parsed in this process.

The protocol is pickled frames (an 8-byte length, then the pickle): first the parent's `sys.path`,
then `(parse, items, max_bytes)` tasks, each answered by `("ok", results)` or `("error", why)`.
Only skillshelf writes to a worker, and only the worker it started reads from it.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from types import TracebackType
from typing import IO, Any, Self, TypeVar

from skillshelf.library import children

logger = logging.getLogger(__name__)

PARALLEL_THRESHOLD = 400  # below this, starting the workers costs more than it saves
CHUNK = 64
MAX_WORKERS = 4
STOP_TIMEOUT_S = 5.0
FRAME_HEADER = 8
WORKER_NICENESS = 10

In = TypeVar("In")
Out = TypeVar("Out")


class WorkerFailed(Exception):
    """A worker could not parse a chunk (it died, or the parse raised): the rest is parsed here."""


def parse_all(parse: Callable[[In, int], Out], items: Sequence[In], max_bytes: int) -> Iterator[Out]:
    """`parse(item, max_bytes)` for each item, in order; `parse` must be a module-level function."""
    done = 0
    if len(items) >= PARALLEL_THRESHOLD and (os.cpu_count() or 1) > 1:
        try:
            with WorkerPool(min(MAX_WORKERS, os.cpu_count() or 1)) as pool:
                for result in pool.map(parse, items, max_bytes):
                    done += 1
                    yield result
            return
        except (WorkerFailed, OSError) as exc:
            logger.warning("parallel parsing failed (%s); parsing the rest in this process", exc)
    for item in items[done:]:
        yield parse(item, max_bytes)


def batches(items: Iterator[Out], size: int) -> Iterator[list[Out]]:
    batch: list[Out] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Worker:
    """One worker process and its two pipes."""

    def __init__(self) -> None:
        command = [sys.executable, "-m", "skillshelf.library.indexing.parallel"]
        # This process's import path, so the worker finds skillshelf wherever this process did.
        env = {**children.helper_environment(), "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}
        self.process = children.popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: IO[bytes] = self.process.stdin
        self.stdout: IO[bytes] = self.process.stdout
        _write_frame(self.stdin, list(sys.path))  # so it imports what this process imports

    def call(self, parse: Callable[[Any, int], Any], items: Sequence[Any], max_bytes: int) -> list[Any]:
        try:
            _write_frame(self.stdin, (parse, list(items), max_bytes))
            reply = _read_frame(self.stdout)
        except (OSError, ValueError, pickle.PickleError) as exc:
            raise WorkerFailed(f"worker {self.process.pid}: {exc}") from exc
        if reply is None:
            raise WorkerFailed(f"worker {self.process.pid} exited with {self.process.poll()}")
        status, payload = reply
        if status != "ok":
            raise WorkerFailed(str(payload))
        return list(payload)

    def close(self) -> None:
        """Close its stdin (it exits), then make sure it is gone."""
        try:
            self.stdin.close()
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.stdout.close()


class WorkerPool:
    """`size` worker processes; `map` hands each a chunk at a time and yields the results in order."""

    def __init__(self, size: int) -> None:
        self.workers: list[_Worker] = []
        self.closed = threading.Event()
        try:
            for _ in range(size):
                self.workers.append(_Worker())
        except (OSError, ValueError):
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def map(self, parse: Callable[[In, int], Out], items: Sequence[In], max_bytes: int) -> Iterator[Out]:
        chunks = [items[start : start + CHUNK] for start in range(0, len(items), CHUNK)]
        pending: queue.SimpleQueue[int] = queue.SimpleQueue()
        for index in range(len(chunks)):
            pending.put(index)
        done: dict[int, list[Out]] = {}
        failures: list[str] = []
        changed = threading.Condition()

        def serve(worker: _Worker) -> None:
            while not self.closed.is_set():
                try:
                    index = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    results = worker.call(parse, chunks[index], max_bytes)
                except WorkerFailed as exc:
                    with changed:
                        failures.append(str(exc))
                        changed.notify_all()
                    return
                with changed:
                    done[index] = results
                    changed.notify_all()

        def arrived(index: int) -> bool:
            return index in done or bool(failures)  # a failed worker's chunk never comes: stop waiting

        for worker in self.workers:
            threading.Thread(target=serve, args=(worker,), name="skillshelf-parse", daemon=True).start()
        for index in range(len(chunks)):
            with changed:
                changed.wait_for(partial(arrived, index))
                if index not in done:
                    raise WorkerFailed("; ".join(failures))
                results = done.pop(index)
            yield from results

    def close(self) -> None:
        self.closed.set()
        for worker in self.workers:
            worker.close()


def _write_frame(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(FRAME_HEADER, "big") + data)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> Any:
    """The next frame, or None at the end of the stream."""
    header = stream.read(FRAME_HEADER)
    if len(header) < FRAME_HEADER:
        return None
    size = int.from_bytes(header, "big")
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)  # frames come from the process at the other end of our own pipe


def worker_main() -> int:
    """A worker: tasks in on stdin, results out on stdout, until stdin closes (the server stopped or died)."""
    tasks, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a print in a parser must not corrupt the replies
    if hasattr(os, "nice"):
        os.nice(WORKER_NICENESS)  # background work: the server answering calls comes first
    path = _read_frame(tasks)
    if path is None:
        return 0
    sys.path[:] = path
    while (task := _read_frame(tasks)) is not None:
        parse, items, max_bytes = task
        try:
            reply: tuple[str, Any] = ("ok", [parse(item, max_bytes) for item in items])
        except Exception as exc:  # reported, and the parent parses the rest itself
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            _write_frame(replies, reply)
        except BrokenPipeError:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
