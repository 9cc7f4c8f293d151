"""Issue 13's messages and data: one date format, readable scores, one name per language, code kept
as code, errors that name what was searched, the config file's forms, and curator runs not counted."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.artifacts import service as artifacts
from skillshelf.artifacts.archive import SessionArchive
from skillshelf.cli import cli
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.metrics.reuse import pattern_reuse
from skillshelf.projects import ProjectRoots
from skillshelf.settings import resolve_settings
from tests.artifacts.conftest import AUTH_SUMMARY, session_file
from tests.conftest import write

DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class SessionMention:
    project: str
    session_id: str
    date: str | None


def test_reuse_dates_are_days_whether_from_a_use_or_a_session(sample_root: Path, tmp_path: Path) -> None:
    def mentions(ids: list[str]) -> dict[str, list[SessionMention]]:
        return {"python/slugify": [SessionMention("shop", "s1", "2020-01-02")]} if "python/slugify" in ids else {}

    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        library.sync()
        library.usage.record("python/slugify", "blog", None, source="tool")
        (row,) = pattern_reuse(LibraryReader(library), "python/slugify", mentions=mentions).patterns
        assert row.first_used == "2020-01-02"
        assert row.last_used is not None and DAY.match(row.last_used), row.last_used
    finally:
        library.close()


@pytest.fixture
def roots(tmp_path: Path) -> ProjectRoots:
    (tmp_path / "dev" / "app").mkdir(parents=True)
    return ProjectRoots.of([tmp_path / "dev"])


def test_session_scores_are_rounded_never_in_exponent_form(roots: ProjectRoots, tmp_path: Path) -> None:
    app = tmp_path / "dev" / "app"
    for day in range(1, 8):  # a word in every session scores near zero under BM25
        session_file(app, f"2025-11-0{day}-s/session-summary.md", f"# Session {day}\n\nWorked on the login form.\n")
    with SessionArchive(roots, watch=False).opened() as archive:
        hits = artifacts.search_artifacts(archive, "login", project="app", limit=10).hits
    assert hits
    for hit in hits:
        assert hit.score == round(hit.score, 2)
        assert "e" not in json.dumps(hit.score)


def test_session_code_names_a_language_one_way(roots: ProjectRoots, tmp_path: Path) -> None:
    session_file(tmp_path / "dev" / "app", "2025-11-05-auth/session-summary.md", AUTH_SUMMARY)
    code = artifacts.get_session_code(roots, "app", "2025-11-05-auth", language="ts")
    assert code.language == "typescript"
    assert [b.language for b in code.blocks] == ["typescript"]
    assert "typescript" in code.languages and "ts" not in code.languages


def test_inline_code_keeps_its_backticks_in_decisions(roots: ProjectRoots, tmp_path: Path) -> None:
    text = "# Retry\n\n## Key Decisions\n\n- Honour `Retry-After` before backing off\n- Use ``a`b`` as is\n"
    session_file(tmp_path / "dev" / "app", "2025-11-05-retry/session-summary.md", text)
    loaded = artifacts.load_session(roots, "app", "2025-11-05-retry")
    assert loaded.decisions == ["Honour `Retry-After` before backing off", "Use ``a`b`` as is"]


def test_project_not_found_names_the_roots_searched_and_the_flag(roots: ProjectRoots, tmp_path: Path) -> None:
    with pytest.raises(SkillshelfError) as caught:
        roots.resolve("nope")
    assert caught.value.code == ErrorCode.PROJECT_NOT_FOUND
    assert str(tmp_path / "dev") in caught.value.message or "dev" in caught.value.message
    assert "--projects-root" in caught.value.message and "Known projects: app" in caught.value.message
    assert caught.value.suggestions == ["app"]


@pytest.mark.parametrize("key", ["library", "projects"])
def test_the_config_file_takes_one_path_as_a_string(tmp_path: Path, key: str) -> None:
    config = write(tmp_path / "config.toml", f'{key} = "{tmp_path / "one"}"\n')
    settings = resolve_settings(env={}, config_path=config)
    chosen = settings.roots if key == "library" else settings.project_roots
    assert chosen == [tmp_path / "one"]


def test_a_curators_run_is_not_counted_as_a_use() -> None:
    bundled = str(Path(__file__).resolve().parents[1] / "patterns")  # read-only: its usage lives in the test cache
    result = CliRunner().invoke(cli, ["run", "-l", bundled, "python/slugify", "--input", '{"text": "A b"}'])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == "a-b"
    usage = CliRunner().invoke(cli, ["usage", "-l", bundled, "--json"])
    assert json.loads(usage.stdout)["patterns"] == []


@pytest.mark.anyio
async def test_keyword_beside_a_different_query_is_refused_not_ignored(sample_root: Path, tmp_path: Path) -> None:
    from mcp import Client

    from skillshelf.server.app import build_server
    from skillshelf.settings import Settings
    from tests.conftest import call

    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        async with Client(build_server(Settings(roots=[sample_root]), library, view="full")) as client:
            is_error, body = await call(client, "searchPatterns", {"query": "slugify", "keyword": "postgres"})
            assert is_error and body["error"]["code"] == "VALIDATION_ERROR"
            assert "Pass one of them" in body["error"]["message"]
            is_error, body = await call(client, "searchPatterns", {"query": "slugify", "keyword": "slugify"})
            assert not is_error and body["data"]["hits"][0]["id"] == "python/slugify"
    finally:
        library.close()


def test_a_script_for_a_three_file_skill_is_refused_in_cli_words() -> None:
    bundled = str(Path(__file__).resolve().parents[1] / "patterns")
    result = CliRunner().invoke(cli, ["run", "-l", bundled, "python/slugify", "--script", "x.py", "--dry-run"])
    assert result.exit_code == 1
    assert "takes no --script. Call it again without --script." in result.output
