"""What a newcomer tripped over on the third contact (issue 35), each fixed and checked here."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.skill.paths import display_path


def test_init_of_another_folder_says_how_to_make_it_the_default_and_that_works(isolated_environment: Path) -> None:
    target = isolated_environment / "team-skills"
    made = CliRunner().invoke(cli, ["init", str(target)])
    assert made.exit_code == 0, made.output
    config = isolated_environment / ".config" / "skillshelf" / "config.toml"
    assert f"to {display_path(config)}" in made.output and "SKILLSHELF_LIBRARY=~/team-skills" in made.output
    line = next(line.strip() for line in made.output.splitlines() if line.strip().startswith("library = "))
    config.parent.mkdir(parents=True)
    config.write_text(line + "\n", encoding="utf-8")
    # the README's next line, as a user who followed the advice runs it (before: "no library configured")
    created = CliRunner().invoke(cli, ["new", "testing/webapp-smoke", "--script", "py"])
    assert created.exit_code == 0, created.output
    assert "in ~/team-skills" in created.output


def test_init_of_the_default_library_gives_no_advice_to_make_it_the_default(isolated_environment: Path) -> None:
    made = CliRunner().invoke(cli, ["init"])
    assert made.exit_code == 0, made.output
    assert "library = " not in made.output
