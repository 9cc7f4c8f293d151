"""Search quality: coverage, typos, synonyms, split words, relaxed queries, the tail cut, the parse cache."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.query import Vocabulary, concepts, edit_distance
from skillshelf.library.index.store import RELATIVE_CUT, IndexedSkill, SearchFilters, camel_parts, camel_words
from skillshelf.library.indexing.filecache import FileCache
from skillshelf.skills.service import load_skill, search_patterns
from tests.conftest import deadline, synced_library, three_file, wait_until


def doc(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n\n## Steps\n\nFollow the steps.\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    three_file(lib, "ops", "kubernetes-deployment", doc("Kubernetes deployment", "Roll out a deployment on a cluster."))
    three_file(lib, "ops", "debug-crashes", doc("Debug crashes", "Find why a service crashes, step by step."))
    three_file(lib, "web", "react-transitions", doc("React transitions", "Keep input responsive with useTransition."))
    three_file(lib, "web", "token-cache", doc("Token cache", "Cache tokens in memory for speed."))
    three_file(lib, "web", "token-refresh", doc("Token refresh", "Refresh an access token."))
    three_file(
        lib,
        "web",
        "session-renewal",
        doc("Session renewal", "Renew a session: refresh the token before the cache expires."),
    )
    for n in range(8):
        three_file(lib, "misc", f"note-{n}", doc(f"Note {n}", f"An unrelated note about gardening, part {n}."))
    return lib


@pytest.fixture
def library(root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    with synced_library(root, tmp_path / "idx") as shelf:
        yield shelf


def ids(library: SkillLibrary, query: str) -> list[str]:
    return [s.id for s in library.search(query, SearchFilters(), 10)]


def test_a_concepts_expression_is_built_once_and_quotes_every_alternative() -> None:
    # a search asks each concept for its FTS5 expression several times: it is built once, not each time
    concept = concepts("useTransition")[0]

    assert concept.expression() == '("usetransition" OR "use transition")'
    assert concept.expression() is concept.expression()


def test_a_skill_holding_every_query_word_beats_one_matching_two_in_its_name(library: SkillLibrary) -> None:
    assert ids(library, "token cache refresh session")[0] == "web/session-renewal"


def test_typos_in_longer_words_are_corrected_from_the_library_vocabulary(library: SkillLibrary) -> None:
    assert ids(library, "kubernetes deploymnet")[0] == "ops/kubernetes-deployment"
    assert ids(library, "kubernets")[0] == "ops/kubernetes-deployment"  # one word, distance 1
    assert ids(library, "trnasitions")[0] == "web/react-transitions"  # a transposition counts 1


def vocabulary_builders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, the name of each thread that builds a spelling vocabulary."""
    builders: list[str] = []
    build = Vocabulary.from_texts.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Vocabulary], texts: object) -> Vocabulary:
        builders.append(threading.current_thread().name)
        return build(cls, texts)  # type: ignore[no-any-return]

    monkeypatch.setattr(Vocabulary, "from_texts", classmethod(counted))
    return builders


def test_after_an_edit_the_vocabulary_is_refreshed_in_the_background_not_in_the_search(
    library: SkillLibrary, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ids(library, "deploymnet")[0] == "ops/kubernetes-deployment"  # the first build, in the search
    assert library.index._vocabulary is not None
    builders = vocabulary_builders(monkeypatch)
    three_file(root, "data", "warehouse-snapshots", doc("Warehouse snapshots", "Snapshot a warehouse nightly."))
    library.sync()
    # the search right after the edit still answers from the old words ("warehouse" is not known yet) ...
    assert ids(library, "deploymnet")[0] == "ops/kubernetes-deployment"
    # ... while a background thread reads the new ones; later searches correct to them
    wait_until(lambda: "data/warehouse-snapshots" in ids(library, "warehuose"), "the vocabulary was never refreshed")
    assert ids(library, "warehuose")[0] == "data/warehouse-snapshots"
    assert builders and threading.current_thread().name not in builders
    assert set(builders) == {"skillshelf-vocabulary"}


def test_the_first_search_starts_the_vocabulary_in_the_background_for_a_later_typo(
    library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    builders = vocabulary_builders(monkeypatch)
    assert ids(library, "kubernetes")[0] == "ops/kubernetes-deployment"  # no typo: no vocabulary needed
    wait_until(lambda: library.index._vocabulary is not None, "the vocabulary was never built", poll_s=0.01)
    assert ids(library, "deploymnet")[0] == "ops/kubernetes-deployment"
    assert builders == ["skillshelf-vocabulary"]  # built once, off the searching thread


def test_a_search_needing_the_vocabulary_while_it_is_built_waits_for_that_one_instead_of_building_another(
    library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    builders: list[str] = []
    release = threading.Event()
    build = Vocabulary.from_texts.__func__  # type: ignore[attr-defined]

    def held_back(cls: type[Vocabulary], texts: object) -> Vocabulary:
        builders.append(threading.current_thread().name)
        if threading.current_thread().name == "skillshelf-vocabulary":
            release.wait(deadline(10))  # the background build is still under way when the typo comes
        return build(cls, texts)  # type: ignore[no-any-return]

    monkeypatch.setattr(Vocabulary, "from_texts", classmethod(held_back))
    assert ids(library, "kubernetes")[0] == "ops/kubernetes-deployment"  # starts the background build
    wait_until(lambda: builders == ["skillshelf-vocabulary"], "the background build never started", poll_s=0.01)
    found: list[list[str]] = []
    typo = threading.Thread(target=lambda: found.append(ids(library, "deploymnet")), name="typo-search")
    typo.start()
    typo.join(timeout=0.5)  # a search building its own would be done by now (it is not held back)
    release.set()
    typo.join(timeout=deadline(10))
    assert found and found[0][0] == "ops/kubernetes-deployment"  # corrected, with the background's vocabulary
    assert builders == ["skillshelf-vocabulary"]  # built once


def test_abbreviations_and_synonyms_find_the_skill(library: SkillLibrary) -> None:
    assert ids(library, "k8s")[0] == "ops/kubernetes-deployment"
    assert ids(library, "troubleshoot crashes")[0] == "ops/debug-crashes"
    assert ids(library, "troubleshoot")[0] == "ops/debug-crashes"


def test_camel_case_words_match_their_parts_both_ways(library: SkillLibrary) -> None:
    assert ids(library, "use transition")[0] == "web/react-transitions"
    assert ids(library, "useTransition")[0] == "web/react-transitions"
    assert [c.alternatives for c in concepts("useTransition")] == [("usetransition", "use transition")]


def test_a_query_is_never_empty_while_a_relaxed_one_would_match(tmp_path: Path) -> None:
    lib = tmp_path / "one"
    three_file(lib, "auth", "jwt-refresh", doc("JWT refresh", "Refresh a jwt before it expires."))
    shelf = SkillLibrary(LibraryConfig(roots=[lib], index_dir=tmp_path / "idx", watch=False))
    try:
        shelf.sync()  # every word of the skill is in "over half" of a one-skill library
        assert ids(shelf, "jwt refresh kubernetes") == ["auth/jwt-refresh"]
        assert ids(shelf, "kubernetes") == []
    finally:
        shelf.close()


def test_hits_carry_a_relative_score_and_a_weak_tail_is_cut(library: SkillLibrary) -> None:
    result = search_patterns(LibraryReader(library), "refresh token")
    scores = [h.score for h in result.hits]
    assert scores[0] == 1.0 and scores == sorted(scores, reverse=True)
    assert all(s >= 0.2 for s in scores)
    assert "misc/note-1" not in [h.id for h in result.hits]
    assert all(h.score == 0.0 for h in search_patterns(LibraryReader(library), "").hits)


def test_edit_distance_and_vocabulary_corrections() -> None:
    assert edit_distance("pyhton", "python", 2) == 1
    assert edit_distance("deploymnet", "deployment", 2) == 1
    assert edit_distance("kitten", "sitting", 1) == 2  # over the limit: limit + 1
    vocabulary = Vocabulary.from_texts(["deployment kubernetes", "deployment", "employment"])
    assert vocabulary.corrections("deploymnet") == ["deployment"]
    assert vocabulary.corrections("deployment") == []  # known
    assert vocabulary.corrections("dploy") == []  # short words need an exact match


def test_a_changed_file_is_never_served_stale(library: SkillLibrary, root: Path) -> None:
    first = load_skill(LibraryReader(library), "ops/debug-crashes", include_code=True)
    again = load_skill(LibraryReader(library), "ops/debug-crashes", include_code=True)
    assert again.documentation == first.documentation and library.files.hits >= 1
    # same size, new content: the signature (mtime_ns, size, inode) still changes
    path = root / "ops" / "debug-crashes.md"
    path.write_text(path.read_text(encoding="utf-8").replace("crashes", "CRASHES"), encoding="utf-8")
    assert "CRASHES" in load_skill(LibraryReader(library), "ops/debug-crashes").documentation
    code_file = root / "ops" / "debug-crashes.py"
    code_file.write_text("def debug_crashes() -> None:\n    pass\n", encoding="utf-8")
    library.sync()
    assert "pass" in (load_skill(LibraryReader(library), "ops/debug-crashes", include_code=True).code or [])[0].content
    code_file.write_text("def debug_crashes() -> None:\n    raise\n", encoding="utf-8")
    assert "raise" in (load_skill(LibraryReader(library), "ops/debug-crashes", include_code=True).code or [])[0].content


def test_the_cache_is_bounded_least_recently_used_first(tmp_path: Path) -> None:
    cache = FileCache(max_entries=2)
    files = [tmp_path / f"{n}.txt" for n in range(3)]
    for f in files:
        f.write_text(f.name, encoding="utf-8")
        cache.get(f, "text", f.read_text)
    assert len(cache) == 2
    cache.get(files[0], "text", files[0].read_text)
    assert cache.misses == 4  # the first file was evicted, so it was read again


def test_concurrent_identical_loads_run_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    someone_waits = threading.Event()

    class ObservedEvent(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            someone_waits.set()
            return super().wait(timeout)

    monkeypatch.setattr(threading, "Event", ObservedEvent)  # what filecache creates its events from
    path = tmp_path / "doc.md"
    path.write_text("text", encoding="utf-8")
    cache = FileCache()
    calls: list[int] = []

    def slow_load() -> str:
        calls.append(1)
        assert someone_waits.wait(deadline())  # hold the load until the second caller is waiting for it
        return path.read_text(encoding="utf-8")

    results: list[str] = []
    second = threading.Thread(target=lambda: results.append(cache.get(path, "doc", slow_load)))

    def first_caller() -> None:
        second.start()
        results.append(cache.get(path, "doc", slow_load))

    first = threading.Thread(target=first_caller)
    first.start()
    first.join(deadline())
    second.join(deadline())
    assert results == ["text", "text"] and calls == [1]


def test_a_camel_case_word_is_a_whole_word_of_its_shape() -> None:
    """The words found around each lower-then-upper pair are the ones the shape's own boundaries gave."""
    text = "useState and getHTTPResponse, éfooBar fooBar_x x9Y loadSkill.loadSkill ÑuseX a1B2c3 aB"
    assert list(camel_words(text)) == ["useState", "getHTTPResponse", "x9Y", "loadSkill", "loadSkill", "a1B2c3"]
    assert camel_parts("useState", "a useState hook", "no camel here") == "use state"


def test_a_search_for_a_page_returns_the_rest_of_that_pages_candidates_and_walks_no_more(tmp_path: Path) -> None:
    # the fusion's word pool (issue 36): the order beyond the page, from the candidates the page's own search ranks
    lib = tmp_path / "lib"
    for n in range(6):  # more skills hold every word than a page of 5: no partial match becomes a candidate
        text = doc(f"Token refresh {n}", f"Refresh a token with rotation, way {n}.")
        three_file(lib, "auth", f"token-refresh-{n}", text)
    three_file(lib, "auth", "token-rotation", doc("Token rotation", "Rotation of a token, the token's rotation."))
    for n in range(8):
        three_file(lib, "misc", f"note-{n}", doc(f"Note {n}", f"An unrelated note about gardening, part {n}."))
    with synced_library(lib, tmp_path / "idx") as shelf:
        query, every = "token refresh rotation", SearchFilters()
        assert "auth/token-rotation" in [s.id for s in shelf.index.search(query, every, 50)]  # a walk for 50 hits
        pool, page = shelf.index.search(query, every, 50, page=5), shelf.index.search(query, every, 5)
        assert pool[:5] == page
        assert sorted(s.id for s in pool) == [f"auth/token-refresh-{n}" for n in range(6)]


def test_a_hit_row_makes_the_same_frozen_skill_as_its_fields_do() -> None:
    """`IndexedSkill.from_row` fills the instance's dict in one update (issue 36): the fields must land in their
    own names, and the skill stay frozen, hashable and equal to one built by the dataclass."""
    payload = '{"declaredName": "Deploy"}'
    row = ("ops/deploy", "Deploy", "ops", "agent-skill", "Roll out.", 7.5, "heuristic", 1, 0, 120, payload)
    made = IndexedSkill.from_row(row, 0.5, 0.25, 0.75)
    built = IndexedSkill(
        "ops/deploy", "Deploy", "ops", "agent-skill", "Roll out.", 7.5, "heuristic", True, False, 120, payload,
        0.5, 0.25, 0.75,
    )  # fmt: skip
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert (made.meets_bar, made.executable, made.body_share, made.coverage) == (True, False, 0.25, 0.75)
    assert made.payload_json == payload
    with pytest.raises(FrozenInstanceError):
        made.score = 1.0  # type: ignore[misc]


def _page_by_the_rule(
    ranked: dict[int, float], exact: set[int], limit: int, quality: dict[int, tuple[float, str]]
) -> list[tuple[str, float]]:
    """`_fetch`'s page written plainly: shares of the best, the weak tail cut, then (exact name, share to 2
    decimals, quality, id)."""
    best = max(ranked.values()) or 1.0
    share = {r: 1.0 if r in exact else s / best for r, s in ranked.items()}
    kept = [r for r in ranked if best == 1.0 or share[r] >= RELATIVE_CUT]
    page = sorted(kept, key=lambda r: (r not in exact, -round(share[r], 2), -quality[r][0], quality[r][1]))
    return [(quality[r][1], round(share[r], 3)) for r in page[:limit]]


def test_a_pages_hits_and_order_are_the_rule_written_plainly(library: SkillLibrary) -> None:
    index = library.index
    with index._guard():
        quality = {r: (q, i) for r, q, i in index._conn.execute("SELECT rowid, quality, id FROM skills")}
    rowids = sorted(quality)
    cases = [
        # ties at 2 decimals straddling the page's end, scores in no order, a weak tail
        {
            r: [9.0, 8.996, 8.999, 8.994, 3.0, 1.0, 0.5, 7.2, 7.204, 7.199, 2.5, 1.9, 1.8, 1.7][i]
            for i, r in enumerate(rowids)
        },
        {r: -1.0 - i / 7 for i, r in enumerate(rowids)},  # a negative best reverses the order of the scores
        dict.fromkeys(rowids, 0.0),  # best 0: every share counts as of 1.0, nothing cut
    ]
    for ranked in cases:
        for exact in (set(), {rowids[5]}):
            for limit in (1, 3, 4, 10):
                hits = [(h.id, h.score) for h in index._fetch(dict(ranked), exact, limit)]
                assert hits == _page_by_the_rule(ranked, exact, limit, quality), (ranked, exact, limit)
