"""bench/search_same.py reads the query sets a speed change is checked on, and never an unspent one."""

from __future__ import annotations

from bench import search_same


def test_the_spent_sets_are_2_to_12_and_no_unspent_one() -> None:
    # sets 13 and 14 are held out for the lead's one evaluation: a comparison must not read them
    spent = search_same.SPENT_FILES
    assert spent == tuple(f"corpora-heldout{n}.txt" for n in range(2, 13))
    queries = search_same.dev_queries(spent)

    assert len(queries) > 1000
    assert all(query and "|" not in query for query in queries)
