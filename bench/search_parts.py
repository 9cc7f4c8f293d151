"""Where a searchPatterns call spends its time: the SQLite statements of `SkillIndex.search` by kind, and the rest.

    python bench/search_parts.py [--n 1000 --n 10000] [--rounds 3] [--work DIR] [--indexes DIR]

Over the generator's queries (bench/generate.py), after a warm-up round, every statement `SkillIndex._tuples` runs
is read to its end and timed in the thread's CPU time, by kind: the coverage walk (one per concept), the ranked
reads (all concepts ANDed; ORed; ORed in the head columns), a phrase's postings read whole (postings.py: once,
then kept, so after the warm-up few are left) and the page's rows. What is left of the whole call is Python (the
ranked reads computed from postings among it) and the few small reads outside `_tuples` (the exact name, the
caches' checks). Per search, the medians
are not used: these are sums over every query divided by the queries, so the parts add up. Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index import store
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.skills.service import search_patterns

try:  # imported as bench.search_parts (repo root on sys.path)
    from bench import generate
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]


def kind(sql: str, params: Sequence[Any]) -> str:
    if sql == store._POSTING_SQL:
        return "a phrase's postings read whole (library/index/postings.py)"
    if "+rowid IN" in sql:
        return "coverage walk (a concept's matches among the candidates)"
    if "FROM skills WHERE rowid IN" in sql:
        return "the page's rows (_rows)"
    if "ORDER BY score" in sql:
        expression = str(params[0])
        if expression.startswith("{"):
            return "ranked: concepts ORed, head columns"
        return "ranked: concepts ANDed" if " AND " in expression else "ranked: concepts ORed"
    return " ".join(sql.split())[:50]


def measure(lib: Path, index_dir: Path, rounds: int) -> tuple[float, dict[str, list[float]]]:
    """(ms a search, {kind: [calls a search, ms a search, rows a call]})."""
    queries = [q["query"] for q in generate.load_queries(lib) if q.get("answer")]
    library = SkillLibrary(LibraryConfig(roots=[lib], index_dir=index_dir, watch=False))
    parts: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    plain = store.SkillIndex._tuples

    def timed(self: store.SkillIndex, sql: str, params: Sequence[Any]) -> Any:
        started = time.thread_time()
        rows = plain(self, sql, params).fetchall()
        part = parts[kind(sql, params)]
        part[0], part[1], part[2] = part[0] + 1, part[1] + time.thread_time() - started, part[2] + len(rows)
        return iter(rows)

    try:
        library.sync()
        reader = LibraryReader(library)
        for query in queries:  # warm-up: caches, vocabulary, page cache
            search_patterns(reader, query, limit=10)
        store.SkillIndex._tuples = timed  # type: ignore[method-assign]
        started = time.thread_time()
        for _ in range(rounds):
            for query in queries:
                search_patterns(reader, query, limit=10)
        whole = time.thread_time() - started
    finally:
        store.SkillIndex._tuples = plain  # type: ignore[method-assign]
        library.close()
    searches = rounds * len(queries)
    return whole * 1000 / searches, {
        name: [calls / searches, seconds * 1000 / searches, rows / max(calls, 1)]
        for name, (calls, seconds, rows) in parts.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, action="append", help="skills (repeatable); default 1,000 and 10,000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    parser.add_argument("--indexes", type=Path, help="keep the indexes here, DIR/idx-N (default: temporary ones)")
    args = parser.parse_args(argv)
    for n in args.n or [1000, 10000]:
        lib = args.work / f"lib-{n}"
        generate.ensure_library(lib, n)
        with tempfile.TemporaryDirectory(prefix="skillshelf-search-parts-") as scratch:
            whole, parts = measure(lib, args.indexes / f"idx-{n}" if args.indexes else Path(scratch), args.rounds)
        in_sql = sum(ms for _, ms, _ in parts.values())
        print(f"\n{n:,} skills: {whole:.3f} ms a search (thread CPU), {in_sql / whole:.0%} of it in these statements")
        print("| part | calls a search | ms a search | share | rows a call |\n|---|---:|---:|---:|---:|")
        for name, (calls, ms, rows) in sorted(parts.items(), key=lambda item: -item[1][1]):
            print(f"| {name} | {calls:.2f} | {ms:.3f} | {ms / whole:.0%} | {rows:.1f} |")
        print(f"| the rest (Python, small reads) | | {whole - in_sql:.3f} | {(whole - in_sql) / whole:.0%} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
