"""`skillshelf doc`: the library as a markdown table (id, description, tokens, quality, source), one row per
skill in id order, each description one line with its pipes escaped; `--out` replaces a file whole."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from skillshelf.cli import cli
from tests.conftest import agent_skill, three_file
from tests.sources.helpers import Repo, add

UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def doc(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["doc", *args])
    return result.exit_code, result.stdout, result.stderr


def cells(row: str) -> list[str]:
    return [c.strip() for c in UNESCAPED_PIPE.split(row)[1:-1]]


def test_doc_prints_one_row_per_skill_sorted_by_id(sample_root: Path) -> None:
    code, out, _ = doc("-l", str(sample_root))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("<!-- 4 skills; written by `skillshelf doc`")
    assert cells(lines[1]) == ["id", "description", "tokens", "quality", "source"]
    rows = [cells(line) for line in lines[3:]]
    assert [r[0] for r in rows] == [
        "database/rls-policy",
        "git/release-notes",
        "python/retry-backoff",
        "python/slugify",
    ]
    rls = rows[0]
    assert rls[1] == "Generate PostgreSQL row level security policies for multi-tenant tables."
    assert rls[3] == "8.5" and rls[4] == "local" and int(rls[2].replace(",", "")) > 0


def test_a_description_is_one_line_with_its_pipes_and_tags_escaped(tmp_path: Path) -> None:
    agent_skill(
        tmp_path,
        "text",
        "pipes",
        'name: pipes\ndescription: "Split a | b columns.\\nThen join them <b>back</b> with a \\\\ and |."',
    )
    three_file(tmp_path, "text", "plain", "# Plain\n\nNothing | special here.\n")
    code, out, _ = doc("-l", str(tmp_path))
    assert code == 0
    rows = out.splitlines()[3:]
    assert len(rows) == 2 and all(len(cells(row)) == 5 for row in rows)
    assert cells(rows[0])[1] == r"Split a \| b columns. Then join them &lt;b&gt;back&lt;/b&gt; with a \\ and \|."
    assert cells(rows[1])[1] == r"Nothing \| special here."


def test_the_same_library_gives_the_same_bytes(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", "mid"):  # written out of order
        agent_skill(tmp_path, "c", name, f"name: {name}\ndescription: The {name} skill does one thing well.")
    first = doc("-l", str(tmp_path))[1]
    second = doc("-l", str(tmp_path))[1]
    assert first == second
    assert [cells(r)[0] for r in first.splitlines()[3:]] == ["c/alpha", "c/mid", "c/zeta"]


def test_out_replaces_the_file_whole_and_keeps_its_mode(sample_root: Path, tmp_path: Path) -> None:
    target = tmp_path / "AGENTS.md"
    target.write_text("old table\n", encoding="utf-8")
    target.chmod(0o600)
    inode = target.stat().st_ino
    code, out, err = doc("-l", str(sample_root), "--out", str(target))
    assert code == 0 and out == "" and "(4 skills)" in err
    assert target.read_text(encoding="utf-8") == doc("-l", str(sample_root))[1]
    assert target.stat().st_ino != inode  # renamed into place, never truncated and rewritten
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "library") == ["AGENTS.md"]  # no staging left


def test_out_into_a_missing_folder_is_refused_and_writes_nothing(sample_root: Path, tmp_path: Path) -> None:
    code, _, err = doc("-l", str(sample_root), "--out", str(tmp_path / "no" / "such" / "README.md"))
    assert code == 2 and "does not exist" in err
    assert not (tmp_path / "no").exists()


def test_the_source_column_names_the_source_a_skill_was_added_from(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("release-notes", "Draft release notes from merged pull requests.")
    commit = repo.commit("first")
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    agent_skill(root, "hand", "mine", "name: mine\ndescription: A skill written here by hand.")
    code, out, _ = doc("-l", str(root))
    assert code == 0
    rows = {cells(r)[0]: cells(r) for r in out.splitlines()[3:]}
    assert rows["team/release-notes"][4] == f"team@{commit[:8]}"
    assert rows["hand/mine"][4] == "local"
