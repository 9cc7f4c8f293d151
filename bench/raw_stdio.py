"""One tool's latency over stdio with a minimal JSON-RPC client (no SDK on the client side).

    python bench/raw_stdio.py --library DIR --tool loadSkill --args '{"skillId": "a/b"}' [--calls 300]
    python bench/raw_stdio.py --noop --tool loadSkill --args '{}'     # bench/noop_server.py instead
    python bench/raw_stdio.py --library DIR --tool searchPatterns --queries bench/queries/corpora.txt
        # searchPatterns with a different query each call (the labelled queries' text, in turn)
    python bench/raw_stdio.py --library DIR --tool loadSkill --queries DIR.queries.json
        # a generated library's queries (bench/run.py writes DIR.queries.json); loadSkill loads their answers

The official client validates and copies every result (about 1.4 ms of a 3 KB answer on the 2-core
machine of docs/performance.md); this client only writes a line and reads lines until the answer,
so the figure is the server and the pipe. After the handshake it waits `--settle` seconds (the
server's start-up re-check of the library runs meanwhile), then prints the p50 and p95 of `--calls`
calls after 20 warm-ups.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", type=Path)
    parser.add_argument("--noop", action="store_true", help="time bench/noop_server.py (the bare SDK)")
    parser.add_argument("--tool", required=True)
    parser.add_argument("--args", default="{}", help="the tool's arguments as JSON")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument(
        "--queries",
        type=Path,
        help="a labelled query file (kind | query | answers) or a generated *.queries.json: a different call each time",
    )
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds to wait after the handshake (start-up syncs finish)"
    )
    args = parser.parse_args()
    if args.noop:
        command = [sys.executable, str(Path(__file__).with_name("noop_server.py"))]
    elif args.library is not None:
        command = [sys.executable, "-m", "skillshelf", "serve", "--no-watch", "--library", str(args.library)]
    else:
        parser.error("give --library DIR or --noop")
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdin is not None and server.stdout is not None
    stdin, stdout = server.stdin, server.stdout

    def rpc(ident: int | None, method: str, params: dict[str, Any]) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if ident is not None:
            message["id"] = ident
        stdin.write((json.dumps(message) + "\n").encode())
        stdin.flush()
        while ident is not None and json.loads(stdout.readline()).get("id") != ident:
            pass

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        rpc(0, "initialize", hello)
        rpc(None, "notifications/initialized", {})
        time.sleep(args.settle)
        calls = [{"name": args.tool, "arguments": json.loads(args.args)}]
        if args.queries is not None:
            calls = [{"name": args.tool, "arguments": arguments} for arguments in _arguments(args.queries, args.tool)]
        for ident in range(1, 21):
            rpc(ident, "tools/call", calls[-1 - ident % len(calls)])  # warm-ups from the end of the list
        samples = []
        for ident in range(100, 100 + args.calls):
            started = time.perf_counter()
            rpc(ident, "tools/call", calls[(ident - 100) % len(calls)])
            samples.append((time.perf_counter() - started) * 1000)
        peak = _peak_rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=10)
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    print(f"{args.tool}: p50 {statistics.median(samples):.2f} ms, p95 {p95:.2f} ms over {args.calls} calls", end="")
    print(f"; server peak RSS {peak:.1f} MB" if peak is not None else "")


def _arguments(path: Path, tool: str) -> list[dict[str, Any]]:
    """Each call's arguments: the query of each line of a labelled file (kind | query | answers), or of
    each query of a generated library's `*.queries.json`; for loadSkill, each query's answer."""
    if path.suffix == ".json":
        queries = json.loads(path.read_text(encoding="utf-8"))["queries"]
        if tool == "loadSkill":
            return [{"skillId": q["answer"]} for q in queries]
        return [{"query": q["query"]} for q in queries]
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if "|" in ln and not ln.startswith("#")]
    return [{"query": ln.split("|")[1].strip()} for ln in lines]


def _peak_rss_mb(pid: int) -> float | None:
    """The server's VmHWM (Linux), in MB; None where /proc is not there."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return None
    line = next((ln for ln in status.splitlines() if ln.startswith("VmHWM:")), None)
    return int(line.split()[1]) / 1024 if line else None


if __name__ == "__main__":
    main()
