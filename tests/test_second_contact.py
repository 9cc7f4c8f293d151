"""What a newcomer tripped over on the second contact (issue 24), each fixed and checked here."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli


@pytest.mark.parametrize("view", ["full", "agent", "curator", "memory", "default"])
def test_token_new_takes_the_built_in_views_the_server_accepts(tmp_path: Path, view: str) -> None:
    config = tmp_path / "config.toml"
    made = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "bob", "--view", view])
    assert made.exit_code == 0, made.output  # before: "no view 'full' in config.toml; views: default"
    assert tomllib.loads(config.read_text(encoding="utf-8"))["auth"]["tokens"]["bob"]["views"] == [view]


def test_token_new_for_an_undefined_view_says_to_define_it_first(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    refused = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "ci", "--view", "readers"])
    assert refused.exit_code != 0
    assert "no view 'readers'" in refused.output and "[views.NAME]" in refused.output
    assert not config.exists()  # nothing written


def test_a_bad_glob_on_the_command_line_is_a_usage_error_not_a_traceback() -> None:
    result = CliRunner().invoke(cli, ["serve", "--library", "patterns", "--include", "[abc"])
    assert result.exit_code == 2  # click's usage error; before: a PatternError traceback
    assert "'[' at position 0 has no closing ']'" in result.output and "Traceback" not in result.output


NATURAL_QUERIES = {
    "find skill": "searchPatterns",
    "search for a skill": "searchPatterns",
    "look up how to do something": "searchPatterns",
    "run code": "executeSkill",
    "execute a skill": "executeSkill",
    "read a skill's file": "readSkillFile",
    "load documentation": "loadSkill",
    "record a decision": "addNote",
    "remember what we decided": "addNote",
    "search past sessions": "searchArtifacts",
    "library health": "getLibraryStats",
    "which skills are reused": "getPatternReuse",
    "blockers": "getBlockers",
    "mark a skill as used": "trackPatternUsage",
    "compression ratio": "getCompressionRatio",
}


@pytest.mark.anyio
async def test_search_mode_finds_the_tool_a_natural_query_means(tmp_path: Path) -> None:
    from mcp import Client

    from skillshelf.config.views import ViewSettings
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.app import build_server
    from skillshelf.settings import ExecutionSettings, Settings

    library = SkillLibrary(LibraryConfig(roots=[Path("patterns")], index_dir=tmp_path / "index", watch=False))
    views = {"all": ViewSettings(exposure="search")}
    settings = Settings(roots=library.roots, views=views, execution=ExecutionSettings(enabled=True))
    try:
        async with Client(build_server(settings, library, view="all")) as client:
            firsts = {}
            for query in NATURAL_QUERIES:
                found = await client.call_tool("all_search_tools", {"query": query, "limit": 3})
                assert found.structured_content is not None
                tools = found.structured_content["data"]["tools"]
                firsts[query] = tools[0]["name"] if tools else None
    finally:
        library.close()
    assert firsts == NATURAL_QUERIES  # before: "find skill" -> getLibraryStats, "run code" -> addNote


@pytest.mark.anyio
async def test_the_agent_view_never_points_to_a_tool_it_hides(tmp_path: Path) -> None:
    from mcp import Client

    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.app import build_server
    from skillshelf.settings import Settings

    library = SkillLibrary(LibraryConfig(roots=[Path("patterns")], index_dir=tmp_path / "index", watch=False))
    try:
        async with Client(build_server(Settings(roots=library.roots), library, view="agent")) as client:
            listed = (await client.list_tools()).tools
            failed = await client.call_tool("searchPatterns", {"query": "x", "category": "nope"})
    finally:
        library.close()
    shown = {t.name for t in listed}
    assert "listCategories" not in shown
    assert "listCategories" not in json.dumps([t.model_dump(mode="json") for t in listed])
    assert failed.structured_content is not None and failed.structured_content["error"]["code"] == "CATEGORY_INVALID"
    assert "listCategories" not in failed.structured_content["error"]["message"]


@pytest.mark.anyio
async def test_an_unknown_tool_in_a_direct_view_gets_the_envelope_with_close_names(tmp_path: Path) -> None:
    from mcp import Client

    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.app import build_server
    from skillshelf.settings import Settings

    library = SkillLibrary(LibraryConfig(roots=[Path("patterns")], index_dir=tmp_path / "index", watch=False))
    try:
        async with Client(build_server(Settings(roots=library.roots), library, view="agent")) as client:
            result = await client.call_tool("searchPattern", {"query": "x"})
    finally:
        library.close()
    assert result.is_error and result.structured_content is not None  # before: plain text "Unknown tool"
    error = result.structured_content["error"]
    assert error["code"] == "TOOL_NOT_AVAILABLE" and error["suggestions"][0] == "searchPatterns"
    assert "search_tools" not in error["message"]  # a direct view has no search tools to point to


def test_the_watch_process_leaves_ctrl_c_to_the_server_and_says_nothing(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    command = [sys.executable, "-m", "skillshelf.library.indexing.watch_child", "--recursive", str(tmp_path)]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline()  # ready
        child.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends the whole process group
        assert child.poll() is None
    finally:
        _out, err = child.communicate(input=b"", timeout=60)  # the server closing the pipe ends it
    assert child.returncode == 0
    assert b"KeyboardInterrupt" not in err  # before: watchfiles' line after "skillshelf: stopped"


@pytest.mark.anyio
async def test_the_call_log_names_only_skills_that_resolved(tmp_path: Path) -> None:
    from mcp import Client

    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.app import build_server
    from skillshelf.server.calllog import CallLog, read_records
    from skillshelf.settings import Settings

    log = CallLog(tmp_path / "calls.jsonl", 1 << 20)
    library = SkillLibrary(LibraryConfig(roots=[Path("patterns")], index_dir=tmp_path / "index", watch=False))
    try:
        async with Client(build_server(Settings(roots=library.roots), library, view="agent", call_log=log)) as client:
            for skill_id in ("../../etc/passwd", "python/slugfy", "python/slugify"):
                await client.call_tool("loadSkill", {"skillId": skill_id})
    finally:
        library.close()
    log.close()
    named = [r.get("skill") for r in read_records(log.path)]
    assert named == [None, None, "python/slugify"]  # before: junk and typos counted among the busiest


def test_explain_and_show_suggest_what_was_meant_and_nothing_unrelated() -> None:
    typo = CliRunner().invoke(cli, ["explain", "getNotz", "--library", "patterns"])
    assert typo.exit_code != 0 and "Did you mean 'getNotes'?" in typo.output  # before: no suggestion
    misspelt = CliRunner().invoke(cli, ["show", "python/slugfy", "--library", "patterns"])
    assert misspelt.exit_code != 0 and "python/slugify" in misspelt.output
    assert "property-based-testing" not in misspelt.output  # before: a search on the words added it


def test_a_session_whose_title_matches_never_scores_zero(tmp_path: Path) -> None:
    from skillshelf.artifacts.archive import SessionArchive
    from skillshelf.artifacts.service import search_artifacts
    from skillshelf.projects import ProjectRoots
    from tests.artifacts.conftest import session_file

    projects = tmp_path / "dev"
    session_file(projects / "app", "2026-01-02-billing.md", "# Billing retries\n\nWe reworked the billing retries.\n")
    session_file(projects / "app", "2026-01-03-billing.md", "# Billing export\n\nThe billing export job.\n")
    with SessionArchive(ProjectRoots.of([projects]), index_dir=tmp_path / "index", watch=False).opened() as archive:
        found = search_artifacts(archive, "billing", limit=5)
    assert len(found.hits) == 2
    assert all(hit.score > 0 for hit in found.hits)  # before: 0.0, a word every session holds scores about 0
    assert max(hit.score for hit in found.hits) == 1.0


@pytest.mark.parametrize(
    ("length", "said"), [(0, "no description"), (12, "12 characters (under 50"), (1100, "1100 characters (over 1024")]
)
def test_a_description_quality_reason_says_which_problem_it_is(length: int, said: str) -> None:
    from skillshelf.library.skill.quality import _description_problem

    assert said in _description_problem(length)  # before: "missing, under 50 or over 1024" for all three


def test_a_projects_root_no_tool_of_the_view_reads_is_reported_at_start(tmp_path: Path) -> None:
    import subprocess
    import sys

    command = [sys.executable, "-m", "skillshelf", "serve", "--library", "patterns", "--projects-root", str(tmp_path)]
    agent = subprocess.run(command, input="", capture_output=True, text=True, timeout=120, check=False)
    assert "has no memory or session tool" in agent.stderr and "--view memory" in agent.stderr
    full = subprocess.run(
        [*command, "--view", "full"], input="", capture_output=True, text=True, timeout=120, check=False
    )
    assert "has no memory or session tool" not in full.stderr


def test_the_tool_names_constant_is_the_registry(tmp_path: Path) -> None:
    from skillshelf.catalogue import TOOL_NAMES
    from skillshelf.library.index.library import LibraryConfig
    from skillshelf.server.app import App
    from skillshelf.settings import Settings

    settings = Settings(
        roots=[Path("patterns")], project_roots=[tmp_path], cache_dir=tmp_path / "sessions", watch=False
    )
    config = LibraryConfig(roots=[Path("patterns")], index_dir=tmp_path / "index", watch=False)
    with App(settings, library_config=config) as app:
        names = [tool.name for tool in app.tools()]
    assert sorted(names) == sorted(TOOL_NAMES)


def test_a_default_view_that_extends_the_agent_view_keeps_its_tools_and_a_wider_one_is_reported(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    from skillshelf.config.views import AGENT_TOOLS, ViewSettings, all_views

    hooks_only = ViewSettings.model_validate(
        {"extends": "agent", "hooks": {"pre_call": "skillshelf.server.hooks:audit"}}
    )
    extended = all_views({"default": hooks_only}, execution_enabled=False)["default"]
    assert [r.include for r in extended.tools] == list(AGENT_TOOLS) and extended.hooks.pre_call is not None
    config = tmp_path / "config.toml"
    config.write_text('[views.default.hooks]\npre_call = "skillshelf.server.hooks:audit"\n', encoding="utf-8")
    command = [sys.executable, "-m", "skillshelf", "--config", str(config), "serve", "--library", "patterns"]
    widened = subprocess.run(command, input="", capture_output=True, text=True, timeout=120, check=False)
    assert "replaces the built-in agent view: agents get 17 tools instead of 4" in widened.stderr
    config.write_text(
        '[views.default]\nextends = "agent"\n\n[views.default.hooks]\npre_call = "skillshelf.server.hooks:audit"\n',
        encoding="utf-8",
    )
    kept = subprocess.run(command, input="", capture_output=True, text=True, timeout=120, check=False)
    assert "replaces the built-in agent view" not in kept.stderr and kept.returncode == 0, kept.stderr


REAL_MODEL = Path(__file__).parent.parent / ".cache" / "test-model" / "all-MiniLM-L6-v2"


@pytest.mark.skipif(not REAL_MODEL.is_dir(), reason="no sentence model: run .ci/test-model")
def test_a_cli_search_says_when_semantic_search_is_still_embedding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = importlib.import_module("skillshelf.cli.main")  # the package exports a function of that name

    monkeypatch.setattr(main, "SEMANTIC_WAIT_S", 0.0)  # the first search of a fresh cache meets the embedding
    env = {"SKILLSHELF_CACHE_DIR": str(tmp_path / "cache"), "SKILLSHELF_SEMANTIC_MODEL": str(REAL_MODEL)}
    first = CliRunner().invoke(cli, ["search", "--library", "patterns", "retry", "flaky"], env=env)
    assert first.exit_code == 0 and "python/retry-backoff" in first.stdout
    assert "semantic search is still embedding the library" in first.stderr
    assert "rank by words only" in first.stderr
    monkeypatch.setattr(main, "SEMANTIC_WAIT_S", 60.0)
    settled = CliRunner().invoke(cli, ["search", "--library", "patterns", "retry", "flaky"], env=env)
    assert settled.exit_code == 0 and "semantic" not in settled.stderr


def test_a_cli_search_with_an_unusable_model_says_it_ranks_by_words(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("junk", encoding="utf-8")
    env = {"SKILLSHELF_CACHE_DIR": str(tmp_path / "cache"), "SKILLSHELF_SEMANTIC_MODEL": str(model)}
    found = CliRunner().invoke(cli, ["search", "--library", "patterns", "--json", "retry"], env=env)
    assert found.exit_code == 0
    assert "semantic search is off" in json.loads(found.stdout)["warnings"][-1]


def test_check_names_a_missing_root_as_the_path_the_user_gave(tmp_path: Path) -> None:
    missing = tmp_path / "team-skills"
    result = CliRunner().invoke(cli, ["check", str(missing)])
    assert result.exit_code == 1
    assert f"{missing}: error: library root does not exist" in result.stdout
    assert f"{missing}/." not in result.stdout


def test_health_says_when_the_index_last_matched_the_files_and_how_changes_reach_it(tmp_path: Path) -> None:
    import datetime as dt

    from skillshelf.library.index.library import LibraryConfig, SkillLibrary

    still = SkillLibrary(LibraryConfig(roots=[Path("patterns")], index_dir=tmp_path / "a", watch=False))
    try:
        assert still.status()["index"] == {"syncedAt": None, "changes": "off"}  # never synced yet
        before = dt.datetime.now(dt.UTC).replace(microsecond=0)
        still.sync()
        fresh = still.status()["index"]
        assert isinstance(fresh, dict) and fresh["changes"] == "off"
        assert before <= dt.datetime.fromisoformat(fresh["syncedAt"]) <= dt.datetime.now(dt.UTC)
    finally:
        still.close()
    watched = SkillLibrary(LibraryConfig(roots=[Path("patterns")], index_dir=tmp_path / "b", watch=True))
    try:
        watched.sync()
        watched.start_watching()
        assert watched.status()["index"]["changes"] == "watching"  # type: ignore[index]
    finally:
        watched.close()


def test_finding_counts_read_the_same_in_check_and_stats(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    (root / "tools" / "one").mkdir(parents=True)
    (root / "tools" / "one" / "SKILL.md").write_text("---\nname: one\n---\n# One\n", encoding="utf-8")  # no description
    checked = CliRunner().invoke(cli, ["check", str(root)])
    summary = checked.stdout.splitlines()[-1]
    assert summary.startswith("1 skill checked: 1 error, ")
    assert "errors" not in summary.split(",")[0] and "info" not in summary
    env = {"SKILLSHELF_CACHE_DIR": str(tmp_path / "cache")}
    stats = CliRunner().invoke(cli, ["stats", "--library", str(root)], env=env)
    line = next(row for row in stats.stdout.splitlines() if row.startswith("findings:"))
    assert "1 error" in line and "1 errors" not in line and "infos" not in line and " info" not in line


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_check_of_a_big_library_shows_progress_on_a_terminal(tmp_path: Path, isolated_environment: Path) -> None:
    import pty

    from tests.test_first_contact import large_library, read_until, serve_env

    root = large_library(tmp_path / "big")
    controller, terminal = pty.openpty()
    command = [sys.executable, "-m", "skillshelf", "check", str(root)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=terminal, env=serve_env(isolated_environment)) as run:
        os.close(terminal)
        shown = read_until(controller, r"210/210 skills\r?\n")
        stdout, _ = run.communicate(timeout=60)
    os.close(controller)
    assert "\rchecking: 1/210 skills" in shown and "\rchecking: 210/210 skills" in shown, shown
    assert b"210 skills checked" in stdout and b"checking" not in stdout  # progress never reaches stdout
