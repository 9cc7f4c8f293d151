"""Search by meaning against words alone, side by side in one run (issue 25), over stdio with the official client.

    python bench/semantic.py [--model DIR] [--corpora DIR] [--queries 400] [--out FILE.json] [--before SRC]

    # against another commit, in the same run:
    git archive 89d4ffd src | tar -x -C /tmp/before && python bench/semantic.py --before /tmp/before/src

Starts two `skillshelf serve` processes on the same roots (every collection of ../shared/corpora, 972 skills):
one by words alone, one with `SKILLSHELF_SEMANTIC_MODEL` (default: .cache/test-model/all-MiniLM-L6-v2), each with
its own empty cache folder, HOME and config, so the meaning server embeds the whole library itself. Then:

1. Embedding: the time from the first vector stored to the last (read from the vectors file the server writes),
   as skills per second; searches sent to the meaning server meanwhile are timed apart ("while embedding").
2. Queries: every distinct query text of bench/queries (never the reserved corpora-heldout5.txt), each new to
   both servers, sent to one then the other (the order alternates, so neither always goes first on a busy
   machine); p50 and p95 of each and their ratios.
3. Memory: each server's peak RSS (VmHWM) and its RSS at the end.

With --before, a third server runs the same model from another checkout's src/ (first on PYTHONPATH): it
embeds the library first, alone, then the three take the queries in turn.

--breakdown (issue 36) times, in process, where a new query's time by meaning goes. Two worker processes (three
with --before), each a `SkillLibrary` on the same roots with its own empty index folder, take the queries in turn
(the order rotates): the words worker times `search`; a meaning worker embeds the library, then times per query
a new query's `search` (`new`), the query's encode alone in the calling thread (`encode`), the same search again
with its vector cached (`cached`: words at the fusion's pool, scoring and fusion, no encode and no thread hop) and
the word search alone (`words`). What a new query adds beyond its encode is `new - encode - words` (the words
worker's time), per query; p50/p95 of each, and each worker's peak RSS and RSS at the end.

    python bench/semantic.py --breakdown [--queries 300] [--before SRC] [--also SRC]... [--int8] [--out FILE.json]

--also adds a meaning worker per other src/ folder (named after the folder holding it), beside --before's.

--int8 adds a worker whose encoder runs its layers in ONNX Runtime with 8-bit weights (the graph
bench/semantic_runtimes.py writes, made by this parent; the worker imports onnxruntime alone). Needs
`pip install onnxruntime onnx`, which are not skillshelf dependencies.

Prints a markdown table and writes the figures as JSON (--out). The machine may be busy: only the ratios within
one run compare; nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
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


async def side_by_side(servers: list[Server], queries: list[str]) -> None:
    """Each query to every server, in an order that rotates (none is always first on a busy machine)."""
    for number, query in enumerate(queries):
        shift = number % len(servers)
        for server in servers[shift:] + servers[:shift]:
            server.ms.append(await server.search(query))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    roots = sorted(p for p in args.corpora.iterdir() if p.is_dir())
    queries = query_texts(args.queries + args.during)
    timed, spare = queries[: args.queries], queries[args.queries :]
    variants = {"meaning": {"SKILLSHELF_SEMANTIC_MODEL": str(args.model)}}
    if args.before:  # another checkout's src/ first on the import path (e.g. `git archive main src`)
        variants = {"meaning-before": {**variants["meaning"], "PYTHONPATH": str(args.before)}, **variants}
    embedding: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="skillshelf-semantic-") as scratch:
        work = Path(scratch)
        async with AsyncExitStack() as stack:
            words = await stack.enter_async_context(serve("words", roots, work, {}))
            servers = [words]
            for name, env in variants.items():  # one at a time: each embeds the library alone
                server = await stack.enter_async_context(serve(name, roots, work, env))
                total = await skill_count(server)
                log(f"{name}: {total} skills; waiting for its vectors")
                embedding[name] = await embed(server, total, list(spare))
                servers.append(server)
            await skill_count(words)
            await side_by_side(servers, [f"how to {q}" for q in spare[:20]])  # warm-up: new to all
            for server in servers:
                server.ms.clear()
            log(f"{len(timed)} new queries, interleaved")
            await side_by_side(servers, timed)
            rss = {s.name: {"peak_mb": _mb(s.status_kb("VmHWM")), "now_mb": _mb(s.status_kb("VmRSS"))} for s in servers}
            figures = {s.name: {"p50_ms": round(pct(s.ms, 50), 1), "p95_ms": round(pct(s.ms, 95), 1)} for s in servers}
    during = {name: found.pop("during_ms") for name, found in embedding.items()}
    ratio = {k: {p: round(figures[k][p] / figures["words"][p], 2) for p in ("p50_ms", "p95_ms")} for k in variants}
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "env": {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")},
        "skills": total,
        "queries": len(timed),
        "latency": figures,
        "ratio": ratio,
        "while_embedding": {
            name: {"searches": len(ms), "p50_ms": round(pct(ms, 50), 1), "p95_ms": round(pct(ms, 95), 1)}
            for name, ms in during.items()
        },
        "embedding": embedding,
        "rss": rss,
        "rss_ratio": {k: {m: round(rss[k][m] / rss["words"][m], 2) for m in ("peak_mb", "now_mb")} for k in variants},
    }


def _mb(kb: int | None) -> float:
    return round(kb / 1024, 1) if kb is not None else float("nan")


def table(found: dict[str, Any]) -> str:
    names = list(found["latency"])
    meanings = names[1:]
    lines = [
        f"{found['skills']} skills, {found['queries']} new queries each, interleaved; "
        f"load {found['machine']['load'][0]:.1f}",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    latency, ratio, rss, rss_ratio = found["latency"], found["ratio"], found["rss"], found["rss_ratio"]
    for key, label in (("p50_ms", "new query p50 (ms)"), ("p95_ms", "new query p95 (ms)")):
        row(label, [str(latency["words"][key])] + [f"{latency[m][key]} ({ratio[m][key]}x)" for m in meanings])
    for key, label in (("peak_mb", "peak RSS (MB)"), ("now_mb", "RSS at the end (MB)")):
        row(label, [str(rss["words"][key])] + [f"{rss[m][key]} ({rss_ratio[m][key]}x)" for m in meanings])
    embedding, during = found["embedding"], found["while_embedding"]
    row(
        "embedding, skills/s",
        [""] + [f"{embedding[m]['skills_per_s']} ({embedding[m]['seconds']} s)" for m in meanings],
    )
    row(
        "search while embedding p50 / p95 (ms)",
        [""] + [f"{during[m]['p50_ms']} / {during[m]['p95_ms']}" for m in meanings],
    )
    return "\n".join(lines)


def worker(name: str, index_dir: Path, model: Path, graph: Path | None = None) -> None:
    """A breakdown worker: reads one query a line on stdin, writes its timings as one JSON line (see --breakdown)."""
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.library.index.store import SearchFilters

    if graph is not None:
        run_layers_in(graph)

    roots = sorted(p for p in CORPORA.iterdir() if p.is_dir())
    semantic = None if name == "words" else model
    library = SkillLibrary(LibraryConfig(roots=roots, index_dir=index_dir, semantic_model=semantic, watch=False))
    library.sync()
    if library.semantic is not None:
        library.semantic.request_pass()
        library.semantic.wait_idle(EMBED_DEADLINE_S)
        if not library.semantic.ready:
            raise RuntimeError(f"{name}: semantic search is off: {library.semantic.error}")
    filters = SearchFilters()

    def timed(call: Any, *args: Any) -> float:
        started = time.perf_counter()
        call(*args)
        return round((time.perf_counter() - started) * 1000, 3)

    print(json.dumps({"ready": library.index.count()}), flush=True)
    for line in sys.stdin:
        query = line.rstrip("\n")
        if not query:
            break
        found = {"new": timed(library.search, query, filters, 5)}
        if library.semantic is not None:
            encoder = library.semantic._encoder
            assert encoder is not None
            found["encode"] = timed(encoder.encode, [query])
            found["cached"] = timed(library.search, query, filters, 5)
            found["words"] = timed(library.index.search, query, filters, 5)
        print(json.dumps(found), flush=True)
    status = Path("/proc/self/status").read_text(encoding="utf-8").splitlines()
    kb = {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith(("VmHWM", "VmRSS"))}
    print(json.dumps({"peak_mb": _mb(kb.get("VmHWM")), "now_mb": _mb(kb.get("VmRSS"))}), flush=True)
    library.close()


def run_layers_in(graph: Path) -> None:
    """Every SentenceEncoder made in this process runs its layers in ONNX Runtime from `graph` (a bench only)."""
    from semantic_runtimes import onnx_session, run_in_onnx

    from skillshelf.library.semantic.encoder import SentenceEncoder

    load = SentenceEncoder.__init__

    def loaded(self: SentenceEncoder, folder: Path) -> None:
        load(self, folder)
        run_in_onnx(self, onnx_session(self, graph))

    SentenceEncoder.__init__ = loaded  # type: ignore[method-assign]


class Worker:
    """A worker process of --breakdown, spoken to one JSON line at a time."""

    def __init__(self, name: str, work: Path, model: Path, src: Path | None, graph: Path | None = None) -> None:
        env = dict(os.environ)
        if src is not None:
            env["PYTHONPATH"] = str(src)
        args = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--index-dir", str(work / name)]
        args += ["--graph", str(graph)] if graph is not None else []
        self.name = name
        self.process = subprocess.Popen(
            [*args, "--model", str(model)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        self.times: dict[str, list[float]] = {}

    def ask(self, line: str) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"{self.name}: the worker ended (see its stderr above)")
        found: dict[str, Any] = json.loads(answer)
        return found

    def ready(self) -> int:
        assert self.process.stdout is not None
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"{self.name}: the worker ended before it was ready")
        return int(json.loads(answer)["ready"])

    def time(self, query: str) -> None:
        for key, ms in self.ask(query).items():
            self.times.setdefault(key, []).append(ms)

    def finish(self) -> dict[str, Any]:
        found = self.ask("")
        self.process.wait(timeout=60)
        return found


def breakdown(args: argparse.Namespace) -> dict[str, Any]:
    queries = query_texts(args.queries + 20)
    timed, warm = queries[: args.queries], queries[args.queries :]
    sources = {"words": None, "meaning": None} | ({"meaning-before": args.before} if args.before else {})
    sources |= {f"meaning-{src.resolve().parent.name}": src for src in args.also}
    with tempfile.TemporaryDirectory(prefix="skillshelf-breakdown-") as scratch:
        workers = [Worker(name, Path(scratch), args.model, src) for name, src in sources.items()]
        if args.int8:
            from semantic_runtimes import write_graphs

            write_graphs(args.model, Path(scratch))
            workers.append(Worker("meaning-int8", Path(scratch), args.model, None, Path(scratch) / "encoder-int8.onnx"))
        try:
            skills = {worker.name: worker.ready() for worker in workers}  # one at a time would take longer
            log(f"ready: {skills}; {len(timed)} new queries, interleaved")
            for number, query in enumerate([f"how to {q}" for q in warm] + timed):
                if number == len(warm):
                    for worker in workers:
                        worker.times.clear()
                shift = number % len(workers)
                for worker in workers[shift:] + workers[:shift]:
                    worker.time(query)
            rss = {worker.name: worker.finish() for worker in workers}
        finally:
            for worker in workers:
                if worker.process.poll() is None:
                    worker.process.kill()
    words = workers[0].times["new"]
    figures: dict[str, Any] = {"words": {"search": _spread(words)}}
    for worker in workers[1:]:
        t = worker.times
        beyond = [n - e - w for n, e, w in zip(t["new"], t["encode"], words, strict=True)]
        scoring = [c - w for c, w in zip(t["cached"], t["words"], strict=True)]
        figures[worker.name] = {
            "search": _spread(t["new"]),
            "encode": _spread(t["encode"]),
            "beyond_encode": _spread(beyond),
            "cached": _spread(t["cached"]),
            "scoring_fusion": _spread(scoring),
        }
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "skills": skills,
        "queries": len(timed),
        "figures": figures,
        "rss": rss,
    }


def _spread(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(pct(values, 50), 2), "p95_ms": round(pct(values, 95), 2)}


def breakdown_table(found: dict[str, Any]) -> str:
    figures, rss = found["figures"], found["rss"]
    names = list(figures)
    words = figures["words"]["search"]
    lines = [
        f"{next(iter(found['skills'].values()))} skills, {found['queries']} new queries each, interleaved, in process; "
        f"load {found['machine']['load'][0]:.1f}",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    rows = [
        ("search", "new query"),
        ("encode", "its encode alone"),
        ("beyond_encode", "new - encode - words"),
        ("cached", "same query, vector cached"),
        ("scoring_fusion", "cached - words at limit 5"),
    ]
    for key, label in rows:
        for p in ("p50_ms", "p95_ms"):
            cells = []
            for name in names:
                value = figures[name].get(key, {}).get(p)
                shown = key == "search" and value is not None and name != "words"
                ratio = f" ({value / words[p]:.2f}x)" if shown else ""
                cells.append("" if value is None else f"{value}{ratio}")
            lines.append(f"| {label} {p[:3]} (ms) | " + " | ".join(cells) + " |")
    for key, label in (("peak_mb", "peak RSS (MB)"), ("now_mb", "RSS at the end (MB)")):
        base = rss["words"][key]
        cells = [str(base)] + [f"{rss[n][key]} ({rss[n][key] / base:.2f}x)" for n in names[1:]]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=MODEL, help="the sentence model folder")
    parser.add_argument("--corpora", type=Path, default=CORPORA, help="a folder of collections (each one a root)")
    parser.add_argument("--queries", type=int, default=400, help="new queries timed on each server")
    parser.add_argument("--during", type=int, default=80, help="more queries, for warm-up and while embedding")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    parser.add_argument(
        "--before", type=Path, help="also a meaning server running this src/ folder (another commit's), for A/B"
    )
    parser.add_argument(
        "--also", type=Path, action="append", default=[], help="with --breakdown: another meaning worker on this src/"
    )
    parser.add_argument("--breakdown", action="store_true", help="in process: where a new query's time goes")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--int8", action="store_true", help="with --breakdown: also ONNX Runtime, 8-bit weights")
    parser.add_argument("--index-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--graph", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.index_dir, args.model, args.graph)
        return
    if args.breakdown:
        found = breakdown(args)
        print(breakdown_table(found))
    else:
        found = anyio.run(run, args)
        print(table(found))
    if args.out:
        args.out.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
