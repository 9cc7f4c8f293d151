"""Replicas behind the real proxy: deploy/haproxy.cfg in front of two `serve --http` processes sharing one
PostgreSQL database, TLS at the proxy. Eight clients write notes and record uses through it while one
replica is killed with SIGKILL and started again: every write a client saw acknowledged is in the
database exactly once, and nothing is lost with the replica that died."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import deadline, isolated_env, wait_until
from tests.live_server import LiveServer, skillshelf_http
from tests.postgres_support import PostgresCluster
from tests.server.team_support import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # processes, a proxy and a kill: seconds, not milliseconds
CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "haproxy.cfg"
DEPLOY_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
CLIENTS = 8


def proxy_missing() -> str | None:
    for tool in ("haproxy", "openssl"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install {tool}); .ci/run installs it"
    return None


def certificate(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: the PEM HAProxy serves, and a client context trusting it."""
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-days", "2",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=deadline(60),
    )  # fmt: skip
    both = folder / "proxy.pem"
    both.write_bytes(cert.read_bytes() + key.read_bytes())
    return both, ssl.create_default_context(cafile=str(cert))


def proxy_env(bind: str, pem: Path, replicas: list[str]) -> dict[str, str]:
    return {
        **os.environ,
        "SKILLSHELF_PROXY_BIND": bind,
        "SKILLSHELF_PROXY_CERT": str(pem),
        "SKILLSHELF_REPLICA_1": replicas[0],
        "SKILLSHELF_REPLICA_2": replicas[1],
        "SKILLSHELF_REPLICA_HOST": "127.0.0.1",
    }


@contextmanager
def haproxy(
    bind: str, pem: Path, replicas: list[str], log: Path, config: Path = CONFIG
) -> Iterator[subprocess.Popen[bytes]]:
    """HAProxy on `config`, plus a stats socket (`stick_table` reads the table through it)."""
    stats = log.with_suffix(".stats.cfg")
    stats.write_text(f"global\n    stats socket {stats_socket(log)} mode 600 level admin\n", encoding="utf-8")
    command = ["haproxy", "-db", "-f", str(config), "-f", str(stats)]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=proxy_env(bind, pem, replicas), stdout=sink, stderr=sink)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(deadline(30))
        stats_socket(log).unlink(missing_ok=True)


def stats_socket(log: Path) -> Path:
    """The stats socket of the HAProxy logging to `log`: in the temporary folder itself, named by a digest of the
    log's path, because a socket's path must fit in 107 bytes and an xdist worker's test folder may not leave room."""
    return Path(tempfile.gettempdir()) / f"haproxy-{hashlib.sha256(bytes(log)).hexdigest()[:16]}.sock"


def stick_table(log: Path) -> str:
    """`show table replicas` on the stats socket of the HAProxy `haproxy(..., log)` started."""
    with socket.socket(socket.AF_UNIX) as admin:
        admin.settimeout(deadline(10))
        admin.connect(str(stats_socket(log)))
        admin.sendall(b"show table replicas\n")
        return b"".join(iter(lambda: admin.recv(65536), b"")).decode()


def stricter_check() -> str:
    """The stricter health check line docs/deploy.md gives, as written there."""
    lines = [line.strip() for line in DEPLOY_GUIDE.read_text(encoding="utf-8").splitlines()]
    found = [line for line in lines if line.startswith("http-check expect") and "status 200" not in line]
    assert len(found) == 1, found
    return found[0]


def with_stricter_check(folder: Path) -> Path:
    """deploy/haproxy.cfg with its health check replaced by the guide's stricter one."""
    shipped = CONFIG.read_text(encoding="utf-8")
    assert shipped.count("    http-check expect status 200\n") == 1
    strict = folder / "haproxy-strict.cfg"
    strict.write_text(shipped.replace("http-check expect status 200", stricter_check()), encoding="utf-8")
    return strict


class Writes:
    """What the clients were told: the acknowledged writes, and how many attempts failed."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.uses: list[str] = []
        self.failed = 0
        self.lock = threading.Lock()


async def writer(number: int, base: str, context: ssl.SSLContext, writes: Writes, stop: anyio.Event) -> None:
    """One client writing through the proxy until told to stop; every attempt has content of its own, so a
    failed one is never sent again under the same content (the proxy itself never resends a request a
    replica may have started)."""
    attempt = 0
    async with httpx2.AsyncClient(verify=context, timeout=deadline(30)) as http:
        while not stop.is_set():
            attempt += 1
            content = f"client {number} note {attempt}"
            try:
                async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                    note = await client.call_tool(
                        "addNote", {"projectPath": "app", "type": "decision", "content": content}
                    )
                    use = await client.call_tool(
                        "trackPatternUsage", {"patternId": "python/slugify", "projectPath": "app", "note": content}
                    )
            except Exception:  # the replica died under it, or the proxy had none to give: not acknowledged
                with writes.lock:
                    writes.failed += 1
                continue
            with writes.lock:
                if not note.is_error:
                    writes.notes.append(content)
                if not use.is_error:
                    writes.uses.append(content)


def acknowledged(writes: Writes) -> int:
    with writes.lock:
        return len(writes.notes)


@dataclass
class Proxied:
    base: str  # the proxy, https
    context: ssl.SSLContext  # trusts the proxy's certificate
    replicas: list[LiveServer]
    start_replica: Callable[[int], LiveServer]
    log: Path  # the proxy's (stick_table reads its table)


@pytest.fixture
def proxied(postgres_url: str, sample_root: Path, tmp_path: Path) -> Iterator[Proxied]:
    """deploy/haproxy.cfg in front of two replicas sharing `postgres_url`, for a test that kills or stops them."""
    with proxy_over(postgres_url, sample_root, tmp_path) as found:
        yield found


@pytest.fixture(scope="module")
def shared_proxied(
    shared_postgres_url: str, shared_sample_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxied]:
    """`proxied` once for the module's tests that only open sessions through it (two replicas and a proxy
    take seconds to start on a busy machine); none of them counts what another left."""
    folder = tmp_path_factory.mktemp("proxied")
    with proxy_over(shared_postgres_url, shared_sample_root, folder, env=isolated_env(folder / "home")) as found:
        yield found


@contextmanager
def proxy_over(
    postgres_url: str, sample_root: Path, tmp_path: Path, config: Path = CONFIG, env: Mapping[str, str] | None = None
) -> Iterator[Proxied]:
    """HAProxy on `config` in front of two replicas sharing `postgres_url`, once it answers /health; the
    replicas get `env` (os.environ by default)."""
    missing = proxy_missing()
    if missing:
        pytest.skip(missing)
    (tmp_path / "projects" / "app").mkdir(parents=True)
    arguments = ["serve", "--http", "-l", str(sample_root), "--projects-root", str(tmp_path / "projects")]
    arguments += ["--view", "full", "--database-url", postgres_url]
    ports = [free_port(), free_port()]
    starts = iter(range(100))
    pem, context = certificate(tmp_path)
    proxy_port = free_port()
    with ExitStack() as stack:

        def start_replica(index: int) -> LiveServer:
            replica_env = {
                **(os.environ if env is None else env),
                "SKILLSHELF_STATE_DIR": str(tmp_path / f"state-{index}"),
            }
            log = tmp_path / f"replica-{index}-start-{next(starts)}.log"
            return stack.enter_context(skillshelf_http(arguments, log, env=replica_env, port=ports[index]))

        replicas = [start_replica(0), start_replica(1)]
        backends = [f"127.0.0.1:{port}" for port in ports]
        log = tmp_path / "haproxy.log"
        stack.enter_context(haproxy(f"127.0.0.1:{proxy_port}", pem, backends, log, config))
        base = f"https://127.0.0.1:{proxy_port}"
        wait_until(lambda: _answers(f"{base}/health", context), "the proxy never answered /health", 60)
        yield Proxied(base, context, replicas, start_replica, log)


async def test_a_replica_killed_under_load_loses_no_acknowledged_write_and_duplicates_none(
    proxied: Proxied, postgres_url: str
) -> None:
    writes, stop = Writes(), anyio.Event()
    async with anyio.create_task_group() as clients:
        for number in range(CLIENTS):
            clients.start_soon(writer, number, proxied.base, proxied.context, writes, stop)
        await _until(lambda: acknowledged(writes) >= 40, "40 acknowledged writes before the kill")
        killed = proxied.replicas[0].process
        killed.send_signal(signal.SIGKILL)  # mid-write: no goodbye, no flush
        killed.wait(deadline(30))
        before_restart = acknowledged(writes)
        await _until(lambda: acknowledged(writes) >= before_restart + 40, "writes going on through replica 2")
        proxied.start_replica(0)  # the same port: the proxy's health check takes it back
        after_restart = acknowledged(writes)
        await _until(lambda: acknowledged(writes) >= after_restart + 40, "writes going on after the restart")
        stop.set()

    with psycopg.connect(postgres_url) as conn:
        stored_notes = [row[0] for row in conn.execute("SELECT content FROM memory_notes")]
        stored_uses = [row[0] for row in conn.execute("SELECT note FROM usage_events")]
    for acknowledged_write, stored in ((writes.notes, stored_notes), (writes.uses, stored_uses)):
        assert len(set(acknowledged_write)) == len(acknowledged_write)
        missing_writes = [w for w in acknowledged_write if stored.count(w) != 1]
        assert not missing_writes, f"acknowledged but stored {[stored.count(w) for w in missing_writes[:5]]} times"
        assert len(stored) == len(set(stored))  # nothing at all stored twice, acknowledged or not
    assert len(writes.notes) >= 120


async def test_a_legacy_session_sticks_to_the_replica_that_made_it(shared_proxied: Proxied) -> None:
    """A legacy client's session lives in one replica (the other answers 404 to its Mcp-Session-Id): the
    proxy keeps its requests there, by that header; a 2026-07-28 client needs nothing of the kind."""
    async with httpx2.AsyncClient(verify=shared_proxied.context, timeout=deadline(30)) as http:
        for mode in ("legacy", "auto"):
            transport = streamable_http_client(f"{shared_proxied.base}/mcp", http_client=http)
            async with Client(transport, mode=mode, raise_exceptions=True) as client:
                for _ in range(6):  # round robin alone would send every other one to the other replica
                    result = await client.call_tool("searchPatterns", {"query": "slugify"})
                    assert not result.is_error, result


def test_the_shipped_config_and_the_guides_stricter_check_are_valid(tmp_path: Path) -> None:
    """The guide's stricter check, `http-check expect string "state": "ok"` before, made HAProxy refuse the
    whole file; the line it gives now is checked in the shipped file (and run below)."""
    missing = proxy_missing()
    if missing:
        pytest.skip(missing)
    pem, _ = certificate(tmp_path)
    env = proxy_env("127.0.0.1:1", pem, ["127.0.0.1:2", "127.0.0.1:3"])
    for config in (CONFIG, with_stricter_check(tmp_path)):
        checked = subprocess.run(
            ["haproxy", "-c", "-f", str(config)],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=deadline(60),
        )
        assert checked.returncode == 0, f"{config.name}: {checked.stdout}{checked.stderr}"


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
HELLO = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def test_the_proxy_stores_only_session_ids_a_replica_issued(shared_proxied: Proxied) -> None:
    """Before, `stick on req.hdr(mcp-session-id)` stored every id a client sent: 106,000 made-up ones
    (each refused with 404) filled the table and evicted real sessions' entries."""
    async with httpx2.AsyncClient(verify=shared_proxied.context, timeout=deadline(30)) as http:
        for number in range(20):
            made_up = {**MCP_HEADERS, "Mcp-Session-Id": f"madeup{number:04d}"}
            assert (await http.post(f"{shared_proxied.base}/mcp", json=PING, headers=made_up)).status_code == 404
        hello = await http.post(f"{shared_proxied.base}/mcp", json=HELLO, headers=MCP_HEADERS)
        issued = hello.headers["mcp-session-id"]
        table = stick_table(shared_proxied.log)
        assert issued in table and "madeup" not in table, table
        session = {**MCP_HEADERS, "Mcp-Session-Id": issued, "MCP-Protocol-Version": "2025-06-18"}
        for _ in range(4):  # round robin alone would send every other one to the other replica
            assert (await http.post(f"{shared_proxied.base}/mcp", json=PING, headers=session)).status_code == 200


async def test_the_stricter_check_takes_replicas_whose_database_is_down_out_and_back(
    own_cluster: PostgresCluster, sample_root: Path, tmp_path: Path
) -> None:
    """/health said "healthy" while its database was down and every write failed with STATE_UNAVAILABLE.
    It says "degraded" now (naming the database), and the guide's stricter check, run in the shipped file,
    matches a healthy replica's compact JSON and takes degraded ones out."""
    url = own_cluster.create_database("strict")
    with proxy_over(url, sample_root, tmp_path, with_stricter_check(tmp_path)) as proxy:
        replica = proxy.replicas[0]
        assert (replica.health() or {}).get("status") == "healthy"
        own_cluster.stop()
        wait_until(lambda: (replica.health() or {}).get("status") == "degraded", "/health never said degraded")
        down = replica.health() or {}
        assert down["failing"] == ["database"] and down["database"]["state"] == "unreachable"
        wait_until(lambda: _status(f"{proxy.base}/health", proxy.context) == 503, "the proxy kept the replicas", 60)
        own_cluster.start()
        wait_until(lambda: _answers(f"{proxy.base}/health", proxy.context), "the replicas never came back", 60)
        assert (replica.health() or {}).get("status") == "healthy"


def _status(url: str, context: ssl.SSLContext) -> int | None:
    try:
        return httpx2.get(url, verify=context, timeout=deadline(5)).status_code
    except httpx2.TransportError:
        return None


def _answers(url: str, context: ssl.SSLContext) -> bool:
    try:
        return httpx2.get(url, verify=context, timeout=deadline(5)).status_code == 200
    except httpx2.TransportError:
        return False


async def _until(condition: Callable[[], bool], what: str, seconds: float = 120) -> None:
    """Return once `condition()` holds (the clients run meanwhile); fail naming `what` past the deadline."""
    end = anyio.current_time() + deadline(seconds)
    while not condition():
        assert anyio.current_time() < end, f"no {what} within {deadline(seconds):.0f} s"
        await anyio.sleep(0.05)
