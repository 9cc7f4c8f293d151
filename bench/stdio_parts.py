"""Where a stdio call's CPU goes, in one process: skillshelf, skillshelf with its service's answers kept, the floor.

    python bench/stdio_parts.py --work /tmp/ab          # bench/ab.py's generated library (lib-10000 there)

Three servers answer the same calls through the in-process official client (`Client(server)`: both ends in
this process, so the figures are CPU time of the whole call, transport aside), in ABBA order over `--rounds`:

- `skillshelf`: `skillshelf serve`'s server (App(settings).server(), the call log on as stdio has it);
- `layers`: the same server with `search_patterns` and `load_for_agent` answering from a dictionary (what they
  answered the first time): what skillshelf's serving layers cost around its work (pipeline, envelope, call
  log, compact hits, the worker thread);
- `replay`: bench/noop_server.py's replay floor, the bare SDK answering the same payload.

Before the rounds, one pass of every load on the fresh server gives the first load's CPU, and the time
`load_for_agent` itself took (thread CPU), against a second pass: bench/ab.py's official client times first
loads (each answer once), its raw client mostly repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from skillshelf.server.app import App
from skillshelf.settings import Settings
from skillshelf.skills import service

try:
    from bench import noop_server
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import noop_server  # type: ignore[no-redef,import-not-found,unused-ignore]

SETTLE_S = 20.0  # the fresh server's start-up check of the library runs meanwhile
WORK: dict[str, Callable[..., Any]] = {
    "load_for_agent": service.load_for_agent,
    "search_patterns": service.search_patterns,
    "search_patterns_compact": service.search_patterns_compact,  # searchPatterns' default answer
}
Calls = dict[str, list[dict[str, Any]]]


def calls_of(lib: Path) -> Calls:
    queries = json.loads(lib.with_name(lib.name + ".queries.json").read_text(encoding="utf-8"))["queries"]
    return {
        "searchPatterns": [{"query": q["query"], "limit": 10} for q in queries],
        "loadSkill": [{"skillId": q["answer"]} for q in queries],
    }


class Work:
    """Switches the service between doing its work and answering what it answered before."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, str], Any] = {}
        self.inner_s: list[float] = []

    def timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(reader: Any, key: str, **options: Any) -> Any:
            started = time.thread_time()
            try:
                return fn(reader, key, **options)
            finally:
                self.inner_s.append(time.thread_time() - started)

        return run

    def keeping(self, name: str) -> Callable[..., Any]:
        def answer(reader: Any, key: str, **options: Any) -> Any:
            slot = (name, key, repr(sorted(options.items())))
            if slot not in self.kept:
                self.kept[slot] = WORK[name](reader, key, **options)
            return self.kept[slot]

        return answer

    def use(self, variant: str) -> None:
        for name, fn in WORK.items():
            setattr(service, name, self.keeping(name) if variant == "layers" else self.timed(fn))


async def each(client: Client, tool: str, calls: list[dict[str, Any]]) -> float:
    """CPU ms a call of `tool` over `calls`."""
    started = time.process_time()
    for arguments in calls:
        await client.call_tool(tool, arguments)
    return (time.process_time() - started) * 1000 / len(calls)


async def measure(lib: Path, rounds: int) -> dict[str, Any]:
    calls, work = calls_of(lib), Work()
    app = App(Settings(roots=[lib], watch=False))
    floor = noop_server.build_replaying(str(lib))
    async with Client(app.server()) as own, Client(floor) as replay:
        await anyio.sleep(SETTLE_S)
        work.use("skillshelf")
        passes = []
        for _ in range(2):
            work.inner_s.clear()
            spent = await each(own, "loadSkill", calls["loadSkill"])
            passes.append({"callMs": spent, "loadForAgentMs": statistics.fmean(work.inner_s) * 1000})
        clients = {"skillshelf": own, "layers": own, "replay": replay}
        spent_by: dict[str, dict[str, list[float]]] = {v: {tool: [] for tool in calls} for v in clients}
        for r in range(rounds + 1):  # round 0 warms every variant (and keeps the layers' answers)
            for variant in list(clients) if r % 2 == 0 else list(clients)[::-1]:
                work.use(variant)
                for tool, arguments in calls.items():
                    ms = await each(clients[variant], tool, arguments)
                    if r:
                        spent_by[variant][tool].append(ms)
    app.close()
    return {
        "firstLoad": passes[0],
        "secondLoad": passes[1],
        "cpuMsPerCall": {v: {t: statistics.median(ms) for t, ms in tools.items()} for v, tools in spent_by.items()},
        "load1": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="bench/ab.py's --work folder")
    ap.add_argument("--n", type=int, default=10000, help="the library's size (its folder: lib-N)")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args(argv)
    lib = args.work / f"lib-{args.n}"
    if not lib.is_dir():
        print(f"{lib} not found: run bench/ab.py --n {args.n} --work {args.work} first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as home:
        os.environ["HOME"] = home  # no user config, cache or call log of the user's
        got = anyio.run(measure, lib, args.rounds)
    print(json.dumps(got, indent=1))
    print(f"CPU ms a call, median of {args.rounds} rounds (load average {got['load1']:.1f})")
    print("| variant | searchPatterns | loadSkill |")
    print("|---|---|---|")
    for variant, tools in got["cpuMsPerCall"].items():
        print(f"| {variant} | {tools['searchPatterns']:.3f} | {tools['loadSkill']:.3f} |")
    first, second = got["firstLoad"], got["secondLoad"]
    print(
        f"first pass of loads: {first['callMs']:.3f} ms a call, load_for_agent {first['loadForAgentMs']:.3f}; "
        f"second: {second['callMs']:.3f}, {second['loadForAgentMs']:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
