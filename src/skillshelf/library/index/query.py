"""What a user types, turned into what the index can match.

A query becomes a list of *concepts*, one per distinct meaningful word. Each concept carries the
alternatives that should count as that word: the word itself, the parts of a camelCase or
hyphenated word, a curated synonym or abbreviation (k8s -> kubernetes, auth -> authentication,
troubleshoot -> debug), a verb's nouns the stemmer keeps apart (analyze -> analysis), and, for a
word the index has never seen, its spelling corrections from the index's own vocabulary (edit
distance 1 on words of 5-6 letters, 2 from 7 letters).

Ranking then rewards covering more of the concepts: see `SkillIndex.search`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain

from skillshelf.library.index.synonyms import ONE_WAY, SYNONYM_GROUPS
from skillshelf.library.indexing.terms import STOPWORDS, WORD, words_of

MIN_TYPO_LENGTH = 5
MAX_CONCEPTS = 12
# Abbreviations read from the library: a run of Capitalised Words ("Service Level Objectives") stands for its
# initials ("slo"), so a query for the short form finds the skill that spells it out (issue 25).
_TITLE_RUN = re.compile(r"[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+")
ACRONYM_LENGTHS = range(3, 6)  # two letters are too often another word's initials; the table has those
_RUN_SEPARATOR = re.compile(r"[ -]")
_CAPITALS = re.compile(r"[A-Z]{3,5}")  # initials as a library writes an abbreviation (no \b: twice as fast)
MAX_EXPANSIONS = 2
# British and American spellings of one word ("prioritisation", "prioritization"): the porter stemmer keeps them
# apart, and a library mostly holds the American one (issue 25). At least three letters before the ending, so
# short words ("size", "rise") are left alone.
_SPELLINGS = (
    (re.compile(r"^(\w{3,}[^aeiou\W])is(e|es|ed|ing|ation|ations|er|ers)$"), r"\1iz\2"),
    (re.compile(r"^(\w{3,}[^aeiou\W])iz(e|es|ed|ing|ation|ations|er|ers)$"), r"\1is\2"),
    (re.compile(r"^(\w{2,}l)ys(e|es|ed|ing|er|ers)$"), r"\1yz\2"),
    (re.compile(r"^(\w{2,}l)yz(e|es|ed|ing|er|ers)$"), r"\1ys\2"),
)
# Every word `_SPELLINGS` can change ends with one of these: most words are none, and `str.endswith` tells them
# apart in one call where the four patterns took four (query parsing was a tenth of a search's Python, issue 36).
_SPELLING_ENDINGS = tuple(
    stem + ending
    for stem in ("is", "iz", "ys", "yz")
    for ending in ("e", "es", "ed", "ing", "er", "ers", *(("ation", "ations") if stem[0] == "i" else ()))
)
# Word families the porter stemmer keeps apart (issue 34): "analyze" is `analyz`, "analysis" `analysi`, so "analyze
# single-cell RNA-seq data" missed a skill described as an "RNA-seq analysis pipeline"; likewise diagnose/diagnosis,
# synthesize/synthesis, classify/classification, summarize/summary. A verb finds its noun, as a description names a
# task ("analysis pipeline"), but not the other way: a noun often names a thing of its own ("analytics events",
# Python's "hypothesis"), and joining it to its verb made it an everyday word that no longer told skills apart.
# Each noun form stands for its inflections (porter stems "analyses" as "analyse"); a form no skill holds ("organy"
# from "organize") costs one empty FTS5 lookup. (root, the verb's endings, the noun forms)
_FAMILIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (r"\w{3,}?y", "ze|zes|zed|zing|zer|zers|se|sed|sing", ("sis", "ses")),  # analyze/analyse: analysis, analyses
    (r"\w{3,}?o", "se|sed|sing", ("sis",)),  # diagnose: diagnosis
    (r"\w{3,}?[ae]", "size|sizes|sized|sizing", ("sis",)),  # synthesize: synthesis; emphasize: emphasis
    (r"\w{2,}?", "ify|ifies|ified|ifying", ("ification",)),  # classify: classification; verify: verification
    (r"\w{4,}?[^aeiouy\W]", "ize|izes|ized|izing", ("y",)),  # summarize: summary; prioritize: priority
)
_FAMILY_PATTERNS = tuple(re.compile(f"^({root})(?:{endings})$") for root, endings, _ in _FAMILIES)
_FAMILY_ENDINGS = tuple(dict.fromkeys(e for _, endings, _ in _FAMILIES for e in endings.split("|")))  # as above


@dataclass(frozen=True)
class Concept:
    """One meaningful word of the query and everything that counts as a match for it."""

    word: str
    alternatives: tuple[str, ...]  # lower-case words or space-separated phrases, the word itself first
    _expression: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # built with the concept, once: a search asks for it several times a concept, and a `cached_property`'s
        # first read (under a lock in Python 3.11) cost more than building it here (issue 36)
        quoted = [f'"{alt}"' for alt in self.alternatives]
        object.__setattr__(self, "_expression", quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")")

    def expression(self) -> str:
        """An FTS5 expression matching any alternative (quoted, so no query syntax leaks through)."""
        return self._expression


def _build_synonyms(
    groups: Iterable[tuple[str, ...]], one_way: dict[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    # each one-word term of a group finds the group's other terms; a one-way word finds only its terms
    finds = [(term, group) for group in groups for term in group if " " not in term] + list(one_way.items())
    table: dict[str, list[str]] = defaultdict(list)
    for word, terms in finds:
        table[word].extend(t for t in terms if t != word and t not in table[word])
    return {term: tuple(alts) for term, alts in table.items()}


SYNONYMS = _build_synonyms(SYNONYM_GROUPS, ONE_WAY)


def other_spelling(word: str) -> str | None:
    """The word in the other of British and American spelling ('summarising' -> 'summarizing'), or None."""
    if not word.endswith(_SPELLING_ENDINGS):
        return None
    for pattern, replacement in _SPELLINGS:
        if pattern.match(word):
            return pattern.sub(replacement, word)
    return None


def word_family(word: str) -> list[str]:
    """The nouns of a verb that the stemmer keeps apart from it ('analyze' -> 'analysis', 'analyses'); empty
    for a word that is no such verb (`_FAMILIES`)."""
    if not word.endswith(_FAMILY_ENDINGS):
        return []
    for pattern, (_, _, nouns) in zip(_FAMILY_PATTERNS, _FAMILIES, strict=True):
        found = pattern.match(word)
        if found:
            return [found.group(1) + noun for noun in nouns]
    return []


def concepts(query: str) -> list[Concept]:
    """The query's meaningful words with their parts, synonyms and abbreviations (no spelling yet)."""
    pairs = words_of(query)
    meaningful = [(w, parts) for w, parts in pairs if w not in STOPWORDS] or pairs
    out: list[Concept] = []
    seen: set[str] = set()
    for word, parts in meaningful:
        if word in seen:
            continue
        seen.add(word)
        alternatives = [word]
        if parts:
            alternatives.append(" ".join(parts))
        spelled = other_spelling(word)
        family = [form for spelling in (word, spelled) if spelling for form in word_family(spelling)]
        alternatives += [s for s in (spelled, *family, *SYNONYMS.get(word, ())) if s]
        out.append(Concept(word, tuple(dict.fromkeys(alternatives))))
    return out[:MAX_CONCEPTS]


def with_alternatives(concept: Concept, extra: Iterable[str]) -> Concept:
    more = [e for e in extra if e not in concept.alternatives]
    return Concept(concept.word, concept.alternatives + tuple(more)) if more else concept


# -- spelling ------------------------------------------------------------------------------------


def max_distance(word: str) -> int:
    if len(word) < MIN_TYPO_LENGTH:
        return 0
    return 1 if len(word) <= 6 else 2


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (a transposition counts 1), or limit + 1 once it exceeds limit."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def _trigrams(word: str) -> set[str]:
    padded = f"^{word}$"
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def spelled_out(text: str) -> Iterable[tuple[str, str]]:
    """(initials, phrase) for every run of 3-5 Capitalised Words in the text, and each shorter run inside it."""
    for run in _TITLE_RUN.findall(text):
        words = _RUN_SEPARATOR.split(run)
        for start in range(len(words)):
            for length in ACRONYM_LENGTHS:
                part = words[start : start + length]
                if len(part) == length:
                    yield "".join(w[0] for w in part).lower(), " ".join(part).lower()


class Vocabulary:
    """Words of the library's names, descriptions, tags and headings, for spelling corrections, and the
    phrases they spell out as initials, for abbreviations.

    A trigram index narrows the candidates; the edit distance decides. Among equally close words
    the most common one wins.
    """

    def __init__(
        self,
        counts: dict[str, int],
        acronyms: dict[str, dict[str, int]] | None = None,
        written_lower: frozenset[str] = frozenset(),
    ) -> None:
        self.counts = counts
        self.acronyms = acronyms or {}  # initials -> {phrase: how many texts spell it out}
        # initials the library writes more often otherwise than in capitals: an everyday word ("fit",
        # "mind"), not an abbreviation, whatever some run of Capitalised Words spells
        self.written_lower = written_lower
        self._by_trigram: dict[str, list[str]] = defaultdict(list)
        for word in counts:
            if len(word) >= MIN_TYPO_LENGTH - 1:
                for gram in _trigrams(word):
                    self._by_trigram[gram].append(word)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> Vocabulary:
        texts = list(texts)
        # how many texts hold each word, counted by `Counter` over each text's set of words at once: a count per
        # word in Python was most of the build (about a second at 10,000 skills, which a first search waited for)
        held = Counter(chain.from_iterable(set(WORD.findall(text.lower())) for text in texts))
        counts = {w: n for w, n in held.items() if len(w) >= MIN_TYPO_LENGTH - 1 and w.isalpha()}
        short = {w: n for w, n in held.items() if len(w) == MIN_TYPO_LENGTH - 2}  # three-letter words, any case ...
        in_capitals = Counter(chain.from_iterable(set(_CAPITALS.findall(text)) for text in texts))  # ... in capitals
        acronyms: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for text in texts:
            for initials, phrase in set(spelled_out(text)):
                acronyms[initials][phrase] += 1
        return cls(
            counts,
            {initials: dict(phrases) for initials, phrases in acronyms.items()},
            frozenset(w for w in acronyms if counts.get(w, short.get(w, 0)) > 2 * in_capitals[w.upper()]),
        )

    def expansions(self, word: str) -> list[str]:
        """The phrases the library spells out with these initials ('slos' or 'slo' -> 'service level
        objectives'), the most common first; empty for a word that is no abbreviation here."""
        if word in self.written_lower:
            return []
        for initials in dict.fromkeys([word, word.removesuffix("s")]):
            phrases = self.acronyms.get(initials)
            if phrases and len(initials) in ACRONYM_LENGTHS and initials not in self.written_lower:
                return sorted(phrases, key=lambda p: (-phrases[p], p))[:MAX_EXPANSIONS]
        return []

    def corrections(self, word: str) -> list[str]:
        """The closest known words to `word` (empty if it is known, short, or nothing is close)."""
        limit = max_distance(word)
        if limit == 0 or word in self.counts:
            return []
        grams = _trigrams(word)
        shared: dict[str, int] = defaultdict(int)
        for gram in grams:
            for candidate in self._by_trigram.get(gram, ()):
                shared[candidate] += 1
        # each edit destroys at most three trigrams
        needed = max(1, len(grams) - 3 * limit)
        best: list[tuple[int, int, str]] = []
        for candidate, count in shared.items():
            if count >= needed and abs(len(candidate) - len(word)) <= limit:
                distance = edit_distance(word, candidate, limit)
                if distance <= limit:
                    best.append((distance, -self.counts[candidate], candidate))
        best.sort()
        if not best:
            return []
        closest = best[0][0]
        return [c for d, _, c in best if d == closest][:2]
