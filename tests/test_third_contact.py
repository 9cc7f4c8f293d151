"""What a newcomer tripped over on the third contact (issue 35), each fixed and checked here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.skill.paths import display_path
from tests.conftest import agent_skill, call
from tests.sources.helpers import skill_md
from tests.test_first_contact import LIVENESS_S, read_until, serve_env


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


def test_over_http_a_projects_root_some_served_view_reads_is_not_reported_and_a_stop_is_said(
    sample_root: Path, isolated_environment: Path
) -> None:
    projects = isolated_environment / "projects"
    projects.mkdir()
    command = [sys.executable, "-m", "skillshelf", "serve", "--http", "--port", "0", "-l", str(sample_root)]
    process = subprocess.Popen(
        [*command, "--projects-root", str(projects)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=serve_env(isolated_environment),
    )
    try:
        assert process.stderr is not None
        said = read_until(process.stderr.fileno(), r"http://127\.0\.0\.1:\d+/mcp")
        port = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", said)
        assert port, said
        assert httpx2.get(f"http://127.0.0.1:{port.group(1)}/health", timeout=LIVENESS_S).status_code == 200
    finally:
        process.terminate()
        _, rest = process.communicate(timeout=LIVENESS_S)
    said += rest.decode()
    assert "memory or session tool" not in said  # before: warned, although /view/full/mcp reads it
    assert said.rstrip().endswith("stopped"), said  # before: nothing after uvicorn's own lines


# A real process in which NumPy cannot be imported, as in a pipx install without the `semantic` extra.
WITHOUT_NUMPY = "import sys; sys.modules['numpy'] = None; "


def without_numpy(home: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**serve_env(home), "SKILLSHELF_DATA_DIR": str(home / "data")}
    command = [sys.executable, "-c", WITHOUT_NUMPY + code, *args]
    return subprocess.run(command, input="", capture_output=True, text=True, env=env, timeout=LIVENESS_S, check=False)


def fetched_model_in(home: Path) -> Path:
    folder = home / "data" / "models" / "all-MiniLM-L6-v2"
    folder.mkdir(parents=True)
    for name in ("config.json", "vocab.txt", "model.safetensors"):
        (folder / name).write_text("{}", encoding="utf-8")
    return folder


def cli_without_numpy(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return without_numpy(home, "sys.argv[0] = 'skillshelf'; from skillshelf.cli import main; main()", *args)


def test_without_numpy_model_fetch_config_show_and_search_give_one_hint_that_works_for_pipx(
    isolated_environment: Path,
) -> None:
    folder = fetched_model_in(isolated_environment)
    said = without_numpy(
        isolated_environment,
        "from pathlib import Path; from skillshelf.cli.model import say_what_turns_it_on; "
        "say_what_turns_it_on(Path(sys.argv[1]), Path(sys.argv[1]))",
        str(folder),
    )
    assert said.returncode == 0, said.stderr
    assert "pipx inject skillshelf numpy" in said.stdout and "skillshelf[semantic]" in said.stdout
    assert "is on from the next start" not in said.stdout  # before: said so right after "NumPy is missing"
    shown = cli_without_numpy(isolated_environment, "config", "show")
    line = next(line for line in shown.stdout.splitlines() if line.startswith("semantic_model"))
    assert "off: NumPy is not installed" in line and "pipx inject skillshelf numpy" in line  # before: no reason
    found = cli_without_numpy(isolated_environment, "search", "-l", "patterns", "retry")
    assert found.returncode == 0, found.stderr
    assert "semantic search is off (NumPy is not installed" in found.stderr and "pipx inject" in found.stderr
    served = cli_without_numpy(isolated_environment, "serve", "-l", "patterns")  # stdin at its end: it stops
    assert "semantic search is off: NumPy is not installed" in served.stderr and "pipx inject" in served.stderr


def test_without_numpy_and_without_a_model_search_says_nothing_of_semantic_search(isolated_environment: Path) -> None:
    found = cli_without_numpy(isolated_environment, "search", "-l", "patterns", "retry")
    assert found.returncode == 0 and "semantic" not in found.stderr


def test_a_configured_model_without_numpy_names_the_same_hint_in_the_answer(isolated_environment: Path) -> None:
    folder = fetched_model_in(isolated_environment)
    code = "sys.argv[0] = 'skillshelf'; from skillshelf.cli import main; main()"
    env_model = f"import os; os.environ['SKILLSHELF_SEMANTIC_MODEL'] = {str(folder)!r}; "
    found = without_numpy(isolated_environment, env_model + code, "search", "--json", "-l", "patterns", "retry")
    assert found.returncode == 0, found.stderr
    warnings = json.loads(found.stdout)["warnings"]
    assert any("NumPy is not installed" in w and "pipx inject skillshelf numpy" in w for w in warnings), warnings


def test_new_inside_an_installed_sources_folder_says_sources_will_count_it_as_a_local_edit(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream" / "pdf-fill"
    upstream.mkdir(parents=True)
    (upstream / "SKILL.md").write_text(skill_md("pdf-fill", "Fill PDF forms from JSON data."), encoding="utf-8")
    root = tmp_path / "library"
    root.mkdir()
    added = CliRunner().invoke(cli, ["add", str(tmp_path / "upstream"), "--name", "team", "--library", str(root)])
    assert added.exit_code == 0, added.output
    created = CliRunner().invoke(cli, ["new", "team/mine", "--library", str(root)])
    assert created.exit_code == 0, created.output
    assert "team/ is the folder of the installed source 'team'" in created.stderr  # before: nothing said
    assert "local edit (added here)" in created.stderr
    listed = CliRunner().invoke(cli, ["sources", "--json", "--library", str(root)])
    (source,) = json.loads(listed.stdout)["sources"]
    assert source["localEdits"] == [{"what": "team/mine", "how": "added here"}]  # what the note announced
    elsewhere = CliRunner().invoke(cli, ["new", "ours/mine", "--library", str(root)])
    assert elsewhere.exit_code == 0 and "installed source" not in elsewhere.stderr


def test_an_unfinished_scaffold_gets_a_check_warning_and_is_left_out_of_doc(tmp_path: Path) -> None:
    created = CliRunner().invoke(cli, ["new", "testing/webapp-smoke", "--script", "py", "-l", str(tmp_path)])
    assert created.exit_code == 0, created.output
    checked = CliRunner().invoke(cli, ["check", str(tmp_path)])
    assert checked.exit_code == 0  # a warning: the scaffold still runs and serves
    (line,) = [line for line in checked.stdout.splitlines() if "[scaffold-text]" in line]  # before: no finding
    assert "testing/webapp-smoke/SKILL.md: warning:" in line
    assert "(the description, 8 TODO lines of the body)" in line
    documented = CliRunner().invoke(cli, ["doc", "-l", str(tmp_path)])
    assert "TODO" not in documented.stdout  # before: the placeholder description was published
    assert documented.stdout.startswith("<!-- 0 skills; 1 unfinished left out;")
    assert "left out testing/webapp-smoke" in documented.stderr


def test_a_written_skill_with_a_todo_of_its_own_is_no_scaffold(tmp_path: Path) -> None:
    assert CliRunner().invoke(cli, ["new", "testing/webapp-smoke", "-l", str(tmp_path)]).exit_code == 0
    document = tmp_path / "testing" / "webapp-smoke" / "SKILL.md"
    text = document.read_text(encoding="utf-8")
    written = "\n".join(
        "- TODO: ours, on purpose." if "TODO:" in line and not line.startswith("description") else line
        for line in text.splitlines()
    ).replace("TODO: say in one or two sentences what", "Smoke-test a web app: say")
    document.write_text(written.replace("Use when TODO:", "Use when"), encoding="utf-8")
    checked = CliRunner().invoke(cli, ["check", str(tmp_path)])
    assert "[scaffold-text]" not in checked.stdout, checked.stdout
    assert "testing/webapp-smoke" in CliRunner().invoke(cli, ["doc", "-l", str(tmp_path)]).stdout


LONG_OPENING = " ".join(f"Sentence {i} says what the skill does and for whom it was written." for i in range(1, 30))


@pytest.mark.anyio
async def test_load_skill_with_a_small_budget_fills_it_with_the_first_paragraph(tmp_path: Path) -> None:
    from mcp import Client

    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.app import build_server
    from skillshelf.settings import Settings

    root = tmp_path / "library"
    body = f"# Long opening\n\n{LONG_OPENING}\n\n## Steps\n\n1. Do it.\n"
    agent_skill(root, "docs", "long-opening", "name: long-opening\ndescription: " + "Say it at length. " * 4, body)
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    try:
        async with Client(build_server(Settings(roots=[root]), library, view="full")) as client:
            args: dict[str, Any] = {"skillId": "docs/long-opening", "maxTokens": 200, "includeMetadata": False}
            parts: list[str] = []
            for _ in range(50):
                is_error, answer = await call(client, "loadSkill", args)
                assert not is_error, (answer["error"]["message"], parts)
                assert answer["metadata"]["tokensUsed"] <= 200
                parts.append(answer["data"]["documentation"])
                more = answer["data"].get("continuation")
                if more is None:
                    break
                args = {"skillId": "docs/long-opening", "cursor": more["cursor"], "maxTokens": 200}
            _, whole = await call(client, "loadSkill", {"skillId": "docs/long-opening", "includeMetadata": False})
    finally:
        library.close()
    first = parts[0]
    assert first.startswith("# Long opening\n\nSentence 1 says") and first.endswith("written. ")  # before: the title
    assert len(first) > 300
    assert "".join(parts) == whole["data"]["documentation"]  # the pages still add up to the whole


def index_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".skillshelf").glob("*.sqlite3") if p.name.startswith("index-"))


def synced(root: Path) -> int:
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary

    library = SkillLibrary(LibraryConfig(roots=[root], watch=False))
    try:
        library.sync()
        return library.index.count()
    finally:
        library.close()


def test_a_copied_or_moved_library_uses_its_own_index_and_an_old_one_is_removed(sample_root: Path) -> None:
    assert synced(sample_root) == 4
    (first,) = index_files(sample_root)
    copy = sample_root.parent / "copy"
    shutil.copytree(sample_root, copy)
    assert synced(copy) == 4
    assert index_files(copy) == [first]  # before: a second index, named for the new path, beside the first
    moved = sample_root.parent / "moved"
    copy.rename(moved)
    assert synced(moved) == 4 and index_files(moved) == [first]
    # what an earlier skillshelf left: an index (and its companions) named for an absolute path
    for name in ("index-0123456789ab.sqlite3", "index-0123456789ab.sqlite3-wal", "vectors-0123456789ab.sqlite3"):
        (moved / ".skillshelf" / name).write_bytes(b"old")
    assert synced(moved) == 4
    assert sorted(p.name for p in (moved / ".skillshelf").iterdir() if "0123456789ab" in p.name) == []


def test_a_tab_in_frontmatter_gets_the_tab_hint_with_its_line(tmp_path: Path) -> None:
    document = tmp_path / "c" / "x" / "SKILL.md"
    document.parent.mkdir(parents=True)
    document.write_text("---\nname: x\ndescription: hello\n\ttags: [a]\n---\n# X\n", encoding="utf-8")
    checked = CliRunner().invoke(cli, ["check", str(tmp_path)])
    assert "replace the tab on line 4 with spaces" in checked.stdout
    assert "Quote values" not in checked.stdout  # before: a hint about quoting ': '


def test_an_unknown_id_is_offered_only_skills_whose_names_are_alike(sample_root: Path) -> None:
    shown = CliRunner().invoke(cli, ["show", "python/retry", "-l", str(sample_root)])
    assert shown.exit_code != 0 and "Did you mean 'python/retry-backoff'?" in shown.output
    assert "slugify" not in shown.output  # before: offered for sharing the category "python/"
    unrelated = CliRunner().invoke(cli, ["show", "git/changelog-writer", "-l", str(sample_root)])
    assert "Did you mean" not in unrelated.output  # before: git/release-notes, from a search on "git"


@pytest.mark.parametrize("command", [["show", "python/slugify", "--code"], ["search", "retry"], ["doc"]])
def test_a_reader_that_stops_reading_ends_the_command_quietly_with_success(
    command: list[str], isolated_environment: Path
) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # `| head` that has already left: every write meets EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "skillshelf", *command, "-l", "patterns"],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            env=serve_env(isolated_environment),
            timeout=LIVENESS_S,
            check=False,
        )
    finally:
        os.close(writer)
    assert done.returncode == 0, done.stderr  # before: 1 (click's EPIPE handling), or 120 at exit
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


@pytest.mark.anyio
async def test_every_page_links_an_icon_that_is_served_and_favicon_ico_answers(
    sample_root: Path, tmp_path: Path
) -> None:
    from skillshelf.library.access.reader import ViewReader
    from skillshelf.server.web import WebAccess, web_app
    from tests.conftest import synced_library

    with synced_library(sample_root, tmp_path / "index") as library:
        transport = httpx2.ASGITransport(app=web_app(ViewReader(library), WebAccess()))
        async with httpx2.AsyncClient(transport=transport, base_url="http://t") as web:
            for path in ("/", "/library", "/skills/python/slugify/", "/nowhere"):
                page = (await web.get(path)).text
                assert '<link rel="icon" type="image/svg+xml" href="/static/skillshelf.svg">' in page, path
            for path in ("/static/skillshelf.svg", "/favicon.ico"):  # before: the 404 page, on every page load
                icon = await web.get(path)
                assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
                assert icon.text.startswith("<svg")


def test_a_long_category_name_is_shortened_at_the_one_label_size_and_whole_in_its_tooltip() -> None:
    from skillshelf.web.charts import WIDTH, Bar, bar_chart

    category = "a-category-name-that-goes-on-and-on-and-on-well-past-the-room-for-it"
    chart = bar_chart("categories", "Skills per category", [Bar(category, 3), Bar("python", 2)], width=WIDTH)
    classes = re.findall(r'<text class="(bar-label[^"]*)"', chart)
    assert classes and set(classes) == {"bar-label"}  # before: "bar-label tight", drawn at 10 px
    assert any("…" in label for label in re.findall(r'<text class="bar-label"[^>]*>([^<]*)</text>', chart))
    assert f"<title>{category}: 3</title>" in chart
