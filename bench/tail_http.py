"""Where the slowest 1 % of HTTP requests come from: one skillshelf server under 50 clients, with its garbage
collections logged, and each slow request set against them and against the second of the run it started in.

    python bench/tail_http.py [--n 1000] [--seconds 10] [--pin]

The server is `python -m skillshelf serve --http` as bench/load_http.py starts it (one worker, a token per
client, the rate limit out of the way), run through this script so that a `gc.callbacks` hook in it records
every collection (its generation, CPU and wall time); the run starts once /health says the server has settled
(`load_http.settled`). Prints the p50/p99, the server's CPU per request, the collections during the run by
generation (count, CPU ms, longest wall ms), and for the slowest 1 %: how many overlapped a collection of
generation 1 or 2 (against the share of all requests that did) and in which second they started; and the server's
peak RSS.
Nothing here asserts on time: it only measures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import runpy
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

try:  # imported as bench.tail_http (repo root on sys.path)
    from bench import generate, load_http
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]
    import load_http  # type: ignore[no-redef,import-not-found,unused-ignore]

Collection = tuple[float, int, float, float]  # (wall time it ended, generation, CPU ms, wall ms)


def serve_probed(log: Path, argv: list[str]) -> None:
    """In the server process: record every collection, write them to `log` each second, then run skillshelf."""
    started: list[float] = [0.0, 0.0]
    seen: list[Collection] = []

    def hook(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[:] = [time.thread_time(), time.perf_counter()]
        else:
            cpu, wall = time.thread_time() - started[0], time.perf_counter() - started[1]
            seen.append((time.time(), int(info["generation"]), cpu * 1000, wall * 1000))

    def dump() -> None:
        while True:
            time.sleep(1.0)
            log.write_text(json.dumps(seen), encoding="utf-8")

    gc.callbacks.append(hook)
    threading.Thread(target=dump, daemon=True).start()
    sys.argv = ["skillshelf", *argv]
    runpy.run_module("skillshelf", run_name="__main__")


async def drive(
    base: str, tokens: list[str], seconds: float, queries: list[dict[str, Any]]
) -> list[tuple[float, float]]:
    """load_http's agents (search, then load its answer); each request's (start, end) in wall time."""
    agents = [load_http.RawAgent(base, token, False) for token in tokens]
    for agent in agents:
        await agent.start()
    deadline = time.perf_counter() + seconds
    spans: list[tuple[float, float]] = []

    async def loop(index: int, agent: load_http.RawAgent) -> None:
        step = index * 7
        while time.perf_counter() < deadline:
            query = queries[step % len(queries)]
            step += 1
            for tool, arguments in (
                ("searchPatterns", {"query": query["query"], "limit": 5}),
                ("loadSkill", {"skillId": query["answer"]}),
            ):
                began = time.time()
                await agent.call(tool, arguments)
                spans.append((began, time.time()))

    await asyncio.gather(*(loop(index, agent) for index, agent in enumerate(agents)))
    for agent in agents:
        await agent.close()
    return spans


def report(spans: list[tuple[float, float]], collections: list[Collection], cpu_s: float) -> None:
    began = min(start for start, _ in spans)
    ended = max(end for _, end in spans)
    latencies = sorted((end - start) * 1000 for start, end in spans)
    p99 = load_http.pct(latencies, 99)
    print(
        f"{len(spans)} requests, {len(spans) / (ended - began):.1f} req/s, p50 {load_http.pct(latencies, 50)} ms, "
        f"p99 {p99} ms, server CPU {cpu_s * 1000 / len(spans):.3f} ms a request"
    )
    during = [c for c in collections if began <= c[0] <= ended]
    for generation in (0, 1, 2):
        of = [c for c in during if c[1] == generation]
        if of:
            print(
                f"  generation {generation}: {len(of)} collections, {sum(c[2] for c in of):.0f} ms CPU, "
                f"longest {max(c[3] for c in of):.1f} ms wall"
            )
    pauses = [(end - wall / 1000, end) for end, generation, _, wall in during if generation >= 1]

    def overlaps(span: tuple[float, float]) -> bool:
        return any(start < span[1] and span[0] < end for start, end in pauses)

    slow = [span for span in spans if (span[1] - span[0]) * 1000 >= p99]
    share_all = sum(map(overlaps, spans)) / len(spans)
    print(
        f"  slowest 1 % ({len(slow)}): {sum(map(overlaps, slow))} overlapped a generation 1-2 collection "
        f"(all requests: {share_all:.0%})"
    )
    by_second: dict[int, int] = {}
    for start, _ in slow:
        by_second[int(start - began)] = by_second.get(int(start - began), 0) + 1
    print(f"  slowest 1 % by the second they started in: {dict(sorted(by_second.items()))}")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve-probed":
        serve_probed(Path(sys.argv[2]), sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="skills in the generated library")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    parser.add_argument("--pin", action="store_true", help="the generator on the first core, the server on the rest")
    args = parser.parse_args()
    lib = args.work / f"lib-{args.n}"
    generate.ensure_library(lib, args.n)
    queries = [q for q in generate.load_queries(lib) if q.get("answer")]
    server_cpus = load_http.pin_generator(args.pin)
    tokens = [f"c{i}-{secrets.token_hex(12)}" for i in range(args.clients)]
    with tempfile.TemporaryDirectory(prefix="skillshelf-tail-") as scratch:
        config, log = Path(scratch) / "config.toml", Path(scratch) / "gc.json"
        config.write_text("[auth]\nrate_per_s = 100000\nburst = 100000\n", encoding="utf-8")
        port = load_http.free_port()
        env = {
            **os.environ,
            "SKILLSHELF_TOKENS": ",".join(f"c{i}={token}" for i, token in enumerate(tokens)),
            "SKILLSHELF_STATE_DIR": str(Path(scratch) / "state"),
        }
        command = [sys.executable, __file__, "--serve-probed", str(log), "--config", str(config), "serve", "--http"]
        command += ["--port", str(port), "--workers", "1", "--no-watch", "--library", str(lib)]
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if server_cpus:
            os.sched_setaffinity(process.pid, server_cpus)
        try:
            base = f"http://127.0.0.1:{port}"
            anyio.run(load_http.wait_healthy, base, process, False, tokens[0])
            cpu = load_http.tree_cpu_s(process.pid)
            spans = load_http.run_async(drive, base, tokens, args.seconds, queries)
            cpu = load_http.tree_cpu_s(process.pid) - cpu
            peak = peak_rss_mb(process.pid)
            time.sleep(1.5)  # the log's next write
            collections: list[Collection] = [tuple(c) for c in json.loads(log.read_text(encoding="utf-8"))]
        finally:
            process.terminate()
            process.wait(timeout=30)
    report(spans, collections, cpu)
    print(f"  the server's peak RSS: {peak:.1f} MB")


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM in /proc; 0 where there is none)."""
    status = Path(f"/proc/{pid}/status")
    for line in status.read_text(encoding="utf-8").splitlines() if status.exists() else []:
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


if __name__ == "__main__":
    main()
