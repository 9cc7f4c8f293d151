"""The CLI's shape (issue 7) and first-contact messages (issue 13): one error path, aligned tables,
plurals, help that is not cut off, CLI words instead of tool words, and refusals that say what to fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf import __version__
from skillshelf.cli import cli
from skillshelf.cli.output import cli_message, plural
from skillshelf.errors import ErrorCode, SkillshelfError
from tests.conftest import write


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_plural_says_1_use_and_2_uses() -> None:
    assert plural(1, "use") == "1 use"
    assert plural(2, "use") == "2 uses"
    assert plural(0, "skill") == "0 skills"
    assert plural(1, "category", "categories") == "1 category"
    assert plural(3, "category", "categories") == "3 categories"


def test_tool_words_become_cli_words() -> None:
    message = "ran past its 1 s limit. Pass a larger timeoutS, or call searchPatterns; set `script` to pick one."
    said = cli_message(message)
    assert "--timeout" in said and "`skillshelf search`" in said and "--script" in said
    assert "timeoutS" not in said and "searchPatterns" not in said
    assert cli_message("a script that reads input") == "a script that reads input"  # plain English stays


def test_minus_v_capital_prints_the_version() -> None:
    code, output = run("-V")
    assert code == 0 and __version__ in output


def test_help_lists_every_command_without_cutting_a_sentence() -> None:
    code, output = run("--help")
    assert code == 0
    commands = output.split("Commands:", 1)[1]
    assert "..." not in commands, commands
    for name in ("serve", "search", "show", "check", "run", "init", "stats", "usage", "sessions", "web"):
        assert re.search(rf"^\s+{name}\s+\S", commands, re.MULTILINE), name


def test_every_command_a_message_names_exists() -> None:
    """A refusal that says "`skillshelf list` shows the ids" sends the user to a command that is not there
    (two did): every `skillshelf WORD` the source writes names one of the CLI's commands."""
    source = Path(__file__).resolve().parents[1] / "src" / "skillshelf"
    named = {
        (word, module.relative_to(source).as_posix())
        for module in source.rglob("*.py")
        for word in re.findall(r"`skillshelf ([a-z][a-z-]*)", module.read_text(encoding="utf-8"))
    }
    assert len(named) > 20  # the messages that name a command are found at all
    assert not {(word, where) for word, where in named if word not in cli.commands}


def test_search_limit_and_usage_sort_are_documented() -> None:
    _, search_help = run("search", "--help")
    assert re.search(r"-n, --limit INTEGER RANGE\s+Most hits", search_help)
    _, usage_help = run("usage", "--help")
    assert "--sort [reuseCount|recent|category]" in usage_help and "Most reused first" in usage_help


def test_library_help_names_the_config_file() -> None:
    _, output = run("search", "--help")
    assert "config.toml" in " ".join(output.split())


def test_a_table_stays_aligned_when_names_are_shorter_than_headers(tmp_path: Path) -> None:
    write(tmp_path / "db" / "x.md", "# X\n\nA short skill about one thing to do with databases.\n")
    write(tmp_path / "ab" / "y.md", "# Y\n\nAnother short skill about something else entirely.\n")
    code, output = run("categories", "-l", str(tmp_path))
    assert code == 0
    lines = [line for line in output.splitlines() if line.strip() and not line.startswith("─")]
    header, rows = lines[0], lines[1:3]
    assert [row.split()[0] for row in rows] == ["ab", "db"]
    end_of_skills = header.index("skills") + len("skills")
    for row in rows:
        assert row[end_of_skills - 1] == "1", (header, row)  # counts end under their header
    assert lines[-1] == "2 skills in 2 categories"


def test_one_category_and_one_skill_are_singular(tmp_path: Path) -> None:
    write(tmp_path / "db" / "x.md", "# X\n\nA short skill about one thing to do with databases.\n")
    code, output = run("categories", "-l", str(tmp_path))
    assert code == 0 and output.splitlines()[-1] == "1 skill in 1 category"


def test_a_domain_error_is_one_clean_line_with_its_code(sample_root: Path) -> None:
    result = CliRunner().invoke(cli, ["show", "-l", str(sample_root), "nope/nothing"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: No skill 'nope/nothing'.") and "[PATTERN_NOT_FOUND]" in result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, SkillshelfError)


def test_an_error_in_a_command_added_later_is_handled_by_the_group() -> None:
    import click

    @cli.command(name="boom-for-test", hidden=True)
    def boom() -> None:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, "bad timeoutS")

    try:
        code, output = run("boom-for-test")
    finally:
        cli.commands.pop("boom-for-test")
    assert code == 1 and output.strip() == "Error: bad --timeout [VALIDATION_ERROR]"
    assert isinstance(boom, click.Command)


def test_a_bare_skill_name_suggests_its_full_id(sample_root: Path) -> None:
    code, output = run("show", "-l", str(sample_root), "slugify")
    assert code == 1
    assert "Did you mean 'python/slugify'?" in output and "[PATTERN_NOT_FOUND]" in output


def test_an_id_that_matches_nothing_still_says_what_an_id_looks_like(sample_root: Path) -> None:
    code, output = run("show", "-l", str(sample_root), "no-such-thing")
    assert code == 1 and "ids look like 'category/name'" in output and "`skillshelf search`" in output


def test_a_missing_library_path_is_an_error_unless_allowed(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    code, output = run("search", "-l", str(missing), "x")
    assert code == 2
    assert "typo is not a folder" in output and "--allow-missing" in output
    result = CliRunner().invoke(cli, ["search", "-l", str(missing), "--allow-missing", "--json", "x"])
    assert result.exit_code == 0 and json.loads(result.stdout)["hits"] == []


def test_notes_type_accepts_only_what_the_tools_accept(tmp_path: Path) -> None:
    (tmp_path / "dev" / "shop").mkdir(parents=True)
    code, output = run("notes", "--projects-root", str(tmp_path / "dev"), "shop", "--type", "idea")
    assert code == 2 and "'idea' is not one of 'decision', 'hypothesis', 'blocker', 'general'" in output


@pytest.mark.parametrize("command", ["search", "categories", "stats", "usage"])
def test_json_output_is_unchanged_json(sample_root: Path, command: str) -> None:
    code, output = run(command, "-l", str(sample_root), "--json")
    assert code == 0 and isinstance(json.loads(output), dict)
