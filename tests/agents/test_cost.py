"""What an installed set costs an agent's catalogue (library/agents/cost.py)."""

from __future__ import annotations

from skillshelf.library.agents.cost import ENTRY_OVERHEAD, Listed, catalogue_cost
from skillshelf.library.agents.table import agent_named


def test_codex_cuts_a_description_over_1024_characters_and_the_listing_counts_the_cut_one() -> None:
    cost = catalogue_cost(agent_named("codex"), [Listed("long", 1500), Listed("short", 100)])
    assert cost.cut == [("long", 1500)] and not cost.dropped
    assert cost.chars == len("long") + 1024 + len("short") + 100 + 2 * ENTRY_OVERHEAD
    assert "cut: long (1,500)" in "\n".join(cost.lines())


def test_past_claude_codes_budget_the_later_skills_lose_their_descriptions() -> None:
    listed = [Listed(f"skill-{n:02d}", 1000) for n in range(10)]
    cost = catalogue_cost(agent_named("claude-code"), listed)
    assert cost.dropped == [f"skill-{n:02d}" for n in range(7, 10)]
    assert cost.budget_tokens == 2000 and cost.tokens > 2000


def test_an_agent_without_a_documented_budget_drops_nothing_and_says_so() -> None:
    cost = catalogue_cost(agent_named("cursor"), [Listed("one", 900)])
    assert not cost.over and "no budget documented" in cost.lines()[0] and "1 skill," in cost.lines()[0]
