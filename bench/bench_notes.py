"""Time getNotes/addNote over a 10,000-note file, in-process and through an in-memory MCP client.

Run: .venv/bin/python -m bench.bench_notes
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer

from skillshelf.memory import service, store
from skillshelf.projects import ProjectRoots
from skillshelf.server.tools.memory import memory_tools

NOTES = 10_000
TYPES = ["decision", "hypothesis", "blocker", "general"]


def write_notes(root: Path) -> None:
    folder = root / "app" / ".agent-memory"
    folder.mkdir(parents=True)
    with (folder / "session-notes.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(NOTES):
            note = {
                "type": TYPES[i % 4],
                "content": f"note {i} about the auth cache and the retry budget of the sync worker",
                "timestamp": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T12:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                "id": f"{i:012x}",
                "tags": ["auth", f"t{i % 7}"],
            }
            handle.write(json.dumps(note) + "\n")


def report(label: str, times_ms: list[float]) -> None:
    p95 = sorted(times_ms)[int(len(times_ms) * 0.95)]
    print(f"{label:44s} median {statistics.median(times_ms):7.3f} ms   p95 {p95:7.3f} ms")


def timed(call: Callable[[], object], runs: int = 200) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def in_process(roots: ProjectRoots) -> None:
    store.clear_cache()
    report("service: first getNotes (parses the file)", timed(lambda: service.get_notes(roots, "app"), runs=1))
    report("service: getNotes (limit 50)", timed(lambda: service.get_notes(roots, "app")))
    report("service: getNotes type=decision", timed(lambda: service.get_notes(roots, "app", note_type="decision")))
    report("service: getNotes query='auth t3'", timed(lambda: service.get_notes(roots, "app", query="auth t3")))
    report("service: addNote", timed(lambda: service.add_note(roots, "app", "decision", "use sqlite", ["db"])))


async def through_client(roots: ProjectRoots) -> None:
    store.clear_cache()
    async with Client(MCPServer("bench", tools=memory_tools(roots))) as client:

        async def timed_call(tool: str, arguments: dict[str, Any], runs: int = 200) -> list[float]:
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                result = await client.call_tool(tool, {"projectPath": "app", **arguments})
                assert not result.is_error
                times.append((time.perf_counter() - started) * 1000)
            return times

        report("client: first getNotes (parses the file)", await timed_call("getNotes", {}, runs=1))
        report("client: getNotes (limit 50)", await timed_call("getNotes", {}))
        report("client: getDecisions (limit 50)", await timed_call("getDecisions", {}))
        report("client: getNotes query='auth t3'", await timed_call("getNotes", {"query": "auth t3"}))
        report("client: addNote", await timed_call("addNote", {"type": "general", "content": "x", "tags": ["y"]}))


def main() -> None:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "dev"
        write_notes(root)
        roots = ProjectRoots.of([root])
        in_process(roots)
        anyio.run(through_client, roots)


if __name__ == "__main__":
    main()
