"""Do two checkouts rank identically? Every hit of every query, by words and by meaning, compared field by field.

    python bench/meaning_same.py --before SRC [--index-dir DIR] [--model DIR]

    # against another commit:
    git archive 43a36e9 src | tar -x -C /tmp/before && python bench/meaning_same.py --before /tmp/before/src

A change meant to make a search faster, not different (issue 36's meaning target: no held-out set is left to judge
a ranking change), must give the same hits: the same ids in the same order with the same scores and every other
field the same. This runs a worker process on each checkout's src/ (first on PYTHONPATH), each a `SkillLibrary` over
../shared/corpora with the test model, on the same index folder (the first embeds the library; the second finds the
vectors stored), and sends every distinct query of corpora.txt, corpora-dev2/3.txt and the spent held-out sets
(those whose header says SPENT) to `SkillIndex.search` (words) and `SkillLibrary.search` (words and meaning), at
limits 5 and 20 with no filter and at 5 with three filters (which the fusion applies to the skills meaning alone
finds). Prints how many answers differ, and the first few; exits 1 when any does. `--save FILE` keeps the
other checkout's answers, and `--before FILE.json` compares against answers kept so (no second run of it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPORA = HERE.parents[0].parent / "shared" / "corpora"
MODEL = HERE.parent / ".cache" / "test-model" / "all-MiniLM-L6-v2"
FIXED_SETS = ["corpora.txt", "corpora-dev2.txt", "corpora-dev3.txt"]
LIMITS = (5, 20)
EMBED_DEADLINE_S = 1800.0


def query_files() -> list[Path]:
    """The development sets and every held-out set already spent (its first line says SPENT)."""
    spent = [
        path
        for path in sorted((HERE / "queries").glob("corpora-heldout*.txt"))
        if "SPENT" in path.read_text(encoding="utf-8").split("\n", 1)[0]
    ]
    return [HERE / "queries" / name for name in FIXED_SETS] + spent


def queries() -> list[str]:
    """Distinct query texts (`kind | text | answers` lines) of `query_files`, in file order."""
    seen: dict[str, None] = {}
    for path in query_files():
        for line in path.read_text(encoding="utf-8").splitlines():
            if "|" in line and not line.startswith("#"):
                seen.setdefault(line.split("|")[1].strip(), None)
    return [text for text in seen if text]


def worker(index_dir: Path, model: Path, out: Path) -> None:
    """Every query's hits in both modes, written as JSON to `out`."""
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.library.index.store import IndexedSkill, SearchFilters

    roots = sorted(p for p in CORPORA.iterdir() if p.is_dir())
    library = SkillLibrary(LibraryConfig(roots=roots, index_dir=index_dir, semantic_model=model, watch=False))
    library.sync()
    assert library.semantic is not None
    library.semantic.request_pass()
    library.semantic.wait_idle(EMBED_DEADLINE_S)
    if not library.semantic.ready:
        raise RuntimeError(f"semantic search is off: {library.semantic.error}")
    categories = sorted({skill.category for skill in library.index.overview()})
    asked = [(limit, "none", SearchFilters()) for limit in LIMITS] + [
        (5, "quality>=7", SearchFilters(min_quality=7.0)),
        (5, "category", SearchFilters(category=categories[len(categories) // 2])),
        (5, "visible", SearchFilters(visible=lambda skill_id: zlib.crc32(skill_id.encode()) % 3 != 0)),
    ]

    def fields(hits: list[IndexedSkill]) -> list[list[Any]]:
        """Every field of each hit, the stored JSON by its checksum (so both checkouts' answers stay small)."""
        rows = [dataclasses.astuple(hit) for hit in hits]
        return [[*row[:-4], zlib.crc32(row[-4].encode()), *row[-3:]] for row in rows]

    found: dict[str, Any] = {}
    for query in queries():
        for limit, name, chosen in asked:
            key = f"{limit} {name} {query}"
            found[f"words {key}"] = fields(library.index.search(query, chosen, limit))
            found[f"meaning {key}"] = fields(library.search(query, chosen, limit))
    library.close()
    out.write_text(json.dumps(found), encoding="utf-8")


def run_worker(src: Path, index_dir: Path, model: Path, out: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(src))
    script = [sys.executable, str(Path(__file__).resolve()), "--worker", "--out", str(out)]
    subprocess.run([*script, "--index-dir", str(index_dir), "--model", str(model)], env=env, check=True)
    found: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return found


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The answers that differ, named by mode, limit, filter and query."""
    return [key for key in sorted(before.keys() | after.keys()) if before.get(key) != after.get(key)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="the other checkout's src/, or its answers kept by --save")
    parser.add_argument("--save", type=Path, help="keep the other checkout's answers in this file")
    parser.add_argument("--index-dir", type=Path, help="an index folder to keep (default: a temporary one)")
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.index_dir, args.model, args.out)
        return
    if args.before is None:
        parser.error("--before SRC is required: the checkout to compare against")
    with tempfile.TemporaryDirectory(prefix="skillshelf-same-") as scratch:
        index_dir = args.index_dir or Path(scratch) / "index"
        if args.before.suffix == ".json":
            before = json.loads(args.before.read_text(encoding="utf-8"))
        else:
            before = run_worker(args.before, index_dir, args.model, args.save or Path(scratch) / "before.json")
        after = run_worker(HERE.parent / "src", index_dir, args.model, Path(scratch) / "after.json")
    differ = compare(before, after)
    print(f"{len(before)} answers ({len(queries())} queries, 2 modes, 5 limits and filters); {len(differ)} differ")
    for key in differ[:10]:
        print(f"  {key}:\n    before {before.get(key)}\n    after  {after.get(key)}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
