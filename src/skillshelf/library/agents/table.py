"""The agents `skillshelf install` knows: where each reads skills, whether it follows a symlinked skill
folder, and what its catalogue of skills may cost. One table, as data; docs/agents.md explains it and
tests/agents/test_table.py checks each row.

Where each fact comes from (read 2026-11; hosts change these, so each row names its page):

- claude-code: code.claude.com/docs/en/skills (`~/.claude/skills`, `.claude/skills`; the listing of
  skills is budgeted at 1 % of the context window, 8,000 characters when the window is unknown, each
  entry cut at 1,536 characters; past the budget descriptions are dropped and the name stays). It
  follows a symlinked skill folder: vercel/ai pull request 15711 relies on `.claude/skills` links.
- codex: developers.openai.com/codex/skills (`$CWD/.agents/skills` up to the repository root,
  `$HOME/.agents/skills`; the initial list is capped at about 2 % of the context window or 8,000
  characters, descriptions shortened first, then skills omitted with a warning). A description is at
  most 1,024 characters. It does not see a symlinked skill folder or SKILL.md: openai/codex issues
  9365 and 8400 (copies work, links do not), so Codex always gets copies.
- cursor: cursor.com/docs/context/skills (`.cursor/skills`, `~/.cursor/skills`; it also reads
  `.agents/skills`, `.claude/skills` and `.codex/skills`). Links: not documented, so copies.
- gemini-cli: geminicli.com/docs/cli/using-agent-skills (`~/.gemini/skills` or the `~/.agents/skills`
  alias, `.gemini/skills` or `.agents/skills`; every enabled skill's name and description goes into the
  system prompt, no budget documented). `/skills link PATH` installs a skill as a link, so it follows links.
- github-copilot: docs.github.com/en/copilot (how-tos, "create skills": `.github/skills`,
  `.claude/skills` or `.agents/skills` in a repository; `~/.copilot/skills`, `~/.claude/skills` or
  `~/.agents/skills` for a person). Links: not documented, so copies.
- opencode: opencode.ai/docs/skills (`.opencode/skills`, `~/.config/opencode/skills`; also
  `.claude/skills` and `.agents/skills` at both levels; a description is 1-1,024 characters).
  Links: not documented, so copies.
- agents: the shared `.agents/skills` folder the Agent Skills hosts above agree on. Codex reads it,
  so it gets copies.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Base = Literal["home", "xdg_config"]


@dataclass(frozen=True)
class Folder:
    """A skills folder: under the home folder, under $XDG_CONFIG_HOME (~/.config), or in a project."""

    path: str  # '/'-separated, relative to its base
    base: Base = "home"

    def user(self) -> Path:
        return _base(self.base).joinpath(*self.path.split("/"))

    def shown(self) -> str:
        return ("~/" if self.base == "home" else "$XDG_CONFIG_HOME/") + self.path


@dataclass(frozen=True)
class Budget:
    """What an agent's catalogue of skills (each skill's name and description, in every session) may cost."""

    chars: int | None  # the whole listing, in characters (None: no budget documented)
    entry_chars: int | None  # one skill's description, in characters, before the agent cuts it
    over: str  # what the agent does past the budget
    note: str  # how the budget is set, in the agent's words


@dataclass(frozen=True)
class Agent:
    name: str
    title: str
    user: Folder  # where `install --user` writes
    project: str  # where `install --project DIR` writes, relative to DIR
    also_user: tuple[Folder, ...]  # other folders it reads skills from (written by other agents' installs)
    also_project: tuple[str, ...]
    follows_links: bool | None  # False: a symlinked skill folder is not seen; None: not documented
    budget: Budget
    source: str  # where these facts come from

    def link_note(self) -> str:
        if self.follows_links:
            return "copies by default; --link links an Agent Skills folder"
        if self.follows_links is False:
            return "copies: it does not see a symlinked skill folder"
        return "copies: whether it follows a symlinked skill folder is not documented"


NO_BUDGET = Budget(None, 1024, "", "no budget documented: every skill's name and description is in each session")

AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        Agent(
            "claude-code",
            "Claude Code",
            Folder(".claude/skills"),
            ".claude/skills",
            (),
            (),
            True,
            Budget(8000, 1536, "drops their descriptions (the names stay)", "1 % of the context window"),
            "https://code.claude.com/docs/en/skills",
        ),
        Agent(
            "codex",
            "Codex",
            Folder(".agents/skills"),
            ".agents/skills",
            (),
            (),
            False,
            Budget(
                8000, 1024, "shortens their descriptions, then leaves skills out", "about 2 % of the context window"
            ),
            "https://developers.openai.com/codex/skills",
        ),
        Agent(
            "cursor",
            "Cursor",
            Folder(".cursor/skills"),
            ".cursor/skills",
            (Folder(".claude/skills"), Folder(".codex/skills")),
            (".agents/skills", ".claude/skills", ".codex/skills"),
            None,
            NO_BUDGET,
            "https://cursor.com/docs/context/skills",
        ),
        Agent(
            "gemini-cli",
            "Gemini CLI",
            Folder(".gemini/skills"),
            ".gemini/skills",
            (Folder(".agents/skills"),),
            (".agents/skills",),
            True,
            NO_BUDGET,
            "https://geminicli.com/docs/cli/using-agent-skills",
        ),
        Agent(
            "github-copilot",
            "GitHub Copilot",
            Folder(".copilot/skills"),
            ".github/skills",
            (Folder(".claude/skills"), Folder(".agents/skills")),
            (".claude/skills", ".agents/skills"),
            None,
            NO_BUDGET,
            "https://docs.github.com/en/copilot/concepts/agents/about-agent-skills",
        ),
        Agent(
            "opencode",
            "OpenCode",
            Folder("opencode/skills", "xdg_config"),
            ".opencode/skills",
            (Folder(".claude/skills"), Folder(".agents/skills")),
            (".claude/skills", ".agents/skills"),
            None,
            NO_BUDGET,
            "https://opencode.ai/docs/skills",
        ),
        Agent(
            "agents",
            "Agent Skills hosts (.agents/skills)",
            Folder(".agents/skills"),
            ".agents/skills",
            (),
            (),
            False,
            NO_BUDGET,
            "https://agentskills.io (the folder Codex, Gemini CLI, Copilot, Cursor and OpenCode all read)",
        ),
    )
}


class UnknownAgentError(ValueError):
    pass


def agent_named(name: str) -> Agent:
    try:
        return AGENTS[name]
    except KeyError:
        raise UnknownAgentError(
            f"no agent {name!r}; the agents skillshelf installs into: {', '.join(AGENTS)}"
        ) from None


def readers_of(folder: Path, project: Path | None) -> list[Agent]:
    """Every agent of the table that reads skills from `folder` (its own folder or one it also reads)."""
    found = []
    for agent in AGENTS.values():
        if project is None:
            folders = [f.user() for f in (agent.user, *agent.also_user)]
        else:
            folders = [project.joinpath(*p.split("/")) for p in (agent.project, *agent.also_project)]
        if folder in folders:
            found.append(agent)
    return found


def may_link(agent: Agent, folder: Path, project: Path | None) -> bool:
    """A link is seen by this agent, and by every agent known to read the same folder: Codex reads
    `.agents/skills` and ignores links, so nothing is linked there whichever agent was asked for."""
    return agent.follows_links is True and all(a.follows_links is not False for a in readers_of(folder, project))


def _base(base: Base) -> Path:
    if base == "xdg_config":
        configured = os.environ.get("XDG_CONFIG_HOME", "")
        return Path(configured) if configured and Path(configured).is_absolute() else Path.home() / ".config"
    return Path.home()
