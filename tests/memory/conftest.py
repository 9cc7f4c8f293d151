"""A project root with one project, `app`, and a folder outside every root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from skillshelf.memory import store
from skillshelf.projects import ProjectRoots


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    """Each test starts with no parsed file cached, as a fresh server would."""
    store.clear_cache()
    yield
    store.clear_cache()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "dev" / "app"
    path.mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return path


@pytest.fixture
def roots(project: Path) -> ProjectRoots:
    return ProjectRoots.of([project.parent])


def notes_file(project: Path) -> Path:
    return project / ".agent-memory" / "session-notes.jsonl"
