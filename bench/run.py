"""Benchmark the skillshelf MCP server over stdio with the official MCP client.

    python bench/run.py --n 1000 --n 10000 [--queries 200] [--out bench/results.json]

For each N: generate (or reuse) a synthetic library under --work, then spawn
`sys.executable -m skillshelf serve --library DIR` and measure cold start (fresh and warm index),
searchPatterns / loadSkill latency, search quality (recall@5, MRR@10) and the server's peak RSS.
Prints a markdown table on stdout and writes every raw figure to --out as JSON. Progress goes to
stderr. Nothing here asserts on time: it only measures.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # imported as bench.run (repo root on sys.path)
    from bench import gen_independent, generate
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import gen_independent  # type: ignore[no-redef,import-not-found,unused-ignore]
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]

WARMUP_CALLS = 5
SESSION_TIMEOUT_S = 600.0
SETTLE_LIMIT_S = 20.0
TARGETS_N = 10_000


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- server process


def server_params(lib: Path) -> StdioServerParameters:
    """`python -m skillshelf serve`; PYTHONPATH and SKILLSHELF_* pass through (the SDK filters the env)."""
    env = {k: v for k, v in os.environ.items() if k == "PYTHONPATH" or k.startswith("SKILLSHELF_")}
    args = ["-m", "skillshelf", "serve", "--library", str(lib)]
    return StdioServerParameters(command=sys.executable, args=args, env=env or None)


@asynccontextmanager
async def connect(lib: Path, errlog: TextIO, params: StdioServerParameters | None = None) -> AsyncIterator[Client]:
    """A session with `params`' server (bench/ab.py's variants), by default `server_params(lib)`."""
    async with Client(stdio_client(params or server_params(lib), errlog=errlog)) as client:
        yield client


def proc_children(parent: int) -> list[int]:
    """PIDs whose parent is `parent`, read from /proc (Linux)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if int(fields[1]) == parent:
            out.append(int(entry.name))
    return out


def cmdline(pid: int) -> str:
    try:
        raw = (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


SERVER_MARKS = ("skillshelf", "serve_variant.py")  # `-m skillshelf serve`, or bench/ab.py's launcher


def find_server_pid() -> int | None:
    """The spawned server: a live child of this process whose command line says it is one."""
    try:
        import psutil  # type: ignore[import-untyped,unused-ignore]  # optional, only if installed
    except ImportError:
        commands = {p: cmdline(p) for p in proc_children(os.getpid())}
    else:
        commands = {k.pid: " ".join(k.cmdline()) for k in psutil.Process().children(recursive=False)}
    pids = [pid for pid, command in commands.items() if any(mark in command for mark in SERVER_MARKS)]
    return max(pids) if pids else None


def status_kb(pid: int | None, key: str, file: str = "status") -> int | None:
    """A `key:  N kB` line of /proc/<pid>/<file>: status has VmHWM (peak RSS) and VmRSS (current RSS);
    smaps_rollup has Pss (RSS with shared pages divided among the processes sharing them)."""
    if pid is None:
        return None
    try:
        status = (Path("/proc") / str(pid) / file).read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return None


def vm_hwm_kb(pid: int | None) -> int | None:
    return status_kb(pid, "VmHWM")


def children(pid: int) -> list[int]:
    """Direct children of `pid`: spawned by any of its threads (each thread has its own list)."""
    try:
        tasks = list((Path("/proc") / str(pid) / "task").iterdir())
        return [int(k) for task in tasks for k in (task / "children").read_text().split()]
    except OSError:  # no /proc/<pid>/task/*/children (kernel option) or the process is gone
        return proc_children(pid)


def descendants(pid: int) -> list[int]:
    return [k for kid in children(pid) for k in (kid, *descendants(kid))]


@dataclass
class TreeSampler:
    """Polls the memory of the server and its child processes (e.g. a parse pool) while it runs.

    VmHWM only covers the server process itself, and a child's peak is gone once it exits, so the
    process tree is sampled every `interval` s (a lower bound on its true peak). Summed PSS is the
    tree's real footprint; summed RSS counts pages that forked children share with the server twice.
    """

    interval: float = 0.1
    peak_pss_kb: int = 0
    peak_rss_kb: int = 0
    max_processes: int = 0
    stopped: anyio.Event = field(default_factory=anyio.Event)

    async def run(self) -> None:
        pid = None
        while not self.stopped.is_set():
            pid = pid or find_server_pid()
            if pid is not None:
                tree = [pid, *descendants(pid)]
                pss = sum(status_kb(p, "Pss", "smaps_rollup") or status_kb(p, "VmRSS") or 0 for p in tree)
                self.peak_pss_kb = max(self.peak_pss_kb, pss)
                self.peak_rss_kb = max(self.peak_rss_kb, sum(status_kb(p, "VmRSS") or 0 for p in tree))
                self.max_processes = max(self.max_processes, len(tree))
            with anyio.move_on_after(self.interval):
                await self.stopped.wait()


# --------------------------------------------------------------------------- result checking


Json = dict[str, Any]


class ShapeError(Exception):
    """The server answered, but not with the documented envelope."""


def envelope_data(result: Any) -> dict[str, Any]:
    """The `data` of a successful envelope; ShapeError describing what came back otherwise."""
    sc = result.structured_content
    if not isinstance(sc, dict):
        text = " ".join(getattr(c, "text", "") for c in result.content)[:300]
        raise ShapeError(f"no structured_content (is_error={result.is_error}); text: {text!r}")
    if sc.get("success") is not True:
        raise ShapeError(f"success != true: {json.dumps(sc)[:300]}")
    if not isinstance(sc.get("data"), dict) or not isinstance(sc.get("metadata"), dict):
        raise ShapeError(f"missing data/metadata: {json.dumps(sc)[:300]}")
    data: dict[str, Any] = sc["data"]
    return data


HIT_KEYS: dict[str, type | tuple[type, ...]] = {  # a compact hit (issue 10); flags appear only when true
    "id": str,
    "description": str,
    "quality": (int, float),
    "tokens": int,
    "score": (int, float),
}
META_KEYS: dict[str, type | tuple[type, ...]] = {
    "tokensUsed": int,
    "durationMs": (int, float),
    "resultsCount": int,
}


def contract_problems(tool: str, sc: dict[str, Any]) -> list[str]:
    """Deviations of a successful envelope from the documented contract (field names and types)."""
    problems = [
        f"{tool}: metadata.{k} missing or not {t}"
        for k, t in META_KEYS.items()
        if not isinstance(sc["metadata"].get(k), t) or isinstance(sc["metadata"].get(k), bool)
    ]
    if tool != "searchPatterns":  # resultsCount is documented for searches; other tools may omit it
        problems = [p for p in problems if "resultsCount" not in p]
    for hit in sc["data"].get("hits", []) if tool == "searchPatterns" else []:
        wrong = [k for k, t in HIT_KEYS.items() if not isinstance(hit.get(k), t)]
        problems += [f"{tool}: hit.{k} missing or not {HIT_KEYS[k]}" for k in wrong]
    return problems


def server_ms(result: Any) -> float | None:
    meta = (result.structured_content or {}).get("metadata") or {}
    value = meta.get("durationMs")
    return float(value) if isinstance(value, (int, float)) else None


def hit_ids(data: dict[str, Any]) -> list[str]:
    hits = data.get("hits")
    if not isinstance(hits, list) or not all(isinstance(h, dict) and "id" in h for h in hits):
        raise ShapeError(f"data.hits is not a list of objects with id: {json.dumps(data)[:300]}")
    return [h["id"] for h in hits]


# --------------------------------------------------------------------------- measurements


@dataclass
class Latencies:
    client_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    contract: list[str] = field(default_factory=list)  # distinct deviations from the documented shape


@dataclass
class StartSample:
    to_tools_list_s: float
    to_first_search_s: float
    first_search_ok: bool
    vm_hwm_kb: int | None
    tree_peak_pss_kb: int
    tree_peak_rss_kb: int
    tree_max_processes: int
    tools: list[str]


async def timed_call(client: Client, tool: str, args: Json, lat: Latencies) -> Json | None:
    t0 = time.perf_counter()
    result = await client.call_tool(tool, args)
    lat.client_ms.append((time.perf_counter() - t0) * 1000)
    if (ms := server_ms(result)) is not None:
        lat.server_ms.append(ms)
    try:
        data = envelope_data(result)
    except ShapeError as exc:
        lat.errors.append(f"{tool}({json.dumps(args)}): {exc}")
        return None
    lat.contract += [p for p in contract_problems(tool, result.structured_content) if p not in lat.contract]
    return data


async def start_once(lib: Path, errlog: TextIO, first_query: str) -> StartSample:
    """Spawn, time until tools/list returns, then until the first search returns; read VmHWM."""
    sampler = TreeSampler()
    async with anyio.create_task_group() as tg:
        tg.start_soon(sampler.run)
        try:
            t0 = time.perf_counter()
            async with connect(lib, errlog) as client:
                tools = await client.list_tools()
                t_list = time.perf_counter() - t0
                result = await client.call_tool("searchPatterns", {"query": first_query, "limit": 10})
                t_search = time.perf_counter() - t0
                ok = first_search_ok(result)
                hwm = vm_hwm_kb(find_server_pid())
        finally:
            sampler.stopped.set()
    names = sorted(t.name for t in tools.tools)
    peaks = (sampler.peak_pss_kb, sampler.peak_rss_kb, sampler.max_processes)
    return StartSample(t_list, t_search, ok, hwm, *peaks, names)


def first_search_ok(result: Any) -> bool:
    try:
        return bool(hit_ids(envelope_data(result)))
    except ShapeError as exc:
        log(f"first search after start: {exc}")
        return False


def cpu_ticks(pid: int | None) -> int | None:
    """utime + stime of a process (all threads), in clock ticks."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except (OSError, TypeError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def tree_ticks(pid: int | None) -> tuple[int | None, int]:
    """`cpu_ticks` of the server and every process under it (the file watcher's child, a parse pool),
    and how many processes that is."""
    own = cpu_ticks(pid)
    if own is None or pid is None:
        return own, 1
    kids = descendants(pid)
    return own + sum(cpu_ticks(kid) or 0 for kid in kids), 1 + len(kids)


async def settle(pid: int | None, interval: float = 0.3, limit: float = SETTLE_LIMIT_S) -> float:
    """Wait until the server and its child processes are idle (two intervals using under ~3 % CPU
    each), so background start-up work (the index re-check, the file watcher registering its
    watches in its own process, the re-check once they are in place) does not land in the samples."""
    t0 = time.perf_counter()
    quiet, (last, _) = 0, tree_ticks(pid)
    while last is not None and quiet < 2 and time.perf_counter() - t0 < limit:
        await anyio.sleep(interval)
        now, processes = tree_ticks(pid)
        quiet = quiet + 1 if now is not None and now - last <= processes else 0
        last = now
    return time.perf_counter() - t0


def rank_in(query: dict[str, str], data: dict[str, Any], lat: Latencies) -> int | None:
    """1-based rank of the query's answer in the top 10 hits (None if absent or the hits are malformed)."""
    try:
        ids = hit_ids(data)[:10]
    except ShapeError as exc:
        lat.errors.append(f"searchPatterns({query['query']!r}): {exc}")
        return None
    return ids.index(query["answer"]) + 1 if query["answer"] in ids else None


async def query_session(
    lib: Path, errlog: TextIO, queries: list[dict[str, str]], params: StdioServerParameters | None = None
) -> dict[str, Any]:
    """One warm server: warm-up, then every query via searchPatterns and every answer via loadSkill."""
    search, load, warm = Latencies(), Latencies(), Latencies()
    ranks: list[int | None] = []
    async with connect(lib, errlog, params) as client:
        await client.list_tools()
        await timed_call(client, "searchPatterns", {"query": queries[0]["query"], "limit": 10}, warm)
        settle_s = await settle(find_server_pid())
        for q in queries[:WARMUP_CALLS]:
            await timed_call(client, "searchPatterns", {"query": q["query"], "limit": 10}, warm)
            await timed_call(client, "loadSkill", {"skillId": q["answer"]}, warm)
        for q in queries:
            data = await timed_call(client, "searchPatterns", {"query": q["query"], "limit": 10}, search)
            ranks.append(None if data is None else rank_in(q, data, search))
        for q in queries:
            await timed_call(client, "loadSkill", {"skillId": q["answer"]}, load)
        hwm = vm_hwm_kb(find_server_pid())
    return {
        "search": asdict(search),
        "load": asdict(load),
        "warmupErrors": warm.errors,
        "warmupMs": warm.client_ms,
        "settleS": settle_s,
        "ranks": ranks,
        "vmHwmKb": hwm,
    }


# --------------------------------------------------------------------------- statistics


def pct(values: list[float], p: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def quality(ranks: list[int | None], queries: list[dict[str, str]]) -> dict[str, Any]:
    n = len(ranks) or 1
    found = [r for r in ranks if r is not None]
    return {
        "recall@1": sum(r <= 1 for r in found) / n,
        "recall@5": sum(r <= 5 for r in found) / n,
        "recall@10": len(found) / n,
        "mrr@10": sum(1 / r for r in found) / n,
        "misses": [q["id"] for q, r in zip(queries, ranks, strict=True) if r is None or r > 5],
    }


# --------------------------------------------------------------------------- one N


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def describe(exc: BaseException) -> str:
    """The leaf exceptions of an (anyio) exception group, as `Type: message`."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


async def guarded(label: str, log_path: Path, fn: Callable[[], Any]) -> tuple[Any, str | None]:
    """Run one measurement; on a crash or hang, return the error and the tail of the server log."""
    try:
        with anyio.fail_after(SESSION_TIMEOUT_S):
            return await fn(), None
    except Exception as exc:  # top-level handler: a server failure must not lose the other figures
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-1500:] if log_path.exists() else ""
        msg = f"{label}: {describe(exc)}\n--- server stderr tail ---\n{tail}"
        log(msg)
        return None, msg


async def bench_n(n: int, args: argparse.Namespace) -> dict[str, Any]:
    if args.generator == "independent":
        lib = args.work / f"ind-{n}-{args.doc_kb:g}kb"
        manifest = gen_independent.ensure_library(lib, n, args.seed, args.doc_kb, args.queries)
        queries = gen_independent.load_queries(lib)[: args.queries]
    else:
        lib = args.work / f"lib-{n}"
        manifest = generate.ensure_library(lib, n, args.seed, args.queries)
        queries = generate.load_queries(lib)[: args.queries]
    log_path = args.work / "logs" / f"{lib.name}.server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"n": n, "library": str(lib), "manifest": manifest, "errors": []}
    with log_path.open("w", encoding="utf-8") as errlog:

        def start() -> Awaitable[StartSample]:
            return start_once(lib, errlog, queries[0]["query"])

        fresh: list[StartSample] = []
        for i in range(args.fresh_runs):
            shutil.rmtree(lib / ".skillshelf", ignore_errors=True)
            log(f"N={n}: fresh-index start {i + 1}/{args.fresh_runs}")
            s, err = await guarded("fresh start", log_path, start)
            fresh += [s] if s else []
            out["errors"] += [err] if err else []
        out["indexBytes"] = dir_size(lib / ".skillshelf")
        warm: list[StartSample] = []
        for i in range(args.warm_runs):
            log(f"N={n}: warm-index start {i + 1}/{args.warm_runs}")
            s, err = await guarded("warm start", log_path, start)
            warm += [s] if s else []
            out["errors"] += [err] if err else []
        log(f"N={n}: {len(queries)} searches + {len(queries)} loads on a warm server")
        session, err = await guarded("query session", log_path, lambda: query_session(lib, errlog, queries))
        out["errors"] += [err] if err else []
    out["fresh"] = [asdict(s) for s in fresh]
    out["warm"] = [asdict(s) for s in warm]
    out["session"] = session
    out["summary"] = summarise(fresh, warm, session, queries)
    return out


def summarise(
    fresh: list[StartSample],
    warm: list[StartSample],
    session: dict[str, Any] | None,
    queries: list[dict[str, str]],
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "freshStartToToolsListS": median([x.to_tools_list_s for x in fresh]),
        "freshStartToFirstSearchS": median([x.to_first_search_s for x in fresh]),
        "warmStartToToolsListS": median([x.to_tools_list_s for x in warm]),
        "warmStartToFirstSearchS": median([x.to_first_search_s for x in warm]),
        "firstSearchAfterStartOk": all(x.first_search_ok for x in fresh + warm),
    }
    hwms = [x.vm_hwm_kb for x in fresh + warm if x.vm_hwm_kb is not None]
    if session is not None:
        for key in ("search", "load"):
            lat = session[key]
            s[f"{key}P50Ms"] = pct(lat["client_ms"], 50)
            s[f"{key}P95Ms"] = pct(lat["client_ms"], 95)
            s[f"{key}ServerP50Ms"] = pct(lat["server_ms"], 50)
            s[f"{key}Errors"] = len(lat["errors"])
            s[f"{key}ContractIssues"] = lat["contract"]
        s.update(quality(session["ranks"], queries))
        s["settleS"] = session["settleS"]
        s["warmupMaxMs"] = max(session["warmupMs"], default=None)
        hwms += [session["vmHwmKb"]] if session["vmHwmKb"] is not None else []
        s["sessionPeakRssMb"] = session["vmHwmKb"] / 1024 if session["vmHwmKb"] else None
    s["peakRssMb"] = max(hwms) / 1024 if hwms else None
    for key, attr in (("treePeakPssMb", "tree_peak_pss_kb"), ("treePeakRssSumMb", "tree_peak_rss_kb")):
        values = [getattr(x, attr) for x in fresh + warm]
        s[key] = max(values) / 1024 if values else None
    s["treeMaxProcesses"] = max((x.tree_max_processes for x in fresh + warm), default=None)
    return s


# --------------------------------------------------------------------------- baselines and report


def time_command(cmd: list[str], runs: int = 3) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def baselines() -> dict[str, float]:
    """What a start costs before skillshelf does anything: the interpreter and `import mcp`."""
    return {
        "pythonStartupS": time_command([sys.executable, "-c", "pass"]),
        "importMcpServerS": time_command([sys.executable, "-c", "import mcp.server.mcpserver"]),
    }


FLOOR_CALLS = 200


async def stdio_floor(errlog: TextIO) -> dict[str, float]:
    """p50 of each tool served by the bare SDK with no work behind it (bench/noop_server.py), over
    stdio with this client: the part of every latency below that no server on the SDK can remove."""
    samples = await floor_samples(errlog)
    return {f"{tool}FloorMs": round(statistics.median(values), 3) for tool, values in samples.items()}


async def floor_samples(errlog: TextIO, calls: int = FLOOR_CALLS) -> dict[str, list[float]]:
    """Milliseconds of `calls` calls of each of bench/noop_server.py's tools after 20 warm-ups."""
    script = str(Path(__file__).with_name("noop_server.py"))
    params = StdioServerParameters(command=sys.executable, args=[script])
    samples: dict[str, list[float]] = {}
    async with Client(stdio_client(params, errlog=errlog)) as client:
        for tool, args in (("searchPatterns", {"query": "x y z", "limit": 5}), ("loadSkill", {"skillId": "a/b"})):
            for _ in range(20):
                await client.call_tool(tool, args)
            samples[tool] = []
            for _ in range(calls):
                t0 = time.perf_counter()
                await client.call_tool(tool, args)
                samples[tool].append((time.perf_counter() - t0) * 1000)
    return samples


def server_version() -> dict[str, Any]:
    """Which server was measured: the git commit if any, and a digest of the package's source files."""
    spec = importlib.util.find_spec("skillshelf")
    locations = list(spec.submodule_search_locations or []) if spec else []
    digest = hashlib.sha256()
    for path in sorted(p for loc in locations for p in Path(loc).rglob("*.py")):
        digest.update(path.read_bytes())
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # read-only: `git status` must not refresh the index

    def git(*cmd: str) -> str:
        done = subprocess.run(["git", *cmd], capture_output=True, text=True, check=False, env=env)
        return done.stdout.strip()

    return {
        "package": locations,
        "sourceSha256": digest.hexdigest()[:16],
        "gitCommit": git("rev-parse", "--short", "HEAD") or None,
        "srcUncommittedChanges": bool(git("status", "--porcelain", "--", "src")),
    }


def machine() -> dict[str, Any]:
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load1": os.getloadavg()[0],
    }


ROWS: list[tuple[str, str, str, Callable[[float], bool] | None]] = [
    # (label, summary key, format, target check at N = 10,000)
    ("first index build + start → tools/list (s)", "freshStartToToolsListS", "{:.2f}", None),
    ("first index build + start → first search (s)", "freshStartToFirstSearchS", "{:.2f}", lambda v: v <= 15),
    ("warm-index start → tools/list (s)", "warmStartToToolsListS", "{:.2f}", lambda v: v <= 1.5),
    ("warm-index start → first search (s)", "warmStartToFirstSearchS", "{:.2f}", lambda v: v <= 1.0),
    ("searchPatterns p50 (ms, client)", "searchP50Ms", "{:.2f}", lambda v: v <= 4),
    ("searchPatterns p95 (ms, client)", "searchP95Ms", "{:.2f}", None),
    ("searchPatterns p50 (ms, server durationMs)", "searchServerP50Ms", "{:.2f}", None),
    ("loadSkill p50 (ms, client)", "loadP50Ms", "{:.2f}", lambda v: v <= 1.5),
    ("loadSkill p95 (ms, client)", "loadP95Ms", "{:.2f}", None),
    ("recall@5", "recall@5", "{:.3f}", lambda v: v >= 0.9),
    ("MRR@10", "mrr@10", "{:.3f}", None),
    ("recall@1 / recall@10", "recall@1", "{:.3f}", None),
    ("peak RSS, server process VmHWM, any run (MB)", "peakRssMb", "{:.1f}", lambda v: v <= 150),
    ("peak PSS, server + child processes, sampled (MB)", "treePeakPssMb", "{:.1f}", None),
    ("peak RSS summed over server + children, sampled (MB)", "treePeakRssSumMb", "{:.1f}", None),
    ("max processes in the server's tree", "treeMaxProcesses", "{}", None),
    ("searchPatterns / loadSkill errors", "searchErrors", "{}", None),
    ("idle wait before timing (s)", "settleS", "{:.1f}", None),
    ("slowest warm-up call (ms)", "warmupMaxMs", "{:.1f}", None),
]
TARGET_TEXT = {
    "freshStartToFirstSearchS": "≤ 15 s",
    "warmStartToToolsListS": "≤ 1.5 s",
    "warmStartToFirstSearchS": "≤ 1.0 s",
    "searchP50Ms": "≤ 4 ms",
    "loadP50Ms": "≤ 1.5 ms",
    "recall@5": "≥ 0.9",
    "peakRssMb": "≤ 150 MB",
}


def cell(summary: dict[str, Any], key: str, fmt: str) -> str:
    if key == "recall@1":
        r1, r10 = summary.get("recall@1"), summary.get("recall@10")
        return "n/a" if r1 is None else f"{r1:.3f} / {r10:.3f}"
    if key == "searchErrors":
        return f"{summary.get('searchErrors', 'n/a')} / {summary.get('loadErrors', 'n/a')}"
    value = summary.get(key)
    return "n/a" if value is None else fmt.format(value)


def table(results: list[dict[str, Any]]) -> str:
    ns = [r["n"] for r in results]
    head = "| measure | " + " | ".join(f"N = {n:,}" for n in ns) + " | target (N = 10,000) | met? |"
    lines = [head, "|" + "---|" * (len(ns) + 3)]
    big = next((r["summary"] for r in results if r["n"] == TARGETS_N), None)
    for label, key, fmt, check in ROWS:
        cells = [cell(r["summary"], key, fmt) for r in results]
        met = ""
        if check is not None and big is not None:
            value = big.get(key)
            met = "n/a" if value is None else ("met" if check(value) else "**not met**")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {TARGET_TEXT.get(key, '')} | {met} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, action="append", help="library size; repeat (default: 1000 and 10000)")
    ap.add_argument("--queries", type=int, default=200, help="queries to run per N (default 200)")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results.json"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/skillshelf-bench"), help="where libraries go")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--generator",
        choices=("skillshelf", "independent"),
        default="skillshelf",
        help="generate.py (default) or gen_independent.py (other vocabulary, 12 categories, decoy queries)",
    )
    ap.add_argument("--doc-kb", type=float, default=3.2, help="mean document size for --generator independent")
    ap.add_argument("--warm-runs", type=int, default=5)
    ap.add_argument("--fresh-runs", type=int, default=2)
    args = ap.parse_args(argv)
    args.n = args.n or [1000, 10000]
    return args


async def amain(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    base = baselines()
    args.work.mkdir(parents=True, exist_ok=True)
    with (args.work / "floor.log").open("w", encoding="utf-8") as errlog:
        base |= await stdio_floor(errlog)
    log(f"baselines: {base}")
    results = [await bench_n(n, args) for n in args.n]
    report = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine(),
        "server": server_version(),
        "baselines": base,
        "seed": args.seed,
        "results": results,
        "wallClockS": time.perf_counter() - started,
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(table(results))
    print(
        f"\nfloor (bench/noop_server.py: the bare SDK, no-op tools, this client over stdio): searchPatterns p50 "
        f"{base['searchPatternsFloorMs']:.2f} ms, loadSkill p50 {base['loadSkillFloorMs']:.2f} ms; "
        f"`import mcp.server.mcpserver` {base['importMcpServerS']:.2f} s"
    )
    log(f"done in {report['wallClockS']:.0f}s; raw figures in {args.out}")
    bad_calls = any(r["summary"].get("searchErrors") or r["summary"].get("loadErrors") for r in results)
    failed = bad_calls or any(r["errors"] for r in results)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    return anyio.run(amain, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
