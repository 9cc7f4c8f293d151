"""Recall of a generated library's queries, in process (no MCP transport): for tuning and tests.

    python bench/eval_generated.py /tmp/skillshelf-bench/ind-10000 [--misses]

Reads `DIR.queries.json` (written by generate.py or gen_independent.py), builds the index in a
temporary directory, runs every query through the searchPatterns service (limit 10) and prints
recall@1/@5/@10 and MRR@10, overall and per query kind.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.skills.service import search_patterns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("--misses", action="store_true")
    args = ap.parse_args(argv)
    queries = json.loads(args.library.with_name(args.library.name + ".queries.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        library = SkillLibrary(LibraryConfig(roots=[args.library], index_dir=Path(tmp), watch=False))
        try:
            started = time.perf_counter()
            library.sync()
            print(f"index built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            ranks: dict[str, list[int | None]] = defaultdict(list)
            started = time.perf_counter()
            for q in queries["queries"]:
                ids = [h.id for h in search_patterns(LibraryReader(library), q["query"], limit=10).hits]
                rank = ids.index(q["answer"]) + 1 if q["answer"] in ids else None
                for kind in dict.fromkeys(("all", q.get("kind", "all"))):
                    ranks[kind].append(rank)
                if args.misses and (rank is None or rank > 5):
                    print(f"  miss: {q['query']!r} rank {rank} want {q['answer']} got {ids[:3]}")
            per_query_ms = (time.perf_counter() - started) * 1000 / max(len(queries["queries"]), 1)
        finally:
            library.close()
    for kind, found in ranks.items():
        n = len(found)
        hits = [r for r in found if r is not None]
        print(
            f"{kind:6} {n:4}  recall@1 {sum(r <= 1 for r in hits) / n:.3f}"
            f"  recall@5 {sum(r <= 5 for r in hits) / n:.3f}"
            f"  recall@10 {len(hits) / n:.3f}  MRR@10 {sum(1 / r for r in hits) / n:.3f}"
        )
    print(f"{per_query_ms:.2f} ms per search in process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
