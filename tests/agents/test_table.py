"""The agents table (library/agents/table.py), one test per row: where each agent reads skills at user
and project level, whether it gets links or copies, its budget. A row changed without its test fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf.library.agents.table import AGENTS, UnknownAgentError, agent_named, may_link, readers_of

# agent: (user folder under the home folder, project folder, follows links, budget characters, description cap)
EXPECTED = {
    "claude-code": (".claude/skills", ".claude/skills", True, 8000, 1536),
    "codex": (".agents/skills", ".agents/skills", False, 8000, 1024),
    "cursor": (".cursor/skills", ".cursor/skills", None, None, 1024),
    "gemini-cli": (".gemini/skills", ".gemini/skills", True, None, 1024),
    "github-copilot": (".copilot/skills", ".github/skills", None, None, 1024),
    "opencode": (".config/opencode/skills", ".opencode/skills", None, None, 1024),
    "agents": (".agents/skills", ".agents/skills", False, None, 1024),
}


def test_the_table_has_the_agents_the_issue_names_and_no_other() -> None:
    assert set(AGENTS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_agents_folders_links_and_budget(name: str, isolated_environment: Path, tmp_path: Path) -> None:
    user, project, links, budget, cap = EXPECTED[name]
    agent = agent_named(name)
    assert agent.user.user() == isolated_environment.joinpath(*user.split("/"))
    assert agent.project == project
    assert (agent.follows_links, agent.budget.chars, agent.budget.entry_chars) == (links, budget, cap)
    assert agent.source.startswith("https://"), "each row names where its facts come from"
    assert agent in readers_of(agent.user.user(), None)
    assert agent in readers_of(tmp_path / project, tmp_path)


def test_nothing_is_linked_into_a_folder_codex_reads_whichever_agent_is_asked_for(tmp_path: Path) -> None:
    gemini, claude = agent_named("gemini-cli"), agent_named("claude-code")
    assert may_link(claude, claude.user.user(), None)
    assert may_link(gemini, gemini.user.user(), None)
    assert not may_link(gemini, tmp_path / ".agents/skills", tmp_path)  # Gemini's alias, read by Codex too
    assert not may_link(agent_named("codex"), tmp_path / ".agents/skills", tmp_path)
    assert not may_link(agent_named("cursor"), tmp_path / ".cursor/skills", tmp_path)  # not documented: copy


def test_opencode_follows_xdg_config_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "conf"))
    assert agent_named("opencode").user.user() == tmp_path / "conf" / "opencode" / "skills"


def test_an_unknown_agent_names_the_known_ones() -> None:
    with pytest.raises(UnknownAgentError, match="claude-code, codex"):
        agent_named("claude")
