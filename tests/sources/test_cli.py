"""The source commands as a curator types them: `add` says what it installed, `sources` shows each
source's version, age, skills, the updates the last check found and local edits, as text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from skillshelf.cli import cli
from tests.sources.helpers import Repo, skill_md


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_add_then_sources_show_the_version_skills_pending_updates_and_local_edits(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.skill("release-notes", "Draft release notes.")
    first = repo.commit("first")
    root = tmp_path / "library"
    code, out, err = run("add", repo.url, "--name", "team", "--library", str(root))
    assert code == 0 and f"Added team: 2 skills in {root / 'team'} (commit {first[:8]})" in out
    assert "  team/pdf-fill" in out and "fetching" in err
    code, out, _ = run("sources", "--library", str(root))
    assert code == 0 and "team" in out and f"commit {first[:8]}" in out and "just now" in out

    repo.skill("pdf-fill", "Fill PDF forms, version two.")
    second = repo.commit("second")
    assert run("update", "--check", "--library", str(root))[0] == 1
    edited = root / "team" / "release-notes" / "SKILL.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOurs.\n", encoding="utf-8")
    code, out, _ = run("sources", "--json", "--library", str(root))
    (listed,) = json.loads(out)["sources"]
    assert code == 0 and (listed["name"], listed["commit"], listed["skills"]) == ("team", first, 2)
    assert listed["lastCheck"]["pending"] is True and listed["lastCheck"]["to"] == second
    assert listed["lastCheck"]["summary"] == "1 changed"
    assert listed["localEdits"] == [{"what": "team/release-notes", "how": "modified here since install"}]
    code, out, _ = run("sources", "--library", str(root))
    assert "1 changed" in out and "1 edit" in out


def test_the_default_root_is_the_first_configured_one(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.commit("first")
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    env = {"SKILLSHELF_LIBRARY": f"{first}:{second}"}
    assert run("add", repo.url, "--name", "team", env=env)[0] == 0
    assert (first / "team" / "pdf-fill" / "SKILL.md").is_file() and not (second / "team").exists()


def test_add_says_which_skills_another_configured_root_shadows_or_loses(tmp_path: Path) -> None:
    """The first root wins an id: an added skill another root already serves is not served, and one it
    now hides in a later root goes; `add` says both instead of leaving it to the next `check`."""
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.skill("release-notes", "Draft release notes.")
    repo.commit("first")
    first, second, third = tmp_path / "first", tmp_path / "second", tmp_path / "third"
    for root, name in ((first, "pdf-fill"), (third, "release-notes")):
        (root / "team" / name).mkdir(parents=True)
        (root / "team" / name / "SKILL.md").write_text(skill_md(name, "Ours, written by hand."), encoding="utf-8")
    second.mkdir()
    env = {"SKILLSHELF_LIBRARY": f"{first}:{second}:{third}"}
    code, _, err = run("add", repo.url, "--name", "team", "--library", str(second), env=env)
    assert code == 0
    assert f"1 added skill not served: {first} comes first and holds the same id (team/pdf-fill)" in err
    hidden = f"1 skill of {third} no longer served: the added one comes first with the same id (team/release-notes)"
    assert hidden in err


def test_add_into_the_only_root_says_nothing_of_collisions(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.commit("first")
    root = tmp_path / "library"
    code, _, err = run("add", repo.url, "--name", "team", "--library", str(root), env={"SKILLSHELF_LIBRARY": str(root)})
    assert code == 0 and "not served" not in err


def test_without_a_configured_library_the_commands_ask_for_one(tmp_path: Path) -> None:
    code, _, err = run("sources")
    assert code == 2 and "pass --library ROOT" in err


def test_a_bad_source_is_an_error_with_its_code_and_nothing_is_made(tmp_path: Path) -> None:
    code, _, err = run("add", "ext::sh -c id", "--library", str(tmp_path / "library"))
    assert code == 1 and "runs a command" in err and "[VALIDATION_ERROR]" in err
    assert not (tmp_path / "library").exists()
