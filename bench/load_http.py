"""A bounded HTTP load test: C concurrent clients searching and loading for S seconds.

    python bench/load_http.py [--clients 50] [--seconds 20] [--workers 1 --workers 4] [--n 1000] [--out FILE]
        [--stream-responses] [--floor]
    python bench/load_http.py --side-by-side [--rounds 3] [--pin] [--client raw|httpx] ...   # interleaved
    python bench/load_http.py --replicas 1 --replicas 2 --replicas 4 [--database-url URL]   # behind HAProxy

For each worker count: generate (or reuse) a synthetic library of N skills, start the real server,
`python -m skillshelf serve --http --workers W` with one bearer token per client (SKILLSHELF_TOKENS)
and a config whose rate limit is out of the way (this measures the server, not the limiter), wait
until /health is healthy, then run C clients at once for S seconds. Each client alternates
searchPatterns (the library's generated queries) and loadSkill (the expected hit of that query),
one request at a time, as an agent does. One worker keeps MCP sessions (initialize once per
client, then a JSON body per call, or an SSE stream per call with --stream-responses); several
workers answer statelessly with JSON (no session to follow a client between processes). Reports
throughput, p50/p95/p99 latency and errors (any non-200, a JSON-RPC error or an error envelope).
The client runs on the same machine: its CPU is shared; `--pin` keeps the load generator on the
first core and the servers on the others (where there are at least two), and every run logs each
thread's affinity on both sides and both sides' CPU per second. The generator is a raw HTTP/1.1
keep-alive client on uvloop (`--client raw`, the default), cheap enough to saturate the bare SDK;
`--client httpx` is the older one. `--side-by-side` runs one worker of skillshelf and the bare SDK's
floor in turn, `--rounds` times, the order swapped every other round, with the generator's own ceiling
(bench/canned_server.py) in each round, and reports each side's median and the ratios (skillshelf's
p99 / the floor's, its throughput / the floor's) per round. Nothing here asserts on time: it only measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2

try:  # imported as bench.load_http (repo root on sys.path)
    from bench import generate
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]

T = TypeVar("T")
PROTOCOL = "2025-06-18"
ACCEPT = "application/json, text/event-stream"


def log(msg: str) -> None:
    print(f"[load] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Run:
    workers: int
    clients: int
    seconds: float
    requests: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    throughput_rps: float = 0.0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    stream_responses: bool = False
    floor: bool = False
    by_tool: dict[str, dict[str, float]] = field(default_factory=dict)
    client: str = "raw"
    client_cpu_share: float = 0.0  # the load generator's CPU seconds per second: near 1.0, it is the limit
    server_cpu_share: float = 0.0  # the server's (every process): near its cores' count, the server is the limit
    server_cpu_ms_per_request: float = 0.0
    client_affinity: list[str] = field(default_factory=list)
    server_affinity: list[str] = field(default_factory=list)


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))], 2)


def parse_body(content_type: str, text: str) -> dict[str, Any]:
    """A JSON-RPC response from a JSON body or from the first SSE `data:` line that carries one."""
    if content_type.startswith("application/json"):
        parsed: dict[str, Any] = json.loads(text)
        return parsed
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if "id" in message:
                return dict(message)
    raise ValueError("no JSON-RPC response in the body")


def envelope_problem(message: dict[str, Any]) -> str | None:
    """What a JSON-RPC answer to tools/call says went wrong, or None."""
    if "error" in message:
        return f"jsonrpc {message['error'].get('code')}"
    result = message.get("result", {})
    if result.get("isError"):
        envelope = result.get("structuredContent") or {}
        return f"envelope {(envelope.get('error') or {}).get('code', '?')}"
    return None


def hello_body() -> dict[str, Any]:
    client = {"name": "load", "version": "1"}
    params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client}
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


def call_body(call_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Agent:
    """One client on httpx (the older generator: it saturates near 2,000 requests/s on this machine)."""

    def __init__(self, base: str, token: str, stateless: bool, http: httpx2.AsyncClient) -> None:
        self.base = base
        self.headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT, "Content-Type": "application/json"}
        self.stateless = stateless
        self.http = http
        self.next_id = 0

    async def start(self) -> None:
        if self.stateless:
            self.headers["MCP-Protocol-Version"] = PROTOCOL
            return
        response = await self.http.post(f"{self.base}/mcp", json=hello_body(), headers=self.headers)
        response.raise_for_status()
        self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = PROTOCOL
        (await self.http.post(f"{self.base}/mcp", json=INITIALIZED, headers=self.headers)).raise_for_status()

    async def call(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """None on success, else what went wrong."""
        self.next_id += 1
        body = call_body(self.next_id, tool, arguments)
        response = await self.http.post(f"{self.base}/mcp", json=body, headers=self.headers)
        if response.status_code != 200:
            return f"http {response.status_code}"
        return envelope_problem(parse_body(response.headers.get("content-type", ""), response.text))

    async def close(self) -> None:
        return None


class RawAgent:
    """One client on its own keep-alive HTTP/1.1 connection, written by hand on asyncio streams: just enough
    of Streamable HTTP for what this test sends (initialize once, then tools/call POSTs with the session
    header), and of HTTP/1.1 for what uvicorn answers (Content-Length or chunked bodies). With uvloop it
    drives the bare SDK past 3,000 requests/s on one core where httpx stops near 2,000."""

    def __init__(self, base: str, token: str, stateless: bool) -> None:
        host_port = base.removeprefix("http://")
        self.host, _, port = host_port.partition(":")
        self.port = int(port or 80)
        self.stateless = stateless
        self.fixed = (
            f"Host: {host_port}\r\nAuthorization: Bearer {token}\r\nAccept: {ACCEPT}\r\n"
            "Content-Type: application/json\r\n"
        )
        self.next_id = 0
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.reader is None or self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self.reader, self.writer

    async def post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        """(status, lower-cased headers, body) of one POST /mcp on the connection."""
        reader, writer = await self._connect()
        body = json.dumps(message, separators=(",", ":")).encode()
        writer.write(f"POST /mcp HTTP/1.1\r\n{self.fixed}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            payload = await self._chunked(reader)
        else:
            payload = await reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, headers, payload

    @staticmethod
    async def _chunked(reader: asyncio.StreamReader) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # no trailers are sent: the empty line that ends the body
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)

    async def start(self) -> None:
        if self.stateless:
            self.fixed += f"MCP-Protocol-Version: {PROTOCOL}\r\n"
            return
        status, headers, _ = await self.post(hello_body())
        if status != 200 or "mcp-session-id" not in headers:
            raise RuntimeError(f"initialize answered {status} without a session")
        self.fixed += f"Mcp-Session-Id: {headers['mcp-session-id']}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n"
        status, _, _ = await self.post(INITIALIZED)
        if status not in (200, 202):
            raise RuntimeError(f"notifications/initialized answered {status}")

    async def call(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """None on success, else what went wrong."""
        self.next_id += 1
        try:
            status, headers, payload = await self.post(call_body(self.next_id, tool, arguments))
        except (OSError, asyncio.IncompleteReadError, ValueError):
            await self.close()  # the connection's state is unknown: the next call opens a new one
            raise
        if status != 200:
            return f"http {status}"
        return envelope_problem(parse_body(headers.get("content-type", ""), payload.decode()))

    async def close(self) -> None:
        writer, self.reader, self.writer = self.writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def drive(
    base: str, tokens: list[str], seconds: float, queries: list[dict[str, Any]], stateless: bool, client: str = "raw"
) -> Run:
    run = Run(workers=0, clients=len(tokens), seconds=seconds)
    latencies: dict[str, list[float]] = {"searchPatterns": [], "loadSkill": []}
    errors: Counter[str] = Counter()
    limits = httpx2.Limits(max_connections=len(tokens) + 5, max_keepalive_connections=len(tokens) + 5)
    async with httpx2.AsyncClient(timeout=30, limits=limits) as http:
        agents: list[Agent | RawAgent] = [
            RawAgent(base, token, stateless) if client == "raw" else Agent(base, token, stateless, http)
            for token in tokens
        ]
        for agent in agents:
            await agent.start()
        deadline = time.perf_counter() + seconds

        async def loop(index: int, agent: Agent | RawAgent) -> None:
            step = index * 7
            while time.perf_counter() < deadline:
                query = queries[step % len(queries)]
                step += 1
                for tool, arguments in (
                    ("searchPatterns", {"query": query["query"], "limit": 5}),
                    ("loadSkill", {"skillId": query["answer"]}),
                ):
                    started = time.perf_counter()
                    try:
                        problem = await agent.call(tool, arguments)
                    except Exception as exc:  # a transport failure is an error, not a crash of the test
                        problem = type(exc).__name__
                    latencies[tool].append((time.perf_counter() - started) * 1000)
                    if problem:
                        errors[problem] += 1

        cpu_before = own_cpu_s()
        began = time.perf_counter()
        await asyncio.gather(*(loop(index, agent) for index, agent in enumerate(agents)))
        elapsed = time.perf_counter() - began
        run.client_cpu_share = round((own_cpu_s() - cpu_before) / elapsed, 3)
        for agent in agents:
            await agent.close()
    everything = latencies["searchPatterns"] + latencies["loadSkill"]
    run.requests = len(everything)
    run.errors = sum(errors.values())
    run.error_kinds = dict(errors)
    run.throughput_rps = round(run.requests / elapsed, 1)
    run.p50_ms, run.p95_ms, run.p99_ms = pct(everything, 50), pct(everything, 95), pct(everything, 99)
    run.max_ms = round(max(everything, default=0.0), 2)
    run.by_tool = {
        tool: {"requests": len(values), "p50_ms": pct(values, 50), "p95_ms": pct(values, 95), "p99_ms": pct(values, 99)}
        for tool, values in latencies.items()
    }
    return run


def run_async(main: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """Run a coroutine function on uvloop (a dependency of the server; plain asyncio if it is missing)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main(*args))
    return uvloop.run(main(*args))


def own_cpu_s() -> float:
    """This process's CPU time (every thread): how busy the load generator itself is."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_tree(pid: int) -> list[int]:
    """pid and its descendants (uvicorn's workers), from /proc; just pid where /proc has no children files."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                pending += [int(child) for child in task.read_text().split()]
    return found


def tree_cpu_s(pid: int) -> float:
    """CPU seconds used so far by pid and its live descendants (utime + stime from /proc/PID/stat)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def affinities(pid: int, descendants: bool = True) -> list[str]:
    """Every thread's CPU affinity in pid (and its process tree), as distinct 'cores N: K thread(s)' lines."""
    seen: Counter[str] = Counter()
    for member in process_tree(pid) if descendants else [pid]:
        for task in Path(f"/proc/{member}").glob("task/*"):
            with contextlib.suppress(OSError, ValueError):
                seen[",".join(map(str, sorted(os.sched_getaffinity(int(task.name)))))] += 1
    return [f"cores {cores}: {count} thread(s)" for cores, count in sorted(seen.items())]


def settled(health: dict[str, Any]) -> bool:
    """Healthy, with its start-up work done: the index's first sync and the library's digest (the first /health
    starts it). Measured before they finish, skillshelf's window held them and the work floor's, which syncs
    before it serves and has no digest, did not."""
    index, library = health.get("index") or {}, health.get("library") or {}
    return health.get("status") == "healthy" and bool(index.get("syncedAt")) and bool(library.get("digest"))


async def wait_healthy(
    base: str, process: subprocess.Popen[bytes], floor: bool = False, token: str | None = None
) -> None:
    """Until the server answers (the floors) or its /health says it has `settled`; `token`: one it accepts (an
    unauthenticated /health leaves the index out)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        with anyio.fail_after(180):
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"the server exited with {process.returncode}")
                try:
                    if floor:  # the bare SDK has no /health: any answer on /mcp means it is up
                        await http.get(f"{base}/mcp")
                        return
                    if settled((await http.get(f"{base}/health")).json()):
                        return
                except (httpx2.TransportError, ValueError):
                    pass
                await anyio.sleep(0.2)


def one_run(
    lib: Path,
    workers: int,
    clients: int,
    seconds: float,
    queries: list[dict[str, Any]],
    stream: bool = False,
    floor: bool = False,
    server_cpus: set[int] | None = None,
    work_floor: bool = False,
    client: str = "raw",
    ceiling: bool = False,
) -> Run:
    """One server, driven for `seconds`; `server_cpus` (from `split_cpus`, read once before the generator
    narrowed itself) pins it and every thread it starts."""
    tokens = [f"c{i}-{secrets.token_hex(12)}" for i in range(clients)]
    with tempfile.TemporaryDirectory(prefix="skillshelf-load-") as scratch:
        config = Path(scratch) / "config.toml"
        config.write_text("[auth]\nrate_per_s = 100000\nburst = 100000\n", encoding="utf-8")
        port = free_port()
        env = {
            **os.environ,
            "SKILLSHELF_TOKENS": ",".join(f"c{i}={token}" for i, token in enumerate(tokens)),
            "SKILLSHELF_STATE_DIR": str(Path(scratch) / "state"),
        }
        command = [sys.executable, "-m", "skillshelf", "--config", str(config), "serve", "--http"]
        command += ["--port", str(port), "--workers", str(workers), "--no-watch", "--library", str(lib)]
        command += ["--stream-responses"] if stream and workers == 1 else []
        if floor:  # the bare SDK, one process, the same answer mode
            workers = 1
            command = [sys.executable, str(Path(__file__).with_name("noop_server.py")), "--http", str(port)]
            command += ["--stream-responses"] if stream else []
        if work_floor:  # the bare SDK running skillshelf's search and load, nothing else of skillshelf
            workers = 1
            command = [sys.executable, str(Path(__file__).with_name("noop_server.py")), "--http", str(port)]
            command += ["--work", str(lib)] + (["--stream-responses"] if stream else [])
        if ceiling:  # canned answers, no SDK: what the generator itself can send
            workers = 1
            command = [sys.executable, str(Path(__file__).with_name("canned_server.py")), str(port)]
        answers = "SSE streams" if stream and workers == 1 else "JSON bodies"
        what = "the bare SDK (no-op tools)" if floor else f"{workers} worker(s)"
        what = "the bare SDK doing skillshelf's work" if work_floor else what
        what = "canned answers (the generator's ceiling)" if ceiling else what
        log(f"{what}, {clients} clients, {seconds:g} s on :{port}, {answers}")
        with (Path(scratch) / "server.log").open("wb") as server_log:
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=server_log)
            if server_cpus:  # at once, before the server starts its threads (they inherit it)
                os.sched_setaffinity(process.pid, server_cpus)
            try:
                base = f"http://127.0.0.1:{port}"
                anyio.run(wait_healthy, base, process, floor or work_floor or ceiling, tokens[0])
                server_cpu = tree_cpu_s(process.pid)
                run = run_async(drive, base, tokens, seconds, queries, workers > 1, client)
                server_cpu = tree_cpu_s(process.pid) - server_cpu
                run.server_affinity = affinities(process.pid)  # checked while it runs, every thread
                run.client_affinity = affinities(os.getpid(), descendants=False)
            finally:
                process.terminate()
                process.wait(timeout=30)
        log_lines = (Path(scratch) / "server.log").read_text(encoding="utf-8", errors="replace").splitlines()
        problems = [line for line in log_lines if "ERROR" in line or "Traceback" in line]
        if problems:
            log(f"server log: {len(problems)} error line(s), first: {problems[0][:200]}")
    run.workers = workers
    run.stream_responses = stream and workers == 1
    run.floor = floor
    run.client = client
    run.server_cpu_share = round(server_cpu / seconds, 2)
    run.server_cpu_ms_per_request = round(server_cpu * 1000 / max(run.requests, 1), 3)
    log(
        f"{run.throughput_rps} req/s; CPU per s: generator {run.client_cpu_share}, server {run.server_cpu_share}"
        f" ({run.server_cpu_ms_per_request} ms a request); generator on {run.client_affinity},"
        f" server on {run.server_affinity}"
    )
    return run


PROXY_CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "haproxy.cfg"


def proxy_config(replicas: list[str]) -> str:
    """deploy/haproxy.cfg as it is, but plain HTTP at the proxy (this measures the servers, not TLS) and a
    `server` line per replica."""
    lines = []
    for line in PROXY_CONFIG.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("bind "):
            lines.append('    bind "${SKILLSHELF_PROXY_BIND}"')
        elif stripped.startswith("server r1 "):
            lines += [f"    server r{n} {address} check" for n, address in enumerate(replicas, 1)]
        elif not stripped.startswith(("server ", "http-request set-header X-Forwarded-Proto")):
            lines.append(line)
    return "\n".join(lines) + "\n"


def replicas_run(
    lib: Path,
    replicas: int,
    clients: int,
    seconds: float,
    queries: list[dict[str, Any]],
    database_url: str | None,
    client: str = "raw",
) -> Run:
    """N `serve --http` replicas (one process each) behind HAProxy with deploy/haproxy.cfg; each client keeps
    a session, stuck to its replica by the proxy as the recipe does. Nothing is pinned: the replicas, the
    proxy and the load generator share the machine's cores."""
    tokens = [f"c{i}-{secrets.token_hex(12)}" for i in range(clients)]
    with tempfile.TemporaryDirectory(prefix="skillshelf-replicas-") as scratch_name:
        scratch = Path(scratch_name)
        config = scratch / "config.toml"
        config.write_text("[auth]\nrate_per_s = 100000\nburst = 100000\n", encoding="utf-8")
        ports = [free_port() for _ in range(replicas)]
        shared = {"SKILLSHELF_TOKENS": ",".join(f"c{i}={token}" for i, token in enumerate(tokens))}
        if database_url:
            shared["SKILLSHELF_DATABASE_URL"] = database_url
        processes: list[subprocess.Popen[bytes]] = []
        try:
            for number, port in enumerate(ports):
                env = {**os.environ, **shared, "SKILLSHELF_STATE_DIR": str(scratch / f"state-{number}")}
                command = [sys.executable, "-m", "skillshelf", "--config", str(config), "serve", "--http"]
                command += ["--port", str(port), "--no-watch", "--library", str(lib)]
                with (scratch / f"replica-{number}.log").open("wb") as server_log:
                    processes.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=server_log))
            for process, port in zip(processes, ports, strict=True):
                anyio.run(wait_healthy, f"http://127.0.0.1:{port}", process, False, tokens[0])
            proxy_port = free_port()
            (scratch / "haproxy.cfg").write_text(proxy_config([f"127.0.0.1:{p}" for p in ports]), encoding="utf-8")
            proxy_env = {
                **os.environ,
                "SKILLSHELF_PROXY_BIND": f"127.0.0.1:{proxy_port}",
                "SKILLSHELF_REPLICA_HOST": "127.0.0.1",
            }
            with (scratch / "haproxy.log").open("wb") as proxy_log:
                command = ["haproxy", "-db", "-f", str(scratch / "haproxy.cfg")]
                proxy = subprocess.Popen(command, env=proxy_env, stdout=proxy_log, stderr=proxy_log)
            processes.append(proxy)
            log(f"{replicas} replica(s) behind HAProxy, {clients} clients, {seconds:g} s on :{proxy_port}")
            base = f"http://127.0.0.1:{proxy_port}"
            anyio.run(wait_healthy, base, proxy, False, tokens[0])
            run = run_async(drive, base, tokens, seconds, queries, False, client)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=30)
    run.workers = replicas
    return run


def split_cpus(pin: bool) -> tuple[set[int], set[int]]:
    """(the server's cores, the load generator's): the first core for the generator, the rest for the
    server; empty sets (no pinning) unless asked and there are at least two cores. Call it once, before
    narrowing this process: afterwards its affinity is the generator's core alone, and a server pinned
    from it would share that core with the generator."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not pin or len(cpus) < 2:
        return set(), set()
    return set(cpus[1:]), {cpus[0]}


def generator_ceiling(floors: list[dict[str, Any]]) -> float:
    """What the load generator could send on one core of its own: its rate against the no-op floor over the
    share of its core it used for that (the median over runs)."""
    rates = sorted(f["throughput_rps"] / f["client_cpu_share"] for f in floors if f["client_cpu_share"] > 0)
    return rates[len(rates) // 2] if rates else 0.0


def pin_generator(pin: bool) -> set[int]:
    """With `pin`: this process (the load generator) narrowed to its core; returns the servers' cores, read
    before the narrowing (empty: nothing pinned)."""
    server_cpus, client_cpus = split_cpus(pin)
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)
        log(f"pinned: generator on cores {sorted(client_cpus)}, servers on {sorted(server_cpus)}")
    return server_cpus


def side_by_side(
    lib: Path, args: argparse.Namespace, queries: list[dict[str, Any]], server_cpus: set[int]
) -> list[dict[str, Any]]:
    """Rounds of (the generator's ceiling, floor, [work floor,] skillshelf with one worker), the order reversed
    every other round."""
    sides = ["ceiling", "floor", "work-floor", "skillshelf"] if args.work_floor else ["ceiling", "floor", "skillshelf"]
    rounds = []
    for number in range(args.rounds):
        order = sides if number % 2 == 0 else sides[::-1]
        runs = {
            side: one_run(
                lib,
                1,
                args.clients,
                args.seconds,
                queries,
                args.stream_responses,
                side == "floor",
                server_cpus,
                side == "work-floor",
                args.client,
                side == "ceiling",
            )
            for side in order
        }
        own, floor_run = runs["skillshelf"], runs["floor"]
        found: dict[str, Any] = {"round": number + 1, **{side: asdict(run) for side, run in runs.items()}}
        found["p99_ratio"] = round(own.p99_ms / floor_run.p99_ms, 2) if floor_run.p99_ms else None
        found["throughput_ratio"] = round(own.throughput_rps / floor_run.throughput_rps, 2)
        if "work-floor" in runs:
            work = runs["work-floor"]
            found["p99_ratio_to_work_floor"] = round(own.p99_ms / work.p99_ms, 2) if work.p99_ms else None
            found["throughput_ratio_to_work_floor"] = round(own.throughput_rps / work.throughput_rps, 2)
        rounds.append(found)
        log(f"round {number + 1}: p99 x{found['p99_ratio']}, throughput x{found['throughput_ratio']}")
    return rounds


def print_side_by_side(rounds: list[dict[str, Any]]) -> None:
    """Each round's runs; the floor's row is the generator's ceiling in that round (what it reaches against a
    server doing nothing), and the CPU columns say which side was the limit (1.0 = one core busy)."""
    print(
        "| round | server | req/s | p50 ms | p95 ms | p99 ms | errors | generator CPU/s | server CPU/s "
        "| server CPU ms/request | p99 / floor | req/s / floor |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rounds:
        for side in ("ceiling", "floor", "work-floor", "skillshelf"):
            if side not in r:
                continue
            run = r[side]
            ratios = f"{r['p99_ratio']} | {r['throughput_ratio']}" if side == "skillshelf" else " | "
            print(
                f"| {r['round']} | {side} | {run['throughput_rps']} | {run['p50_ms']} | {run['p95_ms']} "
                f"| {run['p99_ms']} | {run['errors']} | {run['client_cpu_share']} | {run['server_cpu_share']} "
                f"| {run['server_cpu_ms_per_request']} | {ratios} |"
            )
    floors = [r["floor"] for r in rounds]
    ceilings = [r["ceiling"]["throughput_rps"] for r in rounds if "ceiling" in r]
    print(
        f"\nthe generator ({floors[0]['client']} client) against the no-op floor: "
        + ", ".join(f"{f['throughput_rps']} req/s on {f['client_cpu_share']} of its core" for f in floors)
        + f" (so about {generator_ceiling(floors):,.0f} req/s on a core of its own);"
        + f" against canned answers: {ceilings} req/s"
    )
    print(f"\nmedian over rounds: {_medians(rounds, 'p99_ratio', 'throughput_ratio')} (to the floor)")
    if "work-floor" in rounds[0]:
        medians = _medians(rounds, "p99_ratio_to_work_floor", "throughput_ratio_to_work_floor")
        print(f"median over rounds: {medians} (to the work floor)")


def _medians(rounds: list[dict[str, Any]], p99_key: str, rps_key: str) -> str:
    """The rounds' median ratios (an even count: the mean of the middle two, not the higher one)."""
    p99 = statistics.median(r[p99_key] for r in rounds)
    rps = statistics.median(r[rps_key] for r in rounds)
    return f"p99 x{p99:.2f}, throughput x{rps:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--workers", type=int, action="append", help="repeatable; default: 1 and 4")
    parser.add_argument("--n", type=int, default=1000, help="skills in the generated library")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--stream-responses", action="store_true", help="one worker answers with SSE streams")
    parser.add_argument("--floor", action="store_true", help="drive bench/noop_server.py (the bare SDK) instead")
    parser.add_argument("--side-by-side", action="store_true", help="one worker and the floor, interleaved")
    parser.add_argument("--rounds", type=int, default=3, help="with --side-by-side")
    parser.add_argument("--work-floor", action="store_true", help="with --side-by-side: the SDK doing the work too")
    parser.add_argument("--replicas", type=int, action="append", help="repeatable: N replicas behind HAProxy")
    parser.add_argument("--database-url", help="with --replicas: the PostgreSQL they share (else local files)")
    parser.add_argument("--pin", action="store_true", help="the load generator on the first core, servers on the rest")
    parser.add_argument(
        "--client",
        choices=["raw", "httpx"],
        default="raw",
        help="the load generator: raw HTTP/1.1 on uvloop (default; saturates the bare SDK) or httpx (the older one)",
    )
    args = parser.parse_args()
    lib = args.work / f"lib-{args.n}"
    generate.ensure_library(lib, args.n)
    queries = [q for q in generate.load_queries(lib) if q.get("answer")]
    if args.replicas:
        runs = [
            replicas_run(lib, n, args.clients, args.seconds, queries, args.database_url, args.client)
            for n in args.replicas
        ]
        print("| replicas | clients | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in runs:
            print(
                f"| {r.workers} | {r.clients} | {r.requests} | {r.throughput_rps} | {r.p50_ms} | {r.p95_ms} "
                f"| {r.p99_ms} | {r.max_ms} | {r.errors} |"
            )
        if args.out:
            machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()}
            payload = {"machine": machine, "n": args.n, "proxy": "haproxy", "runs": [asdict(r) for r in runs]}
            args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        return
    server_cpus = pin_generator(args.pin)
    if args.side_by_side:
        rounds = side_by_side(lib, args, queries, server_cpus)
        print_side_by_side(rounds)
        if args.out:
            machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()}
            payload = {"machine": machine, "n": args.n, "pinned": bool(server_cpus), "rounds": rounds}
            args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        return
    sizes = [1] if args.floor else (args.workers or [1, 4])
    runs = [
        one_run(
            lib,
            w,
            args.clients,
            args.seconds,
            queries,
            args.stream_responses,
            args.floor,
            server_cpus,
            False,
            args.client,
        )
        for w in sizes
    ]
    print(
        "| server | answers | clients | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors "
        "| generator CPU/s | server CPU/s |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        answers = "SSE" if r.stream_responses else "JSON"
        server = "bare SDK, no-op tools" if r.floor else f"{r.workers} worker(s)"
        print(
            f"| {server} | {answers} | {r.clients} | {r.requests} | {r.throughput_rps} | {r.p50_ms} | {r.p95_ms} "
            f"| {r.p99_ms} | {r.max_ms} | {r.errors} | {r.client_cpu_share} | {r.server_cpu_share} |"
        )
    if args.out:
        machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()}
        payload = {"machine": machine, "n": args.n, "runs": [asdict(r) for r in runs]}
        args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
