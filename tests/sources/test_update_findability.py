"""The update review reruns the trigger evals of the skills an update changes and of the skills they
contest, before and after, and lists what gets worse: a skill its own description no longer finds is
flagged like a new script (skills/review_evals.py, docs/curating.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.index.library import LibraryConfig, SkillLibrary, overlaid_index
from skillshelf.library.sources.install import open_shelf
from tests.sources.helpers import Repo, skill_md

GIT_SKILLS = ("commit", "rebase", "merge", "bisect", "blame", "stash", "branch")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout


def library_with(tmp_path: Path, repo: Repo) -> Path:
    """The team source installed beside hand-written skills the update's skills may lose to."""
    root = tmp_path / "library"
    assert run("add", repo.url, "--name", "team", "--library", str(root))[0] == 0
    for name in GIT_SKILLS:
        folder = root / "local" / f"git-{name}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            skill_md(f"git-{name}", f"Git {name}: use git to {name} in a git repository."), encoding="utf-8"
        )
    return root


def reviewed(root: Path) -> tuple[str, dict[str, Any]]:
    code, text = run("update", "--check", "--library", str(root))
    assert code == 1  # an update is pending
    code, out = run("update", "--check", "--json", "--library", str(root))
    (review,) = json.loads(out)["updates"]
    return text, review


def test_a_description_that_makes_a_skill_unreachable_is_flagged(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.commit("first")
    root = library_with(tmp_path, repo)
    repo.skill("pdf-fill", "Git.")
    repo.commit("a description that says nothing of what it does")

    text, review = reviewed(root)
    assert "  ! harder to find after the update (words only;" in text
    assert "! team/pdf-fill: its own description now ranks" in text and "(was 1st): unreachable" in text
    assert text.index("harder to find") < text.index("description: 'Fill PDF forms from JSON data.'")
    (loss,) = [item for item in review["findability"] if item["query"] == "own description"]
    assert loss["skill"] == "team/pdf-fill" and loss["unreachable"] is True and loss["rank"][0] == 1
    assert "words only" in review["findabilityNote"]
    code, text = run("update", "--check", "--no-findability", "--library", str(root))
    assert code == 1 and "harder to find" not in text and "description:" in text


def test_an_update_that_makes_an_example_pick_another_skill_is_listed(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.", evals='{should: ["fill a pdf form"]}')
    repo.commit("first")
    root = library_with(tmp_path, repo)
    repo.skill("fill-pdf-form", "Fill a PDF form.")
    repo.commit("a skill that takes pdf-fill's task")

    text, review = reviewed(root)
    assert "team/pdf-fill: example 'fill a pdf form' now picks team/fill-pdf-form (was team/pdf-fill)" in text
    (loss,) = review["findability"]
    assert (loss["skill"], loss["query"], loss["first"]) == (
        "team/pdf-fill",
        "fill a pdf form",
        ["team/pdf-fill", "team/fill-pdf-form"],
    )
    assert loss["unreachable"] is False and "! harder to find" not in text


def test_an_update_that_changes_nothing_findable_lists_nothing(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.", evals='{should: ["fill a pdf form"]}')
    repo.commit("first")
    root = library_with(tmp_path, repo)
    repo.write("pdf-fill/reference.md", "# Field types\n\nText, checkbox, choice.\n")
    repo.commit("a reference page")

    text, review = reviewed(root)
    assert "harder to find" not in text and review["findability"] == []
    assert review["findabilityNote"].startswith("words only; 1 skill(s)")


def test_the_library_after_the_update_holds_every_skill_the_staged_version_holds(tmp_path: Path) -> None:
    """The review searches a copy of the library's index where only the skills the update touches were
    re-parsed: an unchanged skill stays, a removed one goes, an added one comes, a changed one is the new."""
    repo = Repo(tmp_path / "upstream")
    for name in ("pdf-fill", "release-notes", "old-skill"):
        repo.skill(name, f"The {name} skill.")
    repo.commit("first")
    root = library_with(tmp_path, repo)
    repo.remove("old-skill")
    repo.skill("pdf-fill", "Fill PDF forms, version two.")
    repo.skill("new-skill", "A new skill.")
    repo.commit("second")
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    with open_shelf(root, reading=True) as shelf:
        prepared = shelf.prepare_update("team", check_only=True)
        assert prepared is not None
        touched = {skill.id for skill in prepared.review.skills}
        after = overlaid_index(library, shelf.folder("team"), prepared.folder, tmp_path / "after.sqlite3", touched)
        shelf.discard(prepared)
    try:
        team = {skill.id: skill.details.description for skill in after.overview() if skill.category == "team"}
        assert team == {
            "team/pdf-fill": "Fill PDF forms, version two.",
            "team/release-notes": "The release-notes skill.",
            "team/new-skill": "A new skill.",
        }
        assert len(after.overview()) == len(team) + len(GIT_SKILLS)
        assert library.get("team/old-skill") is not None  # the library itself is untouched
    finally:
        after.close()
        library.close()
