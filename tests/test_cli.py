"""The curator CLI: same services as the tools, readable text, JSON for scripts, honest exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.cli import cli
from tests.conftest import write


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_search_prints_ranked_hits(sample_root: Path) -> None:
    code, output = run("search", "--library", str(sample_root), "tenant", "isolation", "postgres")
    assert code == 0
    assert output.splitlines()[0].startswith("database/rls-policy  8.5 [code]")


def test_search_json_is_the_tools_data_shape(sample_root: Path) -> None:
    code, output = run("search", "-l", str(sample_root), "--json", "slugify")
    assert code == 0
    assert json.loads(output)["hits"][0]["id"] == "python/slugify"


def test_show_prints_quality_reasons_docs_and_code(sample_root: Path) -> None:
    code, output = run("show", "-l", str(sample_root), "database/rls-policy", "--code")
    assert code == 0
    assert "quality 8.5 (declared)" in output  # never used: not verified, whatever the score
    assert "# Row Level Security Policy" in output and "def rls_policy" in output


def test_show_of_an_unknown_id_fails_with_the_code_and_a_suggestion(sample_root: Path) -> None:
    code, output = run("show", "-l", str(sample_root), "python/slugfy")
    assert code == 1
    assert "Did you mean 'python/slugify'" in output and "[PATTERN_NOT_FOUND]" in output


def test_categories_lists_counts(sample_root: Path) -> None:
    code, output = run("categories", "-l", str(sample_root))
    assert code == 0 and "4 skills in 3 categories" in output


def test_check_exits_1_on_errors_and_names_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "c" / "broken" / "SKILL.md", "---\nname: broken\ndescription: [oops\n---\n# B\n")
    code, output = run("check", str(tmp_path))
    assert code == 1
    assert "c/broken/SKILL.md:3: error:" in output and "[frontmatter-invalid-yaml]" in output


def test_check_json_reports_counts(sample_root: Path) -> None:
    code, output = run("check", "--json", str(sample_root))
    report = json.loads(output)
    assert code == 0 and report["skills"] == 4 and report["errors"] == 0


def test_the_bundled_library_checks_clean() -> None:
    bundled = Path(__file__).resolve().parents[1] / "patterns"
    code, output = run("check", "--json", str(bundled))
    report = json.loads(output)
    assert code == 0, [f for f in report["findings"] if f["severity"] == "error"]
    assert report["skills"] >= 20
    assert len({skill_id.split("/")[0] for skill_id in report["quality"]}) >= 6


def test_init_copies_the_examples_and_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    code, output = run("init", str(target))
    assert code == 0 and "Created" in output
    code, output = run("categories", "-l", str(target))
    assert code == 0 and "skills in" in output
    code, output = run("init", str(target))
    assert code == 1 and "not empty" in output


def test_environment_variable_roots_are_used(sample_root: Path, monkeypatch: object) -> None:
    result = CliRunner().invoke(cli, ["categories"], env={"SKILLSHELF_LIBRARY": str(sample_root)})
    assert result.exit_code == 0 and "4 skills in 3 categories" in result.output


def test_without_any_library_the_bundled_examples_are_used_and_said_so(isolated_environment: Path) -> None:
    result = CliRunner().invoke(cli, ["categories"])
    assert result.exit_code == 0
    assert "serving the bundled examples" in result.stderr


def test_check_accepts_a_single_skill_file_or_folder(sample_root: Path) -> None:
    code, output = run("check", "--json", str(sample_root / "git" / "release-notes"))
    report = json.loads(output)
    assert code == 0 and list(report["quality"]) == ["git/release-notes"]
    code, output = run("check", "--json", str(sample_root / "python" / "slugify.md"))
    assert code == 0 and list(json.loads(output)["quality"]) == ["python/slugify"]


def test_stats_and_usage_show_library_health_and_reuse(sample_root: Path) -> None:
    code, output = run("stats", "-l", str(sample_root))
    assert code == 0 and output.startswith("4 skills, mean quality")
    assert "never used: 4" in output
    code, output = run("usage", "-l", str(sample_root))
    assert code == 0 and "No recorded use yet" in output
    code, output = run("usage", "-l", str(sample_root), "python/nope")
    assert code == 1 and "[PATTERN_NOT_FOUND]" in output


def test_run_executes_a_skill_and_prints_its_json(tmp_path: Path) -> None:
    bundled = Path(__file__).resolve().parents[1] / "patterns"
    code, output = run("run", "-l", str(bundled), "python/slugify", "--input", '{"text": "Hello, World"}')
    assert code == 0, output
    assert json.loads(output)["output"] == "hello-world"
    (tmp_path / "in.json").write_text('{"text": 3}', encoding="utf-8")
    code, output = run("run", "-l", str(bundled), "python/slugify", "--input", f"@{tmp_path / 'in.json'}")
    assert code == 1 and "[VALIDATION_ERROR]" in output
    code, output = run("run", "-l", str(bundled), "python/slugify", "--dry-run", "--input", '{"text": "x"}')
    assert code == 0 and json.loads(output)["wouldRun"]["entry"] == "slugify(**input)"


def test_run_passes_script_arguments_and_says_which_isolation_applied() -> None:
    bundled = Path(__file__).resolve().parents[1] / "patterns"
    code, output = run("run", "-l", str(bundled), "git/git-bisect-workflow", "--arg", "exit 0")
    assert code == 0, output
    result = json.loads(output)
    assert result["output"]["verdict"] == "good"
    assert result["ran"]["isolation"] in {"bubblewrap", "rlimits-only"} and result["ran"]["isolationNote"]


def test_notes_lists_a_projects_memory(tmp_path: Path) -> None:
    from skillshelf.memory.service import add_note
    from skillshelf.projects import ProjectRoots

    (tmp_path / "dev" / "shop").mkdir(parents=True)
    roots = ProjectRoots.of([tmp_path / "dev"])
    add_note(roots, "shop", "decision", "Use Postgres row level security", ["db"])
    add_note(roots, "shop", "blocker", "CI runner lacks Docker")
    code, output = run("notes", "--projects-root", str(tmp_path / "dev"), "shop", "--type", "decision")
    assert code == 0 and "Use Postgres row level security" in output and "Docker" not in output
    assert "1 of 1 note in shop" in output
    code, output = run("notes", "--projects-root", str(tmp_path / "dev"), "../elsewhere")
    assert code == 1 and "[ACCESS_DENIED]" in output


def test_sessions_lists_a_projects_past_sessions(tmp_path: Path) -> None:
    write(
        tmp_path / "dev" / "shop" / ".agent-artifacts" / "2025-11-05-auth-flow" / "session-summary.md",
        "# Auth flow\n\nAdded login with sessions.\n\n## Decisions\n\n- Use python/slugify for usernames\n",
    )
    write(tmp_path / "dev" / "shop" / ".agent-artifacts" / "2025-10-01-setup.md", "# Setup\n\nProject set-up.\n")
    code, output = run("sessions", "--projects-root", str(tmp_path / "dev"), "shop")
    assert code == 0, output
    lines = output.splitlines()
    assert lines[0].startswith("2025-11-05  2025-11-05-auth-flow  Auth flow") and "2025-10-01-setup" in output
    code, output = run("sessions", "--projects-root", str(tmp_path / "dev"), "shop", "-q", "login", "--json")
    assert code == 0 and json.loads(output)["hits"][0]["sessionId"] == "2025-11-05-auth-flow"


def test_sessions_closes_the_session_archive_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[SessionArchive] = []
    close = SessionArchive.close

    def counted(archive: SessionArchive) -> None:
        closed.append(archive)
        close(archive)

    monkeypatch.setattr(SessionArchive, "close", counted)
    write(tmp_path / "dev" / "shop" / ".agent-artifacts" / "2025-10-01-setup.md", "# Setup\n\nProject set-up.\n")
    code, output = run("sessions", "--projects-root", str(tmp_path / "dev"), "shop")
    assert code == 0 and "2025-10-01-setup" in output, output
    assert len(closed) == 1
