"""What `skillshelf update` shows an update makes harder to find (skills/review_evals.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from skillshelf.cli.common import command_settings
from skillshelf.errors import SkillshelfError

if TYPE_CHECKING:
    from skillshelf.library.index.library import LibraryConfig
    from skillshelf.library.sources.install import Prepared

Reviewing = Callable[["Prepared", Path], None]  # a prepared update, the source's installed folder


@contextmanager
def findability_reviewer(root: Path, enabled: bool = True) -> Iterator[Reviewing]:
    """Adds to each review the queries that find a skill less well after it (unless not `enabled`:
    --no-findability). The library (its configured roots when ROOT is one of them, else ROOT alone) is
    opened by words only at the first pending update: its index is synced (built, the first time)."""
    from skillshelf.server.app import App
    from skillshelf.skills.review_evals import review_findability

    opened: list[App] = []

    def review(item: Prepared, folder: Path) -> None:
        if not enabled:
            return
        try:
            if not opened:
                opened.append(App(command_settings(), library_config=_words_config(root)))
            review_findability(opened[0].library, item.review, folder, item.folder)
        except (SkillshelfError, OSError, sqlite3.Error) as exc:  # the review stands without it: said, not fatal
            item.review.warnings.append(f"findability not checked: {getattr(exc, 'message', exc)}")

    try:
        yield review
    finally:
        for app in opened:
            app.close()


def _words_config(root: Path) -> LibraryConfig:
    settings = command_settings()
    real = root.expanduser().resolve()
    roots = settings.roots if any(r.expanduser().resolve() == real for r in settings.roots) else [root]
    return replace(settings.library_config(), roots=roots, semantic_model=None, watch=False)
