"""Near-duplicate skills: the same name in two categories, or descriptions that say the same thing.

An agent chooses a skill by its name and description, so two skills it cannot tell apart by them
split its choice (and a curator's upkeep) for no gain. Two tests, over the served name and the
description only (no body is read):

- **Same name**: the name agents see (search hits, loadSkill: the frontmatter `name`, else the file's
  or folder's) twice, in two categories or sources, or in two folders whose frontmatter says the same.
- **Same description**: the Jaccard similarity of the descriptions' word sets is at least
  `DESCRIPTION_THRESHOLD`. Words are stemmed by SQLite's Porter tokenizer (the one the search
  index uses), so "tests", "testing" and "tested" are one word; stop words and the boilerplate of
  skill descriptions ("use when the user asks") are left out. A pair is *told apart*, and not
  reported, when a word their names differ by is used by one description at least
  `TOLD_APART_RATIO` times as often as by the other: `convert-pdf-to-md` and `convert-word-to-md`
  share a template, but one says "PDF" where the other says "Word", so an agent can choose.

Measured on the 972 skills of ../shared/corpora (docs/library-format.md, "Near-duplicates"): at 0.5,
5 pairs of descriptions are alike and 3 of them are real duplicates (60 % precision); at 0.3
precision falls to 32 %, and without the told-apart rule it is 43 % at 0.5 (templated families: the
same sentence for AWS and Azure, xUnit and JUnit).

Cost: pairs are found by prefix filtering (AllPairs: only skills sharing one of their rarest words
are compared, exact for Jaccard), identical descriptions are grouped before that, and a word is
looked up among the last `MAX_BUCKET` skills whose prefixes hold it, so the search grows linearly
with the library. `MAX_LOOKED_AT` bounds what is left (thousands of skills written from one
template); past it the search stops with a note, and same-name pairs are still all found.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DESCRIPTION_THRESHOLD = 0.5
TOLD_APART_RATIO = 3
MAX_LOOKED_AT = 20_000_000  # index entries read: the cost of the search, bounded
EPSILON = 1e-9
MAX_BUCKET = 200  # entries read per shared word (see _all_pairs)
MIN_WORD_CHARS = 2
TOKENIZER = "porter unicode61 remove_diacritics 2"  # as the search index (library/index/store.py)
_TOKEN = re.compile(r"[^\W_]+")
# Stop words, and the words every kind of skill description uses ("Use this skill when the user asks...").
IGNORED_WORDS = """a an and are as at be by can do does for from how i in into is it its me my of on or our so that the
    their them then there these this to use using want was we what when where which who why will with would you your
    need needs should could get also any all etc eg e g including include includes like such via based whenever
    skill skills user users ask asks asked request requests trigger triggers help helps mention mentions say says"""


@dataclass(frozen=True)
class Described:
    """What the search needs of a skill: its id, its name as agents see it (the frontmatter's, else the
    file's or folder's) and its description."""

    id: str
    name: str
    description: str


@dataclass(frozen=True)
class NearDuplicate:
    """`other` duplicates `first` (the earlier id of the two) by name, by description or both."""

    first: str
    other: str
    name: str  # the other's name as agents see it
    same_name: bool
    same_description: bool  # the descriptions' similarity reaches the threshold
    similarity: float  # Jaccard of the descriptions' words, 0-1

    def message(self) -> str:
        shared = f"{self.similarity:.0%} of their description words shared"
        if self.same_name and self.same_description:
            return (
                f"{self.other} has the same name as {self.first} and a description that says the same "
                f"({shared}): agents cannot tell them apart. Keep one, or rename one and say in its "
                "description how it differs."
            )
        if self.same_name:
            return (
                f"{self.other} has the same name as {self.first} ({shared}): agents see two skills called "
                f"{self.name!r}. Keep one, or rename one."
            )
        return (
            f"{self.other}'s description says the same as {self.first}'s ({shared}): agents choosing by "
            "description cannot tell them apart. Keep one, or rewrite one to say how it differs."
        )


@dataclass(frozen=True)
class DuplicateReport:
    pairs: list[NearDuplicate]
    note: str | None = None  # why the description search stopped early, when it did


@dataclass(frozen=True)
class Words:
    """A skill's description and name as stemmed words, stop words left out."""

    counts: Counter[str]  # the description's words -> how often it uses each
    name: frozenset[str]

    @property
    def description(self) -> frozenset[str]:
        return frozenset(self.counts)


def near_duplicates(skills: Iterable[Described], threshold: float = DESCRIPTION_THRESHOLD) -> DuplicateReport:
    """Every skill that duplicates an earlier one (by id), each reported once against its closest match."""
    ordered = sorted(skills, key=lambda s: s.id)
    words = stemmed_words(ordered)
    descriptions = [w.description for w in words]
    closest: dict[int, tuple[float, int]] = {}  # later skill -> (similarity, earlier skill)
    similar, note = _similar_descriptions(descriptions, threshold)
    alike = {pair for pair in similar if not told_apart(words[pair[0]], words[pair[1]])}
    for earlier, later in sorted(alike):
        if similar[(earlier, later)] > closest.get(later, (-1.0, 0))[0]:
            closest[later] = (similar[(earlier, later)], earlier)
    first_named: dict[str, int] = {}
    same_name = {i: first_named.setdefault(s.name, i) for i, s in enumerate(ordered)}
    pairs = []
    for later in range(len(ordered)):
        earlier = same_name[later] if same_name[later] != later else closest.get(later, (0.0, later))[1]
        if earlier != later:
            similarity = jaccard(descriptions[earlier], descriptions[later])
            named, described = earlier == same_name[later], (earlier, later) in alike
            first, other = ordered[earlier], ordered[later]
            pairs.append(NearDuplicate(first.id, other.id, other.name, named, described, round(similarity, 3)))
    return DuplicateReport(pairs, note)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def told_apart(a: Words, b: Words) -> bool:
    """True when a word the names differ by is used far more by one description than by the other."""

    def dominant(own: Words, other: Words) -> bool:
        return any(own.counts[w] and own.counts[w] >= TOLD_APART_RATIO * other.counts[w] for w in own.name - other.name)

    return dominant(a, b) or dominant(b, a)


def stemmed_words(skills: Sequence[Described]) -> list[Words]:
    """Each skill's description and name as stemmed words (stop words left out)."""
    texts = [(_TOKEN.findall(s.description.lower()), _TOKEN.findall(s.name.lower())) for s in skills]
    ignored_tokens = _TOKEN.findall(IGNORED_WORDS)
    stems = porter_stems({token for words in texts for part in words for token in part} | set(ignored_tokens))
    ignored = {stem for token in ignored_tokens for stem in stems[token]}

    def kept(tokens: list[str]) -> list[str]:
        return [stem for token in tokens for stem in stems[token] if stem not in ignored]

    return [Words(Counter(kept(description)), frozenset(kept(name))) for description, name in texts]


def porter_stems(words: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each word's stems by SQLite's FTS5 Porter tokenizer, the one the search index uses (in memory;
    each distinct word once). A word the tokenizer splits has several; one shorter than
    `MIN_WORD_CHARS` has none."""
    vocabulary = sorted(words)
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute(f"CREATE VIRTUAL TABLE texts USING fts5(word, tokenize={TOKENIZER!r})")
        connection.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(texts, 'instance')")
        connection.executemany("INSERT INTO texts(rowid, word) VALUES (?, ?)", enumerate(vocabulary, 1))
        found: dict[int, list[str]] = defaultdict(list)
        for doc, term in connection.execute("SELECT doc, term FROM terms ORDER BY doc, offset"):
            if len(term) >= MIN_WORD_CHARS:
                found[doc].append(term)
    finally:
        connection.close()
    return {word: tuple(found[doc]) for doc, word in enumerate(vocabulary, 1)}


def _similar_descriptions(
    sets: list[frozenset[str]], threshold: float
) -> tuple[dict[tuple[int, int], float], str | None]:
    """Pairs (i < j) of word sets with Jaccard >= threshold, enough for each skill's closest earlier match.

    Identical sets are grouped first (a template copied a thousand times costs no comparisons): each
    member pairs with its group's first, and a similar pair of groups pairs their first members.
    """
    groups: dict[frozenset[str], list[int]] = defaultdict(list)
    for index, words in enumerate(sets):
        if words:
            groups[words].append(index)
    unique = list(groups)
    found = {(members[0], other): 1.0 for members in groups.values() for other in members[1:]}
    set_pairs, note = _all_pairs(unique, threshold)
    for (x, y), similarity in set_pairs.items():
        a, b = groups[unique[x]][0], groups[unique[y]][0]
        found[(min(a, b), max(a, b))] = similarity
    return found, note


def _all_pairs(sets: list[frozenset[str]], threshold: float) -> tuple[dict[tuple[int, int], float], str | None]:
    """AllPairs (Bayardo et al. 2007): words ranked rarest first, sets taken smallest first. Two sets
    with Jaccard >= t share a word among the first |s| - ceil(t*|s|) + 1 words (the prefix) of each,
    so only sets sharing a prefix word are looked at; they share at least
    ceil(t/(1+t) * (|x|+|y|)) words, at most ceil(t*|x|) - 1 of them outside the prefixes, so a pair
    whose prefixes share fewer than the difference is dropped before it is compared.

    A word in more than `MAX_BUCKET` prefixes is looked up among the last `MAX_BUCKET` of them (the
    closest in size): the search stays linear however common a word is, at the cost of missing a
    pair whose only shared prefix words are that common.
    """
    frequency = Counter(word for words in sets for word in words)
    rank = {word: position for position, word in enumerate(sorted(frequency, key=lambda w: (frequency[w], w)))}
    ranked = [sorted(rank[word] for word in words) for words in sets]
    share = threshold / (1 + threshold)
    index: dict[int, list[int]] = defaultdict(list)  # word -> sets whose prefix holds it, smallest first
    found: dict[tuple[int, int], float] = {}
    looked_at = 0
    for x in sorted(range(len(sets)), key=lambda i: (len(ranked[i]), i)):
        words, size = ranked[x], len(ranked[x])
        prefix = words[: size - math.ceil(threshold * size - EPSILON) + 1]
        outside = size - len(prefix)  # shared words the prefixes may miss
        shared: Counter[int] = Counter()
        for word in prefix:
            entries = index[word]
            recent = entries[-MAX_BUCKET:]
            looked_at += len(recent)
            shared.update(recent)
            entries.append(x)
        if looked_at > MAX_LOOKED_AT:
            return found, (
                f"the description comparison stopped after {MAX_LOOKED_AT:,} steps (many skills share most of "
                "their words); the pairs found until then are reported"
            )
        for y, in_prefixes in shared.items():
            other = len(sets[y])
            needed = math.ceil(share * (size + other) - EPSILON)  # shared words for Jaccard >= t
            if other >= threshold * size - EPSILON and in_prefixes + outside >= needed:
                overlap = len(sets[x] & sets[y])
                if (similarity := overlap / (size + other - overlap)) >= threshold - EPSILON:
                    found[(min(x, y), max(x, y))] = similarity
    return found, None
