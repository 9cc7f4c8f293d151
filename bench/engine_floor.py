"""searchPatterns' service against the bare engines under it, in one process, interleaved query by query (issue 36).

    python bench/engine_floor.py [--n 1000 --n 10000 [--n 100000]] [--rounds 5] [--work DIR] [--out FILE]
    python bench/engine_floor.py --n 1000 --profile [--rounds 3]     # cProfile breakdown of search_patterns

For each size: generate (or reuse) the synthetic library (bench/generate.py), build skillshelf's index of it
(SkillLibrary, in a temporary directory), and open a second, plain SQLite connection on the same index file.
Then, every round, for every generated query, in an order rotated query by query:

- `ours`: `skills.service.search_patterns(reader, query, limit=10)`, the searchPatterns tool's service;
- `fts-and`: the bare FTS5 query on the same file, the query's words (`query_terms`, quoted) ANDed,
  `ORDER BY bm25(skills_fts, <the index's FIELD_WEIGHTS>) LIMIT 10`;
- `fts-or`: the same with the words ORed;
- `tantivy` (when the `tantivy` package is installed; it is not a dependency): the same five fields with the
  same weights as boosts, the words ORed, top 10, on an in-memory tantivy index of the same rows.

Each round gives every engine's median per query; the report is the median over rounds, and the ratios
ours / each floor per round (median over rounds). Recall@5 of the generator's known answers is given for each
engine (a floor that finds less is not doing the same job). Nothing here asserts on time: it only measures.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import FIELD_WEIGHTS
from skillshelf.library.indexing.terms import query_terms
from skillshelf.skills.service import search_patterns

try:  # imported as bench.engine_floor (repo root on sys.path)
    from bench import generate
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]

FIELDS = ("name", "description", "tags", "headings", "body")  # skills_fts's columns, FIELD_WEIGHTS' order
LIMIT = 10
WEIGHTS = ", ".join(str(w) for w in FIELD_WEIGHTS)
BARE_SQL = f"SELECT rowid FROM skills_fts WHERE skills_fts MATCH ? ORDER BY bm25(skills_fts, {WEIGHTS}) LIMIT {LIMIT}"

Search = Callable[[str], list[Any]]


def log(msg: str) -> None:
    print(f"[engine-floor] {msg}", file=sys.stderr, flush=True)


def fts_expression(query: str, joiner: str) -> str | None:
    """The query's words, each quoted (no FTS5 syntax leaks through), joined by AND or OR."""
    terms = query_terms(query)
    return f" {joiner} ".join('"' + t.replace('"', '""') + '"' for t in terms) if terms else None


class Engines:
    """Every engine timed, on one library's index; each answers a query with its top ids (rowids for the floors)."""

    def __init__(self, lib: Path, index_dir: Path) -> None:
        started = time.perf_counter()
        self.library = SkillLibrary(LibraryConfig(roots=[lib], index_dir=index_dir, watch=False))
        self.library.sync()
        self.index_s = time.perf_counter() - started
        self.reader = LibraryReader(self.library)
        path = self.library.index.path
        self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self.ids = dict(self.conn.execute("SELECT rowid, id FROM skills").fetchall())
        self.tantivy_index_s: float | None = None
        self.tantivy = self._tantivy()

    def close(self) -> None:
        self.conn.close()
        self.library.close()

    def ours(self, query: str) -> list[Any]:
        return search_patterns(self.reader, query, limit=LIMIT).hits

    def fts_and(self, query: str) -> list[Any]:
        expression = fts_expression(query, "AND")
        return self.conn.execute(BARE_SQL, [expression]).fetchall() if expression else []

    def fts_or(self, query: str) -> list[Any]:
        expression = fts_expression(query, "OR")
        return self.conn.execute(BARE_SQL, [expression]).fetchall() if expression else []

    def _tantivy(self) -> Search | None:
        try:
            import tantivy  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            log("tantivy is not installed: its column is left out (pip install tantivy)")
            return None
        started = time.perf_counter()
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("rowid", stored=True, indexed=False)
        for name in FIELDS:
            builder.add_text_field(name, stored=False, tokenizer_name="en_stem")
        index = tantivy.Index(builder.build())
        writer = index.writer(heap_size=200_000_000, num_threads=1)
        for row in self.conn.execute(f"SELECT rowid, {', '.join(FIELDS)} FROM skills_fts"):
            writer.add_document(tantivy.Document(rowid=row[0], **dict(zip(FIELDS, row[1:], strict=True))))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        self.tantivy_index_s = time.perf_counter() - started
        searcher = index.searcher()
        boosts = dict(zip(FIELDS, FIELD_WEIGHTS, strict=True))

        def search(query: str) -> list[Any]:
            terms = query_terms(query)
            if not terms:
                return []
            parsed = index.parse_query(" ".join(terms), list(FIELDS), field_boosts=boosts)
            hits: list[Any] = searcher.search(parsed, LIMIT).hits  # (Any where tantivy is not installed)
            return hits

        self._tantivy_doc = searcher.doc
        return search

    def engines(self) -> dict[str, Search]:
        found: dict[str, Search] = {"ours": self.ours, "fts-and": self.fts_and, "fts-or": self.fts_or}
        if self.tantivy is not None:
            found["tantivy"] = self.tantivy
        return found

    def top_ids(self, engine: str, query: str) -> list[str]:
        """The ids an engine ranks first (outside the timing: the floors answer rowids)."""
        answer = self.engines()[engine](query)
        if engine == "ours":
            return [hit.id for hit in answer]
        if engine == "tantivy":
            return [self.ids[self._tantivy_doc(address)["rowid"][0]] for _, address in answer]
        return [self.ids[row[0]] for row in answer]


def recall_at_5(engines: Engines, name: str, queries: list[dict[str, Any]]) -> float:
    found = sum(q["answer"] in engines.top_ids(name, q["query"])[:5] for q in queries)
    return round(found / max(len(queries), 1), 3)


def one_round(engines: dict[str, Search], queries: list[str], number: int) -> dict[str, float]:
    """Every engine on every query, the engines' order rotated query by query; each engine's median ms."""
    names = list(engines)
    times: dict[str, list[float]] = {name: [] for name in names}
    for index, query in enumerate(queries):
        shift = (index + number) % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            engines[name](query)
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def measure(lib: Path, n: int, rounds: int) -> dict[str, Any]:
    queries = [q for q in generate.load_queries(lib) if q.get("answer")]
    with tempfile.TemporaryDirectory(prefix="skillshelf-engine-floor-") as index_dir:
        engines = Engines(lib, Path(index_dir))
        try:
            log(f"n={n}: index built in {engines.index_s:.1f} s (tantivy: {engines.tantivy_index_s or 0:.1f} s)")
            timed = engines.engines()
            texts = [q["query"] for q in queries]
            one_round(timed, texts, -1)  # warm-up: caches, vocabulary, page cache
            per_round = [one_round(timed, texts, number) for number in range(rounds)]
            recall = {name: recall_at_5(engines, name, queries) for name in timed}
            index_s, tantivy_s = engines.index_s, engines.tantivy_index_s
        finally:
            engines.close()
    floors = [name for name in per_round[0] if name != "ours"]
    ratios = {f: statistics.median(r["ours"] / r[f] for r in per_round if r[f] > 0) for f in floors}
    return {
        "n": n,
        "queries": len(queries),
        "rounds": rounds,
        "index_build_s": round(index_s, 1),
        "tantivy_index_build_s": None if tantivy_s is None else round(tantivy_s, 1),
        "median_ms": {name: round(statistics.median(r[name] for r in per_round), 4) for name in per_round[0]},
        "ratio_ours_to": {f: round(v, 2) for f, v in ratios.items()},
        "recall_at_5": recall,
        "per_round_ms": [{k: round(v, 4) for k, v in r.items()} for r in per_round],
    }


# The parts the issue names, by the functions that hold them (cumulative time, so nested parts overlap).
PARTS = {
    "search_patterns (all)": ("service.py", "search_patterns"),
    "store search (SkillIndex.search)": ("store.py", "search"),
    "query parsing (concepts)": ("query.py", "concepts"),
    "concepts matched (_matchable)": ("store.py", "_matchable"),
    "ranking (_rank)": ("store.py", "_rank"),
    "coverage walk (_with_coverage)": ("store.py", "_with_coverage"),
    "partial matches (_partial_matches)": ("store.py", "_partial_matches"),
    "_fetch": ("store.py", "_fetch"),
    "_fetch's sort keys (coarse, every candidate)": ("store.py", "coarse"),
    "_rows (the page's rows)": ("store.py", "_rows"),
    "dataclasses.replace": ("dataclasses.py", "replace"),
    "IndexedSkill.from_row": ("store.py", "from_row"),
    "pydantic hit models (_hit)": ("service.py", "_hit"),
    "verified ids (reader.verified_ids)": ("reader.py", "verified_ids"),
    "freshness check (ensure_fresh)": ("freshness.py", "ensure_fresh"),
    # execute runs a statement to its first row: all of an ORDER BY's work; the rows after the first are read
    # while the caller iterates, which cProfile counts in the caller's own time (the coverage walk's, mostly)
    "sqlite execute (all)": ("~", "<method 'execute' of 'sqlite3.Connection' objects>"),
}


def profile(lib: Path, rounds: int) -> list[tuple[str, float, float]]:
    """cProfile of search_patterns over the generated queries: (part, cumulative s, share of the whole)."""
    queries = [q["query"] for q in generate.load_queries(lib) if q.get("answer")]
    with tempfile.TemporaryDirectory(prefix="skillshelf-engine-profile-") as index_dir:
        engines = Engines(lib, Path(index_dir))
        try:
            for query in queries:  # warm-up, unprofiled
                engines.ours(query)
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(rounds):
                for query in queries:
                    engines.ours(query)
            profiler.disable()
        finally:
            engines.close()
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    cumulative: dict[tuple[str, str], float] = {}
    for (filename, _, function), entry in stats.items():
        key = (Path(filename).name if filename != "~" else "~", function)
        cumulative[key] = cumulative.get(key, 0.0) + entry[3]
    whole = cumulative.get(PARTS["search_patterns (all)"], 0.0) or 1.0
    rows = [(part, cumulative.get(key, 0.0), cumulative.get(key, 0.0) / whole) for part, key in PARTS.items()]
    profiler.dump_stats(str(Path(tempfile.gettempdir()) / "engine_floor.prof"))
    return rows


def print_table(results: list[dict[str, Any]]) -> None:
    engines = list(results[0]["median_ms"])
    floors = [e for e in engines if e != "ours"]
    head = " | ".join(f"{e} ms" for e in engines) + " | " + " | ".join(f"ours / {f}" for f in floors)
    recalls = " | ".join(f"recall@5 {e}" for e in engines)
    print(f"| skills | {head} | {recalls} |")
    print("|---:|" + "---:|" * (2 * len(engines) + len(floors)))
    for r in results:
        times = " | ".join(str(r["median_ms"][e]) for e in engines)
        ratios = " | ".join(f"{r['ratio_ours_to'][f]}x" for f in floors)
        recall = " | ".join(str(r["recall_at_5"][e]) for e in engines)
        print(f"| {r['n']:,} | {times} | {ratios} | {recall} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, action="append", help="skills (repeatable); default 1,000 and 10,000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--profile", action="store_true", help="a cProfile breakdown of search_patterns instead")
    args = parser.parse_args(argv)
    sizes = args.n or [1000, 10000]
    if args.profile:
        for n in sizes:
            lib = args.work / f"lib-{n}"
            generate.ensure_library(lib, n)
            print(f"\nsearch_patterns at {n:,} skills, {args.rounds} round(s) of the generated queries (cProfile):")
            print("| part | cumulative s | share |\n|---|---:|---:|")
            for part, seconds, share in profile(lib, args.rounds):
                print(f"| {part} | {seconds:.3f} | {share:.0%} |")
            print(f"(the whole profile: {Path(tempfile.gettempdir()) / 'engine_floor.prof'}; pstats reads it)")
        return 0
    results = []
    for n in sizes:
        lib = args.work / f"lib-{n}"
        generate.ensure_library(lib, n)
        results.append(measure(lib, n, args.rounds))
        log(f"n={n}: {results[-1]['median_ms']} ours / floors {results[-1]['ratio_ours_to']}")
    print_table(results)
    if args.out:
        machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()}
        args.out.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
