"""The spelling vocabulary's build (`Vocabulary.from_texts`) in this tree against an earlier commit's, in one process.

    python bench/vocab_build.py --parent main --index FILE [--index FILE ...] [--rounds 5]

FILE is a skill index (an `index-*.sqlite3` a library keeps in its index folder). Its texts (`VOCABULARY_SQL`) are
read once; both trees' `Vocabulary.from_texts` build from them in turn, the process's CPU time of each taken per
round; the report is the median. It also says whether the two vocabularies are the same (words and their counts,
in order; abbreviations; words written in lower case; the trigram index). Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from skillshelf.library.index.query import Vocabulary
from skillshelf.library.index.store import VOCABULARY_SQL

try:  # imported as bench.vocab_build (repo root on sys.path)
    from bench.search_ab import PARENT, export_parent
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    from search_ab import PARENT, export_parent  # type: ignore[no-redef,import-not-found,unused-ignore]


def same(a: Any, b: Any) -> bool:
    return bool(
        list(a.counts.items()) == list(b.counts.items())
        and a.acronyms == b.acronyms
        and a.written_lower == b.written_lower
        and dict(a._by_trigram) == dict(b._by_trigram)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parent", required=True, help="the commit (or branch) to compare with, e.g. main")
    parser.add_argument("--index", type=Path, action="append", required=True, help="a skill index file")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="skillshelf-parent-") as copy:
        export_parent(args.parent, Path(copy))
        parent = importlib.import_module(f"{PARENT}.library.index.query").Vocabulary
        print("| index | texts | parent ms | this ms | this / parent | same vocabulary |")
        print("|---|---:|---:|---:|---:|---|")
        for index in args.index:
            conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
            texts = [" ".join(map(str, row)) for row in conn.execute(VOCABULARY_SQL)]
            conn.close()
            times: dict[str, list[float]] = {"parent": [], "this": []}
            for _ in range(args.rounds):
                for name, build in (("parent", parent.from_texts), ("this", Vocabulary.from_texts)):
                    started = time.process_time()
                    build(texts)
                    times[name].append((time.process_time() - started) * 1000)
            before, after = statistics.median(times["parent"]), statistics.median(times["this"])
            identical = same(parent.from_texts(texts), Vocabulary.from_texts(texts))
            ratio = after / before
            print(f"| {index.name} | {len(texts):,} | {before:.0f} | {after:.0f} | {ratio:.2f}x | {identical} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
