"""One ranking of a search from two: the index's words and, when a model is set, the skills' meaning.

`Ranking.search` asks the word index, and the vectors for the skills closest in meaning, and `fused`
combines the two scores (docs/search.md says how the weights were chosen). Without a model, or before
the vectors are loaded, a search ranks by words alone.
"""

from __future__ import annotations

from dataclasses import replace

from skillshelf.library.index.store import IndexedSkill, SearchFilters, SkillIndex, name_key
from skillshelf.library.indexing.terms import query_terms
from skillshelf.library.semantic.vectors import Closeness, SemanticIndex

# Semantic search (optional): how word and meaning scores are fused (see `fused`, docs/search.md).
MEANING_WEIGHT = 0.75  # the rest is the word score's; chosen on 351 labelled development queries
# Candidates taken from each ranking. The word ranking's are those of the page's own search (its candidate walk,
# `SkillIndex.search`'s `page`), up to this many: a walk for 50 hits took 1.6 ms more CPU than for a page of 5
# (4x the candidates) and the development sets' hit@5 was level without it (issue 36, H79: docs/performance.md).
FUSION_POOL = 50
MIN_SIMILARITY = 0.3  # a skill found by meaning alone must be at least this close (cosine) to the query
# A skill's vector stands for its name and description, so meaning cannot judge the words a skill holds in its
# body alone: for those, meaning's weight shrinks by this share of them (a skill holding every word of the query
# in its body only weighs meaning 0.75 x (1 - 0.25)). Otherwise a fixed 0.75 buried such skills (issue 25).
BODY_BLIND = 0.25
UNSHARED_MEANING = 0.8  # what a skill sharing no word with the query keeps when a word hit holds them all
# Similarities are scaled to the closest candidate's, but never to less than this cosine: when even the closest
# one is barely related (all-MiniLM-L6-v2: near MIN_SIMILARITY) the scaling blew noise up to a full meaning score,
# and skills of the same field sharing only the query's everyday words pushed the word hit holding its specific
# words out of the top 5 (issue 25, H17).
MEANING_SURE = 0.33
# A word ranking sure of its top hit (the runner-up scores at most 0.8 of it) keeps that hit in the top 5 when
# meaning is unsure (closest cosine under 0.45) and only neighbours sharing no word with the query push it out:
# such a neighbour is meaning's guess, the top hit words' evidence (issue 25, H19; chosen on the development sets).
CONFIDENT_LEAD = 0.8
UNSURE_MEANING = 0.45
KEPT_RANK = 5
# The first search after a restart waits this long for the vectors stored by earlier runs to load (972 skills:
# 0.4 s, the model included) rather than ranking by words alone; past it, the answer says it ranked by words.
FIRST_SEARCH_WAIT_S = 2.0


class Ranking:
    """Searches the index by words, and by meaning too when the library has vectors (the caller keeps
    the index fresh)."""

    def __init__(self, index: SkillIndex, semantic: SemanticIndex | None) -> None:
        self.index = index
        self.semantic = semantic

    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        semantic = self.semantic
        if semantic is not None and not semantic.ready and query_terms(query):
            semantic.wait_loaded(FIRST_SEARCH_WAIT_S)  # the first search after a restart ranks by meaning too
        if semantic is None or not semantic.ready or not query_terms(query):
            return self.index.search(query, filters, limit)
        semantic.start_query(query)  # the query's vector is computed while words rank
        by_words = self.index.search(query, filters, max(FUSION_POOL, limit), page=limit)
        rows = {skill.id: skill for skill in by_words}

        def admits(ids: list[str]) -> set[str]:
            rows.update({s.id: s for s in self.index.get_many([i for i in ids if i not in rows])})
            return {i for i in ids if i in rows and filters.admits(rows[i])}

        closeness = semantic.nearest(query, admits, max(FUSION_POOL, limit), MIN_SIMILARITY, also=list(rows))
        return fused(query, by_words, closeness, rows, limit)


def _keep_confident_word_hit(by_words: list[IndexedSkill], order: list[str], closest: float) -> list[str]:
    """The word ranking's top hit, when words are sure of it (it leads the runner-up by `CONFIDENT_LEAD`) and
    meaning is not (even the closest skill is under `UNSURE_MEANING`), takes the place of the lowest skill in
    the top `KEPT_RANK` that shares no word with the query, instead of being pushed below it (issue 25, H19)."""
    if not by_words or closest >= UNSURE_MEANING:
        return order
    top = by_words[0].id
    runner_up = by_words[1].score if len(by_words) > 1 else 0.0
    if runner_up > CONFIDENT_LEAD * by_words[0].score or order.index(top) < KEPT_RANK:
        return order
    matched = {s.id for s in by_words}
    unshared = [at for at, i in enumerate(order[:KEPT_RANK]) if i not in matched]
    if not unshared:  # every skill above it holds some of the query's words: the fusion's order stands
        return order
    rest = [i for i in order if i != top]
    return [*rest[: unshared[-1]], top, *rest[unshared[-1] :]]


def fused(
    query: str, by_words: list[IndexedSkill], closeness: Closeness, rows: dict[str, IndexedSkill], limit: int
) -> list[IndexedSkill]:
    """One ranking from two: a convex combination of each candidate's two scores, each scaled to 0-1
    (Bruch et al. 2023 found it beats reciprocal rank fusion; on our labelled queries it did too, see
    docs/search.md). The word score is already relative to the best word hit; the meaning score is the
    cosine similarity relative to the closest candidate's, or to `MEANING_SURE` when even the closest one is
    barely related (meaning is then unsure, and scores under 1). A skill with no vector yet (the background
    pass has not reached it) is ranked by its words alone. An exact name or id match stays first;
    quality, then id, breaks ties; `score` is relative to the best hit, as always."""
    words = {s.id: s.score for s in by_words}
    similarity = {**closeness.of, **dict(closeness.nearest)}
    candidates = list(dict.fromkeys([*words, *(i for i, _ in closeness.nearest)]))
    closest = max((similarity.get(i, 0.0) for i in candidates), default=0.0)

    def meaning(skill_id: str) -> float:
        if skill_id not in similarity or closest <= 0:
            return words.get(skill_id, 0.0)
        return max(0.0, similarity[skill_id]) / max(closest, MEANING_SURE)

    body_share = {s.id: s.body_share for s in by_words}
    # found by meaning alone: tempered as far as a word hit holds the query's words (a confident word ranking)
    temper = 1 - (1 - UNSHARED_MEANING) * max((s.coverage for s in by_words), default=0.0)

    def fuse(skill_id: str) -> float:
        if skill_id not in words:
            return MEANING_WEIGHT * meaning(skill_id) * temper
        weight = MEANING_WEIGHT * (1 - BODY_BLIND * body_share[skill_id])
        return weight * meaning(skill_id) + (1 - weight) * words[skill_id]

    score = {i: fuse(i) for i in candidates}
    wanted = name_key(query)
    exact = {s.id for s in by_words if s.id == query.strip() or name_key(s.name) == wanted}
    order = sorted(score, key=lambda i: (i not in exact, -score[i], -rows[i].quality, i))
    order = _keep_confident_word_hit(by_words, order, closest)[:limit]
    best = max(score.values(), default=1.0) or 1.0
    return [replace(rows[i], score=1.0 if i in exact else round(score[i] / best, 3)) for i in order]
