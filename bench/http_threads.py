"""Where the HTTP server's CPU goes, thread by thread: user and system time and context switches a request.

    python bench/http_threads.py [--n 1000] [--clients 50] [--pairs 20] [--rounds 3] [--pin]
        [--src DIR --src DIR ...] [--no-work-floor] [--strace DIR]

Starts each server as bench/load_http.py does (one worker, a token per client, the rate limit out of the way,
`--no-watch`; the work floor is bench/noop_server.py doing skillshelf's search and load), one at a time, the order
reversed every other round. Each is warmed with `--pairs` pairs a client (a searchPatterns and a loadSkill of its
answer, the generated queries, the clients at once), then the same pairs are sent again between two reads of
`/proc/PID/task/*/stat` and `status` of the server's process tree: utime, stime and context switches of every
thread, summed by the thread's name (each Python thread names its OS thread after itself through a
`sitecustomize` put first on the server's PYTHONPATH: Python 3.11 does not). A fixed request count, so a figure
is CPU a request, not a rate. `--strace DIR` also counts the system calls of the measured pass (`strace -f -c`
attached to the server for it; strace slows the server, so its CPU figures are not comparable then). `--src` puts
that `src/` first on skillshelf's PYTHONPATH (repeatable: trees compared in one run).
Nothing here asserts on anything: it only measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

try:  # imported as bench.http_threads (repo root on sys.path)
    from bench import generate, http_instructions, load_http
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]
    import http_instructions  # type: ignore[no-redef,import-not-found,unused-ignore]
    import load_http  # type: ignore[no-redef,import-not-found,unused-ignore]

# Names each Python thread's OS thread (prctl PR_SET_NAME, 15 bytes) so /proc tells the threads apart.
NAMING_HOOK = """
import ctypes, threading
_libc = ctypes.CDLL(None)
_inner = threading.Thread._bootstrap_inner
def _named(self):
    try:
        _libc.prctl(15, self.name[:15].encode(), 0, 0, 0)
    except Exception:
        pass
    _inner(self)
threading.Thread._bootstrap_inner = _named

# The cyclic collector's time, by generation, written at exit to $HTTP_THREADS_GC (when set).
import gc, os, time
_gc = {"started": 0.0, "seconds": [0.0, 0.0, 0.0], "count": [0, 0, 0]}
def _timed(phase, info):
    if phase == "start":
        _gc["started"] = time.perf_counter()
    else:
        _gc["seconds"][info["generation"]] += time.perf_counter() - _gc["started"]
        _gc["count"][info["generation"]] += 1
        if info["generation"] > 0:  # uvicorn ends on the signal it caught: no atexit, so written as it goes
            with open(os.environ["HTTP_THREADS_GC"], "w") as out:
                out.write(repr(_gc))
if os.environ.get("HTTP_THREADS_GC"):
    gc.callbacks.append(_timed)
"""

Sample = dict[tuple[int, int], tuple[str, int, int, int, int]]  # (pid, tid): name, utime, stime, vol, invol


def sample(pid: int) -> Sample:
    """Every thread of pid's process tree: its name, user and system ticks, voluntary and involuntary switches."""
    found: Sample = {}
    for member in load_http.process_tree(pid):
        for task in Path(f"/proc/{member}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (task / "stat").read_text()
                name = stat[stat.index("(") + 1 : stat.rindex(")")]
                fields = stat.rsplit(")", 1)[1].split()
                status = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines() if ":" in line)
                label = name if member == pid else f"child:{name}"
                found[(member, int(task.name))] = (
                    label,
                    int(fields[11]),
                    int(fields[12]),
                    int(status["voluntary_ctxt_switches"]),
                    int(status["nonvoluntary_ctxt_switches"]),
                )
    return found


def difference(before: Sample, after: Sample) -> dict[str, list[int]]:
    """Per thread name: [user ticks, system ticks, voluntary, involuntary switches, threads] between samples."""
    totals: dict[str, list[int]] = {}
    for key, (name, *now) in after.items():
        then = before.get(key, (name, 0, 0, 0, 0))[1:]
        row = totals.setdefault(name, [0, 0, 0, 0, 0])
        for i, value in enumerate(now):
            row[i] += value - then[i]
        row[4] += 1
    return totals


def start(
    label: str,
    src: Path | None,
    lib: Path,
    tokens: list[str],
    scratch: Path,
    work_floor: bool,
    hook: Path,
    cpus: set[int],
) -> http_instructions.Server:
    """One server as load_http starts it, with the naming hook first on its PYTHONPATH."""
    folder = scratch / label
    folder.mkdir(parents=True)
    config = folder / "config.toml"
    config.write_text("[auth]\nrate_per_s = 100000\nburst = 100000\n", encoding="utf-8")
    port = load_http.free_port()
    path = [str(hook), str(src) if src else "", os.environ.get("PYTHONPATH", "")]
    env = {
        **os.environ,
        "SKILLSHELF_TOKENS": ",".join(f"c{i}={token}" for i, token in enumerate(tokens)),
        "SKILLSHELF_STATE_DIR": str(folder / "state"),
        "PYTHONPATH": os.pathsep.join(p for p in path if p),
        "HTTP_THREADS_GC": str(folder / "gc.txt"),
    }
    command = http_instructions.server_command(port, lib, config, work_floor)
    with (folder / "server.log").open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
    if cpus:
        os.sched_setaffinity(process.pid, cpus)
    return http_instructions.Server(label, process, f"http://127.0.0.1:{port}", folder / "unused", work_floor)


async def measure(
    server: http_instructions.Server, tokens: list[str], queries: list[dict[str, Any]], count: int
) -> dict[str, list[int]]:
    await http_instructions.ready(server, tokens[0])
    if SECONDS:  # as load_http measures: from a fresh server, the sessions' start included, for a time
        before = sample(server.process.pid)
        run = await load_http.drive(server.base, tokens, SECONDS[0], queries, False, "raw")
        after = sample(server.process.pid)
        REQUESTS.append(run.requests)
        return difference(before, after)
    ready = sample(server.process.pid)
    await asyncio.sleep(IDLE_S)
    idle = sample(server.process.pid)
    agents = [load_http.RawAgent(server.base, token, False) for token in tokens]
    for agent in agents:
        await agent.start()
    started = sample(server.process.pid)
    spy = profiler(server, "cold")
    await http_instructions.pairs(agents, queries, count)
    before = sample(server.process.pid)
    COLD.append(difference(started, before))
    stop(spy)
    spy = profiler(server, "warm")
    PHASES.append((server.label, ms(idle, ready), ms(started, idle), ms(before, started)))
    await http_instructions.pairs(agents, queries, count)
    after = sample(server.process.pid)
    stop(spy)
    for agent in agents:
        await agent.close()
    return difference(before, after)


IDLE_S = 2.0
SECONDS: list[float] = []  # with --seconds: load_http's timed drive instead of the fixed pairs
REQUESTS: list[int] = []
SPY: list[Path] = []  # with --spy: the folder py-spy's profiles go to
STRACE: list[Path] = []  # with --strace: the folder strace's counts go to
COLD: list[dict[str, list[int]]] = []


def profiler(server: http_instructions.Server, phase: str) -> subprocess.Popen[bytes] | None:
    """With --spy: py-spy sampling the server (every thread, not pausing it) until stopped; with --strace
    (the warm pass only): strace counting every thread's system calls until stopped."""
    if STRACE and phase == "warm":
        out = STRACE[0] / f"{server.label}-{'floor' if server.work_floor else 'skillshelf'}.txt"
        tracer = subprocess.Popen(
            ["strace", "-f", "-c", "-o", str(out), "-p", str(server.process.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(STRACE_ATTACH_S)  # every thread attached before the pass starts
        return tracer
    if not SPY:
        return None
    out = SPY[0] / f"{server.label}-{'floor' if server.work_floor else 'skillshelf'}-{phase}.txt"
    command = [
        "py-spy",
        "record",
        "--pid",
        str(server.process.pid),
        "--format",
        "raw",
        "--threads",
        "--nonblocking",
        "--rate",
        "200",
        "-o",
        str(out),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


STRACE_ATTACH_S = 1.0


def stop(spy: subprocess.Popen[bytes] | None) -> None:
    if spy:
        spy.send_signal(2)
        spy.wait(timeout=60)


def system_calls(path: Path, requests: int) -> str:
    """strace's summary in `path` as calls a request, the most frequent first (the ones above 0.05)."""
    rows: list[tuple[float, str]] = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
            rows.append((int(fields[3]) / requests, fields[-1]))
    rows.sort(reverse=True)
    total = sum(calls for calls, _ in rows)
    shown = ", ".join(f"{name} {calls:.2f}" for calls, name in rows if calls >= 0.05)
    return f"{total:.1f} system calls a request: {shown}"


PHASES: list[tuple[str, float, float, float]] = []


def ms(after: Sample, before: Sample) -> float:
    """Milliseconds of CPU (user and system) the tree used between two samples."""
    ticks = sum(row[0] + row[1] for row in difference(before, after).values())
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def report(label: str, totals: dict[str, list[int]], requests: int) -> None:
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    user = sum(row[0] for row in totals.values()) * tick_ms / requests
    system = sum(row[1] for row in totals.values()) * tick_ms / requests
    print(f"\n{label}: {user + system:.3f} ms a request (user {user:.3f}, sys {system:.3f})")
    print("| thread | threads | user ms/req | sys ms/req | vol. switches/req | invol./req |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (u, s, vol, invol, n) in sorted(totals.items(), key=lambda item: -(item[1][0] + item[1][1])):
        if u + s + vol + invol == 0:
            continue
        print(
            f"| {name} | {n} | {u * tick_ms / requests:.3f} | {s * tick_ms / requests:.3f} "
            f"| {vol / requests:.2f} | {invol / requests:.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="skills in the generated library")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=20, help="measured pairs a client (after as many to warm up)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--src", type=Path, action="append", help="repeatable: a src/ folder for skillshelf")
    parser.add_argument("--no-work-floor", action="store_true", help="skillshelf's trees only")
    parser.add_argument("--pin", action="store_true", help="the generator on the first core, servers on the rest")
    parser.add_argument("--seconds", type=float, help="load_http's timed drive from a fresh server instead")
    parser.add_argument("--spy", type=Path, help="py-spy's profiles of the cold and warm passes into this folder")
    parser.add_argument("--strace", type=Path, help="the warm pass's system calls (strace -c) here")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    args = parser.parse_args()
    lib = args.work / f"lib-{args.n}"
    generate.ensure_library(lib, args.n)
    queries = [q for q in generate.load_queries(lib) if q.get("answer")]
    tokens = [f"c{i}-{secrets.token_hex(12)}" for i in range(args.clients)]
    cpus = load_http.pin_generator(args.pin)
    if args.spy:
        args.spy.mkdir(parents=True, exist_ok=True)
        SPY.append(args.spy)
    if args.strace:
        args.strace.mkdir(parents=True, exist_ok=True)
        STRACE.append(args.strace)
    if args.seconds:
        SECONDS.append(args.seconds)
    sides: list[tuple[str, Path | None, bool]] = [
        (f"skillshelf {src or ''}".strip(), src, False) for src in (args.src or [None])
    ]
    sides += [] if args.no_work_floor else [("work floor", None, True)]
    requests = 2 * args.pairs * len(tokens)
    summary: dict[str, float] = defaultdict(float)  # ticks a request, summed over rounds
    with tempfile.TemporaryDirectory(prefix="skillshelf-threads-") as scratch:
        hook = Path(scratch) / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(NAMING_HOOK, encoding="utf-8")
        for number in range(args.rounds):
            for i, (label, src, floor) in enumerate(sides if number % 2 == 0 else sides[::-1]):
                server = start(f"r{number}-{i}", src, lib, tokens, Path(scratch), floor, hook, cpus)
                try:
                    totals = load_http.run_async(measure, server, tokens, queries, args.pairs)
                finally:
                    server.process.terminate()
                    server.process.wait(timeout=60)
                gc_file = Path(scratch) / f"r{number}-{i}" / "gc.txt"
                if gc_file.exists():
                    print(f"{label}: the collector over the server's life: {gc_file.read_text()}")
                if SECONDS:
                    requests = REQUESTS[-1]
                    report(f"round {number + 1}, {label}: {requests} requests in {SECONDS[0]:g} s", totals, requests)
                    summary[label] += sum(row[0] + row[1] for row in totals.values()) / requests
                    continue
                report(f"round {number + 1}, {label}, the cold pass", COLD[-1], requests)
                report(f"round {number + 1}, {label}", totals, requests)
                if STRACE:
                    kind = "floor" if floor else "skillshelf"
                    print(system_calls(STRACE[0] / f"r{number}-{i}-{kind}.txt", requests))
                _, idle, sessions, warm = PHASES[-1]
                print(
                    f"before: {idle:.0f} ms idle for {IDLE_S:g} s after ready, {sessions:.0f} ms the {len(tokens)} "
                    f"sessions' start, {warm:.0f} ms the warm-up's {requests} requests ({warm / requests:.3f} each)"
                )
                summary[label] += sum(row[0] + row[1] for row in totals.values()) / requests
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    print("\nmean over rounds, ms of server CPU a request:")
    for label, ticks in summary.items():
        print(f"  {label}: {ticks * tick_ms / args.rounds:.3f}")


if __name__ == "__main__":
    main()
