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
calls after 20 warm-ups. bench/ab.py drives the same client (`RawServer`, `time_calls`) for its A/B runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

WARMUPS = 20
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}


class RawServer:
    """A server process on pipes, spoken to one JSON-RPC line at a time; `with` ends it."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin, self._stdout = self.process.stdin, self.process.stdout
        self._next_id = 0

    def __enter__(self) -> RawServer:
        self.request("initialize", HELLO)
        self.notify("notifications/initialized", {})
        return self

    def __exit__(self, *_: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request and read lines until its answer, which is returned."""
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        while True:
            raw = self._stdout.readline()
            if not raw:
                raise EOFError(f"the server closed stdout before answering {method} (exit {self.process.poll()})")
            answer: dict[str, Any] = json.loads(raw)
            if answer.get("id") == self._next_id:
                return answer

    def _send(self, message: dict[str, Any]) -> None:
        self._stdin.write((json.dumps(message) + "\n").encode())
        self._stdin.flush()


def time_calls(
    server: RawServer,
    calls: list[dict[str, Any]],
    count: int,
    warmups: int = WARMUPS,
    failures: list[str] | None = None,
) -> list[float]:
    """Milliseconds of `count` tools/call round trips, cycling through `calls`, after `warmups` calls
    taken from the end of the list. Answers that are errors are described in `failures`, if given."""
    for n in range(1, warmups + 1):
        server.request("tools/call", calls[-1 - n % len(calls)])
    samples = []
    for n in range(count):
        started = time.perf_counter()
        answer = server.request("tools/call", calls[n % len(calls)])
        samples.append((time.perf_counter() - started) * 1000)
        if failures is not None and ("error" in answer or answer.get("result", {}).get("isError")):
            failures.append(f"{json.dumps(calls[n % len(calls)])}: {json.dumps(answer)[:300]}")
    return samples


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]


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
    calls = [{"name": args.tool, "arguments": json.loads(args.args)}]
    if args.queries is not None:
        calls = tool_calls(args.queries, args.tool)
    with RawServer(command) as server:
        time.sleep(args.settle)
        samples = time_calls(server, calls, args.calls)
        peak = peak_rss_mb(server.process.pid)
    summary = f"p50 {statistics.median(samples):.2f} ms, p95 {p95(samples):.2f} ms over {args.calls} calls"
    print(f"{args.tool}: {summary}" + (f"; server peak RSS {peak:.1f} MB" if peak is not None else ""))


def tool_calls(path: Path, tool: str) -> list[dict[str, Any]]:
    """A `tools/call` of `tool` per query of a labelled file (kind | query | answers) or of a generated
    library's `*.queries.json`; for loadSkill, each query's answer."""
    return [{"name": tool, "arguments": arguments} for arguments in _arguments(path, tool)]


def _arguments(path: Path, tool: str) -> list[dict[str, Any]]:
    if path.suffix == ".json":
        queries = json.loads(path.read_text(encoding="utf-8"))["queries"]
        if tool == "loadSkill":
            return [{"skillId": q["answer"]} for q in queries]
        return [{"query": q["query"]} for q in queries]
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if "|" in ln and not ln.startswith("#")]
    return [{"query": ln.split("|")[1].strip()} for ln in lines]


def peak_rss_mb(pid: int) -> float | None:
    """The server's VmHWM (Linux), in MB; None where /proc is not there."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return None
    line = next((ln for ln in status.splitlines() if ln.startswith("VmHWM:")), None)
    return int(line.split()[1]) / 1024 if line else None


if __name__ == "__main__":
    main()
