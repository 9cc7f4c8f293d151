"""`verified` is one rule on every surface: used from three distinct projects, whatever the score.

python/retry-backoff declares 6.5, so it is verified only once three distinct projects record a use;
database/rls-policy scores 8.5 and, never used, is not verified (before issue 32 a score of 7.0 was enough:
771 of 972 real skills showed verified with no use). Search, load, categories, stats, reuse and the CLI must
all agree before and after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client

from skillshelf.cli import cli
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from tests.conftest import call

pytestmark = pytest.mark.anyio
SKILL = "python/retry-backoff"


async def surfaces(client: Client) -> dict[str, Any]:
    _, search = await call(client, "searchPatterns", {"query": "retry backoff jitter"})
    _, load = await call(client, "loadSkill", {"skillId": SKILL})
    _, categories = await call(client, "listCategories", {})
    _, stats = await call(client, "getLibraryStats", {})
    _, reuse = await call(client, "getPatternReuse", {"patternId": SKILL})
    (python,) = [c for c in categories["data"]["categories"] if c["name"] == "python"]
    return {
        # compact hits and brief metadata carry the flag only when it is true
        "search": next(h.get("verified", False) for h in search["data"]["hits"] if h["id"] == SKILL),
        "load": load["data"]["metadata"].get("verified", False),
        "categories": python["verified"],
        "stats": stats["data"]["verified"],
        "reuse": reuse["data"]["patterns"][0]["verified"],
    }


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


async def test_every_surface_agrees_once_three_projects_used_a_skill(sample_root: Path) -> None:
    # The CLI and the server share the library's state folder (sample_root/.skillshelf), as in real use.
    server = build_server(Settings(roots=[sample_root], watch=False), view="full")
    async with Client(server, raise_exceptions=True) as client:
        before = await surfaces(client)
        for project in ("alpha", "beta", "gamma"):
            await call(client, "trackPatternUsage", {"patternId": SKILL, "projectPath": project})
        after = await surfaces(client)
    assert before == {"search": False, "load": False, "categories": 0, "stats": 0, "reuse": False}
    assert after == {"search": True, "load": True, "categories": 1, "stats": 1, "reuse": True}

    library = ["--library", str(sample_root)]
    (python,) = [c for c in cli_json("categories", *library)["categories"] if c["name"] == "python"]
    assert python["verified"] == 1
    assert cli_json("stats", *library)["verified"] == 1
    assert cli_json("search", *library, "retry", "backoff")["hits"][0]["verified"] is True


async def test_a_high_score_alone_does_not_make_a_skill_verified(sample_root: Path) -> None:
    server = build_server(Settings(roots=[sample_root], watch=False), view="full")
    async with Client(server, raise_exceptions=True) as client:
        _, search = await call(client, "searchPatterns", {"query": "row level security", "detail": True})
        _, load = await call(client, "loadSkill", {"skillId": "database/rls-policy", "includeMetadata": True})
        _, categories = await call(client, "listCategories", {})
    hit = next(h for h in search["data"]["hits"] if h["id"] == "database/rls-policy")
    (database,) = [c for c in categories["data"]["categories"] if c["name"] == "database"]
    assert hit["quality"] >= 7.0 and load["data"]["metadata"]["quality"] >= 7.0
    assert (hit["verified"], load["data"]["metadata"]["verified"], database["verified"]) == (False, False, 0)
