"""The figures docs/views.md quotes are the ones `skillshelf views --json` measures now.

A tool description or schema that grows changes what every view costs; this test fails until the
table says so, and its message is the table to paste.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from skillshelf.cli import cli

VIEWS_DOC = Path(__file__).parent.parent / "docs" / "views.md"
EVERY_TOOL_CONFIG = """\
[views.all]
exposure = "search"
tools = [{include = "*"}]

[views.bare]
tools = [{include = "*"}]
"""


def measured(tmp_path: Path, *, execution: bool) -> dict[str, dict[str, Any]]:
    config = tmp_path / "config.toml"
    config.write_text(EVERY_TOOL_CONFIG, encoding="utf-8")
    env = {"SKILLSHELF_EXECUTION__ENABLED": "1" if execution else "0"}
    result = CliRunner().invoke(cli, ["--config", str(config), "views", "--json", "-l", "patterns"], env=env)
    assert result.exit_code == 0, result.output
    return {row["view"]: row for row in json.loads(result.stdout)}


def expected_table(tmp_path: Path) -> list[str]:
    plain = measured(tmp_path, execution=False)
    run = measured(tmp_path, execution=True)

    def row(label: str, name: str, *, tools: str | None = None, split: bool = False) -> str:
        view, with_run = plain[name], run[name]
        tokens = f"{view['tokens']:,}"
        if split:
            tokens = f"**{tokens}** ({view['toolsTokens']:,} + {view['instructionsTokens']:,})"
        count = tools or str(len(view["tools"]))
        return f"| {label} | {count} | {tokens} | {with_run['tokens']:,} | {view['wireChars']:,} |"

    agent_tools = f"{len(plain['agent']['tools'])} ({len(run['agent']['tools'])})"
    return [
        row("`default` = `agent`", "agent", tools=agent_tools, split=True),
        row("`curator`", "curator"),
        row("`memory`", "memory"),
        row("`full`", "full"),
        row('`[views.all] exposure = "search"` (every tool)', "all", split=True),
    ]


def test_the_cost_table_of_docs_views_is_what_views_measures(tmp_path: Path) -> None:
    doc = VIEWS_DOC.read_text(encoding="utf-8")
    rows = expected_table(tmp_path)
    missing = [line for line in rows if line not in doc.splitlines()]
    assert not missing, "docs/views.md 'What each view costs' is stale; the rows now:\n" + "\n".join(rows)


def test_the_output_schema_share_docs_views_quotes_is_measured(tmp_path: Path) -> None:
    plain = measured(tmp_path, execution=False)
    with_schemas, without = plain["full"]["wireChars"], plain["bare"]["wireChars"]
    schemas = with_schemas - without
    share = round(100 * schemas / with_schemas)
    said = (
        f"{share}% of tools/list on the wire ({schemas:,} of {with_schemas:,} characters for every tool; "
        f"{without:,} without them)"
    )
    doc = " ".join(VIEWS_DOC.read_text(encoding="utf-8").split())
    assert said in doc, f"docs/views.md 'Output schemas' is stale; it should say: {said}"
