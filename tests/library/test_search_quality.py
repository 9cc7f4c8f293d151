"""Where search by words lost (issue 25): each kind of miss, rebuilt in a small library of its own.

Every library here has unrelated filler skills, so a word's rarity means what it means in a real one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillshelf.library.index import query
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.query import Vocabulary, concepts, word_family
from skillshelf.library.index.store import SearchFilters
from tests.conftest import agent_skill, wait_until

FILLER_TOPICS = ("gardening", "baking", "knitting", "birdwatching", "pottery", "chess", "sailing", "origami")


def skill(root: Path, name: str, description: str, body: str = "# Steps\n\nFollow the steps.\n") -> None:
    agent_skill(root, "lib", name, f"name: {name}\ndescription: {description}", body)


def fillers(root: Path) -> None:
    for topic in FILLER_TOPICS:
        skill(root, f"{topic}-guide", f"A guide to {topic} for beginners.", f"# {topic.title()}\n\nPractice {topic}.\n")


@pytest.fixture
def library_of(tmp_path: Path) -> Iterator[object]:
    opened: list[SkillLibrary] = []

    def build(add: object) -> SkillLibrary:
        root = tmp_path / f"lib{len(opened)}"
        fillers(root)
        add(root)  # type: ignore[operator]
        shelf = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / f"idx{len(opened)}", watch=False))
        shelf.sync()
        opened.append(shelf)
        return shelf

    yield build
    for shelf in opened:
        shelf.close()


def top(library: SkillLibrary, query: str, n: int = 1) -> list[str]:
    return [s.id.split("/")[-1] for s in library.search(query, SearchFilters(), 10)][:n]


HANDBOOK = "\n\n".join(
    [
        "# Engineering handbook",
        "Welcome to the team. This handbook covers how we work, from the first day to the last.",
        "## Your machine",
        "You will get a laptop on your first day; if it gets hot or the fan is loud, tell IT.",
        "## Meetings",
        "We keep meetings short. Write an agenda, share notes afterwards, and keep decisions in the wiki.",
        "## Reviews",
        "Every change gets a review. Reviewers look at tests, naming and the size of the change.",
        "## Holidays",
        "Book holidays in the calendar two weeks ahead and tell your team.",
    ]
)


def test_a_long_body_holding_the_query_words_does_not_outrank_a_name_and_description_match(library_of: object) -> None:
    def add(root: Path) -> None:
        skill(root, "engineering-handbook", "How our engineering team works.", HANDBOOK)
        skill(
            root,
            "laptop-overheating",
            "Diagnose a laptop whose fan never stops: dust, throttling, background processes.",
        )

    library = library_of(add)  # type: ignore[operator]
    assert top(library, "my laptop gets hot and the fan is loud") == ["laptop-overheating"]


def test_a_name_holding_two_query_words_beats_a_rare_word_in_another_description(library_of: object) -> None:
    def add(root: Path) -> None:
        skill(root, "invoice-reminders", "Nudge customers by email on a schedule until they pay.")
        skill(root, "dunning-letters", "Letters for overdue accounts, escalating in tone.")
        for n, text in enumerate(
            [
                "Create an invoice from a template.",
                "Export each invoice as PDF.",
                "Match an invoice to a payment.",
                "Set calendar reminders for meetings.",
                "Reminders for tax deadlines.",
                "Daily reminders to drink water.",
            ]
        ):
            skill(root, f"misc-{n}", text)

    library = library_of(add)  # type: ignore[operator]
    # "overdue" is in one skill, "invoice" and "reminders" in four each: rarity alone made the one word win
    assert top(library, "overdue invoice reminders") == ["invoice-reminders"]


CREDENTIALS_HANDBOOK = "\n\n".join(
    [
        "# Credentials handbook",
        "How we handle credentials.",
        "## Rotate database credentials",
        "Rotate the database credentials every quarter: create new credentials, deploy them, then revoke the old ones.",
        "## Database backups",
        "Back up every database nightly and test a restore each month.",
    ]
)


def test_a_description_that_says_the_task_beats_a_name_tags_and_headings_holding_its_words(
    library_of: object,
) -> None:
    """Issue 34: agents load the first hit. The skill whose description says the task comes first, over one
    holding the same words in its name, tags, a heading and its body (coverage credits all of those like a
    description, and BM25 sums them)."""

    def add(root: Path) -> None:
        frontmatter = "name: credentials-handbook\ndescription: Handling credentials across the company.\n"
        agent_skill(root, "lib", "credentials-handbook", frontmatter + "tags: [database, rotate]", CREDENTIALS_HANDBOOK)
        skill(
            root,
            "keyring-helper",
            "Rotate database credentials on a schedule, without downtime, for every service that holds a password.",
        )

    library = library_of(add)  # type: ignore[operator]
    assert top(library, "rotate database credentials", 2) == ["keyring-helper", "credentials-handbook"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("our cloud bill is too high, spend less", "cloud-cost-optimization"),
        ("make the cloud setup cheaper", "cloud-cost-optimization"),
        ("move the database from mysql to postgres", "database-migration"),
        ("port the database to a new engine", "database-migration"),
        ("undo a bad release", "release-rollback"),
        ("revert the deploy to the previous version", "release-rollback"),
        ("tweak the wording of a document", "document-editing"),
        ("proofread and revise my report", "document-editing"),
    ],
)
def test_cost_migration_rollback_and_editing_words_find_their_synonyms(
    library_of: object, query: str, expected: str
) -> None:
    def add(root: Path) -> None:
        skill(root, "cloud-cost-optimization", "Reduce cloud costs: rightsizing, reserved instances, idle resources.")
        skill(root, "database-migration", "Migrate a database to another engine with zero downtime.")
        skill(root, "release-rollback", "Roll back a release safely when a deployment fails.")
        skill(root, "document-editing", "Edit documents: fix wording, grammar and structure.")
        skill(root, "cloud-setup", "Set up cloud accounts and networks.")
        skill(root, "release-notes", "Write release notes and wording for a changelog.")

    library = library_of(add)  # type: ignore[operator]
    assert top(library, query) == [expected]


def test_everyday_words_find_the_skills_term_but_the_term_does_not_find_every_everyday_use() -> None:
    [bill] = concepts("bill")
    assert "cost" in bill.alternatives  # "the cloud bill is too high" is about cost ...
    [cost] = concepts("cost")
    assert {"spend", "expense"} <= set(cost.alternatives)
    assert not {"bill", "price"} & set(cost.alternatives)  # ... but a search for cost is not about billing
    [move] = concepts("move")
    assert "migrate" in move.alternatives
    [migrate] = concepts("migrate")
    assert "move" not in migrate.alternatives
    [revise] = concepts("revise")
    assert "edit" in revise.alternatives and "write" not in revise.alternatives


def test_an_abbreviation_finds_the_skill_that_spells_it_out_over_skills_using_the_short_form(
    library_of: object,
) -> None:
    def add(root: Path) -> None:
        skill(
            root,
            "service-level-objectives",
            "Define Service Level Objectives and error budgets, and alert when a budget burns fast.",
        )
        skill(root, "uptime-dashboard", "Dashboards of uptime; link each panel to its SLO page.")
        skill(root, "status-page", "Publish a status page; mention the SLO in incident updates.")
        skill(root, "decision-records", "Write Architecture Decision Records that explain why a choice was made.")
        skill(root, "adr-linter", "Lint the markdown of ADR files.")

    library = library_of(add)  # type: ignore[operator]
    top(library, "checkout")  # the first search reads the library's words in the background ...
    wait_until(lambda: library.index._vocabulary is not None, "the vocabulary was never built", poll_s=0.01)
    # ... and from then on a short form also finds the skills that spell it out
    assert top(library, "slo for the checkout") == ["service-level-objectives"]
    assert top(library, "slos for the checkout") == ["service-level-objectives"]
    assert top(library, "write an adr") == ["decision-records"]
    assert set(top(library, "slo", n=3)) == {"service-level-objectives", "uptime-dashboard", "status-page"}


def test_initials_come_only_from_runs_of_three_to_five_capitalised_words() -> None:
    vocabulary = Vocabulary.from_texts(
        ["Define Service Level Objectives (SLOs).", "Use Service Level Objectives.", "Read the Quick Start."]
    )
    assert vocabulary.expansions("slo") == ["service level objectives"]
    assert vocabulary.expansions("slos") == ["service level objectives"]
    assert vocabulary.expansions("dslo") == ["define service level objectives"]
    assert vocabulary.expansions("qs") == []  # two letters: too often some other phrase's initials
    assert vocabulary.expansions("rtq") == []  # "the" is not capitalised: no run


def test_each_hit_says_what_it_holds_of_the_query_and_how_much_only_in_its_body(library_of: object) -> None:
    def add(root: Path) -> None:
        skill(root, "engineering-handbook", "How our engineering team works.", HANDBOOK)
        skill(root, "laptop-overheating", "Diagnose a laptop whose fan never stops.", "# Steps\n\nIt gets hot.\n")

    library = library_of(add)  # type: ignore[operator]
    hits = library.search("my laptop gets hot and the fan is loud", SearchFilters(), 10)
    shares = {s.id.split("/")[-1]: s.body_share for s in hits}
    assert shares["engineering-handbook"] == 1.0  # every word in its body alone
    assert 0.0 < shares["laptop-overheating"] < 1.0  # "gets hot" in its body, "laptop" and "fan" above it
    coverage = {s.id.split("/")[-1]: s.coverage for s in hits}
    assert 0.0 < coverage["engineering-handbook"] < coverage["laptop-overheating"] < 1.0  # a body counts 0.1


def test_a_body_word_counts_by_how_specific_it_is() -> None:
    from skillshelf.library.index.store import BODY_CREDIT, RARE_BODY_CREDIT, body_credit

    assert body_credit(0.5) == body_credit(0.1) == BODY_CREDIT  # an everyday word: little
    assert body_credit(0.01) == body_credit(0.0001) == body_credit(0.0) == RARE_BODY_CREDIT  # a specific one
    assert BODY_CREDIT < body_credit(0.05) < body_credit(0.02) < RARE_BODY_CREDIT


def test_a_british_spelling_finds_the_american_one_even_when_the_library_holds_both(library_of: object) -> None:
    def add(root: Path) -> None:
        skill(root, "backlog-ranking", "Prioritization frameworks for a product backlog: RICE, MoSCoW, Kano.")
        skill(root, "weekly-planning", "Plan the week.", "# Steps\n\nDecide what to prioritise on Monday.\n")

    library = library_of(add)  # type: ignore[operator]
    # "prioritisation" is a known word here (the planning body), so no spelling correction steps in
    assert top(library, "prioritisation") == ["backlog-ranking"]
    assert top(library, "summarising results", n=0) == []  # a word of neither spelling finds nothing new


@pytest.mark.parametrize(
    ("british", "american"),
    [
        ("prioritisation", "prioritization"),
        ("summarising", "summarizing"),
        ("organise", "organize"),
        ("analysed", "analyzed"),
        ("visualisations", "visualizations"),
    ],
)
def test_british_and_american_spellings_find_each_other(british: str, american: str) -> None:
    [asked_british] = concepts(british)
    assert american in asked_british.alternatives
    [asked_american] = concepts(american)
    assert british in asked_american.alternatives


@pytest.mark.parametrize("word", ["size", "rise", "raise", "advise", "analyst", "noise"])
def test_short_words_and_words_without_the_ending_keep_one_spelling(word: str) -> None:
    [asked] = concepts(word)
    assert asked.alternatives == (word,)


def test_a_verb_finds_a_description_that_says_the_task_with_its_noun(library_of: object) -> None:
    # issue 34's example: porter stems "analyze" `analyz` and "analysis" `analysi`, so the pipeline skill's
    # description missed the query's verb and a skill holding "analyzing" among other uses came first
    def add(root: Path) -> None:
        skill(
            root,
            "gene-networks",
            "Infer gene regulatory networks from expression data. Use when analyzing transcriptomics data (bulk"
            " RNA-seq, single-cell RNA-seq) to find transcription factors and their targets.",
        )
        skill(
            root,
            "single-cell-pipeline",
            "Standard single-cell RNA-seq analysis pipeline: quality control, clustering, differential expression."
            " For data format questions use another skill.",
        )

    library = library_of(add)  # type: ignore[operator]
    assert top(library, "analyze single-cell RNA-seq data") == ["single-cell-pipeline"]


@pytest.mark.parametrize(
    ("verb", "nouns"),
    [
        ("analyze", {"analysis", "analyses"}),  # analyses: porter's `analys`, also the British verb
        ("analysing", {"analysis"}),
        ("diagnose", {"diagnosis"}),
        ("synthesize", {"synthesis"}),
        ("emphasizes", {"emphasis"}),
        ("classify", {"classification"}),
        ("verifying", {"verification"}),
        ("summarize", {"summary"}),
        ("prioritized", {"priority"}),
    ],
)
def test_a_verb_finds_the_nouns_the_stemmer_keeps_apart_from_it(verb: str, nouns: set[str]) -> None:
    [asked] = concepts(verb)
    assert nouns <= set(asked.alternatives)


@pytest.mark.parametrize(
    "word",
    # nouns keep their own form: "analytics events" and Python's "hypothesis" name things of their own
    ["analytics", "analysis", "hypothesis", "diagnostics", "classification", "summary", "analyst", "release", "query"],
)
def test_a_noun_and_a_word_of_no_family_keep_their_own_form(word: str) -> None:
    assert word_family(word) == []


def test_an_everyday_word_is_not_read_as_the_initials_of_a_phrase(library_of: object) -> None:
    def add(root: Path) -> None:
        skill(root, "issue-forms", "Write a Feature Issue Template for bug reports on GitHub.")
        for topic in ("shoes", "jackets", "gloves"):  # "fit" is an everyday word in this library
            skill(root, f"{topic}-sizing", f"Choose {topic} that fit well.")

    library = library_of(add)  # type: ignore[operator]
    top(library, "gloves")  # the first search reads the library's words in the background
    wait_until(lambda: library.index._vocabulary is not None, "the vocabulary was never built", poll_s=0.01)
    assert "issue-forms" not in top(library, "a coat that does not fit", n=10)
    assert top(library, "feature issue template") == ["issue-forms"]


def test_initials_the_library_writes_in_lower_case_are_a_word_not_an_abbreviation() -> None:
    vocabulary = Vocabulary.from_texts(
        ["Write a Feature Issue Template.", "Shoes that fit.", "Gloves that fit well.", "A FIT form.", "Our SLO."]
    )
    assert vocabulary.expansions("fit") == []  # twice in lower case, once in capitals
    vocabulary = Vocabulary.from_texts(["Write a Feature Issue Template.", "A FIT form.", "Shoes that fit."])
    assert vocabulary.expansions("fit") == ["feature issue template"]  # as often in capitals: it may be one


def _endings(pattern: re.Pattern[str]) -> list[str]:
    """The endings a pattern of `_SPELLINGS` lists: its last group, `(e|es|...)$`."""
    last = re.search(r"\(([a-z|]+)\)\$$", pattern.pattern)
    assert last is not None, pattern.pattern
    return last.group(1).split("|")


def test_the_endings_checked_before_the_patterns_cover_every_word_a_pattern_changes() -> None:
    """`other_spelling` and `word_family` ask `str.endswith` before their patterns (issue 36): a word with an
    ending the check leaves out would lose its other spelling or its nouns. Every pattern's own endings, after
    every stem a word may have, must give what the patterns alone give."""
    words = [
        f"{stem}{middle}{ending}"
        for stem in ("organ", "paral", "summar", "prioritis", "anal", "diagno", "synthe", "class", "ver", "x")
        for middle in ("is", "iz", "ys", "yz", "", "s", "if")
        for pattern, _ in query._SPELLINGS
        for ending in [*_endings(pattern), *(e for _, es, _ in query._FAMILIES for e in es.split("|"))]
    ]
    for word in words:
        by_patterns = next((p.sub(r, word) for p, r in query._SPELLINGS if p.match(word)), None)
        assert query.other_spelling(word) == by_patterns, word
        families = zip(query._FAMILY_PATTERNS, query._FAMILIES, strict=True)
        nouns = next(([m.group(1) + n for n in ns] for p, (_, _, ns) in families if (m := p.match(word))), [])
        assert query.word_family(word) == nouns, word
