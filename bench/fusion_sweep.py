"""How semantic search's two rankings are best fused: a sweep over the labelled real queries.

    python bench/fusion_sweep.py --semantic-model DIR [--queries FILE ...]

For every query, the word ranking (the fusion's pool: up to 50 of a page of 10's candidates, scores relative to
the best) and the cosine similarity
of every skill are computed once, in process, over ../shared/corpora; then each fusion is scored
offline: words alone, meaning alone, reciprocal rank fusion (k = 60, the form used until 2026-11-25)
and the convex combination of the two scores that `skillshelf.library.index.ranking.fused` uses, for
several weights. Prints hit@5 / MRR@10 per query file and over all of them. Tuning on a file spends it:
keep a held-out file out of the sweep (docs/search.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:  # imported as bench.fusion_sweep (repo root on sys.path)
    from bench.eval_corpora import CORPORA, load_queries, rank_of
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    from eval_corpora import CORPORA, load_queries, rank_of  # type: ignore[no-redef]
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.ranking import FUSION_POOL, MIN_SIMILARITY
from skillshelf.library.index.store import SearchFilters

QUERIES = Path(__file__).with_name("queries")
DEFAULT_FILES = [QUERIES / name for name in ("corpora.txt", "corpora-heldout2.txt", "corpora-heldout3.txt")]
Ranking = Callable[[dict[str, Any]], list[str]]


def collect(model: Path, files: list[Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """Each query's word hits and every skill's similarity to it."""
    with tempfile.TemporaryDirectory() as tmp:
        config = LibraryConfig(roots=[CORPORA], index_dir=Path(tmp), watch=False, semantic_model=model)
        library = SkillLibrary(config)
        try:
            library.sync()
            semantic = library.semantic
            assert semantic is not None and semantic.wait_idle() and semantic.error is None, semantic
            ids = [s.id for s in library.overview()]
            collected = []
            for path in files:
                for q in load_queries(path):
                    # the fusion's word pool for a page of 10 (eval_corpora's limit): that page's candidate walk
                    words = library.index.search(q.text, SearchFilters(), FUSION_POOL, page=10)
                    closeness = semantic.nearest(q.text, set, len(ids), -1.0)
                    collected.append(
                        {"file": path.stem, "answers": q.answers, "words": [(s.id, s.score) for s in words],
                         "similarity": dict(closeness.nearest)}
                    )  # fmt: skip
            return collected, ids
        finally:
            library.close()


def by_meaning(q: dict[str, Any], floor: float = MIN_SIMILARITY) -> list[str]:
    ranked = sorted(q["similarity"].items(), key=lambda item: -item[1])[:FUSION_POOL]
    return [skill_id for skill_id, similarity in ranked if similarity >= floor]


def rank_fusion(q: dict[str, Any], k: int = 60) -> list[str]:
    score: dict[str, float] = {}
    for ranking in ([i for i, _ in q["words"]], by_meaning(q)):
        for rank, skill_id in enumerate(ranking):
            score[skill_id] = score.get(skill_id, 0.0) + 1.0 / (k + rank + 1)
    return sorted(score, key=lambda i: -score[i])


def score_fusion(q: dict[str, Any], weight: float) -> list[str]:
    words = dict(q["words"])
    candidates = list(dict.fromkeys([*words, *by_meaning(q)]))
    closest = max((q["similarity"][i] for i in candidates), default=0.0)
    if closest <= 0:
        return candidates
    score = {i: weight * max(0.0, q["similarity"][i]) / closest + (1 - weight) * words.get(i, 0.0) for i in candidates}
    return sorted(score, key=lambda i: -score[i])


def report(name: str, rank: Ranking, queries: list[dict[str, Any]]) -> None:
    ranks: dict[str, list[int | None]] = {}
    for q in queries:
        ranks.setdefault(q["file"], []).append(rank_of(rank(q)[:10], q["answers"]))
    ranks["all"] = [r for part in list(ranks.values()) for r in part]
    cells = []
    for part, found in ranks.items():
        hit5 = sum(1 for r in found if r is not None and r <= 5) / len(found)
        mrr = sum(1 / r for r in found if r is not None) / len(found)
        cells.append(f"{part} {hit5:.3f}/{mrr:.3f}")
    print(f"{name:26} " + "  ".join(cells))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--semantic-model", type=Path, required=True, help="a sentence-transformers BERT folder")
    ap.add_argument("--queries", type=Path, action="append", help="labelled query files (default: the three earlier)")
    args = ap.parse_args(argv)
    if not CORPORA.is_dir():
        print(f"corpora not found at {CORPORA}", file=sys.stderr)
        return 2
    queries, _ = collect(args.semantic_model, args.queries or DEFAULT_FILES)
    print("fusion                     per file and over all: hit@5/MRR@10")
    report("words alone", lambda q: [i for i, _ in q["words"]], queries)
    report("meaning alone", by_meaning, queries)
    report("rank fusion, k=60", rank_fusion, queries)
    for weight in (0.5, 0.6, 0.7, 0.75, 0.8, 0.9):
        report(f"score fusion, meaning {weight}", lambda q, w=weight: score_fusion(q, w), queries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
