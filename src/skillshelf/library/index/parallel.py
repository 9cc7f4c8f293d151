"""Parsing many files on every core, lazily, in batches a caller can store as they come.

Workers are spawned, not forked: a server has threads running, and forking those can deadlock a
child. Where spawning fails (an embedding script without an `if __name__ == "__main__":` guard),
the rest is parsed in this process.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

logger = logging.getLogger(__name__)

PARALLEL_THRESHOLD = 400  # below this, starting the workers costs more than it saves
CHUNK = 64

In = TypeVar("In")
Out = TypeVar("Out")


def parse_all(parse: Callable[[In, int], Out], items: Sequence[In], max_bytes: int) -> Iterator[Out]:
    """`parse(item, max_bytes)` for each item, in order; `parse` must be a module-level function."""
    done = 0
    if len(items) >= PARALLEL_THRESHOLD and (os.cpu_count() or 1) > 1:
        try:
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=min(4, os.cpu_count() or 1), mp_context=context) as pool:
                for result in pool.map(parse, items, [max_bytes] * len(items), chunksize=CHUNK):
                    done += 1
                    yield result
            return
        except (BrokenProcessPool, OSError, RuntimeError, NotImplementedError) as exc:
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
