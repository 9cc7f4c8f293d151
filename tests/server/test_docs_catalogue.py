"""The tool catalogue users read, checked against the code both ways: docs/tools.md and the README's tool
table name no tool, parameter or error code the code lacks, and every one the code has is documented.

The code: the tool registry (`skillshelf.server.assembly.every_tool`, every tool with execution on) and
`skillshelf.errors.ErrorCode`. The docs are read by their structure: a tool's `## heading` and its
parameter table (first column), the `| tool | parameters | returns |` tables, the error-code table, and
the README's `| tool | inputs | returns |` table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillshelf.cli.config import tool_catalogue
from skillshelf.errors import ErrorCode
from skillshelf.settings import ExecutionSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "tools.md"
README = ROOT / "README.md"

TICKED = re.compile(r"`([^`]+)`")
IDENTIFIER = re.compile(r"[a-z][A-Za-z0-9]*")
CAMEL_CASE = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b")  # tool names: searchPatterns, getLibraryStats
UPPER_SNAKE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
NOTE = re.compile(r"\(([^()]*)\)")  # a parenthesised note, innermost first


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Tool name -> its parameters, as the server registers them."""
    settings = Settings(roots=[tmp_path_factory.mktemp("library")], execution=ExecutionSettings(enabled=True))
    with tool_catalogue(settings) as tools:
        return {tool.name: set(tool.parameters.get("properties", {})) for tool in tools}


# -- reading the docs --------------------------------------------------------------------------------


def sections(text: str, level: str = "##") -> dict[str, str]:
    """Each `## heading` with the text under it."""
    parts = re.split(rf"^{level} (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def tables(text: str) -> Iterator[tuple[list[str], list[list[str]]]]:
    """(header cells, body rows of cells) of each markdown table in `text`."""
    block: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif block:
            yield block[0], [row for row in block[2:] if row]
            block = []


def ticked(cell: str) -> list[str]:
    """The backticked words of a cell, an optional parameter's `?` dropped."""
    return [word.removesuffix("?") for word in TICKED.findall(cell)]


def tool_names(text: str) -> set[str]:
    return set(CAMEL_CASE.findall(text))


def documented_parameters(cell: str, tools: set[str]) -> set[str]:
    """The parameters a cell names: its backticked identifiers other than tool names (`path` (as `loadSkill`
    lists it)), leaving out what a parameter's parentheses say of it (`type` (`decision`, `blocker`)) unless
    they name an alternative (`query` (or `keyword`))."""
    while (bare := NOTE.sub(lambda note: note[0] if note[1].startswith("or ") else "", cell)) != cell:
        cell = bare
    return {word for word in ticked(cell) if IDENTIFIER.fullmatch(word) and word not in tools}


def error_codes(text: str) -> set[str]:
    """Backticked UPPER_SNAKE words, settings variables (SKILLSHELF_*) aside."""
    return {word for word in ticked(text) if UPPER_SNAKE.fullmatch(word) and not word.startswith("SKILLSHELF_")}


class Catalogue:
    """What a document says: tool -> parameters named for it, the tools it names, the error codes."""

    def __init__(self) -> None:
        self.parameters: dict[str, set[str]] = {}
        self.tools: set[str] = set()
        self.codes: set[str] = set()

    def add(self, tools: set[str], parameters: set[str]) -> None:
        self.tools |= tools
        for tool in tools:
            self.parameters.setdefault(tool, set()).update(parameters)


def tools_md(known: set[str]) -> tuple[Catalogue, set[str], set[str]]:
    """docs/tools.md read: its catalogue, the tools of its opening summary, the codes of its code table."""
    text = DOCS.read_text(encoding="utf-8")
    catalogue = Catalogue()
    for heading, body in sections(text).items():
        named = tool_names(heading)
        catalogue.add(named, set())
        for header, rows in tables(body):
            if header[:1] == ["parameter"]:  # the heading's tool(s): a parameter per row
                catalogue.add(named, {word for row in rows for word in ticked(row[0])})
            elif header[:2] == ["tool", "parameters"]:  # a row per tool (or several)
                for row in rows:
                    catalogue.add(set(ticked(row[0])), documented_parameters(row[1], known))
    summary = text.split("\n\n", 2)[1]  # "Four modules: **patterns** (`searchPatterns`, ...) ..."
    code_table = [rows for header, rows in tables(text) if header[:1] == ["code"]]
    assert len(code_table) == 1, "docs/tools.md: one `| code | when |` table of error codes"
    catalogue.codes = error_codes(text)
    return catalogue, set(ticked(summary)), {word for row in code_table[0] for word in ticked(row[0])}


def readme_table(known: set[str]) -> Catalogue:
    """The README's `| tool | inputs | returns |` table, and the codes its Tools section names."""
    tools_section = sections(README.read_text(encoding="utf-8"))["Tools"]
    catalogue = Catalogue()
    found = [rows for header, rows in tables(tools_section) if header[:2] == ["tool", "inputs"]]
    assert len(found) == 1, "README.md: one `| tool | inputs | returns |` table under ## Tools"
    for row in found[0]:
        catalogue.add(set(ticked(row[0])), documented_parameters(row[1], known))
    catalogue.codes = error_codes(tools_section)
    return catalogue


# -- the docs name nothing the code lacks -------------------------------------------------------------


def test_docs_name_only_tools_and_parameters_the_server_has(registry: dict[str, set[str]]) -> None:
    tools_doc, summary, _ = tools_md(set(registry))
    wrong = [f"{name}: no such tool" for name in sorted(tools_doc.tools - set(registry))]
    wrong += [f"{name}: no such tool (opening summary)" for name in sorted(summary - set(registry))]
    wrong += [
        f"{tool}.{parameter}: no such parameter"
        for tool, parameters in sorted(tools_doc.parameters.items())
        for parameter in sorted(parameters - registry.get(tool, parameters))
    ]
    assert wrong == [], f"fix docs/tools.md: {wrong}"


def test_the_readme_table_names_only_tools_and_parameters_the_server_has(registry: dict[str, set[str]]) -> None:
    readme = readme_table(set(registry))
    wrong = [f"{name}: no such tool" for name in sorted(readme.tools - set(registry))]
    wrong += [
        f"{tool}.{parameter}: no such parameter"
        for tool, parameters in sorted(readme.parameters.items())
        for parameter in sorted(parameters - registry.get(tool, parameters))
    ]
    assert wrong == [], f"fix the tool table in README.md: {wrong}"


def test_docs_name_only_error_codes_the_code_has(registry: dict[str, set[str]]) -> None:
    codes = {code.value for code in ErrorCode}
    tools_doc, _, table = tools_md(set(registry))
    readme = readme_table(set(registry))
    assert sorted(tools_doc.codes - codes) == [], "docs/tools.md names error codes that do not exist"
    assert sorted(table - codes) == [], "docs/tools.md's code table lists error codes that do not exist"
    assert sorted(readme.codes - codes) == [], "README.md's Tools section names error codes that do not exist"


# -- the code has nothing the docs leave out ----------------------------------------------------------


def test_every_tool_and_parameter_is_in_docs_tools_md(registry: dict[str, set[str]]) -> None:
    tools_doc, summary, _ = tools_md(set(registry))
    missing = [f"{tool}: no section or table row" for tool in sorted(set(registry) - tools_doc.tools)]
    missing += [f"{tool}: not in the opening summary" for tool in sorted(set(registry) - summary)]
    missing += [
        f"{tool}.{parameter}"
        for tool, parameters in sorted(registry.items())
        for parameter in sorted(parameters - tools_doc.parameters.get(tool, set()))
    ]
    assert missing == [], f"document these in docs/tools.md: {missing}"


def test_every_tool_and_parameter_is_in_the_readme_table(registry: dict[str, set[str]]) -> None:
    readme = readme_table(set(registry))
    missing = [f"{tool}: no row" for tool in sorted(set(registry) - readme.tools)]
    missing += [
        f"{tool}.{parameter}"
        for tool, parameters in sorted(registry.items())
        for parameter in sorted(parameters - readme.parameters.get(tool, set()))
    ]
    assert missing == [], f"add these to the tool table in README.md: {missing}"


def test_every_error_code_is_in_the_code_table_of_docs_tools_md(registry: dict[str, set[str]]) -> None:
    _, _, table = tools_md(set(registry))
    missing = sorted({code.value for code in ErrorCode} - table)
    assert missing == [], f"add these to the `| code | when |` table in docs/tools.md: {missing}"


# -- the reading itself, on documents made wrong on purpose ---------------------------------------------


def test_a_parameter_table_row_counts_for_its_sections_tools_and_a_tool_row_for_its_own() -> None:
    text = (
        "## Memory: addNote, getNotes\n\n| parameter | type |\n|---|---|\n| `projectPath` | string |\n"
        "| `content?` | string |\n\n| tool | parameters | returns |\n|---|---|---|\n"
        "| `getNotes` | `limit`, `since?` as `loadSkill` takes it, `YYYY-MM-DD` | notes |\n"
    )
    catalogue = Catalogue()
    for heading, body in sections(text).items():
        catalogue.add(tool_names(heading), set())
        for header, rows in tables(body):
            if header[:1] == ["parameter"]:
                catalogue.add(tool_names(heading), {word for row in rows for word in ticked(row[0])})
            else:
                for row in rows:
                    catalogue.add(set(ticked(row[0])), documented_parameters(row[1], {"loadSkill"}))
    assert catalogue.parameters == {
        "addNote": {"projectPath", "content"},
        "getNotes": {"projectPath", "content", "limit", "since"},
    }


def test_a_parameters_values_in_parentheses_are_not_parameters_but_an_alternative_is() -> None:
    cell = "`query` (or the seed's `keyword`), `type` (`decision`, `blocker` (`b`)), `path` (as `loadSkill` does)"
    assert documented_parameters(cell, {"loadSkill"}) == {"query", "keyword", "type", "path"}


def test_environment_variables_are_not_taken_for_error_codes() -> None:
    text = "Set `SKILLSHELF_PROJECTS`; a failure is `NOT_A_CODE` or `PATTERN_NOT_FOUND`; `HOME` is neither."
    assert error_codes(text) == {"NOT_A_CODE", "PATTERN_NOT_FOUND"}
    assert "NOT_A_CODE" not in {code.value for code in ErrorCode}  # what the docs test would then refuse
