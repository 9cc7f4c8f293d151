"""The tool catalogue (skillshelf/catalogue.py) is what everything else derives a tool's names from: what it
declares must name real things (tools, built-in views, parameters, CLI commands), and what derives from it
must say what it declares. The server's tools against it: tests/test_second_contact.py; the docs:
tests/server/test_docs_catalogue.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skillshelf.catalogue import TOOL_NAMES, TOOLS, ToolSpec, cli_twins, in_view, project_tools
from skillshelf.cli import cli
from skillshelf.cli.config import tool_catalogue
from skillshelf.cli.output import cli_message
from skillshelf.config.views import builtin_views
from skillshelf.server.tooling import argument_places
from skillshelf.server.views import STEPS
from skillshelf.settings import ExecutionSettings, Settings


@pytest.fixture(scope="module")
def parameters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Tool name -> its parameters, as the server registers them."""
    settings = Settings(roots=[tmp_path_factory.mktemp("library")], execution=ExecutionSettings(enabled=True))
    with tool_catalogue(settings) as tools:
        return {tool.name: set(tool.parameters.get("properties", {})) for tool in tools}


def test_each_declaration_names_only_built_in_views_and_declared_tools() -> None:
    views = set(builtin_views(execution_enabled=True)) - {"full"}  # `full` shows every tool: nobody names it
    for spec in TOOLS.values():
        assert set(spec.views) <= views, spec.name
        assert set(spec.step_needs()) <= set(TOOL_NAMES) and (not spec.step or spec.name in spec.step_needs())


def test_argument_places_name_the_tools_own_parameters(parameters: dict[str, set[str]]) -> None:
    for name, places in argument_places().items():
        own = parameters[name]
        assert set(places.aliases) | set(places.items) | set(places.objects) <= own, name
        assert set(places.aliases.values()) | set(places.items.values()) <= own, name


def test_each_cli_twin_is_a_command_the_cli_has() -> None:
    for tool, twin in cli_twins().items():
        words = twin.strip("`").split()
        assert words[0] == "skillshelf" and words[1] in cli.commands, f"{tool}: {twin}"


def test_what_derives_from_the_catalogue_says_what_it_declares() -> None:
    assert [needed for needed, _ in STEPS] == [s.step_needs() for s in TOOLS.values() if s.step]
    assert cli_message("call searchPatterns, then loadSkill") == "call `skillshelf search`, then `skillshelf show`"
    agent = {r.include for r in builtin_views(execution_enabled=False)["agent"].tools}
    assert agent == set(in_view("agent", execution_enabled=False)) and "executeSkill" not in agent
    assert "executeSkill" in {r.include for r in builtin_views(execution_enabled=True)["agent"].tools}
    assert {"addNote", "getBlockers", "searchArtifacts", "getCompressionRatio"} <= set(project_tools())


def test_a_new_declaration_reaches_the_views_and_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """One declaration is all a tool's names need: the built-in views and the CLI's words read it."""
    from skillshelf import catalogue

    spec = ToolSpec("findThing", ("curator",), aliases={"q": "query"}, step="{findThing} finds.", cli="`skillshelf x`")
    monkeypatch.setattr(catalogue, "_DECLARED", (*catalogue._DECLARED, spec))
    assert "findThing" in in_view("curator", execution_enabled=False)
    assert "findThing" in {r.include for r in builtin_views(execution_enabled=False)["curator"].tools}
    assert cli_twins()["findThing"] == "`skillshelf x`"


def test_the_built_in_views_table_in_docs_views_md_lists_the_declared_tools() -> None:
    """docs/views.md's `| view | tools | for |` table says which tools each built-in view shows: checked against
    the declarations, so a tool added to a view is documented there."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "views.md").read_text(encoding="utf-8")
    table = text.split("| View | Tools | For |", 1)[1].split("\n\n", 1)[0]
    rows = {row.split("|")[1].strip(" `"): row.split("|")[2] for row in table.splitlines()[2:]}
    wrong = [] if f"all {len(TOOL_NAMES)}" in rows["full"] else [f"full: not 'all {len(TOOL_NAMES)}'"]
    for view in ("agent", "memory", "curator"):
        documented = set(re.findall(r"\b[a-z]+[A-Z][A-Za-z]*\b", rows[view]))
        declared = set(in_view(view, execution_enabled=True))
        if documented != declared:
            wrong.append(f"{view}: documents {sorted(documented)}, declared {sorted(declared)}")
    assert wrong == [], f"fix the built-in views table in docs/views.md: {wrong}"
