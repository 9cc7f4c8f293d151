"""What a skill can reach of the server's processes, on real servers (stdio, HTTP, HTTP with workers),
with bubblewrap and without; and that the server's helper processes never outlive it.

- A skill sees file descriptors 0-2 only: it used to get the HTTP listener as fd 3 (uvloop does not
  close inherited descriptors), accept() on it and answer other clients' requests.
- An unsandboxed skill (the documented non-root team setup) reads every sibling's /proc/PID/environ
  it can: the server, the HTTP supervisor and workers must be closed to it, and what it can read (the
  file watcher, multiprocessing's resource tracker) must hold none of the server's secrets. Root
  reads every process's files, so a test run as root starts that server as `nobody` (setpriv; with
  CAP_DAC_READ_SEARCH only to reach an interpreter under /root).
- A server killed with SIGKILL while it indexes leaves no parse worker (nor resource tracker) behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters

from skillshelf.execution import sandbox
from tests.conftest import deadline, three_file, wait_until_async
from tests.live_server import skillshelf_http
from tests.server.team_support import free_port

pytestmark = pytest.mark.anyio

HAS_BUBBLEWRAP = sandbox.isolation(True).sandboxed
SECRET = "team-token-0123456789abcdef"
NOBODY = 65534
PARSE_WORKER = "skillshelf.library.indexing.parallel"

FDS = """import os
def fds() -> dict:
    seen = {}
    for name in os.listdir('/proc/self/fd'):
        try:
            seen[name] = os.readlink(f'/proc/self/fd/{name}')
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return seen
"""
PEEK = """import os

def parent_of(pid: int) -> int:
    with open(f'/proc/{pid}/stat') as handle:
        return int(handle.read().rsplit(')', 1)[1].split()[1])

def peek(server_pid: int, secrets: list) -> dict:
    me = os.getpid()
    pids = [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != me]
    tree = {server_pid}
    for _ in range(6):  # the server's descendants, however deep
        for pid in pids:
            try:
                if parent_of(pid) in tree:
                    tree.add(pid)
            except OSError:
                pass
    seen = {}
    for pid in sorted(tree):
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as handle:
                command = handle.read().replace(b'\\0', b' ').decode('utf-8', 'replace')[:300]
            with open(f'/proc/{pid}/environ', 'rb') as handle:
                environ = handle.read().decode('utf-8', 'replace')
            verdict = 'LEAKED' if any(s in environ for s in secrets) else 'clean'
        except PermissionError:
            verdict = 'closed'
        except OSError:
            continue
        seen[str(pid)] = {'command': command, 'environ': verdict}
    return seen
"""


@pytest.fixture
def probe_root(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    three_file(root, "probe", "fds", "# fds\n\nLists its open file descriptors.\n", code=FDS)
    three_file(root, "probe", "peek", "# peek\n\nReads the environment of the server's processes.\n", code=PEEK)
    return root


def server_env(bubblewrap: bool) -> dict[str, str]:
    env = dict(os.environ)  # HOME and every per-user folder are the test's own (tests/conftest.py)
    env["SKILLSHELF_EXECUTION__BUBBLEWRAP"] = "true" if bubblewrap else "false"
    env["SKILLSHELF_TOKENS"] = f"ci={SECRET}"
    return env


@asynccontextmanager
async def http_server(
    root: Path,
    log: Path,
    *,
    workers: int,
    bubblewrap: bool,
    projects: Path | None = None,
    as_user: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[Client, subprocess.Popen[bytes]]]:
    arguments = ["serve", "--http", "--allow-exec", "--workers", str(workers), "-l", str(root)]
    if projects is not None:
        arguments += ["--projects-root", str(projects)]
    environment = {**server_env(bubblewrap), **(env or {})}
    port = free_port() if workers > 1 else 0  # workers announce the port they are given, not the one bound
    with skillshelf_http(arguments, log, env=environment, port=port, launcher=as_user or []) as server:
        if workers > 1:  # /health answered from one of them: wait for the others too
            pid = server.process.pid
            await wait_until_async(lambda: workers_started(pid, workers), f"not all {workers} workers started")
        headers = {"Authorization": f"Bearer {SECRET}"}
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(headers=headers, timeout=deadline()) as http,
            Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as client,
        ):
            yield client, server.process


@asynccontextmanager
async def stdio_server(root: Path, *, bubblewrap: bool) -> AsyncIterator[Client]:
    args = ["-m", "skillshelf", "serve", "--allow-exec", "-l", str(root)]
    async with Client(StdioServerParameters(command=sys.executable, args=args, env=server_env(bubblewrap))) as client:
        yield client


async def output_of(client: Client, skill: str, arguments: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool("executeSkill", {"skillId": skill, "input": arguments or {}})
    assert result.structured_content is not None and not result.is_error, result.structured_content
    return result.structured_content["data"]["output"]


SANDBOX = [pytest.param(True, id="bubblewrap", marks=pytest.mark.skipif(not HAS_BUBBLEWRAP, reason="no bwrap")),
           pytest.param(False, id="rlimits-only")]  # fmt: skip


@pytest.mark.parametrize("bubblewrap", SANDBOX)
@pytest.mark.parametrize("transport", ["stdio", "http", "http-2-workers"])
async def test_a_skill_sees_file_descriptors_0_to_2_only(
    probe_root: Path, tmp_path: Path, transport: str, bubblewrap: bool
) -> None:
    if transport == "stdio":
        async with stdio_server(probe_root, bubblewrap=bubblewrap) as client:
            seen = await output_of(client, "probe/fds")
    else:
        workers = 2 if transport == "http-2-workers" else 1
        async with http_server(probe_root, tmp_path / "log", workers=workers, bubblewrap=bubblewrap) as (client, _):
            seen = await output_of(client, "probe/fds")
    assert sorted(seen) == ["0", "1", "2"], f"the skill holds the server's descriptors: {seen}"


@pytest.fixture
def server_user(tmp_path: Path) -> Iterator[tuple[list[str], Path, dict[str, str]]]:
    """(command prefix, a folder that user owns, its per-user folders): as root, `nobody`; else ourselves."""
    if os.geteuid() != 0:
        yield [], tmp_path / "as-ourselves", {}
        return
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux): cannot start the server as another user")
    base = Path(tempfile.mkdtemp(prefix="skillshelf-nobody-"))
    home = base / "home"
    env = {"HOME": str(home), "SKILLSHELF_CACHE_DIR": str(home / "cache"), "SKILLSHELF_STATE_DIR": str(home / "state")}
    env |= {name: str(home / name.lower()) for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")}
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    prefix += ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]  # to reach /root/.pyenv & co.
    try:
        yield prefix, base, env
    finally:
        shutil.rmtree(base, ignore_errors=True)


def give_to(base: Path, uid: int) -> None:
    for path in [base, *base.rglob("*")]:
        os.chown(path, uid, uid, follow_symlinks=False)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="no /proc here")
@pytest.mark.parametrize("workers", [1, 2])
async def test_an_unsandboxed_skill_reads_no_secret_from_any_of_the_servers_processes(
    probe_root: Path, server_user: tuple[list[str], Path, dict[str, str]], workers: int
) -> None:
    as_user, base, env = server_user
    root = base / "lib"
    shutil.copytree(probe_root, root)
    projects = base / "projects"
    (projects / "app" / ".agent-artifacts").mkdir(parents=True)  # the session archive's watchers too
    if as_user:
        give_to(base, NOBODY)
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    async with http_server(
        root, base / "log", workers=workers, bubblewrap=False, projects=projects, as_user=as_user, env=env
    ) as (client, server):
        seen = await output_of(client, "probe/peek", {"server_pid": server.pid, "secrets": [SECRET, digest]})
    commands = {pid: found["command"] for pid, found in seen.items()}
    assert not [c for pid, c in commands.items() if seen[pid]["environ"] == "LEAKED"], seen
    main = [pid for pid, c in commands.items() if " -m skillshelf serve" in c]
    assert main and all(seen[pid]["environ"] == "closed" for pid in main), seen  # SKILLSHELF_TOKENS is in it
    workers_seen = [pid for pid, c in commands.items() if "multiprocessing.spawn" in c]
    assert len(workers_seen) == (workers if workers > 1 else 0), commands
    assert all(seen[pid]["environ"] == "closed" for pid in workers_seen), seen  # they hold the settings
    watchers = [pid for pid, c in commands.items() if "watch_child" in c]
    assert watchers and all(seen[pid]["environ"] == "clean" for pid in watchers), seen  # readable, nothing in it
    trackers = [pid for pid, c in commands.items() if "resource_tracker" in c]
    assert all(seen[pid]["environ"] == "clean" for pid in trackers), seen


def workers_started(server_pid: int, count: int) -> bool:
    """`count` worker processes below the server, each past its start: non-dumpable (its /proc files
    turn root's), as a worker makes itself before it takes the server's settings and environment."""
    workers = [pid for pid, command in descendants(server_pid).items() if "multiprocessing.spawn" in command]
    return len(workers) == count and all(proc_owner(pid) == 0 for pid in workers)


def proc_owner(pid: int) -> int | None:
    try:
        return Path(f"/proc/{pid}/environ").stat().st_uid
    except OSError:
        return None


def descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every process below `pid` now."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
    below = {pid}
    for _ in range(6):
        below |= {child for child, parent in parents.items() if parent in below}
    return {p: commands[p] for p in below - {pid} if p in commands}


def alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


@pytest.fixture
def killed_pids() -> Iterator[list[int]]:
    """Processes a test saw; any still running at the end are killed (a failing test leaves none)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="no /proc here")
async def test_a_server_killed_while_indexing_leaves_no_parse_worker_behind(
    large_library: Path, tmp_path: Path, killed_pids: list[int]
) -> None:
    root = tmp_path / "lib"
    shutil.copytree(large_library, root)
    command = [sys.executable, "-m", "skillshelf", "serve", "--http", "--port", "0", "-l", str(root)]
    with (tmp_path / "log").open("wb") as errors:
        server = subprocess.Popen(command, env=server_env(False), stdout=subprocess.DEVNULL, stderr=errors)
    helpers: dict[int, str] = {}

    def indexing_in_workers() -> bool:
        assert server.poll() is None, (tmp_path / "log").read_text()
        helpers.clear()
        helpers.update(descendants(server.pid))
        return any(PARSE_WORKER in c or "multiprocessing" in c for c in helpers.values())

    try:
        await wait_until_async(indexing_in_workers, "the server never indexed in worker processes", poll_s=0.01)
    finally:
        server.send_signal(signal.SIGKILL)  # while it indexes
        server.wait(timeout=deadline(30))
    killed_pids.extend(helpers)
    await wait_until_async(lambda: not any(alive(pid) for pid in helpers), f"outlived the server: {helpers}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
async def test_a_supervisor_killed_outright_takes_its_workers_and_their_helpers_along(
    probe_root: Path, tmp_path: Path, killed_pids: list[int]
) -> None:
    """Workers used to outlive it, still serving on the port, with their watchers and the tracker."""
    async with http_server(probe_root, tmp_path / "log", workers=2, bubblewrap=False) as (_client, server):
        helpers = descendants(server.pid)
        killed_pids.extend(helpers)
        assert sum("multiprocessing.spawn" in c for c in helpers.values()) == 2, helpers
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=deadline(30))
    await wait_until_async(lambda: not any(alive(pid) for pid in helpers), f"outlived the supervisor: {helpers}")
