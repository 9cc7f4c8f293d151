"""`skillshelf new`: a scaffold in either layout that `check` passes with no finding, TODO markers where the
curator writes, scripts that `skillshelf run` runs (under bubblewrap where it is installed), names checked
against the Agent Skills rules, and nothing ever overwritten."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.skill import scaffold
from skillshelf.library.skill.checker import check_roots
from tests.conftest import agent_skill, three_file, write

LAYOUTS = [
    ("folder", None),
    ("folder", "py"),
    ("folder", "sh"),
    ("folder", "js"),
    ("three-file", None),
    ("three-file", "py"),
    ("three-file", "js"),
]
NEEDS_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def new(root: Path, skill_id: str, *options: str) -> tuple[int, str]:
    return run("new", "--library", str(root), skill_id, *options)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("layout", "script"), LAYOUTS)
def test_a_scaffold_checks_with_no_finding_but_its_placeholder_text(
    tmp_path: Path, layout: str, script: str | None
) -> None:
    name = f"smoke-{layout}-{script or 'docs'}"
    code, output = new(tmp_path, f"testing/{name}", "--layout", layout, *(["--script", script] if script else []))
    assert code == 0, output
    report = check_roots([tmp_path])
    assert [s.id for s in report.skills] == [f"testing/{name}"]
    assert [(f.severity, f.code) for f in report.findings] == [("warning", "scaffold-text")], report.findings
    (skill,) = report.skills
    assert skill.executable == (script is not None)
    assert skill.description.startswith("TODO:") and name in skill.description
    assert "TODO:" in skill.body and "## When to use" in skill.body
    # An unfinished scaffold is a stub: never verified until it is written.
    assert skill.quality.score <= 6.0 and not skill.quality.meets_bar


@pytest.mark.parametrize(
    ("layout", "script"),
    [
        ("folder", "py"),
        ("folder", "sh"),
        pytest.param("folder", "js", marks=NEEDS_NODE),
        ("three-file", "py"),
        pytest.param("three-file", "js", marks=NEEDS_NODE),
    ],
)
def test_the_scaffold_script_runs_with_skillshelf_run(tmp_path: Path, layout: str, script: str) -> None:
    code, output = new(tmp_path, "tools/echo-text", "--layout", layout, "--script", script)
    assert code == 0, output
    code, output = run("run", "-l", str(tmp_path), "tools/echo-text", "--input", '{"text": "hello"}')
    assert code == 0, output
    result = json.loads(output)
    assert result["exitCode"] == 0 and result["outputFormat"] == "json", result
    expected = {"text": "hello"} if script == "sh" else "hello"
    assert result["output"]["received"] == expected
    if shutil.which("bwrap"):
        assert result["ran"]["isolation"] == "bubblewrap", result["ran"]


def test_a_folder_scaffold_writes_its_skill_and_says_what_to_do_next(tmp_path: Path) -> None:
    code, output = new(tmp_path, "testing/webapp-smoke", "--script", "py")
    assert code == 0
    folder = tmp_path / "testing" / "webapp-smoke"
    assert sorted(snapshot(folder)) == ["SKILL.md", "evals/eval_queries.json", "scripts/webapp-smoke.py"]
    assert (folder / "scripts" / "webapp-smoke.py").stat().st_mode & 0o111
    assert "testing/webapp-smoke/SKILL.md" in output and "Fill in every TODO" in output
    assert (
        f"skillshelf check {tmp_path}/testing/webapp-smoke" in output
        and "skillshelf run testing/webapp-smoke" in output
        and f"skillshelf eval --library {tmp_path}" in output
    )
    assert not list(tmp_path.rglob(".new-*"))  # the staging folder is gone


def test_a_root_with_patterns_gets_the_skill_where_its_categories_are(tmp_path: Path) -> None:
    (tmp_path / "patterns").mkdir()
    code, _ = new(tmp_path, "db/pool-sizing", "--layout", "three-file")
    assert code == 0
    assert (tmp_path / "patterns" / "db" / "pool-sizing.md").is_file()
    assert [s.id for s in check_roots([tmp_path]).skills] == ["db/pool-sizing"]


@pytest.mark.parametrize(
    "existing",
    ["folder", "three-file", "orphan-metadata", "file-where-the-folder-goes"],
)
def test_nothing_is_ever_overwritten(tmp_path: Path, existing: str) -> None:
    if existing == "folder":
        agent_skill(tmp_path, "testing", "webapp-smoke", "name: webapp-smoke\ndescription: Mine, keep it.")
    elif existing == "three-file":
        three_file(tmp_path, "testing", "webapp-smoke", "# Mine\n\nKeep it.\n")
    elif existing == "orphan-metadata":
        write(tmp_path / "testing" / "webapp-smoke-SKILL.md", "---\ndescription: keep\n---\n")
    else:
        write(tmp_path / "testing" / "webapp-smoke", "a file, not a folder\n")
    before = snapshot(tmp_path)
    for layout in ("folder", "three-file"):
        code, output = new(tmp_path, "testing/webapp-smoke", "--layout", layout)
        assert code == 1 and "[VALIDATION_ERROR]" in output
        assert "already" in output and "webapp-smoke" in output
        assert snapshot(tmp_path) == before
        assert not list(tmp_path.rglob(".new-*"))


@pytest.mark.parametrize(
    ("skill_id", "says"),
    [
        ("testing/Webapp", "naming rules"),
        ("testing/webapp--smoke", "naming rules"),
        ("testing/-webapp", "naming rules"),
        ("testing/webapp-", "naming rules"),
        ("testing/web_app", "naming rules"),
        ("testing/" + "a" * 65, "naming rules"),
        ("testing/claude-helper", "Anthropic's platform rejects"),
        ("webapp-smoke", "not CATEGORY/NAME"),
        ("a/b/c", "not CATEGORY/NAME"),
        ("../webapp", "cannot hold skills"),
        (".hidden/webapp", "cannot hold skills"),
        ("node_modules/webapp", "cannot hold skills"),
        ("my category/webapp", "cannot hold skills"),
    ],
)
def test_bad_ids_are_refused_with_the_rule_they_break(tmp_path: Path, skill_id: str, says: str) -> None:
    code, output = new(tmp_path, skill_id)
    assert code == 1 and says in output and "[VALIDATION_ERROR]" in output
    assert list(tmp_path.iterdir()) == []


def test_a_three_file_name_is_ascii_and_takes_no_shell_script(tmp_path: Path) -> None:
    code, output = new(tmp_path, "notes/café-notes", "--layout", "three-file")
    assert code == 1 and "letters (a-z)" in output
    code, output = new(tmp_path, "notes/daily", "--layout", "three-file", "--script", "sh")
    assert code == 1 and "--layout folder" in output
    assert list(tmp_path.iterdir()) == []


def test_a_name_starting_with_a_digit_gets_a_run_function(tmp_path: Path) -> None:
    code, _ = new(tmp_path, "auth/2fa-setup", "--layout", "three-file", "--script", "py")
    assert code == 0 and "def run(params" in (tmp_path / "auth" / "2fa-setup.py").read_text()
    code, output = run("run", "-l", str(tmp_path), "auth/2fa-setup", "--input", '{"text": "abc"}')
    assert code == 0 and json.loads(output)["output"] == {"received": "abc", "length": 3}


def test_a_failure_midway_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_kind: str, _name: str) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scaffold, "script_text", broken)
    monkeypatch.setattr(scaffold, "implementation_text", broken)
    for layout in ("folder", "three-file"):
        result = CliRunner().invoke(
            cli, ["new", "-l", str(tmp_path), "testing/full-disk", "--layout", layout, "--script", "py"]
        )
        assert result.exit_code != 0
        assert [p for p in tmp_path.rglob("*") if p.is_file()] == [], layout
        assert not (tmp_path / "testing" / "full-disk").exists()


def test_the_same_id_in_another_configured_root_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "mine", tmp_path / "team"
    first.mkdir()
    agent_skill(second, "testing", "webapp-smoke", "name: webapp-smoke\ndescription: The team's.")
    monkeypatch.setenv("SKILLSHELF_LIBRARY", json.dumps([str(first), str(second)]))
    code, output = run("new", "testing/webapp-smoke")
    assert code == 1 and "already has a skill testing/webapp-smoke" in output
    code, output = run("new", "testing/webapp-other")
    assert code == 0 and (first / "testing" / "webapp-other" / "SKILL.md").is_file()


def test_a_namesake_in_another_category_is_pointed_out(tmp_path: Path) -> None:
    agent_skill(tmp_path, "team", "webapp-smoke", "name: webapp-smoke\ndescription: The team's smoke test.")
    result = CliRunner().invoke(cli, ["new", "-l", str(tmp_path), "mine/webapp-smoke"])
    assert result.exit_code == 0
    assert "team/webapp-smoke has the same name" in result.output and "near-duplicates" in result.output


def test_without_a_library_new_refuses_to_write_into_the_bundled_examples() -> None:
    code, output = run("new", "testing/webapp-smoke")
    assert code == 2 and "--library ROOT" in output and "skillshelf init" in output


def test_two_unfinished_scaffolds_are_not_near_duplicates(tmp_path: Path) -> None:
    for name in ("pdf-report", "word-report", "excel-report"):
        assert new(tmp_path, f"docs/{name}")[0] == 0
    assert {f.code for f in check_roots([tmp_path]).findings} == {"scaffold-text"}  # no near-duplicate
