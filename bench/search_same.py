"""Does a cut to search leave every answer as it was? This tree's searchPatterns against an earlier commit's.

    python bench/search_same.py --parent main [--n 1000 --n 10000] [--spent] [--work DIR] [--indexes DIR]

A mechanical cut (issue 36) must give the same hits, in the same order, with the same scores. For every query of
the generator's (at each `--n`) and of the corpora's development files (bench/queries/corpora.txt,
corpora-dev2.txt, corpora-dev3.txt, over ../shared/corpora), at limits 5, 10 and 50 and with `min_quality` 0.5,
both trees answer on one index file (the parent's `src/skillshelf` exported as in bench/search_ab.py); the JSON of
the two answers is compared byte for byte. It prints how many are identical and the first differences, and exits
1 if any differs. `--spent` adds the spent held-out sets (every corpora-heldoutN.txt whose first line does not say
`# UNSPENT`). `--indexes DIR` keeps the indexes (DIR/idx-corpora, DIR/idx-N) for the next run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path
from typing import Any

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.skills.service import search_patterns

try:  # imported as bench.search_same (repo root on sys.path)
    from bench import generate
    from bench.search_ab import PARENT, export_parent, parent_service
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]
    from search_ab import PARENT, export_parent, parent_service  # type: ignore[no-redef,import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
DEV_FILES = ("corpora.txt", "corpora-dev2.txt", "corpora-dev3.txt")
UNSPENT_MARK = "# UNSPENT"  # the first line of a held-out set no ranking change has been judged on yet


def spent_files(queries: Path = ROOT / "bench" / "queries") -> tuple[str, ...]:
    """The held-out sets judged on already, which a speed change may be checked on: every one whose first line
    does not mark it unspent (an unspent set is for the lead's one evaluation), in their numbers' order."""
    found = []
    for path in queries.glob("corpora-heldout*.txt"):
        with path.open(encoding="utf-8") as lines:
            if not lines.readline().startswith(UNSPENT_MARK):
                found.append(path)
    return tuple(path.name for path in sorted(found, key=lambda path: int(path.stem.removeprefix("corpora-heldout"))))


SPENT_FILES = spent_files()
CALLS: tuple[dict[str, Any], ...] = ({"limit": 5}, {"limit": 10}, {"limit": 50}, {"limit": 10, "min_quality": 0.5})


def log(msg: str) -> None:
    print(f"[search-same] {msg}", file=sys.stderr, flush=True)


def dev_queries(files: tuple[str, ...] = DEV_FILES) -> list[str]:
    """The queries of the corpora's development files, or of `files` (`kind | query | answers` lines)."""
    lines = [line for name in files for line in (ROOT / "bench" / "queries" / name).read_text("utf-8").splitlines()]
    return [line.split("|")[1].strip() for line in lines if line.strip() and not line.startswith("#")]


def compare(root: Path, queries: list[str], index_dir: Path) -> tuple[int, int, list[str]]:
    """(identical, compared, the first differences) of both trees' answers over one index of `root`."""
    reader_module = importlib.import_module(f"{PARENT}.library.access.reader")
    library_module = importlib.import_module(f"{PARENT}.library.index.library")
    parent_search = parent_service().search_patterns
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=index_dir, watch=False))
    library.sync()
    parent_library = library_module.SkillLibrary(
        library_module.LibraryConfig(roots=[root], index_dir=index_dir, watch=False)
    )
    try:
        parent_library.sync()  # the index this tree built: nothing to parse
        ours, theirs = LibraryReader(library), reader_module.LibraryReader(parent_library)
        for query in queries:  # both vocabularies built before comparing (the first searches start them)
            search_patterns(ours, query)
            parent_search(theirs, query)
        library.index.vocabulary()
        parent_library.index.vocabulary()
        same, differences = 0, list[str]()
        for query in queries:
            for call in CALLS:
                mine = search_patterns(ours, query, **call).model_dump_json()
                before = parent_search(theirs, query, **call).model_dump_json()
                same += mine == before
                if mine != before and len(differences) < 5:
                    differences.append(f"{query!r} {call}:\n  parent {before}\n  this   {mine}")
    finally:
        parent_library.close()
        library.close()
    return same, len(queries) * len(CALLS), differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parent", required=True, help="the commit (or branch) to compare with, e.g. main")
    parser.add_argument("--n", type=int, action="append", help="skills (repeatable); default 1,000 and 10,000")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    parser.add_argument("--indexes", type=Path, help="keep the indexes here (default: temporary ones)")
    parser.add_argument("--spent", action="store_true", help="also the spent held-out sets (not marked # UNSPENT)")
    args = parser.parse_args(argv)
    sets: list[tuple[str, str, Path, list[str]]] = [("corpora, development queries", "corpora", CORPORA, dev_queries())]
    if args.spent:
        sets.append(("corpora, spent held-out sets", "corpora", CORPORA, dev_queries(SPENT_FILES)))
    for n in args.n or [1000, 10000]:
        lib = args.work / f"lib-{n}"
        generate.ensure_library(lib, n)
        sets.append((f"generated, {n:,} skills", str(n), lib, [q["query"] for q in generate.load_queries(lib)]))
    differing = 0
    with tempfile.TemporaryDirectory(prefix="skillshelf-parent-") as copy:
        export_parent(args.parent, Path(copy))
        for label, key, root, queries in sets:
            with tempfile.TemporaryDirectory(prefix="skillshelf-search-same-") as scratch:
                index_dir = args.indexes / f"idx-{key}" if args.indexes else Path(scratch)
                same, compared, differences = compare(root, queries, index_dir)
            print(f"{label}: {same}/{compared} answers identical ({len(queries)} queries x {len(CALLS)} calls)")
            for difference in differences:
                print(difference)
            differing += compared - same
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
