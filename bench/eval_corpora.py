"""Search quality on real skills: the labelled queries of bench/queries/corpora.txt over ../shared/corpora.

    python bench/eval_corpora.py                 # the development part (2/3 of the queries)
    python bench/eval_corpora.py --heldout       # the held-out part (every third query) as well
    python bench/eval_corpora.py --misses        # also print each miss with what ranked instead

The queries were written from a user's task (a person describing a problem, with typos,
abbreviations and synonyms) without looking at the ranking. Every third query is held out: it is
evaluated only when asked, and never used to tune the ranking. A query may accept several skills
(the corpora hold near-duplicates, e.g. three post-mortem skills); a hit is any of them.

In process, through the same service function the searchPatterns tool calls (limit 10). The index
is built in a temporary directory; the corpora are only read.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillshelf.library.skill_library import LibraryConfig, SkillLibrary
from skillshelf.patterns.service import search_patterns

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
QUERIES = Path(__file__).with_name("queries") / "corpora.txt"
PREFIXES = {
    "KD": "K-Dense-AI__claude-scientific-skills",
    "AR": "alirezarezvani__claude-skills",
    "AN": "anthropics__skills",
    "GH": "github__awesome-copilot",
    "OB": "obra__superpowers",
    "WS": "wshobson__agents",
}


@dataclass(frozen=True)
class Query:
    number: int
    kind: str
    text: str
    answers: tuple[str, ...]

    @property
    def heldout(self) -> bool:
        return self.number % 3 == 2


def load_queries(path: Path = QUERIES) -> list[Query]:
    text = path.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    queries = []
    for number, line in enumerate(lines):
        kind, text, answers = (part.strip() for part in line.split("|"))
        ids = tuple(_expand(a.strip()) for a in answers.split(","))
        queries.append(Query(number, kind, text, ids))
    return queries


def _expand(short: str) -> str:
    prefix, name = short.split("/", 1)
    return f"{PREFIXES[prefix]}/{name}"


def rank_of(ids: list[str], answers: tuple[str, ...]) -> int | None:
    return next((i + 1 for i, skill_id in enumerate(ids) if skill_id in answers), None)


def scores(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    found = [r for r in ranks if r is not None]
    return {
        "queries": len(ranks),
        "hit@1": sum(r <= 1 for r in found) / n,
        "hit@5": sum(r <= 5 for r in found) / n,
        "mrr@10": sum(1 / r for r in found if r <= 10) / n,
    }


def evaluate(library: SkillLibrary, queries: list[Query]) -> dict[str, Any]:
    known = {skill.id for skill in library.overview()}
    unknown = [a for q in queries for a in q.answers if a not in known]
    if unknown:
        raise SystemExit(f"answers not in the corpora: {unknown}")
    ranks: dict[int, int | None] = {}
    returned: dict[int, list[str]] = {}
    for q in queries:
        ids = [hit.id for hit in search_patterns(library, q.text, limit=10).hits]
        returned[q.number] = ids
        ranks[q.number] = rank_of(ids, q.answers)
    by_kind: dict[str, list[int | None]] = defaultdict(list)
    for q in queries:
        by_kind[q.kind].append(ranks[q.number])
    return {
        "all": scores([ranks[q.number] for q in queries]),
        "byKind": {kind: scores(r) for kind, r in sorted(by_kind.items())},
        "misses": [
            {"query": q.text, "answers": list(q.answers), "rank": ranks[q.number], "top": returned[q.number][:5]}
            for q in queries
            if ranks[q.number] is None or ranks[q.number] > 5  # type: ignore[operator]
        ],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--heldout", action="store_true", help="also evaluate the held-out third")
    ap.add_argument("--misses", action="store_true", help="print the misses")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if not CORPORA.is_dir():
        print(f"corpora not found at {CORPORA}", file=sys.stderr)
        return 2
    queries = load_queries()
    parts = {"development": [q for q in queries if not q.heldout]}
    if args.heldout:
        parts["heldout"] = [q for q in queries if q.heldout]
    with tempfile.TemporaryDirectory() as tmp:
        library = SkillLibrary(LibraryConfig(roots=[CORPORA], index_dir=Path(tmp), watch=False))
        try:
            library.sync()
            report = {name: evaluate(library, part) for name, part in parts.items()}
        finally:
            library.close()
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    for name, result in report.items():
        a = result["all"]
        head = f"{name}: {a['queries']} queries  hit@1 {a['hit@1']:.3f}"
        print(f"{head}  hit@5 {a['hit@5']:.3f}  MRR@10 {a['mrr@10']:.3f}")
        for kind, s in result["byKind"].items():
            print(f"  {kind:5} {s['queries']:3}  hit@5 {s['hit@5']:.3f}  MRR@10 {s['mrr@10']:.3f}")
        if args.misses:
            for miss in result["misses"]:
                print(f"  miss: {miss['query']!r} rank {miss['rank']} want {miss['answers'][0]} got {miss['top'][:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
