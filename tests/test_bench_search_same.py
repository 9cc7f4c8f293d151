"""bench/search_same.py reads the query sets a speed change is checked on, and never an unspent one."""

from __future__ import annotations

from pathlib import Path

from bench import search_same


def test_the_spent_sets_are_those_judged_on_and_no_unspent_one() -> None:
    # set 14 is held out for the lead's one evaluation: a comparison must not read it
    spent = search_same.SPENT_FILES
    assert spent == tuple(f"corpora-heldout{n}.txt" for n in range(2, 14))
    queries = search_same.dev_queries(spent)

    assert len(queries) > 1000
    assert all(query and "|" not in query for query in queries)


def test_a_set_marked_unspent_is_never_read(tmp_path: Path) -> None:
    """The mark is the set's own first line, so a new set is held out from the moment it is written."""
    (tmp_path / "corpora-heldout10.txt").write_text("# Held-out set 10\npara | q | KD/x\n", encoding="utf-8")
    (tmp_path / "corpora-heldout9.txt").write_text("# SPENT. Held-out set 9\n", encoding="utf-8")
    (tmp_path / "corpora-heldout15.txt").write_text("# UNSPENT. Held-out set 15\n", encoding="utf-8")

    assert search_same.spent_files(tmp_path) == ("corpora-heldout9.txt", "corpora-heldout10.txt")
