"""Search by meaning against words alone, side by side in one run (issue 25), over stdio with the official client.

    python bench/semantic.py [--model DIR] [--corpora DIR] [--queries 400] [--out FILE.json]

Starts two `skillshelf serve` processes on the same roots (every collection of ../shared/corpora, 972 skills):
one by words alone, one with `SKILLSHELF_SEMANTIC_MODEL` (default: .cache/test-model/all-MiniLM-L6-v2), each with
its own empty cache folder, HOME and config, so the meaning server embeds the whole library itself. Then:

1. Embedding: the time from the first vector stored to the last (read from the vectors file the server writes),
   as skills per second; searches sent to the meaning server meanwhile are timed apart ("while embedding").
2. Queries: every distinct query text of bench/queries (never the reserved corpora-heldout5.txt), each new to
   both servers, sent to one then the other (the order alternates, so neither always goes first on a busy
   machine); p50 and p95 of each and their ratios.
3. Memory: each server's peak RSS (VmHWM) and its RSS at the end.

Prints a markdown table and writes the figures as JSON (--out). The machine may be busy: only the ratios within
one run compare; nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
CORPORA = HERE.parents[0].parent / "shared" / "corpora"
MODEL = HERE.parent / ".cache" / "test-model" / "all-MiniLM-L6-v2"
QUERY_FILES = ["corpora.txt", "corpora-heldout2.txt", "corpora-heldout3.txt", "corpora-heldout4.txt"]
EMBED_DEADLINE_S = 1800.0
POLL_S = 0.25


def log(message: str) -> None:
    print(f"[semantic] {message}", file=sys.stderr, flush=True)


def query_texts(limit: int) -> list[str]:
    """Distinct labelled query texts (`kind|text|answers` lines), in file order."""
    seen: dict[str, None] = {}
    for name in QUERY_FILES:
        for line in (HERE / "queries" / name).read_text(encoding="utf-8").splitlines():
            if "|" in line and not line.startswith("#"):
                seen.setdefault(line.split("|")[1].strip(), None)
    return [text for text in seen if text][:limit]


@dataclass
class Server:
    name: str
    home: Path
    client: Client
    pid: int
    ms: list[float] = field(default_factory=list)

    async def search(self, query: str) -> float:
        started = time.perf_counter()
        result = await self.client.call_tool("searchPatterns", {"query": query, "limit": 5})
        elapsed = (time.perf_counter() - started) * 1000
        content = result.structured_content
        if not isinstance(content, dict) or content.get("success") is not True:
            raise RuntimeError(f"{self.name}: searchPatterns({query!r}) failed: {json.dumps(content)[:300]}")
        return elapsed

    def status_kb(self, key: str) -> int | None:
        try:
            lines = Path(f"/proc/{self.pid}/status").read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        found = next((line for line in lines if line.startswith(f"{key}:")), None)
        return int(found.split()[1]) if found else None


def children() -> set[int]:
    """This process's child PIDs (Linux /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                continue
            if int(parent) == os.getpid():
                found.add(int(entry.name))
    return found


@asynccontextmanager
async def serve(name: str, roots: list[Path], work: Path, extra_env: dict[str, str]) -> AsyncIterator[Server]:
    home = work / name
    (home / "cache").mkdir(parents=True)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "SKILLSHELF_CACHE_DIR": str(home / "cache"),
        "SKILLSHELF_DATA_DIR": str(home / "data"),
        "SKILLSHELF_STATE_DIR": str(home / "state"),
        "PATH": os.environ.get("PATH", ""),
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH" or k.endswith("_NUM_THREADS")},
        **extra_env,
    }
    args = ["-m", "skillshelf", "serve", "--no-watch", *(a for root in roots for a in ("--library", str(root)))]
    before = children()
    with (home / "server.log").open("w", encoding="utf-8") as errlog:
        params = StdioServerParameters(command=sys.executable, args=args, env=env)
        async with Client(stdio_client(params, errlog=errlog)) as client:
            spawned = sorted(children() - before)
            if not spawned:
                raise RuntimeError(f"{name}: could not find the server process")
            yield Server(name, home, client, spawned[-1])


def vectors_stored(cache: Path) -> int:
    total = 0
    for path in cache.glob("**/vectors-*.sqlite3"):
        try:
            with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as conn:
                total += int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
        except sqlite3.Error:
            pass  # being created
    return total


async def skill_count(server: Server) -> int:
    """The skills in the server's index (the default view has no getLibraryStats); a search syncs it first."""
    await server.search("start")
    (index,) = (server.home / "cache").glob("index-*.sqlite3")
    with closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=30)) as conn:
        return int(conn.execute("SELECT count(*) FROM skills").fetchone()[0])


async def embed(meaning: Server, total: int, queries: list[str]) -> dict[str, Any]:
    """Wait for every vector, timing searches meanwhile; the embedding rate from first vector to last."""
    cache = meaning.home / "cache"
    deadline = time.monotonic() + EMBED_DEADLINE_S
    first: tuple[float, int] | None = None
    during: list[float] = []
    stored = 0
    while stored < total:
        if time.monotonic() > deadline:
            raise RuntimeError(f"embedding did not finish in {EMBED_DEADLINE_S:.0f} s ({stored} of {total})")
        stored = vectors_stored(cache)
        now = time.perf_counter()
        if first is None and stored:
            first = (now, stored)
        if queries and first is not None and stored < total:
            during.append(await meaning.search(queries.pop()))
        await anyio.sleep(POLL_S)
    assert first is not None
    seconds = time.perf_counter() - first[0]
    rate = (total - first[1]) / seconds if seconds > 0 else float("inf")
    log(f"embedded {total} skills: {rate:.1f} skills/s over {seconds:.1f} s")
    return {"skills": total, "seconds": round(seconds, 1), "skills_per_s": round(rate, 1), "during_ms": during}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


async def side_by_side(words: Server, meaning: Server, queries: list[str]) -> None:
    for number, query in enumerate(queries):
        order = (words, meaning) if number % 2 == 0 else (meaning, words)
        for server in order:
            server.ms.append(await server.search(query))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    roots = sorted(p for p in args.corpora.iterdir() if p.is_dir())
    queries = query_texts(args.queries + args.during)
    timed, spare = queries[: args.queries], queries[args.queries :]
    with tempfile.TemporaryDirectory(prefix="skillshelf-semantic-") as scratch:
        work = Path(scratch)
        async with AsyncExitStack() as stack:
            words = await stack.enter_async_context(serve("words", roots, work, {}))
            meaning_env = {"SKILLSHELF_SEMANTIC_MODEL": str(args.model)}
            meaning = await stack.enter_async_context(serve("meaning", roots, work, meaning_env))
            total = await skill_count(meaning)
            await skill_count(words)
            log(f"{total} skills; waiting for the meaning server's vectors")
            embedding = await embed(meaning, total, list(spare))
            await side_by_side(words, meaning, [f"how to {q}" for q in spare[:20]])  # warm-up: new to both
            words.ms.clear()
            meaning.ms.clear()
            log(f"{len(timed)} new queries, interleaved")
            await side_by_side(words, meaning, timed)
            rss = {
                s.name: {"peak_mb": _mb(s.status_kb("VmHWM")), "now_mb": _mb(s.status_kb("VmRSS"))}
                for s in (words, meaning)
            }
            figures = {
                s.name: {"p50_ms": round(pct(s.ms, 50), 1), "p95_ms": round(pct(s.ms, 95), 1)} for s in (words, meaning)
            }
    during = embedding.pop("during_ms")
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "env": {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")},
        "skills": total,
        "queries": len(timed),
        "latency": figures,
        "ratio": {
            "p50": round(figures["meaning"]["p50_ms"] / figures["words"]["p50_ms"], 2),
            "p95": round(figures["meaning"]["p95_ms"] / figures["words"]["p95_ms"], 2),
        },
        "while_embedding": {
            "searches": len(during),
            "p50_ms": round(pct(during, 50), 1),
            "p95_ms": round(pct(during, 95), 1),
        },
        "embedding": embedding,
        "rss": rss,
        "rss_ratio": {k: round(rss["meaning"][k] / rss["words"][k], 2) for k in ("peak_mb", "now_mb")},
    }


def _mb(kb: int | None) -> float:
    return round(kb / 1024, 1) if kb is not None else float("nan")


def table(found: dict[str, Any]) -> str:
    words, meaning = found["latency"]["words"], found["latency"]["meaning"]
    rss, ratio = found["rss"], found["rss_ratio"]
    during, embedding = found["while_embedding"], found["embedding"]
    return "\n".join(
        [
            f"{found['skills']} skills, {found['queries']} new queries each, interleaved; "
            f"load {found['machine']['load'][0]:.1f}",
            "",
            "| | words | meaning | meaning / words |",
            "|---|---|---|---|",
            f"| new query p50 (ms) | {words['p50_ms']} | {meaning['p50_ms']} | {found['ratio']['p50']}x |",
            f"| new query p95 (ms) | {words['p95_ms']} | {meaning['p95_ms']} | {found['ratio']['p95']}x |",
            f"| peak RSS (MB) | {rss['words']['peak_mb']} | {rss['meaning']['peak_mb']} | {ratio['peak_mb']}x |",
            f"| RSS at the end (MB) | {rss['words']['now_mb']} | {rss['meaning']['now_mb']} | {ratio['now_mb']}x |",
            f"| embedding | | {embedding['skills_per_s']} skills/s ({embedding['seconds']} s) | |",
            f"| search while embedding p50 / p95 (ms), {during['searches']} searches | "
            f"| {during['p50_ms']} / {during['p95_ms']} | |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=MODEL, help="the sentence model folder")
    parser.add_argument("--corpora", type=Path, default=CORPORA, help="a folder of collections (each one a root)")
    parser.add_argument("--queries", type=int, default=400, help="new queries timed on each server")
    parser.add_argument("--during", type=int, default=80, help="more queries, for warm-up and while embedding")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()
    found = anyio.run(run, args)
    print(table(found))
    if args.out:
        args.out.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
