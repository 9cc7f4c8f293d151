"""Trigger evals: will a skill be picked for the tasks it is meant for, and does it take another's?

Every example runs through the search the agent uses (`search_patterns`: the view's reader and pinned
filters, words, and meaning when it is on). A skill's written examples come from its frontmatter
(`evals: {should: [...], should_not: [...]}`) or from the Agent Skills guides' `evals/eval_queries.json`
(a list of `{"query", "should_trigger"}`, or `{"evals": [...]}` with `query` or `prompt`). Without any,
each skill's own description is a query that must find it in the top 5 (`unreachable` when it does not),
and two skills that win each other's queries are a `collision` (docs/search.md).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from skillshelf.envelope import WireModel
from skillshelf.errors import SkillshelfError
from skillshelf.library.access.reader import FileReader, SkillReader
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.indexing.terms import query_terms
from skillshelf.library.skill.discovery import printable
from skillshelf.library.skill.examples import (
    EVALS_FILE,
    FRONTMATTER_KEY,
    Example,
    parse_eval_file,
    parse_frontmatter_examples,
)
from skillshelf.library.skill.models import Finding
from skillshelf.library.skill.paths import display_path
from skillshelf.skills.service import search_patterns

SEARCH_LIMIT = 10  # ranks are looked for in the top 10 (an agent rarely reads further)
TOP = 5  # hit@5; a skill whose own description does not bring it this high is unreachable
MAX_QUERY_CHARS = 500  # of a description used as a query (a query is what an agent types, not a page)
SHOWN_WORDS = 8  # shared and telling words shown per collision

Search = Callable[[str], list[str]]  # a query -> skill ids, best first


@dataclass(frozen=True)
class Pins:
    """What a view pins on searchPatterns (its filters), applied to every eval query as to the agent's."""

    category: str | None = None
    include_executable: bool | None = None
    min_quality: float | None = None

    @classmethod
    def of(cls, pinned: dict[str, Any]) -> Pins:
        return cls(pinned.get("category"), pinned.get("includeExecutable"), pinned.get("minQuality"))


def searcher(reader: SkillReader, pins: Pins = Pins()) -> Search:
    """The agent's search: the same service as searchPatterns, with the view's pinned filters."""

    def search(query: str) -> list[str]:
        found = search_patterns(
            reader,
            query,
            category=pins.category,
            include_executable=pins.include_executable,
            min_quality=pins.min_quality,
            limit=SEARCH_LIMIT,
        )
        return [hit.id for hit in found.hits]

    return search


# --- reading examples ------------------------------------------------------------------------------


def examples_of(reader: FileReader, skill: IndexedSkill) -> tuple[list[Example], list[str]]:
    """A skill's written examples (frontmatter, then its evals file) and what is wrong with them."""
    examples, problems = parse_frontmatter_examples(skill.details.frontmatter.get(FRONTMATTER_KEY))
    if skill.layout != "agent-skills" or EVALS_FILE not in reader.files(skill):
        return examples, problems
    try:
        text = reader.read_text(skill, EVALS_FILE)
    except SkillshelfError as exc:  # refused or gone since the listing: said, not fatal
        return examples, [*problems, exc.message]
    if text is None:
        return examples, [*problems, f"{EVALS_FILE} cannot be read as text"]
    more, wrong = parse_eval_file(text)
    return examples + more, problems + wrong


# --- results ---------------------------------------------------------------------------------------


class QueryResult(WireModel):
    query: str
    should_trigger: bool
    rank: int | None = Field(description="The skill's place in the hits (1 = first), None past the top 10")
    winner: str | None = Field(default=None, description="The first hit, when it is not this skill")
    passed: bool


class SkillEval(WireModel):
    id: str
    queries: list[QueryResult]
    hit_at_1: float | None = Field(description="Share of should-queries ranking it first (None: none written)")
    hit_at_5: float | None
    picked_wrongly: list[str] = Field(description="should_not queries that rank it first anyway")
    problems: list[str] = Field(default_factory=list, description="What is wrong with its written examples")


class Unreachable(WireModel):
    id: str
    rank: int | None = Field(description="Where its own description ranks it (None: past the top 10)")
    winner: str | None


class Collision(WireModel):
    skills: tuple[str, str]
    queries: int = Field(description="How many of each other's queries they won")
    shared_words: list[str]
    only_first: list[str] = Field(description="Words of the first skill's description the second lacks")
    only_second: list[str]


class Findability(WireModel):
    """Library-wide, from each skill's own description used as a query."""

    checked: int
    unreachable: list[Unreachable]
    collisions: list[Collision]
    seconds: float
    own_ranks: dict[str, int | None] = Field(default_factory=dict, exclude=True)  # JUnit, quality figures


class EvalReport(WireModel):
    skills: list[SkillEval]
    examples: int
    passed: int
    hit_at_1: float | None
    hit_at_5: float | None
    score: float = Field(
        description="Share of written examples passed; without any, of skills found by their own words"
    )
    threshold: float
    ok: bool
    findability: Findability
    seconds: float
    by_meaning: bool = Field(description="Whether the searches ranked by meaning too (words alone otherwise)")
    warnings: list[str] | None = Field(default=None, description="What the search said (e.g. still embedding)")


# --- running ---------------------------------------------------------------------------------------


def _rank(skill_id: str, hits: list[str]) -> int | None:
    return hits.index(skill_id) + 1 if skill_id in hits else None


def evaluate_skill(skill_id: str, examples: list[Example], search: Search) -> tuple[SkillEval, list[tuple[str, str]]]:
    """One skill's examples through `search`; also (winner, skill) for each should-query another skill won."""
    results: list[QueryResult] = []
    losses: list[tuple[str, str]] = []
    for example in examples:
        hits = search(example.query)
        rank = _rank(skill_id, hits)
        winner = hits[0] if hits and hits[0] != skill_id else None
        passed = rank == 1 if example.should else rank != 1
        if example.should and winner is not None:
            losses.append((winner, skill_id))
        results.append(
            QueryResult(query=example.query, should_trigger=example.should, rank=rank, winner=winner, passed=passed)
        )
    should = [r for r in results if r.should_trigger]
    return (
        SkillEval(
            id=skill_id,
            queries=results,
            hit_at_1=_share(r.rank == 1 for r in should),
            hit_at_5=_share(r.rank is not None and r.rank <= TOP for r in should),
            picked_wrongly=[r.query for r in results if not r.should_trigger and r.rank == 1],
        ),
        losses,
    )


def _share(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return round(sum(values) / len(values), 3) if values else None


def description_query(skill: IndexedSkill) -> str:
    """A skill's own description as a query (cut at a word: a query is a line, not a page)."""
    text = " ".join((skill.details.description or skill.summary).split())
    return text if len(text) <= MAX_QUERY_CHARS else text[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]


def findability(skills: list[IndexedSkill], search: Search, losses: Iterable[tuple[str, str]] = ()) -> Findability:
    """Each skill's description as a query: the skills it leaves out of the top 5, and the pairs of skills
    that contest each other's queries (`losses`: (winner, loser) pairs from written examples too)."""
    started = time.perf_counter()
    unreachable: list[Unreachable] = []
    lost: list[tuple[str, str]] = list(losses)
    runner_up: set[tuple[str, str]] = set()  # (skill, owner): the skill came second on its owner's own query
    own_ranks: dict[str, int | None] = {}
    for skill in skills:
        query = description_query(skill)
        if not query_terms(query):
            continue
        hits = search(query)
        rank = own_ranks[skill.id] = _rank(skill.id, hits)
        winner = hits[0] if hits and hits[0] != skill.id else None
        if winner is not None:
            lost.append((winner, skill.id))
        elif len(hits) > 1:
            runner_up.add((hits[1], skill.id))
        if rank is None or rank > TOP:
            unreachable.append(Unreachable(id=skill.id, rank=rank, winner=winner))
    by_id = {s.id: s for s in skills}
    return Findability(
        checked=len(skills),
        unreachable=unreachable,
        collisions=collisions(lost, by_id, runner_up),
        seconds=round(time.perf_counter() - started, 2),
        own_ranks=own_ranks,
    )


def collisions(
    lost: Iterable[tuple[str, str]],
    by_id: dict[str, IndexedSkill],
    runner_up: frozenset[tuple[str, str]] | set[tuple[str, str]] = frozenset(),
) -> list[Collision]:
    """Pairs of skills that contest each other's queries: one won a query of the other, and the other won
    one of its queries too or came second on its own description. Most contested first."""
    wins = Counter(lost)  # (winner, loser) -> queries
    pairs: dict[tuple[str, str], int] = {}
    for (winner, loser), count in wins.items():
        back = wins.get((loser, winner), 0)
        if (back or (loser, winner) in runner_up) and winner in by_id and loser in by_id:
            pair = (min(winner, loser), max(winner, loser))
            pairs[pair] = count + back
    found = [_collision(by_id[a], by_id[b], count) for (a, b), count in pairs.items()]
    return sorted(found, key=lambda c: (-c.queries, c.skills))


def _collision(first: IndexedSkill, second: IndexedSkill, queries: int) -> Collision:
    a, b = _words(first), _words(second)
    return Collision(
        skills=(first.id, second.id),
        queries=queries,
        shared_words=[w for w in a if w in b][:SHOWN_WORDS],
        only_first=[w for w in a if w not in b][:SHOWN_WORDS],
        only_second=[w for w in b if w not in a][:SHOWN_WORDS],
    )


def _words(skill: IndexedSkill) -> list[str]:
    return query_terms(f"{skill.name.replace('-', ' ')} {skill.details.description}")


def run_evals(
    reader: SkillReader, threshold: float, pins: Pins = Pins(), only: Callable[[str], bool] | None = None
) -> EvalReport:
    """Every written example of every skill the reader shows (`only`: of these ids), and the library-wide
    findability; `ok` when the score reaches `threshold`."""
    started = time.perf_counter()
    search = searcher(reader, pins)
    skills = [s for s in reader.overview() if only is None or only(s.id)]
    results: list[SkillEval] = []
    losses: list[tuple[str, str]] = []
    for skill in skills:
        examples, problems = examples_of(reader, skill)
        if not examples and not problems:
            continue
        result, lost = evaluate_skill(skill.id, examples, search)
        results.append(result.model_copy(update={"problems": problems}))
        losses += lost
    found = findability(skills, search, losses)
    queries = [q for r in results for q in r.queries]
    should = [q for q in queries if q.should_trigger]
    passed = sum(q.passed for q in queries)
    reached = len(skills) - len(found.unreachable)
    score = passed / len(queries) if queries else (reached / len(skills) if skills else 1.0)
    notes = [note for note in (reader.index_warning(), reader.semantic_note()) if note]
    return EvalReport(
        skills=results,
        examples=len(queries),
        passed=passed,
        hit_at_1=_share(q.rank == 1 for q in should),
        hit_at_5=_share(q.rank is not None and q.rank <= TOP for q in should),
        score=round(score, 3),
        threshold=threshold,
        ok=score >= threshold,
        findability=found,
        seconds=round(time.perf_counter() - started, 2),
        by_meaning=reader.searches_by_meaning,
        warnings=notes or None,
    )


def library_findability(reader: SkillReader) -> Findability:
    """The library-wide part alone (check, stats, getLibraryStats, the web library page)."""
    return findability(reader.overview(), searcher(reader))


AUTO_MAX_SKILLS = 200  # stats and the web page work findability out by themselves up to this many skills
_REMEMBERED: dict[tuple[int, bool, int], Findability] = {}  # the last few, by reader, meaning and skills
_REMEMBERED_LOCK = threading.Lock()  # getLibraryStats and the web page ask from worker threads


def remembered_findability(reader: SkillReader, *, force: bool = False) -> Findability | None:
    """`library_findability`, remembered while the skills the reader shows are unchanged (stats and the web
    page ask again and again); None for a library over `AUTO_MAX_SKILLS` unless forced (one search a skill:
    about 10 ms each, so `skillshelf eval` or `stats --findability` is where a big library pays for it)."""
    skills = reader.overview()
    if not force and len(skills) > AUTO_MAX_SKILLS:
        return None
    key = (id(reader), reader.searches_by_meaning, hash(tuple((s.id, s.payload_json) for s in skills)))
    with _REMEMBERED_LOCK:
        found = _REMEMBERED.get(key)
    if found is None:
        found = findability(skills, searcher(reader))
        with _REMEMBERED_LOCK:
            while len(_REMEMBERED) >= 4:
                _REMEMBERED.pop(next(iter(_REMEMBERED)))
            _REMEMBERED[key] = found
    return found


def findability_findings(reader: SkillReader, found: Findability) -> list[Finding]:
    """`skillshelf check --findability`: a warning per unreachable skill and per collision, at the skill's
    document (a collision at its first skill's, naming both and the words that would tell them apart)."""
    labels = [printable(display_path(root)) for root in reader.roots()]

    def at(skill_id: str, code: str, message: str) -> Finding | None:
        skill = reader.get(skill_id)
        if skill is None:
            return None
        root = labels[skill.details.root_index] if skill.details.root_index < len(labels) else ""
        return Finding(skill.details.doc_file, None, "warning", code, message, root)

    findings = [
        at(
            lost.id,
            "unreachable",
            f"{lost.id} is not in the top {TOP} for its own description "
            f"({f'rank {lost.rank}' if lost.rank else 'not in the top 10'}; {lost.winner} ranks first). "
            "Say in the description, in the words a user would type, what it does and when to use it.",
        )
        for lost in found.unreachable
    ]
    for pair in found.collisions:
        first, second = pair.skills
        findings.append(
            at(
                first,
                "search-collision",
                f"{first} and {second} win each other's queries (shared words: "
                f"{', '.join(pair.shared_words) or '-'}). Tell them apart in their descriptions: {first} has "
                f"{', '.join(pair.only_first) or 'no word of its own'}; {second} has "
                f"{', '.join(pair.only_second) or 'no word of its own'}.",
            )
        )
    return [f for f in findings if f is not None]
