"""Project resolution: inside a configured root or ACCESS_DENIED, before anything is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.projects import ProjectRoots


@pytest.fixture
def roots(tmp_path: Path) -> ProjectRoots:
    (tmp_path / "dev" / "app").mkdir(parents=True)
    (tmp_path / "dev" / "team" / "api").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    return ProjectRoots.of([tmp_path / "dev"])


def test_a_project_is_found_by_name_nested_name_or_path(roots: ProjectRoots, tmp_path: Path) -> None:
    assert roots.resolve("app").path == tmp_path / "dev" / "app"
    assert roots.resolve("team/api").name == "team/api"
    assert roots.resolve(str(tmp_path / "dev" / "app")).name == "app"


@pytest.mark.parametrize("project", ["../elsewhere", "app/../../elsewhere", "/etc", "~"])
def test_paths_outside_the_roots_are_access_denied(roots: ProjectRoots, project: str) -> None:
    with pytest.raises(SkillshelfError) as raised:
        roots.resolve(project)
    assert raised.value.code == ErrorCode.ACCESS_DENIED
    assert "/etc" not in raised.value.message or project == "/etc"


def test_a_symlink_escaping_the_root_is_access_denied(roots: ProjectRoots, tmp_path: Path) -> None:
    (tmp_path / "dev" / "sneaky").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SkillshelfError) as raised:
        roots.resolve("sneaky")
    assert raised.value.code == ErrorCode.ACCESS_DENIED


def test_an_unknown_project_lists_the_known_ones(roots: ProjectRoots) -> None:
    with pytest.raises(SkillshelfError) as raised:
        roots.resolve("nope")
    assert raised.value.code == ErrorCode.PROJECT_NOT_FOUND and "app" in raised.value.message


def test_the_root_itself_is_not_a_project(roots: ProjectRoots, tmp_path: Path) -> None:
    with pytest.raises(SkillshelfError):
        roots.resolve(str(tmp_path / "dev"))
