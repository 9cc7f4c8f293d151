"""bench/load_http.py measures what it says: the server on its own core, and a client that speaks the protocol."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import deadline

ROOT = Path(__file__).resolve().parents[1]
TWO_CORES = hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2


@pytest.mark.skipif(not TWO_CORES, reason="pinning needs two cores")
def test_pinning_leaves_the_servers_a_core_the_generator_does_not_run_on() -> None:
    # In a child: pinning narrows the process that does it.
    script = textwrap.dedent(
        """
        import json, os
        from bench import load_http
        servers = load_http.pin_generator(True)
        print(json.dumps({"servers": sorted(servers), "generator": sorted(os.sched_getaffinity(0))}))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=deadline(60), check=False
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["servers"] and found["generator"]
    assert not set(found["servers"]) & set(found["generator"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "server", [["noop_server.py", "--http"], ["canned_server.py"]], ids=["the bare SDK", "canned answers"]
)
def test_the_raw_client_keeps_sessions_and_calls_tools_without_errors(server: list[str]) -> None:
    from bench import load_http

    port = free_port()
    command = [sys.executable, str(ROOT / "bench" / server[0]), *server[1:], str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        give_up = time.monotonic() + deadline(60)
        while True:  # up once it accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < give_up, f"{server[0]} did not start"
                time.sleep(0.1)
        queries = [{"query": "parse a csv file", "answer": "data/csv-parse"}]
        run = load_http.run_async(load_http.drive, base, ["t1", "t2"], 0.5, queries, False, "raw")
    finally:
        process.terminate()
        process.wait(timeout=deadline(30))
    assert run.requests > 0
    assert (run.errors, run.error_kinds) == (0, {})


def test_a_run_starts_after_the_servers_start_up_work() -> None:
    """/health says healthy before the index's first sync and the library's digest are done; measured from then
    on, skillshelf's window held that work and the work floor's (which syncs before it serves) did not."""
    from bench.load_http import settled

    starting = {"status": "healthy", "index": {"syncedAt": None}, "library": {"digest": None, "state": "computing"}}
    synced = {**starting, "index": {"syncedAt": "2026-11-29T10:48:47+00:00"}}
    done = {**synced, "library": {"digest": "sha256:ec12", "skills": 1000}}
    assert [settled(h) for h in (starting, synced, done)] == [False, False, True]
    assert not settled({**done, "status": "degraded"})
