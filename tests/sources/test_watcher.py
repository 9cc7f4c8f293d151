"""A running server picks an applied update up through its file watcher, as it does hand edits: a real
SkillLibrary watching the root sees the new description and the added skill, and never a staging folder."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.sources.install import open_shelf
from tests.sources.helpers import Repo, add

DEADLINE_S = 60.0  # an upper bound; each wait returns as soon as the library has caught up


def wait_for(condition: Callable[[], bool], changed: threading.Event) -> bool:
    """Wait for `condition`, re-checking at each change the watcher reports (and at most every second)."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        changed.wait(1.0)
        changed.clear()
    return True


def test_a_watching_library_picks_up_an_applied_update(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.commit("first")
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=True))
    changed = threading.Event()
    library.add_change_listener(changed.set)
    try:
        library.sync()
        library.start_watching()
        assert library.get("team/pdf-fill") is not None
        repo.skill("pdf-fill", "Fill PDF forms and sign them.")
        repo.skill("changelog", "Keep a changelog.")
        repo.commit("second")
        with open_shelf(root) as shelf:
            prepared = shelf.prepare_update("team")
            assert prepared is not None
            shelf.apply(prepared)

        def caught_up() -> bool:
            skill = library.get("team/pdf-fill")
            return skill is not None and "sign" in skill.summary and library.get("team/changelog") is not None

        assert wait_for(caught_up, changed), "the watching library never saw the update"
        assert {s.id for s in library.overview()} == {"team/pdf-fill", "team/changelog"}
    finally:
        library.close()
