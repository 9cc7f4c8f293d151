"""searchPatterns' service of this tree against an earlier commit's, and the bare FTS5 AND query, in one process.

    python bench/search_ab.py --parent main [--n 1000 --n 10000] [--rounds 5] [--wall] [--cold | --stream]
                              [--indexes DIR]

A cut to search is kept only with its gain shown against its parent in the same run (issue 36). Run one after
the other, two processes on a loaded machine differ by more than a cut gains; here both trees run in one process,
interleaved query by query (the order rotated), on one index file: `--parent`'s `src/skillshelf` is exported
with `git archive` and imported as the package `skillshelf_parent`, and it opens the index this tree built
(a warm start; the schema must be the same). Each round gives every engine's median per query, by default in the
thread's CPU time (what another process's load changes least; `--wall` for wall-clock time); the report is the
median over rounds of each, and of the ratios per round. It also says how many answers are identical, byte for
byte: a mechanical cut must leave every one as it was. `--indexes DIR` keeps each index (DIR/idx-N, the layout
bench/search_same.py uses) for the next run: 100,000 skills take minutes to index. `--cold` empties each tree's
postings (library/index/postings.py: index data a query does not change, kept across queries; a parent from before
them has none) and the hit rows its searches kept (`_rows`) before each of its searches, untimed: a search as the
first to ask for its words; `--stream` empties them before each round: each query searched once after the ones
before it, as in a session of different queries.
Nothing here asserts on time: it only measures.
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from skillshelf.skills.service import search_patterns

try:  # imported as bench.search_ab (repo root on sys.path)
    from bench import generate
    from bench.engine_floor import Engines
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]
    from engine_floor import Engines  # type: ignore[no-redef,import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parents[1]
PARENT = "skillshelf_parent"
# `skillshelf.x` and `from skillshelf import` (imports, and module names given as strings) become the copy's
_OWN_NAME = re.compile(r"\bskillshelf\b(?=\.[a-z_]|\s+import\b)")


def log(msg: str) -> None:
    print(f"[search-ab] {msg}", file=sys.stderr, flush=True)


def export_parent(rev: str, into: Path) -> None:
    """`rev`'s src/skillshelf as the package `skillshelf_parent` under `into` (on sys.path afterwards)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src/skillshelf"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / PARENT
    (into / "src" / "skillshelf").rename(package)
    for module in package.rglob("*.py"):
        module.write_text(_OWN_NAME.sub(PARENT, module.read_text(encoding="utf-8")), encoding="utf-8")
    sys.path.insert(0, str(into))


def parent_service() -> Any:
    """The parent's skill service: `skills/` since issue 32, `patterns/` before it."""
    try:
        return importlib.import_module(f"{PARENT}.skills.service")
    except ModuleNotFoundError:
        return importlib.import_module(f"{PARENT}.patterns.service")


def measure(
    lib: Path,
    n: int,
    rounds: int,
    clock: Callable[[], float],
    indexes: Path | None = None,
    cold: bool = False,
    stream: bool = False,
) -> dict[str, Any]:
    reader_module = importlib.import_module(f"{PARENT}.library.access.reader")
    library_module = importlib.import_module(f"{PARENT}.library.index.library")
    parent_search = parent_service().search_patterns
    queries = [q["query"] for q in generate.load_queries(lib) if q.get("answer")]
    with tempfile.TemporaryDirectory(prefix="skillshelf-search-ab-") as scratch:
        index_dir = str(indexes / f"idx-{n}") if indexes else scratch
        ours = Engines(lib, Path(index_dir))
        config = library_module.LibraryConfig(roots=[lib], index_dir=Path(index_dir), watch=False)
        parent_library = library_module.SkillLibrary(config)
        try:
            parent_library.sync()  # the index this tree built: nothing to parse
            parent_reader = reader_module.LibraryReader(parent_library)
            engines: dict[str, Callable[[str], Any]] = {
                "parent": lambda q: parent_search(parent_reader, q, limit=10),
                "this": lambda q: search_patterns(ours.reader, q, limit=10),
                "fts-and": ours.fts_and,
            }
            same = sum(engines["parent"](q).model_dump_json() == engines["this"](q).model_dump_json() for q in queries)
            # a parent with postings of its own (library/index/postings.py) is emptied alike: cold against cold
            indexes_of = {"this": ours.library.index, "parent": parent_library.index}
            before: dict[str, Callable[[], None]] = {}
            if cold:
                before = {name: partial(forget_postings, index) for name, index in indexes_of.items()}
            per_round = []
            for number in range(-1, rounds):
                if stream:
                    for index in indexes_of.values():
                        forget_postings(index)
                per_round.append(one_round(engines, queries, number, clock, before))
            per_round = per_round[1:]
        finally:
            parent_library.close()
            ours.close()

    def median(part: Callable[[dict[str, float]], float]) -> float:
        return statistics.median(part(r) for r in per_round)

    return {
        "n": n,
        "identical": f"{same}/{len(queries)}",
        "ms": {name: round(statistics.median(r[name] for r in per_round), 3) for name in per_round[0]},
        "parent/fts-and": round(median(lambda r: r["parent"] / r["fts-and"]), 2),
        "this/fts-and": round(median(lambda r: r["this"] / r["fts-and"]), 2),
        "this/parent": round(median(lambda r: r["this"] / r["parent"]), 3),
    }


def forget_postings(index: Any) -> None:
    """Empty an index's postings and the hit rows its searches kept (`--cold`, `--stream`), as no earlier query
    had read them; a tree without them (a parent from before them) has nothing to empty."""
    postings = getattr(index, "_postings", None)
    with index._guard():
        if postings is not None:
            postings.clear()
        if hasattr(index, "_hit_rows"):
            index._hit_rows = {}


def one_round(
    engines: dict[str, Callable[[str], Any]],
    queries: list[str],
    number: int,
    clock: Callable[[], float],
    before: dict[str, Callable[[], None]] | None = None,
) -> dict[str, float]:
    """Every engine on every query, their order rotated query by query; each engine's median ms (round -1
    warms up). `before` runs, untimed, before each search of the engine it names."""
    names = list(engines)
    times: dict[str, list[float]] = {name: [] for name in names}
    for index, query in enumerate(queries):
        shift = (index + number) % len(names)
        for name in names[shift:] + names[:shift]:
            if before and name in before:
                before[name]()
            started = clock()
            engines[name](query)
            times[name].append((clock() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parent", required=True, help="the commit (or branch) to compare with, e.g. main")
    parser.add_argument("--n", type=int, action="append", help="skills (repeatable); default 1,000 and 10,000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--wall", action="store_true", help="wall-clock time instead of the thread's CPU time")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    parser.add_argument("--indexes", type=Path, help="keep the indexes here, DIR/idx-N (default: temporary ones)")
    parser.add_argument("--cold", action="store_true", help="both trees' postings emptied before each search")
    parser.add_argument("--stream", action="store_true", help="both trees' postings emptied before each round")
    args = parser.parse_args(argv)
    clock = time.perf_counter if args.wall else time.thread_time
    columns = "parent ms | this ms | fts-and ms | parent / fts-and | this / fts-and | this / parent"
    print(f"| skills | identical answers | {columns} |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="skillshelf-parent-") as copy:
        export_parent(args.parent, Path(copy))
        for n in args.n or [1000, 10000]:
            lib = args.work / f"lib-{n}"
            generate.ensure_library(lib, n)
            r = measure(lib, n, args.rounds, clock, args.indexes, args.cold, args.stream)
            log(f"n={n}: {r}")
            ms = r["ms"]
            print(
                f"| {n:,} | {r['identical']} | {ms['parent']} | {ms['this']} | {ms['fts-and']} | "
                f"{r['parent/fts-and']}x | {r['this/fts-and']}x | {r['this/parent']}x |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
