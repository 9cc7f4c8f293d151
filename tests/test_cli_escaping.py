"""Names from a skill or a source reach the terminal with their control characters escaped (issue 30):
a file named `\x1b[2K\r...` could erase the review's "files an agent may run" warning above it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.cli.output import shown, table
from tests.conftest import agent_skill
from tests.sources.helpers import Repo, add

ERASE = "\x1b[2K\r"  # erase the line, back to its start
# Every kind of control a name can carry: C0, DEL, C1 (\x9b is CSI on its own), bidirectional overrides.
CONTROLS = ["\x00", "\x07", "\x08", "\t", "\n", "\r", "\x1b", "\x7f", "\x85", "\x9b", "\u202e", "\u2066"]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def assert_escaped(output: str) -> None:
    raw = [char for char in CONTROLS if char not in "\n" and char in output]
    assert not raw, f"raw control characters {raw!r} reached the terminal: {output!r}"


@pytest.mark.parametrize("char", CONTROLS)
def test_shown_escapes_every_control_character(char: str) -> None:
    escaped = shown(f"name{char}end")
    assert escaped.isprintable() and escaped.startswith("name\\") and escaped.endswith("end")
    assert shown("a\tb\nc\x1b", lines=True) == "a\tb\nc\\x1b"  # a document keeps its lines and tabs


def test_an_update_review_shows_an_erasing_file_name_escaped(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data. Use when a form must be filled.")
    repo.commit("first")
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    repo.write("pdf-fill/scripts/fill.sh", "#!/bin/sh\ncurl https://example.invalid/\n", executable=True)
    repo.write(f"pdf-fill/scripts/{ERASE}innocent.sh", "#!/bin/sh\necho hidden\n", executable=True)
    repo.commit("risky")

    code, output = run("update", "--check", "--library", str(root))

    assert code == 1, output
    assert_escaped(output)
    assert "files an agent may run" in output and "scripts/fill.sh (new" in output
    # a name holding control characters is never installed: the warning saying so shows it escaped
    assert "scripts/\\x1b[2K\\rinnocent.sh: a name with a control character" in output, output
    assert "innocent.sh (new" not in output


@pytest.fixture
def hostile_root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    # A folder whose name holds control characters is never served (folder.kept), only reported by `check`;
    # a description still carries them to every surface. YAML's double-quoted escapes (\e is ESC): a raw
    # control character is not valid YAML.
    agent_skill(root, "tools", f"evil{ERASE}\x9b2J", 'name: evil\ndescription: "Erases lines."')
    agent_skill(
        root, "tools", "plain", 'name: plain\ndescription: "A plain skill\\e[2K\\rthat erases\\a and \\u202eflips."'
    )
    return root


def test_check_shows_a_hostile_skill_name_escaped(hostile_root: Path) -> None:
    code, output = run("check", str(hostile_root))
    assert "evil\\x1b[2K\\r\\x9b2J" in output, output
    assert_escaped(output)
    assert code in (0, 1)


def test_search_and_show_escape_names_and_descriptions(hostile_root: Path) -> None:
    code, output = run("search", "--library", str(hostile_root), "plain skill")
    assert code == 0 and "plain" in output, output
    assert_escaped(output)
    assert "A plain skill\\x1b[2K that erases\\x07 and \\u202eflips." in output  # one paragraph: the \\r is a space
    code, output = run("show", "-l", str(hostile_root), "tools/plain")
    assert code == 0, output
    assert_escaped(output)


def test_a_table_cell_is_neither_control_nor_rich_markup(hostile_root: Path) -> None:
    code, output = run("categories", "--library", str(hostile_root))
    assert code == 0, output
    assert_escaped(output)
    runner = CliRunner()
    with runner.isolation() as (out, _err, _):
        table(("name",), [(f"[bold]x[/bold]{ERASE}",)])
        printed = out.getvalue().decode()
    assert "[bold]x[/bold]\\x1b[2K\\r" in printed


def test_json_output_escapes_every_control_character_and_stays_json(hostile_root: Path) -> None:
    code, output = run("search", "--library", str(hostile_root), "--json", "erases", "flips")
    assert code == 0, output
    assert_escaped(output)
    assert "\\u202eflips" in output and json.loads(output)["hits"]
