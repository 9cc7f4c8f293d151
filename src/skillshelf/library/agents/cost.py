"""What a set of installed skills costs an agent: its catalogue (each skill's name and description, in
every session's prompt) against the agent's known budget, and which descriptions it would cut or drop.

Characters are what the hosts budget in; tokens are estimated at four characters each (tokens.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillshelf.library.agents.table import Agent
from skillshelf.tokens import estimate_text_tokens

ENTRY_OVERHEAD = 16  # the markup around one skill in a host's listing (its name tag, separators, path)


@dataclass(frozen=True)
class Listed:
    name: str
    description_chars: int


@dataclass
class CatalogueCost:
    agent: Agent
    skills: int = 0
    chars: int = 0
    cut: list[tuple[str, int]] = field(default_factory=list)  # (name, description characters) over the entry cap
    dropped: list[str] = field(default_factory=list)  # past the budget: the agent drops or shortens these

    @property
    def tokens(self) -> int:
        return estimate_text_tokens("x" * self.chars)

    @property
    def budget_tokens(self) -> int | None:
        chars = self.agent.budget.chars
        return None if chars is None else estimate_text_tokens("x" * chars)

    @property
    def over(self) -> bool:
        return bool(self.cut or self.dropped)

    def lines(self) -> list[str]:
        budget = self.agent.budget
        size = f"~{self.tokens:,} tokens ({self.chars:,} characters)"
        skills = f"{self.skills} skill" + ("" if self.skills == 1 else "s")
        head = f"catalogue for {self.agent.title}: {skills}, {size}"
        if budget.chars is None:
            lines = [f"{head}; {budget.note}"]
        else:
            lines = [
                f"{head} of a budget of ~{self.budget_tokens:,} tokens ({budget.chars:,} characters, {budget.note})"
            ]
        if self.cut:
            cut = ", ".join(f"{name} ({chars:,})" for name, chars in self.cut)
            lines.append(f"descriptions over its {budget.entry_chars:,}-character cap, cut: {cut}")
        if self.dropped:
            lines.append(f"past the budget it {budget.over}: {', '.join(self.dropped)}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent.name,
            "skills": self.skills,
            "chars": self.chars,
            "tokens": self.tokens,
            "budgetChars": self.agent.budget.chars,
            "budgetTokens": self.budget_tokens,
            "cut": [{"name": name, "descriptionChars": chars} for name, chars in self.cut],
            "dropped": self.dropped,
        }


def catalogue_cost(agent: Agent, listed: list[Listed]) -> CatalogueCost:
    """The cost of `listed` (in the order the agent lists them: by name) for `agent`."""
    cost = CatalogueCost(agent)
    cap = agent.budget.entry_chars
    for item in sorted(listed, key=lambda s: s.name):
        shown = item.description_chars
        if cap is not None and shown > cap:
            cost.cut.append((item.name, shown))
            shown = cap
        cost.skills += 1
        cost.chars += len(item.name) + shown + ENTRY_OVERHEAD
        if agent.budget.chars is not None and cost.chars > agent.budget.chars:
            cost.dropped.append(item.name)
    return cost
