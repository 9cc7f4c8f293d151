"""Instructions a request costs the HTTP server, counted by valgrind's callgrind: a count the machine's load does
not change, so two trees (or skillshelf and the work floor) can be compared on a shared machine.

    python bench/http_instructions.py [--n 1000] [--clients 50] [--pairs 4] [--src DIR --src DIR ...]
        [--work-floor] [--floor-src DIR ...]

For each `--src` (a `src/` folder put first on the server's PYTHONPATH: this checkout's when none is given),
and for the work floor with `--work-floor` (bench/noop_server.py doing skillshelf's search and load; with this
process's PYTHONPATH) or `--floor-src` (a work floor on that `src/`: its service and envelope), start
the server as bench/load_http.py does (one worker, a token per client, the rate limit out of the way) under
`valgrind --tool=callgrind` with counting off, wait until it has settled, send every client's warm-up pairs
(each a searchPatterns and a loadSkill of its answer, the generated queries), then count the instructions of
the same `--clients` x `--pairs` pairs again (what they fill is filled), the clients at once. Every server
runs and is counted at the same time (a count is its own process's, whatever else runs). Prints each one's
instructions a request (millions) and the ratio to the first. Needs valgrind; a server under callgrind runs
about 50x slower, so a start takes minutes.
Nothing here asserts on anything: it only measures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2

try:  # imported as bench.http_instructions (repo root on sys.path)
    from bench import generate, load_http
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]
    import load_http  # type: ignore[no-redef,import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Server:
    label: str
    process: subprocess.Popen[bytes]
    base: str
    out: Path
    work_floor: bool


def server_command(port: int, lib: Path, config: Path, work_floor: bool) -> list[str]:
    """The one-worker HTTP server on `port` serving `lib`, as load_http starts it: skillshelf (watcher off),
    or the work floor (the bare SDK doing skillshelf's search and load, bench/noop_server.py --work)."""
    if work_floor:
        floor = Path(__file__).with_name("noop_server.py")
        return [sys.executable, str(floor), "--http", str(port), "--work", str(lib)]
    serve = ["serve", "--http", "--port", str(port), "--workers", "1", "--no-watch", "--library", str(lib)]
    return [sys.executable, "-m", "skillshelf", "--config", str(config), *serve]


def start(label: str, src: Path | None, lib: Path, tokens: list[str], scratch: Path, work_floor: bool) -> Server:
    """One server under callgrind, counting off (`--instr-atstart=no`)."""
    folder = scratch / label.replace("/", "_")
    folder.mkdir(parents=True)
    config = folder / "config.toml"
    config.write_text("[auth]\nrate_per_s = 100000\nburst = 100000\n", encoding="utf-8")
    port = load_http.free_port()
    env = {
        **os.environ,
        "SKILLSHELF_TOKENS": ",".join(f"c{i}={token}" for i, token in enumerate(tokens)),
        "SKILLSHELF_STATE_DIR": str(folder / "state"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(src) if src else "", os.environ.get("PYTHONPATH", "")) if p),
    }
    command = server_command(port, lib, config, work_floor)
    out = folder / "callgrind.out"
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p"]
    with (folder / "server.log").open("wb") as log:
        process = subprocess.Popen(valgrind + command, env=env, stdout=subprocess.DEVNULL, stderr=log)
    return Server(label, process, f"http://127.0.0.1:{port}", out, work_floor)


async def ready(server: Server, token: str) -> None:
    """As load_http.wait_healthy, with the time a server under callgrind needs."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        with anyio.fail_after(1800):
            while True:
                if server.process.poll() is not None:
                    raise RuntimeError(f"{server.label}: the server exited with {server.process.returncode}")
                try:
                    if server.work_floor:
                        await http.get(f"{server.base}/mcp")
                        return
                    if load_http.settled((await http.get(f"{server.base}/health")).json()):
                        return
                except (httpx2.TransportError, ValueError):
                    pass
                await anyio.sleep(2)


async def pairs(agents: list[load_http.RawAgent], queries: list[dict[str, Any]], count: int) -> int:
    """`count` pairs a client, the clients at once; the number of calls sent again (a connection the server
    closed, which a server under callgrind can be slow enough to see: the call is sent again on a new one)."""
    again = 0

    async def one(index: int, agent: load_http.RawAgent) -> None:
        nonlocal again
        for step in range(count):
            query = queries[(index * 7 + step) % len(queries)]
            for tool, arguments in (
                ("searchPatterns", {"query": query["query"], "limit": 5}),
                ("loadSkill", {"skillId": query["answer"]}),
            ):
                for attempt in range(3):
                    try:
                        problem = await agent.call(tool, arguments)
                        break
                    except (OSError, asyncio.IncompleteReadError):
                        again += 1
                        if attempt == 2:
                            raise
                if problem:
                    raise RuntimeError(f"{tool} {arguments}: {problem}")

    await asyncio.gather(*(one(index, agent) for index, agent in enumerate(agents)))
    return again


async def control(server: Server, *args: str) -> None:
    command = ["callgrind_control", *args, str(server.process.pid)]
    await asyncio.to_thread(subprocess.run, command, check=True, capture_output=True)


def counted(server: Server) -> int:
    """The instructions in the dump `callgrind_control --dump` wrote."""
    total = 0
    for dump in server.out.parent.glob(f"{server.out.name}.*.*"):
        found = re.search(r"^totals:\s+(\d+)", dump.read_text(encoding="utf-8", errors="replace"), re.M)
        total += int(found.group(1)) if found else 0
    return total


async def measure(server: Server, tokens: list[str], queries: list[dict[str, Any]], warm: int, count: int) -> None:
    """Count the instructions of `count` pairs a client, after `warm` pairs a client, and dump them."""
    await ready(server, tokens[0])
    agents = [load_http.RawAgent(server.base, token, False) for token in tokens]
    for agent in agents:
        await agent.start()
    await pairs(agents, queries, warm)
    await control(server, "--zero")
    await control(server, "--instr=on")
    again = await pairs(agents, queries, count)  # the warm-up's requests again: what they fill is filled
    await control(server, "--instr=off")
    for agent in agents:
        await agent.close()
    if again:
        print(f"{server.label}: {again} counted calls sent again on a new connection", file=sys.stderr)
    await control(server, "--dump")


async def measure_all(servers: list[Server], tokens: list[str], queries: list[dict[str, Any]], count: int) -> None:
    """Every server at once: each one's count is its own process's, whatever else runs."""
    await asyncio.gather(*(measure(server, tokens, queries, count, count) for server in servers))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="skills in the generated library")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=4, help="counted pairs a client (after the same pairs to warm up)")
    parser.add_argument("--src", type=Path, action="append", help="repeatable: a src/ folder to measure")
    parser.add_argument("--work-floor", action="store_true", help="the bare SDK doing skillshelf's work too")
    parser.add_argument("--floor-src", type=Path, action="append", help="repeatable: a work floor on this src/")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    args = parser.parse_args()
    lib = args.work / f"lib-{args.n}"
    generate.ensure_library(lib, args.n)
    queries = [q for q in generate.load_queries(lib) if q.get("answer")]
    tokens = [f"c{i}-{secrets.token_hex(12)}" for i in range(args.clients)]
    sources: list[Path | None] = list(args.src or [None])
    with tempfile.TemporaryDirectory(prefix="skillshelf-instructions-") as scratch:
        servers = [
            start(f"{i}:{src or ROOT / 'src'}", src, lib, tokens, Path(scratch), False) for i, src in enumerate(sources)
        ]
        if args.work_floor:
            servers.append(start("work floor", None, lib, tokens, Path(scratch), True))
        for i, src in enumerate(args.floor_src or []):
            servers.append(start(f"work floor {i}:{src}", src, lib, tokens, Path(scratch), True))
        try:
            load_http.run_async(measure_all, servers, tokens, queries, args.pairs)
            time.sleep(2)  # the dumps are written
            requests = 2 * args.pairs * len(tokens)
            results = [(s.label, counted(s) / requests / 1e6) for s in servers]
        finally:
            for server in servers:
                server.process.terminate()
                server.process.wait(timeout=60)
    first = results[0][1]
    for label, per_request in results:
        print(f"{label}: {per_request:.3f} M instructions a request ({per_request / first:.3f}x the first)")


if __name__ == "__main__":
    main()
