"""Benchmark executeSkill, the memory tools and the artifacts tools over stdio with the official MCP client.

    python bench/run_modules.py [--out bench/results-modules.json] [--work /tmp/skillshelf-bench-modules]

Generates its inputs with bench/gen_modules.py under --work (never inside the repo), then spawns
`sys.executable -m skillshelf serve ...` once per module, as bench/run.py does, with
SKILLSHELF_CACHE_DIR pointing into --work. Every latency is timed on the client around `call_tool`,
after warm-up calls. Prints a markdown table on stdout and writes every raw figure to --out as
JSON; progress goes to stderr. Nothing here asserts on time: it only measures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # imported as bench.run_modules (repo root on sys.path)
    from bench import gen_modules
    from bench import run as base
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import gen_modules  # type: ignore[no-redef,import-not-found,unused-ignore]
    import run as base  # type: ignore[no-redef,import-not-found,unused-ignore]

REPO = Path(__file__).resolve().parents[1]
Json = dict[str, Any]
Latencies = base.Latencies
log = base.log

WARMUP_CALLS = 5
EXEC_CALLS = 50
MEMORY_CALLS = 200
APPEND_READ_PAIRS = 50
NOTES = 10_000
SESSIONS, PROJECTS, QUERIES = 5_000, 50, 200
WARM_RESTARTS = 2
NOOP_CALL = {"skillId": "bench/noop", "input": {"x": 1}}
ARTIFACT_TOOLS = ("searchArtifacts", "loadSession", "getCompressionRatio")
HIT_KEYS: dict[str, type | tuple[type, ...]] = {
    "project": str,
    "sessionId": str,
    "date": str,
    "title": str,
    "summary": str,
    "score": (int, float),
    "tokens": int,
}


# --------------------------------------------------------------------------- server process


def server_params(work: Path, serve_args: list[str]) -> StdioServerParameters:
    """`python -m skillshelf serve ARGS` in WORK, its caches and config under WORK (never the real home's)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if (k == "PYTHONPATH" or k.startswith("SKILLSHELF_")) and k != "SKILLSHELF_CONFIG"
    }
    env |= {"SKILLSHELF_CACHE_DIR": str(work / "cache"), "XDG_CONFIG_HOME": str(work / "config")}
    args = ["-m", "skillshelf", "serve", *serve_args]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=work)


@asynccontextmanager
async def connect(work: Path, serve_args: list[str], errlog: TextIO) -> AsyncIterator[Client]:
    async with Client(stdio_client(server_params(work, serve_args), errlog=errlog)) as client:
        yield client


async def tool_names(client: Client) -> list[str]:
    return sorted(t.name for t in (await client.list_tools()).tools)


def server_hwm_mb() -> float | None:
    kb = base.vm_hwm_kb(base.find_server_pid())
    return kb / 1024 if kb else None


async def warm_up(client: Client, calls: list[tuple[str, Json]]) -> tuple[float, list[float]]:
    """Let start-up work finish (base.settle), then make untimed-for-the-table warm-up calls."""
    settle_s = await base.settle(base.find_server_pid())
    warm = Latencies()
    for tool, args in calls:
        await base.timed_call(client, tool, args, warm)
    return settle_s, warm.client_ms


# --------------------------------------------------------------------------- statistics


def stats(lat: Latencies) -> Json:
    return {
        "n": len(lat.client_ms),
        "p50": base.pct(lat.client_ms, 50),
        "p95": base.pct(lat.client_ms, 95),
        "serverP50": base.pct(lat.server_ms, 50),
        "serverP95": base.pct(lat.server_ms, 95),
        "errors": len(lat.errors),
        "errorSamples": lat.errors[:5],
        "contract": lat.contract,
    }


def values_stats(values: list[float]) -> Json:
    return {"n": len(values), "p50": base.pct(values, 50), "p95": base.pct(values, 95)}


def time_command(cmd: list[str], runs: int = 5) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def child_floor_ms() -> float:
    """What executeSkill's child costs before any skill code: `python -I -X utf8` plus _child.py's imports."""
    imports = "import importlib.util, json, os, runpy, sys, traceback, resource"
    return time_command([sys.executable, "-I", "-X", "utf8", "-c", imports]) * 1000


def child_direct_ms(lib: Path, runs: int = 10) -> float | None:
    """skillshelf's _child.py calling noop(x=1), spawned here with subprocess.run: the run without the server.

    Uses _child.py's current config format (no limits, no cgroup); None if that format has changed.
    """
    spec = importlib.util.find_spec("skillshelf.execution")
    child = Path(next(iter(spec.submodule_search_locations or []), "")) / "_child.py" if spec else None
    if child is None or not child.is_file():
        return None
    config: Json = {"mode": "call", "limits": {}, "cgroup_procs": None, "function": "noop", "call_style": "kwargs"}
    config |= {"skill_path": str(lib / "bench" / "noop.py"), "display_name": "noop.py"}
    cmd = [sys.executable, "-I", "-X", "utf8", "--", str(child), json.dumps(config)]
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, input=b'{"x": 1}', capture_output=True, check=False, cwd=lib)
        samples.append((time.perf_counter() - t0) * 1000)
        if done.returncode != 0 or json.loads(done.stdout or b"null") != {"result": {"x": 1}}:
            return None
    return statistics.median(samples)


# --------------------------------------------------------------------------- 1. executeSkill


@dataclass
class ExecSeries:
    run: Latencies = field(default_factory=Latencies)
    child_ms: list[float] = field(default_factory=list)


async def exec_call(client: Client, series: ExecSeries) -> None:
    data = await base.timed_call(client, "executeSkill", NOOP_CALL, series.run)
    if data is None:
        return
    if data.get("output") != {"x": 1}:
        series.run.errors.append(f"executeSkill: output {json.dumps(data.get('output'))[:200]}, expected {{'x': 1}}")
    if isinstance(data.get("durationMs"), (int, float)):
        series.child_ms.append(float(data["durationMs"]))
    elif "executeSkill: data.durationMs missing" not in series.run.contract:
        series.run.contract.append("executeSkill: data.durationMs missing")


async def exec_session(work: Path, lib: Path, errlog: TextIO) -> Json:
    first, timed, dry = ExecSeries(), ExecSeries(), Latencies()
    dry_args = {**NOOP_CALL, "dryRun": True}
    empty = work / "no-projects"  # not the default ~/Dev: the server would index its session artifacts
    empty.mkdir(exist_ok=True)
    serve_args = ["--library", str(lib), "--allow-exec", "--projects-root", str(empty)]
    async with connect(work, serve_args, errlog) as client:
        tools = await tool_names(client)
        await exec_call(client, first)
        settle_s, warm_ms = await warm_up(client, [("executeSkill", NOOP_CALL)] * WARMUP_CALLS)
        for _ in range(EXEC_CALLS):
            await exec_call(client, timed)
        for _ in range(EXEC_CALLS):
            data = await base.timed_call(client, "executeSkill", dry_args, dry)
            if data is not None and data.get("inputValid") is not True:
                dry.errors.append(f"dryRun: inputValid is {data.get('inputValid')!r}")
        hwm = server_hwm_mb()
    return {
        "toolsListed": "executeSkill" in tools,
        "first": {**stats(first.run), "childMs": first.child_ms},
        "settleS": settle_s,
        "warmupMs": warm_ms,
        "execute": {**stats(timed.run), "child": values_stats(timed.child_ms)},
        "dryRun": stats(dry),
        "peakRssMb": hwm,
        "childFloorMs": child_floor_ms(),
        "childDirectMs": child_direct_ms(lib),
    }


# --------------------------------------------------------------------------- 2. memory


@dataclass
class MemoryRun:
    manifest: Json
    series: dict[str, Latencies] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)

    def lat(self, name: str) -> Latencies:
        return self.series.setdefault(name, Latencies())

    def expect(self, label: str, got: Any, want: Any) -> None:
        if got != want and len(self.checks) < 20:
            self.checks.append(f"{label}: got {got!r}, expected {want!r}")


def note_list(data: Json | None) -> tuple[list[Json], int | None]:
    if data is None or not isinstance(data.get("notes"), list):
        return [], None
    return data["notes"], data.get("total")


async def read_series(client: Client, m: MemoryRun, name: str, tool: str, args: Json, want_total: int) -> None:
    await base.timed_call(client, tool, {"projectPath": "app", **args}, Latencies())  # warm-up: first use of args
    for i in range(MEMORY_CALLS):
        notes, total = note_list(await base.timed_call(client, tool, {"projectPath": "app", **args}, m.lat(name)))
        if i == 0:
            m.expect(f"{name} total", total, want_total)
            m.expect(f"{name} notes returned", len(notes), min(50, want_total))


def note_contents(n: int, seed: int = 11) -> list[str]:
    """Varied note texts for addNote, from the same generator as the notes file."""
    rng = Random(f"{seed}:added")
    when = dt.datetime(2025, 8, 1, tzinfo=dt.UTC)
    return [str(gen_modules.note_record(i, rng, when)["content"]) for i in range(n)]


async def append_series(client: Client, m: MemoryRun, contents: list[str]) -> None:
    """One warm-up addNote, then one timed addNote per content (len(contents) + 1 notes added)."""
    await base.timed_call(
        client, "addNote", {"projectPath": "app", "type": "general", "content": "warm-up"}, Latencies()
    )
    for content in contents:
        args = {"projectPath": "app", "type": "decision", "content": content}
        data = await base.timed_call(client, "addNote", args, m.lat("addNote"))
        if data is not None and not isinstance((data.get("note") or {}).get("id"), str):
            m.checks.append(f"addNote: no note.id in {json.dumps(data)[:200]}")


async def append_then_read(client: Client, m: MemoryRun, contents: list[str], total: int) -> None:
    """addNote then getNotes, so each read parses the appended tail: the common agent pattern."""
    for content in contents:
        added = await base.timed_call(
            client, "addNote", {"projectPath": "app", "type": "general", "content": content}, Latencies()
        )
        notes, got = note_list(
            await base.timed_call(client, "getNotes", {"projectPath": "app"}, m.lat("getNotesAfterAdd"))
        )
        total += 1
        m.expect("getNotes after addNote: total", got, total)
        newest = notes[0].get("id") if notes else None
        m.expect("getNotes after addNote: newest id", newest, ((added or {}).get("note") or {}).get("id"))


async def memory_session(work: Path, lib: Path, root: Path, manifest: Json, errlog: TextIO) -> Json:
    m = MemoryRun(manifest)
    decisions, n = manifest["byType"]["decision"], manifest["notes"]
    contents = note_contents(MEMORY_CALLS + APPEND_READ_PAIRS)
    async with connect(work, ["--library", str(lib), "--projects-root", str(root)], errlog) as client:
        tools = await tool_names(client)
        _, total = note_list(await base.timed_call(client, "getNotes", {"projectPath": "app"}, m.lat("first")))
        m.expect("first getNotes total", total, n)
        settle_s, _ = await warm_up(client, [("getNotes", {"projectPath": "app"})] * WARMUP_CALLS)
        await read_series(client, m, "getNotes", "getNotes", {}, n)
        await read_series(client, m, "getNotesType", "getNotes", {"type": "decision"}, decisions)
        await read_series(client, m, "getNotesQuery", "getNotes", {"query": manifest["query"]}, manifest["queryTotal"])
        await read_series(client, m, "getDecisions", "getDecisions", {}, decisions)
        await append_series(client, m, contents[:MEMORY_CALLS])
        await append_then_read(client, m, contents[MEMORY_CALLS:], n + MEMORY_CALLS + 1)
        hwm = server_hwm_mb()
    return {
        "toolsListed": all(t in tools for t in ("getNotes", "addNote", "getDecisions")),
        "settleS": settle_s,
        "series": {name: stats(lat) for name, lat in m.series.items()},
        "checks": m.checks,
        "peakRssMb": hwm,
        "notesFileBytesAfter": (root / "app" / ".agent-memory" / "session-notes.jsonl").stat().st_size,
    }


# --------------------------------------------------------------------------- 3. artifacts


@dataclass
class ArtifactsRun:
    doc: Json
    sampler: base.TreeSampler
    series: dict[str, Latencies] = field(default_factory=dict)
    ranks: list[int | None] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)

    def lat(self, name: str) -> Latencies:
        return self.series.setdefault(name, Latencies())

    def problem(self, text: str) -> None:
        if text not in self.checks and len(self.checks) < 30:
            self.checks.append(text)


def artifacts_import_ok() -> tuple[bool, str]:
    code = "from skillshelf.server.tools.artifacts import artifacts_tools"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO)
    return done.returncode == 0, done.stderr.strip()[-300:]


def search_args(query: str) -> Json:
    return {"query": query, "limit": 10}


def hits_of(a: ArtifactsRun, data: Json | None) -> list[Json]:
    hits = (data or {}).get("hits")
    if not isinstance(hits, list):
        a.problem(f"searchArtifacts: data.hits is not a list: {json.dumps(data)[:200]}")
        return []
    for hit in hits:
        wrong = [k for k, t in HIT_KEYS.items() if not isinstance(hit.get(k), t) or isinstance(hit.get(k), bool)]
        for key in wrong:
            a.problem(f"searchArtifacts: hit.{key} missing or not {HIT_KEYS[key]}")
    return hits


def rank_of(q: Json, hits: list[Json]) -> int | None:
    keys = [(h.get("project"), h.get("sessionId")) for h in hits[:10]]
    want = (q["project"], q["sessionId"])
    return keys.index(want) + 1 if want in keys else None


async def first_search(client: Client, a: ArtifactsRun, started: float) -> Json:
    q = a.doc["queries"][0]
    lat = a.lat("firstSearch")
    t0 = time.perf_counter()
    data = await base.timed_call(client, "searchArtifacts", search_args(q["query"]), lat)
    done = time.perf_counter()
    return {"toFirstSearchS": done - started, "firstSearchCallS": done - t0, "ok": bool(hits_of(a, data))}


async def search_series(client: Client, a: ArtifactsRun) -> None:
    for q in a.doc["queries"]:
        data = await base.timed_call(client, "searchArtifacts", search_args(q["query"]), a.lat("search"))
        a.ranks.append(rank_of(q, hits_of(a, data)) if data is not None else None)


async def load_series(client: Client, a: ArtifactsRun) -> None:
    for q in a.doc["queries"]:
        args = {"project": q["project"], "sessionId": q["sessionId"]}
        data = await base.timed_call(client, "loadSession", args, a.lat("loadSession"))
        if data is None:
            continue
        if data.get("sessionId") != q["sessionId"]:
            a.problem(f"loadSession: sessionId {data.get('sessionId')!r} for {q['sessionId']!r}")
        for key in ("decisions", "implementations", "challenges", "nextSteps", "code"):
            if not data.get(key):
                a.problem(f"loadSession: {key} empty or missing (e.g. {q['project']}/{q['sessionId']})")


def metrics_count(root: Path, project: str) -> int:
    return sum(1 for _ in (root / project / ".agent-artifacts").glob("*/compression-metrics.json"))


async def ratio_series(client: Client, a: ArtifactsRun, root: Path, rounds: int = 2) -> None:
    projects = sorted(a.doc["sessions"])
    await base.timed_call(client, "getCompressionRatio", {"project": projects[-1]}, Latencies())  # warm-up
    for _ in range(rounds):
        for project in projects:
            data = await base.timed_call(client, "getCompressionRatio", {"project": project}, a.lat("compression"))
            rated, on_disk = ((data or {}).get("aggregate") or {}).get("sessions"), metrics_count(root, project)
            if data is not None and rated != on_disk:
                a.problem(f"getCompressionRatio {project}: aggregate.sessions {rated!r}, {on_disk} on disk")


async def artifacts_session(work: Path, lib: Path, root: Path, a: ArtifactsRun, errlog: TextIO) -> Json:
    started = time.perf_counter()
    async with connect(work, ["--library", str(lib), "--projects-root", str(root)], errlog) as client:
        tools = await tool_names(client)
        to_list = time.perf_counter() - started
        missing = [t for t in ARTIFACT_TOOLS if t not in tools]
        if missing:
            a.sampler.stopped.set()
            return {"status": "pending", "missingTools": missing, "tools": tools, "toToolsListS": to_list}
        start = await first_search(client, a, started)
        a.sampler.stopped.set()
        queries = a.doc["queries"][:WARMUP_CALLS]
        warm_calls = [("searchArtifacts", search_args(q["query"])) for q in queries]
        warm_calls += [("loadSession", {"project": q["project"], "sessionId": q["sessionId"]}) for q in queries]
        settle_s, warm_ms = await warm_up(client, warm_calls)
        await search_series(client, a)
        await load_series(client, a)
        await ratio_series(client, a, root)
        hwm = server_hwm_mb()
    return {
        "status": "measured",
        "toToolsListS": to_list,
        **start,
        "settleS": settle_s,
        "warmupMs": warm_ms,
        "peakRssMb": hwm,
    }


async def warm_restart(work: Path, lib: Path, root: Path, query: str, errlog: TextIO) -> Json:
    """A new server over the index the fresh run left: time to tools/list and to the first search."""
    started = time.perf_counter()
    async with connect(work, ["--library", str(lib), "--projects-root", str(root)], errlog) as client:
        await client.list_tools()
        to_list = time.perf_counter() - started
        result = await client.call_tool("searchArtifacts", search_args(query))
        to_search = time.perf_counter() - started
        ok = isinstance(result.structured_content, dict) and result.structured_content.get("success") is True
        hwm = server_hwm_mb()
    return {"toToolsListS": to_list, "toFirstSearchS": to_search, "ok": ok, "peakRssMb": hwm}


async def artifacts_bench(work: Path, lib: Path, root: Path, doc: Json, log_path: Path) -> Json:
    import_ok, import_error = artifacts_import_ok()
    shutil.rmtree(work / "cache", ignore_errors=True)  # ours (SKILLSHELF_CACHE_DIR): a fresh index
    a = ArtifactsRun(doc, base.TreeSampler())
    out: Json = {"importOk": import_ok, "importError": import_error or None, "manifest": doc["manifest"], "errors": []}
    with log_path.open("w", encoding="utf-8") as errlog:
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.sampler.run)
            try:
                fresh, err = await base.guarded(
                    "artifacts", log_path, lambda: artifacts_session(work, lib, root, a, errlog)
                )
            finally:
                a.sampler.stopped.set()
        out["errors"] += [err] if err else []
        out["fresh"] = fresh
        if fresh and fresh.get("status") == "measured":
            out["warm"] = await warm_restarts(work, lib, root, doc["queries"][1]["query"], log_path, errlog, out)
    out["status"] = (fresh or {}).get("status", "failed")
    out["treePeakPssMb"] = a.sampler.peak_pss_kb / 1024 or None
    out["treeMaxProcesses"] = a.sampler.max_processes or None
    out["indexMb"] = base.dir_size(work / "cache") / 1e6
    out["warmToFirstSearchS"] = base.median([w["toFirstSearchS"] for w in out.get("warm") or []])
    out["series"] = {name: stats(lat) for name, lat in a.series.items()}
    out["quality"] = base.quality(a.ranks, doc["queries"]) if a.ranks else None
    out["checks"] = a.checks
    return out


async def warm_restarts(
    work: Path, lib: Path, root: Path, query: str, log_path: Path, errlog: TextIO, out: Json
) -> list[Json]:
    samples = []
    for i in range(WARM_RESTARTS):
        log(f"artifacts: warm-index restart {i + 1}/{WARM_RESTARTS}")
        s, err = await base.guarded(
            "artifacts warm restart", log_path, lambda: warm_restart(work, lib, root, query, errlog)
        )
        samples += [s] if s else []
        out["errors"] += [err] if err else []
    return samples


# --------------------------------------------------------------------------- orchestration


async def run_guarded(label: str, log_path: Path, fn: Callable[[TextIO], Any]) -> tuple[Any, str | None]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as errlog:
        return await base.guarded(label, log_path, lambda: fn(errlog))


def check_work(work: Path) -> Path:
    work = work.expanduser().resolve()
    if work == REPO or work.is_relative_to(REPO):
        raise SystemExit(f"--work {work} is inside the repository; use a folder outside it")
    work.mkdir(parents=True, exist_ok=True)
    return work


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results-modules.json"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/skillshelf-bench-modules"), help="inputs, caches, logs")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", choices=["exec", "memory", "artifacts"], action="append", help="run only these parts")
    args = ap.parse_args(argv)
    args.only = args.only or ["exec", "memory", "artifacts"]
    return args


async def amain(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    work = check_work(args.work)
    logs = work / "logs"
    lib = gen_modules.write_noop_library(work / "lib-noop")
    report: Json = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": base.machine(),
        "server": base.server_version(),
        "baselines": base.baselines(),
        "work": str(work),
        "errors": [],
    }
    log(f"baselines: {report['baselines']}")
    if "exec" in args.only:
        log(f"executeSkill: {EXEC_CALLS} runs + {EXEC_CALLS} dry runs of bench/noop")
        result, err = await run_guarded("exec", logs / "exec.server.log", lambda e: exec_session(work, lib, e))
        report["exec"], report["errors"] = result, report["errors"] + ([err] if err else [])
    if "memory" in args.only:
        manifest = gen_modules.write_notes(work / "memory-root", NOTES, args.seed)
        log(f"memory: {NOTES} notes ({manifest['bytes'] / 1e6:.1f} MB); {MEMORY_CALLS} calls per series")
        root = work / "memory-root"
        result, err = await run_guarded(
            "memory", logs / "memory.server.log", lambda e: memory_session(work, lib, root, manifest, e)
        )
        report["memory"] = {"manifest": manifest, **(result or {})}
        report["errors"] += [err] if err else []
    if "artifacts" in args.only:
        doc = gen_modules.ensure_artifacts(work / "artifacts-root", SESSIONS, PROJECTS, args.seed, QUERIES)
        log(f"artifacts: {SESSIONS} sessions in {PROJECTS} projects, {len(doc['queries'])} queries")
        report["artifacts"] = await artifacts_bench(
            work, lib, work / "artifacts-root", doc, logs / "artifacts.server.log"
        )
        report["errors"] += report["artifacts"]["errors"]
    report["callErrors"] = call_errors(report)
    report["wallClockS"] = time.perf_counter() - started
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(table(report))
    log(f"done in {report['wallClockS']:.0f}s; raw figures in {args.out}")
    return 1 if report["errors"] or report["callErrors"] else 0


# --------------------------------------------------------------------------- report


def call_errors(report: Json) -> int:
    """Calls that failed or came back in the wrong shape, over every series."""
    found = 0
    for part in ("exec", "memory", "artifacts"):
        section = report.get(part) or {}
        series = section.get("series") or {k: v for k, v in section.items() if isinstance(v, dict) and "errors" in v}
        found += sum(s.get("errors", 0) for s in series.values())
        found += len(section.get("checks") or [])
    return found


def dig(report: Json, path: str) -> Any:
    node: Any = report
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def fmt(value: Any, digits: int = 2) -> str:
    v = number(value)
    return "n/a" if v is None else f"{v:.{digits}f}" if v < 1000 else f"{v:,.0f}"


def met(value: Any, limit: float | None, pending: bool) -> str:
    if limit is None:
        return ""
    if pending:
        return "pending"
    v = number(value)
    return "n/a" if v is None else "met" if v <= limit else "**not met**"


# (label, series path in the report, p50 target in ms)
LATENCY_ROWS: list[tuple[str, str, float | None]] = [
    ("executeSkill bench/noop, first call", "exec.first", None),
    ("executeSkill bench/noop", "exec.execute", 80),
    ("executeSkill dryRun", "exec.dryRun", None),
    ("getNotes, first call (parses 10,000 notes)", "memory.series.first", None),
    ("getNotes (limit 50)", "memory.series.getNotes", 10),
    ("getNotes type=decision", "memory.series.getNotesType", 10),
    ("getNotes query (2 words)", "memory.series.getNotesQuery", 10),
    ("getDecisions", "memory.series.getDecisions", 10),
    ("addNote", "memory.series.addNote", 10),
    ("getNotes right after an addNote", "memory.series.getNotesAfterAdd", None),
    ("searchArtifacts, first call after start (index build)", "artifacts.series.firstSearch", None),
    ("searchArtifacts (limit 10)", "artifacts.series.search", 10),
    ("loadSession", "artifacts.series.loadSession", None),
    ("getCompressionRatio (project)", "artifacts.series.compression", None),
]
# (label, value path in the report, digits)
OTHER_ROWS: list[tuple[str, str, int]] = [
    ("executeSkill: child process alone, data.durationMs p50 (ms)", "exec.execute.child.p50", 1),
    ("executeSkill: child process alone, data.durationMs p95 (ms)", "exec.execute.child.p95", 1),
    ("`python -I -X utf8` + _child.py's imports, no skill (ms)", "exec.childFloorMs", 1),
    ("_child.py running bench/noop, spawned by the bench with subprocess.run (ms)", "exec.childDirectMs", 1),
    ("memory server peak RSS, VmHWM (MB)", "memory.peakRssMb", 1),
    ("artifacts: start → tools/list (s)", "artifacts.fresh.toToolsListS", 2),
    ("artifacts: start → first search, fresh index (s)", "artifacts.fresh.toFirstSearchS", 2),
    ("artifacts: warm-index start → first search, median (s)", "artifacts.warmToFirstSearchS", 2),
    ("searchArtifacts recall@5", "artifacts.quality.recall@5", 3),
    ("searchArtifacts MRR@10", "artifacts.quality.mrr@10", 3),
    ("searchArtifacts recall@1 / @10", "artifacts.quality.recall@1", 3),
    ("artifacts server peak RSS, VmHWM (MB)", "artifacts.fresh.peakRssMb", 1),
    ("artifacts index on disk (MB)", "artifacts.indexMb", 1),
    ("processes in the artifacts server's tree during the build", "artifacts.treeMaxProcesses", 0),
    ("wrong results / shape deviations", "callErrors", 0),
]


def table(report: Json) -> str:
    pending = dig(report, "artifacts.status") == "pending"
    lines = [
        "| call | n | p50 (ms) | p95 (ms) | server durationMs p50 (ms) | target (p50) | met? |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, path, limit in LATENCY_ROWS:
        s = dig(report, path) or {}
        late = pending and path.startswith("artifacts")
        target = f"≤ {limit:g} ms" if limit is not None else ""
        row = [label, str(s.get("n", "n/a")), fmt(s.get("p50")), fmt(s.get("p95")), fmt(s.get("serverP50"))]
        lines.append("| " + " | ".join([*row, target, met(s.get("p50"), limit, late)]) + " |")
    lines += ["", "| figure | value |", "|---|---|"]
    for label, path, digits in OTHER_ROWS:
        value = fmt(dig(report, path), digits)
        if path.endswith("recall@1"):
            value += " / " + fmt(dig(report, "artifacts.quality.recall@10"), digits)
        lines.append(f"| {label} | {value} |")
    if pending:
        lines.append("\nartifacts: **pending**: the running server does not list the artifacts tools yet")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return anyio.run(amain, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
