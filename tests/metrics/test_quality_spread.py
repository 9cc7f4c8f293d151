"""Issue 34: the library's quality figures weigh findability, and show the spread (stats, getLibraryStats,
the web library page)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from skillshelf.cli import cli
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.metrics.quality_spread import (
    COLLISION_COST,
    SECOND_COST,
    UNREACHABLE_COST,
    deciles,
    library_quality,
)
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from skillshelf.skills.evals import Collision, Findability, Unreachable
from skillshelf.web.pages import library_page
from skillshelf.web.stats import library_view
from tests.conftest import agent_skill, synced_library
from tests.skills.test_evals import unreachable_library

TWIN = "# Merge PDFs\n\n## Steps\n\n" + "Merge the files in order. " * 80 + "\n\n## Example\n\n```sh\nmerge a b\n```\n"


def twins(root: Path) -> Path:
    """Five skills with the same body and description: what tells them apart is only findability."""
    for name in ("pdf-a", "pdf-b", "pdf-c", "pdf-d", "pdf-e"):
        agent_skill(root, "docs", name, f"name: {name}\ndescription: Merge PDF files. Use when combining PDFs.", TWIN)
    return root


def found(unreachable: list[str], colliding: list[tuple[str, str]], ranks: dict[str, int | None]) -> Findability:
    return Findability(
        checked=len(ranks),
        own_ranks=ranks,
        unreachable=[Unreachable(id=i, rank=None, winner=None) for i in unreachable],
        collisions=[
            Collision(skills=pair, queries=2, shared_words=[], only_first=[], only_second=[]) for pair in colliding
        ],
        seconds=0.0,
    )


def test_an_unreachable_second_or_colliding_skill_scores_lower_than_its_findable_twin(tmp_path: Path) -> None:
    ranks: dict[str, int | None] = {"docs/pdf-a": 7, "docs/pdf-b": 2, "docs/pdf-c": 1, "docs/pdf-d": 1}
    with synced_library(twins(tmp_path / "library"), tmp_path / "index") as library:
        skills = library.overview()
        index_time = {s.id: s.quality for s in skills}
        assert len(set(index_time.values())) == 1  # twins: the same index-time score
        scores = library_quality(skills, found(["docs/pdf-a"], [("docs/pdf-c", "docs/pdf-d")], ranks))
        alone = library_quality(skills, None)
    twin = index_time["docs/pdf-c"]
    assert alone == index_time  # no findability worked out: the index-time scores
    assert scores["docs/pdf-e"] == twin  # first for its own description, in no collision
    assert scores["docs/pdf-a"] == twin - UNREACHABLE_COST
    assert scores["docs/pdf-b"] == twin - SECOND_COST
    assert scores["docs/pdf-c"] == scores["docs/pdf-d"] == twin - COLLISION_COST


def test_deciles_are_the_nearest_rank_percentiles() -> None:
    assert deciles([float(n) for n in range(1, 11)]) == [float(n) for n in range(1, 10)]
    assert deciles([5.0]) == [5.0] * 9
    assert deciles([]) == []


def test_stats_shows_the_spread_lowered_by_findability_and_says_what_it_used(tmp_path: Path) -> None:
    root = unreachable_library(tmp_path / "library")
    result = CliRunner().invoke(cli, ["stats", "--library", str(root), "--json"])
    stats = json.loads(result.output)
    with synced_library(root, tmp_path / "index") as library:
        own = {s.id: s.quality for s in library.overview()}
    lowered = own["ops/zz-tool"] - UNREACHABLE_COST
    assert len(stats["qualityDeciles"]) == 9 and stats["qualityDeciles"][0] == min(lowered, *own.values())
    assert stats["meanQuality"] < round(sum(own.values()) / len(own), 2)
    assert "1 of 7 lowered" in stats["qualityBasis"]

    text = CliRunner().invoke(cli, ["stats", "--library", str(root)]).output
    assert "deciles  " in text and "1 of 7 lowered" in text


@pytest.mark.anyio
async def test_get_library_stats_and_the_web_page_show_the_deciles(tmp_path: Path) -> None:
    root = unreachable_library(tmp_path / "library")
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    try:
        library.sync()
        async with Client(build_server(Settings(roots=[root]), library, view="full")) as client:
            result = await client.call_tool("getLibraryStats", {})
        assert result.structured_content is not None
        data = result.structured_content["data"]
        page = library_page("/web", library_view(LibraryReader(library)))
    finally:
        library.close()
    assert len(data["qualityDeciles"]) == 9 and "lowered" in data["qualityBasis"]
    assert "data-quality-deciles=" in page and "1 of 7 lowered" in page
