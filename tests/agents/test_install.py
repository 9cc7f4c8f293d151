"""`skillshelf install`, `install --check`, `install --sync` and `uninstall` end to end, for every agent of
the table, with real folders in a temporary home (tests/conftest.py points HOME and XDG_* there)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.agents.table import AGENTS
from skillshelf.library.skill.checker import check_roots
from tests.agents.install_child import WAIT_S, install_for
from tests.conftest import agent_skill, write

STATE = (".cache", ".local")  # skillshelf's own index and state, inside the test's home


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout + result.stderr


def tree(home: Path) -> dict[str, str]:
    """Every path under `home` (skillshelf's own state left out): a file's bytes, a link's target."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(home):
        here = Path(folder)
        if here == home:
            dirs[:] = [d for d in dirs if d not in STATE]
        for name in dirs + files:
            path = here / name
            key = str(path.relative_to(home))
            if path.is_symlink():
                found[key] = "-> " + str(path.readlink())
            elif path.is_file():
                found[key] = path.read_text(encoding="utf-8")
            else:
                found[key] = "/"
    return found


def folder_of(agent: str, home: Path) -> Path:
    return AGENTS[agent].user.user()


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_install_drift_sync_and_uninstall_for_each_agent(
    agent: str, sample_root: Path, isolated_environment: Path
) -> None:
    home = isolated_environment
    folder = folder_of(agent, home)
    mine = write(folder / "my-own" / "SKILL.md", "---\nname: my-own\ndescription: Mine.\n---\nBody.\n")
    before = tree(home)
    library = ("-l", str(sample_root))

    code, out = run("install", "--agent", agent, *library)
    assert code == 0, out
    assert {"rls-policy", "retry-backoff", "slugify", "release-notes"} <= {p.name for p in folder.iterdir()}
    assert mine.read_text(encoding="utf-8").startswith("---\nname: my-own")  # not ours: untouched
    three = folder / "rls-policy"
    assert (three / "scripts" / "rls-policy.py").is_file() and not three.is_symlink()
    report = check_roots([three])
    assert [s.id for s in report.skills] and report.errors == 0, [f.message for f in report.findings]
    assert run("install", "--check", *library)[0] == 0

    (sample_root / "git" / "release-notes" / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Draft release notes, version two.\n---\n# Two\n", encoding="utf-8"
    )
    edited = folder / "slugify" / "SKILL.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nMy note.\n", encoding="utf-8")
    code, out = run("install", "--check", *library)
    assert code == 1
    assert "release-notes: changed in the library" in out and "slugify: edited here (SKILL.md modified)" in out

    code, out = run("install", "--sync", *library)
    assert code == 1 and "updated release-notes" in out and "kept slugify" in out, out
    assert "version two" in (folder / "release-notes" / "SKILL.md").read_text(encoding="utf-8")
    assert "My note." in edited.read_text(encoding="utf-8")  # an edit is never overwritten without --force
    code, out = run("install", "--sync", "--force", *library)
    assert code == 0 and "updated slugify" in out
    assert run("install", "--check", *library) == (0, "every install is up to date\n")

    code, out = run("uninstall", "--agent", agent)
    assert code == 0 and "removed rls-policy" in out, out
    assert tree(home) == before


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_project_install_leaves_the_project_as_it_was(agent: str, sample_root: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "README.md", "A project.\n")
    before = tree(project)
    code, out = run("install", "--agent", agent, "--project", str(project), "--only", "git/*", "-l", str(sample_root))
    assert code == 0, out
    installed = project.joinpath(*AGENTS[agent].project.split("/")) / "release-notes"
    assert (installed / "SKILL.md").is_file() and (installed / "scripts" / "collect.sh").is_file()
    assert os.access(installed / "scripts" / "collect.sh", os.X_OK) == os.access(
        sample_root / "git" / "release-notes" / "scripts" / "collect.sh", os.X_OK
    )
    assert run("uninstall", "--agent", agent, "--project", str(project))[0] == 0
    assert tree(project) == before


def test_codex_gets_copies_even_when_links_are_asked_for(sample_root: Path) -> None:
    code, out = run("install", "--agent", "codex", "--link", "-l", str(sample_root))
    assert code == 0, out
    installed = folder_of("codex", Path.home()) / "release-notes"
    assert installed.is_dir() and not installed.is_symlink()


def test_links_go_where_the_agent_follows_them_and_only_for_folders(sample_root: Path) -> None:
    code, out = run("install", "--agent", "claude-code", "--link", "-l", str(sample_root))
    assert code == 0, out
    folder = folder_of("claude-code", Path.home())
    assert (folder / "release-notes").resolve() == (sample_root / "git" / "release-notes").resolve()
    assert (folder / "release-notes").is_symlink()
    assert not (folder / "rls-policy").is_symlink()  # a three-file skill is rendered, so copied
    assert run("install", "--check", "-l", str(sample_root))[0] == 0
    assert run("uninstall", "--agent", "claude-code")[0] == 0
    assert not folder.exists() and (sample_root / "git" / "release-notes" / "SKILL.md").is_file()


def test_a_name_already_in_the_folder_is_reported_not_overwritten_unless_forced(sample_root: Path) -> None:
    folder = folder_of("claude-code", Path.home())
    theirs = write(folder / "slugify" / "SKILL.md", "theirs\n")
    code, out = run("install", "--agent", "claude-code", "-l", str(sample_root))
    assert code == 1 and "refused slugify" in out and "--force replaces it" in out, out
    assert theirs.read_text(encoding="utf-8") == "theirs\n"
    run("uninstall", "--agent", "claude-code")
    assert theirs.read_text(encoding="utf-8") == "theirs\n"  # uninstall never touches what it did not put there
    code, out = run("install", "--agent", "claude-code", "--force", "-l", str(sample_root))
    assert code == 0 and "installed slugify" in out
    assert "name: slugify" in theirs.read_text(encoding="utf-8")


def test_agents_sharing_a_folder_share_one_copy_until_the_last_uninstalls(sample_root: Path) -> None:
    library = ("-l", str(sample_root), "--only", "python/slugify")
    assert run("install", "--agent", "codex", *library)[0] == 0
    code, out = run("install", "--agent", "agents", *library)
    assert code == 0 and "unchanged slugify" in out
    installed = folder_of("codex", Path.home()) / "slugify"
    code, out = run("uninstall", "--agent", "codex")
    assert "kept slugify: still installed for agents" in out and installed.is_dir()
    assert run("uninstall", "--agent", "agents")[0] == 0 and not installed.exists()


def test_install_says_what_the_catalogue_costs_and_what_the_agent_would_drop(tmp_path: Path) -> None:
    root = tmp_path / "library"
    for number in range(12):
        description = f"Skill number {number} does one careful thing. " + "Use it when it matters. " * 40
        agent_skill(root, "many", f"skill-{number:02d}", f"name: skill-{number:02d}\ndescription: {description}")
    code, out = run("install", "--agent", "claude-code", "--dry-run", "--json", "-l", str(root))
    assert code == 0, out
    said = json.loads(out)
    cost = said["cost"]
    assert cost["skills"] == 12 and cost["budgetChars"] == 8000 and cost["chars"] > 8000
    assert cost["dropped"] and cost["dropped"][-1] == "skill-11"
    assert 500 < said["serveTokens"] < 3000  # the agent view, measured from its tools/list
    assert not folder_of("claude-code", Path.home()).exists()  # a dry run writes nothing
    code, out = run("install", "--agent", "claude-code", "--dry-run", "-l", str(root))
    assert "past the budget it drops their descriptions" in out and "serve the rest by search" in out


def test_a_tampered_record_cannot_make_uninstall_remove_anything_else(sample_root: Path, tmp_path: Path) -> None:
    assert run("install", "--agent", "cursor", "--only", "python/slugify", "-l", str(sample_root))[0] == 0
    record = Path(os.environ["SKILLSHELF_STATE_DIR"]) / "installs.json"
    victim = write(tmp_path / "victim" / "keep.txt", "keep\n")
    raw = json.loads(record.read_text(encoding="utf-8"))
    bad = dict(raw["installs"][0], name="../../victim", folder=str(tmp_path / "a" / "b"))
    raw["installs"].append(bad)
    record.write_text(json.dumps(raw), encoding="utf-8")
    code, out = run("uninstall", "--agent", "cursor")
    assert code == 0 and "removed slugify" in out
    assert victim.read_text(encoding="utf-8") == "keep\n"


def test_sync_removes_a_skill_gone_from_the_library_and_check_says_so_first(sample_root: Path) -> None:
    library = ("-l", str(sample_root))
    assert run("install", "--agent", "gemini-cli", "--only", "python/*", *library)[0] == 0
    for name in ("slugify.md",):
        (sample_root / "python" / name).unlink()
    code, out = run("install", "--check", *library)
    assert code == 1 and "python/slugify is no longer in the library" in out
    code, out = run("install", "--sync", *library)
    assert code == 0 and "removed slugify" in out
    assert not (folder_of("gemini-cli", Path.home()) / "slugify").exists()
    assert (folder_of("gemini-cli", Path.home()) / "retry-backoff").is_dir()


def test_a_sync_that_cannot_stage_every_change_changes_no_agent(sample_root: Path) -> None:
    library = ("-l", str(sample_root), "--only", "git/*")
    assert run("install", "--agent", "claude-code", *library)[0] == 0
    assert run("install", "--agent", "cursor", *library)[0] == 0
    (sample_root / "git" / "release-notes" / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Version two.\n---\n# Two\n", encoding="utf-8"
    )
    cursor = folder_of("cursor", Path.home())
    shutil.rmtree(cursor)
    cursor.write_text("a file where Cursor's folder was\n", encoding="utf-8")  # its copy cannot be staged
    code, out = run("install", "--sync", "-l", str(sample_root))
    assert code == 1 and "nothing was changed" in out, out
    text = (folder_of("claude-code", Path.home()) / "release-notes" / "SKILL.md").read_text(encoding="utf-8")
    assert "Version two" not in text
    cursor.unlink()
    assert run("install", "--sync", "-l", str(sample_root))[0] == 0
    for agent in ("claude-code", "cursor"):
        text = (folder_of(agent, Path.home()) / "release-notes" / "SKILL.md").read_text(encoding="utf-8")
        assert "Version two" in text, agent


def test_update_and_sources_say_which_agents_an_update_reaches(tmp_path: Path) -> None:
    from tests.sources.helpers import Repo

    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.commit("first")
    root = tmp_path / "library"
    assert run("add", repo.url, "--name", "team", "--library", str(root))[0] == 0
    assert run("install", "--agent", "claude-code", "-l", str(root))[0] == 0
    code, out = run("sources", "--library", str(root))
    assert code == 0 and "team: installed for claude-code (1)" in out, out
    repo.skill("pdf-fill", "Fill PDF forms, version two.")
    repo.commit("second")
    code, out = run("update", "--check", "--library", str(root))
    assert code == 1 and "team: installed for claude-code (1): `skillshelf install --sync`" in out, out
    code, out = run("update", "--yes", "--library", str(root))
    assert code == 0 and "team: installed for claude-code (1)" in out, out
    assert run("install", "--sync", "-l", str(root))[0] == 0
    installed = folder_of("claude-code", Path.home()) / "pdf-fill" / "SKILL.md"
    assert "version two" in installed.read_text(encoding="utf-8")


def test_serve_keep_installed_brings_a_library_change_to_the_agents(sample_root: Path, tmp_path: Path) -> None:
    from skillshelf.cli.install import keep_installed
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.app import App
    from skillshelf.settings import resolve_settings

    assert run("install", "--agent", "codex", "--only", "git/*", "-l", str(sample_root))[0] == 0
    edited = folder_of("codex", Path.home()) / "release-notes" / "SKILL.md"
    settings = resolve_settings((sample_root,), keep_installed=True)
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "index", watch=True))
    try:
        library.sync()
        keep_installed(App(settings, library=library))
        (sample_root / "git" / "release-notes" / "SKILL.md").write_text(
            "---\nname: release-notes\ndescription: Version two.\n---\n# Two\n", encoding="utf-8"
        )
        library.syncing._on_change()  # what the watcher's thread calls after a change under the roots
    finally:
        library.close()
    assert "Version two" in edited.read_text(encoding="utf-8")
    assert run("install", "--check", "-l", str(sample_root))[0] == 0


def test_keep_installed_is_off_unless_asked_and_a_setting_too(sample_root: Path) -> None:
    from skillshelf.settings import resolve_settings

    assert resolve_settings((sample_root,)).keep_installed is False
    assert resolve_settings((sample_root,), env={"SKILLSHELF_KEEP_INSTALLED": "1"}).keep_installed is True
    assert "--keep-installed" in run("serve", "--help")[1]


def test_uninstall_of_a_link_never_touches_the_library_even_forced(sample_root: Path) -> None:
    assert run("install", "--agent", "gemini-cli", "--link", "--only", "git/*", "-l", str(sample_root))[0] == 0
    assert (folder_of("gemini-cli", Path.home()) / "release-notes").is_symlink()
    assert run("uninstall", "--agent", "gemini-cli", "--force")[0] == 0
    assert (sample_root / "git" / "release-notes" / "scripts" / "collect.sh").is_file()
    assert not folder_of("gemini-cli", Path.home()).exists()


def test_a_damaged_record_is_a_clear_error_naming_it(sample_root: Path) -> None:
    record = Path(os.environ["SKILLSHELF_STATE_DIR"]) / "installs.json"
    write(record, "{not json")
    code, out = run("install", "--check", "-l", str(sample_root))
    assert code == 1 and f"cannot read {record}" in out and "fix or remove it" in out


def test_two_installs_at_once_both_stay_in_the_record(tmp_path: Path) -> None:
    root = tmp_path / "library"
    names = {f"skill-{n:03d}" for n in range(200)}  # enough files that the two installs overlap
    for name in names:
        agent_skill(root, "tools", name, f"name: {name}\ndescription: Does {name} things.")
    library = str(root)
    assert run("install", "--agent", "cursor", "--dry-run", "-l", library)[0] == 0  # the index, built once here
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    agents = ("claude-code", "cursor")
    processes = [context.Process(target=install_for, args=(agent, library, go)) for agent in agents]
    for process in processes:
        process.start()
    go.set()
    for process in processes:
        process.join(WAIT_S)
    assert [p.exitcode for p in processes] == [0, 0]
    record = json.loads((Path(os.environ["SKILLSHELF_STATE_DIR"]) / "installs.json").read_text(encoding="utf-8"))
    for agent in agents:
        assert {entry["name"] for entry in record["installs"] if agent in entry["agents"]} == names, agent
