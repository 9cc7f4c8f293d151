"""What may run on the event loop: nothing that can block. Every tool is fired while a first index of a
few thousand skills builds, and a ticker on the same loop measures how late it wakes: the loop stays
responsive throughout (before: a dryRun, a cached load or a search could hold it for seconds). The
1,000-skill run is the quick check outside `slow`.

The bounds are those of tests/execution/test_event_loop.py: 95 % of ticks within 50 ms, none a second
late. The worst tick is no finer a measure on a 2-core machine: with the index's parse workers, the
client and the tool threads sharing it, it ranged from 9 to 111 ms across runs of unchanged code."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import uvicorn
from anyio.from_thread import start_blocking_portal
from mcp import Client

from skillshelf.config.views import ViewSettings
from skillshelf.library.db import file_identity
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import SkillIndex
from skillshelf.library.indexing import fts
from skillshelf.server.app import build_server
from skillshelf.server.assembly import YOUNG_GENERATION
from skillshelf.server.http import KEEP_ALIVE_S, team_app
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import deadline, generated_library, wait_until_async, write
from tests.execution.test_event_loop import assert_the_loop_stayed_free
from tests.server.team_support import listening_socket

pytestmark = [pytest.mark.anyio]

TICK_S = 0.005


# 3,000 skills is the stress run (CI); 1,000 the quick check the developer loop (`-m 'not slow'`) runs.
@pytest.fixture(
    scope="module",
    params=[pytest.param(1000, id="1000-skills"), pytest.param(3000, id="3000-skills", marks=pytest.mark.slow)],
)
def big_library(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_library(tmp_path_factory, request.param)


def every_tool_call(skill_id: str) -> list[tuple[str, dict[str, Any]]]:
    project = {"projectPath": "app"}
    return [
        ("searchPatterns", {"query": "retry flaky calls"}),
        ("searchPatterns", {"queries": [{"query": "cache"}, {"query": "deploy"}]}),
        ("loadSkill", {"skillId": skill_id}),
        ("loadSkill", {"skillIds": [skill_id]}),
        ("readSkillFile", {"skillId": skill_id, "path": "SKILL.md"}),
        ("trackPatternUsage", {"patternId": skill_id, "projectPath": "app"}),
        ("listCategories", {}),
        ("executeSkill", {"skillId": skill_id, "dryRun": True}),
        ("searchArtifacts", {"query": "auth"}),
        ("loadSession", {"project": "app", "sessionId": "2026-01-01-x"}),
        ("getSessionCode", {"project": "app", "sessionId": "2026-01-01-x"}),
        ("addNote", {**project, "type": "decision", "content": "use the loop only for I/O waits"}),
        ("getNotes", project),
        ("getDecisions", project),
        ("getHypotheses", project),
        ("getBlockers", project),
        ("getCompressionRatio", {"project": "app"}),
        ("getPatternReuse", {}),
        ("getLibraryStats", {}),
    ]


async def test_every_tool_answers_while_a_first_index_builds_and_the_loop_never_stalls(
    big_library: Path, tmp_path: Path
) -> None:
    """The server runs on its own event loop in another thread (as in production, where the client is
    another process), with a ticker on that loop; a real MCP client calls it over HTTP."""
    projects = tmp_path / "projects"
    write(projects / "app" / ".agent-memory" / "session-notes.jsonl", "")
    library = SkillLibrary(LibraryConfig(roots=[big_library], index_dir=tmp_path / "index", watch=False))
    settings = Settings(
        roots=[big_library],
        project_roots=[projects],
        watch=False,
        views={"all": ViewSettings()},
        execution=ExecutionSettings(enabled=True),
    )
    app = team_app({"default": build_server(settings, library, view="all")})
    lags: list[float] = []
    stop = threading.Event()

    async def tick() -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await anyio.sleep(TICK_S)
            lags.append(time.perf_counter() - before - TICK_S)

    try:
        with start_blocking_portal() as portal:
            base = portal.call(_start, app)
            ticker = portal.start_task_soon(tick)
            assert library.needs_sync(), "the first index must still be building when the calls arrive"
            async with Client(f"{base}/mcp") as client:
                await _fire_every_tool(client, "x/none")  # they wait on the index being built
                hits = await client.call_tool("searchPatterns", {"query": "", "limit": 1})
                assert hits.structured_content is not None
                await _fire_every_tool(client, hits.structured_content["data"]["hits"][0]["id"])
            stop.set()
            ticker.result(timeout=deadline())
            portal.call(_stop)
    finally:
        library.close()
    assert len(lags) > 20  # the ticker ran the whole time
    assert_the_loop_stayed_free(lags)


_RUNNING: list[uvicorn.Server] = []


async def _start(app: Any) -> str:
    """Start uvicorn on this (the portal's) loop; its base URL once it listens."""
    sock = listening_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=KEEP_ALIVE_S))
    _RUNNING.append(server)
    anyio.lowlevel.current_token()  # (this is the portal's loop)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    _RUNNING_TASKS.append(task)
    await wait_until_async(lambda: server.started or task.done(), "uvicorn never started")
    assert server.started, "uvicorn stopped before it started (its log is above)"
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


_RUNNING_TASKS: list[Any] = []


async def _stop() -> None:
    server = _RUNNING.pop()
    server.should_exit = True
    await _RUNNING_TASKS.pop()


async def _fire_every_tool(client: Client, skill_id: str) -> None:
    async with anyio.create_task_group() as calls:
        for tool, arguments in every_tool_call(skill_id):
            calls.start_soon(client.call_tool, tool, arguments)


@pytest.fixture
def collector_thresholds() -> Iterator[None]:
    """The process's collector thresholds as they were, after a test whose server changed them."""
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


@pytest.mark.usefixtures("collector_thresholds")
async def test_a_served_server_collects_garbage_only_when_the_heap_grows(sample_library: SkillLibrary) -> None:
    """At CPython's default (700 objects) the youngest generation ran about 50 times a second under 50 clients,
    promoting the live objects of the requests in flight, and the older generations' collections then stalled
    every request 5-100 ms (issue 36): a serving process lets it run only after YOUNG_GENERATION objects."""
    gc.set_threshold(700, 10, 10)
    settings = Settings(roots=sample_library.config.roots)
    async with Client(build_server(settings, sample_library, view="full")) as client:
        await client.call_tool("searchPatterns", {"query": "retry"})
        assert gc.get_threshold() == (YOUNG_GENERATION, 10, 10)


async def test_a_tool_call_stats_the_index_file_only_on_its_work_thread(
    sample_library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a call must wait for a sync includes a stat of the index file (another process may have
    replaced it); asked on the event loop, that stat held every other request for it (issue 36)."""
    where: list[bool] = []  # per stat: on the event loop's thread

    def watched(path: Path) -> tuple[int, int] | None:
        where.append(_on_event_loop())
        return file_identity(path)

    monkeypatch.setattr(fts, "file_identity", watched)
    server = build_server(Settings(roots=sample_library.config.roots), sample_library, view="full")
    async with Client(server) as client:
        where.clear()  # the calls' own, not the server's start's
        calls = (("searchPatterns", {"query": "retry"}), ("loadSkill", {"skillId": "python/retry-backoff"}))
        for tool, arguments in calls:
            assert not (await client.call_tool(tool, arguments)).is_error
    assert where and not any(where)


async def test_a_tool_call_stats_the_index_file_once(
    sample_library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work thread's `needs_sync` looks at the index file; the read right after it in the same call
    takes that look instead of stat'ing the file again (issue 36: two stats a call, one of them redundant)."""
    stats: list[Path] = []

    def watched(path: Path) -> tuple[int, int] | None:
        if path == sample_library.index_path:  # not the session archive's, whose first sync runs meanwhile
            stats.append(path)
        return file_identity(path)

    monkeypatch.setattr(fts, "file_identity", watched)
    server = build_server(Settings(roots=sample_library.config.roots), sample_library, view="full")
    async with Client(server) as client:
        calls = (("searchPatterns", {"query": "retry"}), ("loadSkill", {"skillId": "python/retry-backoff"}))
        for tool, arguments in calls * 2:
            stats.clear()
            assert not (await client.call_tool(tool, arguments)).is_error
            assert len(stats) == 1, tool


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def test_a_served_server_builds_the_spelling_vocabulary_before_the_first_search(
    sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built by the first searches instead, it held every request of a 10,000-skill server's first second 1-2 s
    (issue 36): the server builds it once its first index is, before anyone asks."""
    built: list[str] = []
    real = SkillIndex.vocabulary

    def watched(index: SkillIndex) -> Any:
        built.append(threading.current_thread().name)
        return real(index)

    monkeypatch.setattr(SkillIndex, "vocabulary", watched)
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        async with Client(build_server(Settings(roots=[sample_root]), library, view="full")):
            await wait_until_async(lambda: built, "the vocabulary built with no search made")
    finally:
        library.close()
    assert built == ["skillshelf-freeze"]
