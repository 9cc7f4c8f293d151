"""Where a search by meaning spends its time beyond the encode, part by part, in thread CPU time (issue 36).

    python bench/fusion_parts.py [--queries 300] [--rounds 4] [--index-dir DIR] [--model DIR]

One `SkillLibrary` over ../shared/corpora with the test model (the library embedded first; `--index-dir` keeps
it for a later run). Every query's vector is cached first, so no part includes an encode. Then per query, the
parts in turn (the order reversed every other round), each timed in the calling thread's CPU time (load on the
other core does not count): the word search at a page of 5 (`search5`, what words alone cost), the fusion's
word pool (`pool`: up to 50 hits of the page's own candidate walk, as `Ranking.search` asks since H79), a word
search for 50 hits (`search50`: the pool before H79, its 250 candidates' coverage walk and 50 hits), `nearest`
(the vector scores and the rows of the skills meaning alone finds), `fused`, and the whole search by meaning with
the vector cached (`cached`). Prints the median of each in ms. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from semantic import CORPORA, MODEL, query_texts

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.ranking import FUSION_POOL, MIN_SIMILARITY, fused
from skillshelf.library.index.store import SearchFilters


def parts(library: SkillLibrary, query: str) -> dict[str, Callable[[], object]]:
    """Each part of a search by meaning for `query`, as a call (the later ones on the earlier ones' results)."""
    index, semantic, filters = library.index, library.semantic, SearchFilters()
    assert semantic is not None
    by_words = index.search(query, filters, FUSION_POOL, page=5)
    rows = {s.id: s for s in by_words}

    def admits(ids: list[str]) -> set[str]:  # as `Ranking.search`'s, without keeping the rows read
        found = rows | {s.id: s for s in index.get_many([i for i in ids if i not in rows])}
        return {i for i in ids if i in found and filters.admits(found[i])}

    closeness = semantic.nearest(query, admits, FUSION_POOL, MIN_SIMILARITY, also=list(rows))
    every = rows | {s.id: s for s in index.get_many([i for i, _ in closeness.nearest if i not in rows])}
    return {
        "search5": lambda: index.search(query, filters, 5),
        "pool": lambda: index.search(query, filters, FUSION_POOL, page=5),
        "search50": lambda: index.search(query, filters, FUSION_POOL),
        "nearest": lambda: semantic.nearest(query, admits, FUSION_POOL, MIN_SIMILARITY, also=list(rows)),
        "fused": lambda: fused(query, by_words, closeness, every, 5),
        "cached": lambda: library.search(query, filters, 5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--index-dir", type=Path, help="an index folder to keep (default: a temporary one)")
    parser.add_argument("--model", type=Path, default=MODEL)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skillshelf-fusion-") as scratch:
        roots = sorted(p for p in CORPORA.iterdir() if p.is_dir())
        index_dir = args.index_dir or Path(scratch)
        library = SkillLibrary(LibraryConfig(roots=roots, index_dir=index_dir, semantic_model=args.model, watch=False))
        library.sync()
        assert library.semantic is not None
        library.semantic.request_pass()
        library.semantic.wait_idle(1800)
        queries = query_texts(args.queries)
        for query in queries:
            library.search(query, SearchFilters(), 5)  # its vector cached
        times: dict[str, list[float]] = {}
        for number in range(args.rounds):
            for query in queries:
                calls = list(parts(library, query).items())
                for name, call in calls if number % 2 == 0 else calls[::-1]:
                    started = time.thread_time()
                    call()
                    times.setdefault(name, []).append((time.thread_time() - started) * 1000)
        library.close()
    print(" ".join(f"{name} {statistics.median(ms):.3f}" for name, ms in times.items()), "(ms, median)")


if __name__ == "__main__":
    main()
