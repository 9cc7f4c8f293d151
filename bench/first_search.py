"""The first searches after a start, at a size: how long a search with a typo waits for the spelling vocabulary.

    python bench/first_search.py --n 10000 [--rounds 5] [--work DIR] [--index-dir DIR]

Each round is a new process on the same (warm) index: it opens the library, then searches for a generated
query's answer by its name's words (words the library knows: the search starts the vocabulary's build in the
background) and, at once, for that query with a typo in its longest word (which needs the vocabulary). It prints
the wall-clock time of each search and of the two together, and the process's CPU time from the first search
until every vocabulary build has ended (the library closed); the median over rounds is the figure. The index is
built once in `--index-dir` (kept between runs, so a second run, or the parent's on the same index, starts warm).
For the parent, run the same script with the parent's `src/` first on PYTHONPATH
(`git archive main src | tar -x -C /tmp/parent`). Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:  # imported as bench.first_search (repo root on sys.path)
    from bench import generate
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]


def with_typo(query: str) -> str:
    """The query with two middle letters of its longest word swapped (a transposition: one edit)."""
    words = query.split()
    longest = max(range(len(words)), key=lambda i: len(words[i]))
    word = words[longest]
    middle = len(word) // 2
    words[longest] = word[: middle - 1] + word[middle] + word[middle - 1] + word[middle + 1 :]
    return " ".join(words)


def one_start(lib: Path, index_dir: Path, known: str, query: str) -> dict[str, float]:
    """In this process: open the library and time the first search and, right after it, the typo search."""
    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.skills.service import search_patterns

    library = SkillLibrary(LibraryConfig(roots=[lib], index_dir=index_dir, watch=False))
    try:
        library.sync()  # warm: nothing to parse
        reader = LibraryReader(library)
        cpu, started = time.process_time(), time.perf_counter()
        search_patterns(reader, known, limit=10)
        first = time.perf_counter()
        search_patterns(reader, with_typo(query), limit=10)
        typo = time.perf_counter()
    finally:
        library.close()  # waits for a background build still running
    cpu = time.process_time() - cpu
    return {
        "first_ms": (first - started) * 1000,
        "typo_ms": (typo - first) * 1000,
        "both_ms": (typo - started) * 1000,
        "cpu_ms": cpu * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    parser.add_argument("--index-dir", type=Path, help="where the index is kept (default: WORK/index-first-N)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # one round, in a new process: the two searches
    args = parser.parse_args(argv)
    lib = args.work / f"lib-{args.n}"
    index_dir = args.index_dir or args.work / f"index-first-{args.n}"
    if args.child is not None:
        print(json.dumps(one_start(lib, index_dir, *args.child)))
        return 0
    generate.ensure_library(lib, args.n)
    asked = max(generate.load_queries(lib), key=lambda q: max(map(len, q["query"].split())))
    known, query = asked["answer"].rsplit("/", 1)[-1].replace("-", " "), asked["query"]
    index_dir.mkdir(parents=True, exist_ok=True)
    child = [sys.executable, str(Path(__file__).resolve()), "--n", str(args.n), "--work", str(args.work)]
    child += ["--index-dir", str(index_dir), "--child", known, query]
    subprocess.run(child, check=True, capture_output=True)  # builds the index if it is not there yet
    runs = [subprocess.run(child, check=True, capture_output=True, text=True) for _ in range(args.rounds)]
    rounds = [json.loads(run.stdout) for run in runs]
    print(f"{args.n:,} skills, {args.rounds} starts; first {known!r}, then {with_typo(query)!r}")
    for key in ("first_ms", "typo_ms", "both_ms", "cpu_ms"):
        values = [r[key] for r in rounds]
        print(f"{key}: median {statistics.median(values):.0f}  (min {min(values):.0f}, max {max(values):.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
