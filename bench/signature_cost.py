"""What the change signature of an Agent Skills folder costs discovery: with the stamp of every file the one
walk lists (the signature now) and without it (the folders' stamps alone, as before), interleaved in one process.

    PYTHONPATH=src python bench/signature_cost.py ROOT [ROOT ...]

Prints the median CPU and wall time of one `discover()` of the roots (the stat-only pass every sync starts with).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from skillshelf.library.skill import discovery

ROUNDS = 15


def timed(roots: list[Path], stamp: Callable[[Path, Path], str]) -> tuple[float, float, int]:
    discovery._files_stamp = stamp  # type: ignore[assignment]  # the one part measured
    cpu, wall = time.process_time(), time.perf_counter()
    found = discovery.discover(roots)
    return time.process_time() - cpu, time.perf_counter() - wall, len(found.sources)


def main() -> None:
    roots = [Path(arg) for arg in sys.argv[1:]]
    variants: dict[str, Callable[[Path, Path], str]] = {
        "folders only": lambda folder, real_root: "",
        "every file": discovery._files_stamp,
    }
    for stamp in variants.values():
        timed(roots, stamp)  # the page cache warmed
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    wall: dict[str, list[float]] = {name: [] for name in variants}
    skills = 0
    for _ in range(ROUNDS):
        for name, stamp in variants.items():
            spent, waited, skills = timed(roots, stamp)
            cpu[name].append(spent)
            wall[name].append(waited)
    for name in variants:
        print(
            f"{name}: {skills} skills, discover() median {statistics.median(cpu[name]) * 1000:.1f} ms CPU, "
            f"{statistics.median(wall[name]) * 1000:.1f} ms wall"
        )


if __name__ == "__main__":
    main()
