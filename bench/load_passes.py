"""Instructions of a first pass of loads against repeat passes, per thread, counted by valgrind's callgrind.

    python bench/load_passes.py --work /tmp/ab                       # bench/ab.py's generated library (lib-10000)
    python bench/load_passes.py --work /tmp/ab --src /tmp/old/src    # another tree's src/, first on PYTHONPATH
    python bench/load_passes.py --work /tmp/ab --floor               # the bare SDK replaying the same answers

One process serves `skillshelf serve`'s server (App(settings).server(), the watcher off) to the in-process official
client (`Client(server)`), under `valgrind --tool=callgrind --separate-threads=yes --dump-before=getppid`: each
`os.getppid()` (on the event loop's thread, then on the worker thread the tools run on) closes a dump, so every pass
of `--calls` loads (each query's answer, bench/ab.py's queries) is counted apart, per thread. The first pass loads
each skill for the first time (what bench/ab.py's official client times), the next two repeat it. A count is the
process's own whatever else the machine runs. Under callgrind a start at 10k skills takes minutes. With `--floor`
the server is bench/noop_server.py's replay floor (bench/ab.py's `replay`: every answer computed before it serves).
Nothing here asserts on anything: it only measures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PASSES = ("first", "second", "third")
SUMMARY = re.compile(r"^summary: (\d+)$", re.MULTILINE)
PART_THREAD = re.compile(r"^part: (\d+)\nthread: (\d+)$", re.MULTILINE)


async def serve(lib: Path, calls: int, settle: float, floor: bool) -> None:
    """The workload (run under callgrind): a settled server, then PASSES passes of `calls` loads."""
    import anyio
    from mcp import Client

    from skillshelf.server.app import App
    from skillshelf.settings import Settings

    try:
        from bench import noop_server
    except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
        import noop_server  # type: ignore[no-redef,import-not-found,unused-ignore]

    queries = json.loads(lib.with_name(lib.name + ".queries.json").read_text(encoding="utf-8"))["queries"]
    arguments = [{"skillId": q["answer"]} for q in queries[:calls]]
    app = App(Settings(roots=[lib], watch=False))
    async with Client(noop_server.build_replaying(str(lib)) if floor else app.server()) as client:
        await client.call_tool("searchPatterns", {"query": "warm up", "limit": 10})
        await anyio.sleep(settle)  # the start-up check of the library runs meanwhile
        for _ in PASSES:
            os.getppid()  # a dump of the loop's thread: what came before this pass
            await anyio.to_thread.run_sync(os.getppid)  # and of the worker thread
            for args in arguments:
                await client.call_tool("loadSkill", args)
        os.getppid()
        await anyio.to_thread.run_sync(os.getppid)
    app.close()


def counted(folder: Path) -> dict[int, list[int]]:
    """Per thread, the instructions of each dump callgrind wrote, in order."""
    parts: dict[int, list[tuple[int, int]]] = {}
    for dump in folder.glob("callgrind.out.*"):
        text = dump.read_text(encoding="utf-8", errors="replace")
        where, total = PART_THREAD.search(text), SUMMARY.search(text)
        if where and total:
            parts.setdefault(int(where.group(2)), []).append((int(where.group(1)), int(total.group(1))))
    return {thread: [n for _, n in sorted(found)] for thread, found in parts.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="bench/ab.py's --work folder")
    ap.add_argument("--n", type=int, default=10_000, help="the library's size (its folder: lib-N)")
    ap.add_argument("--src", type=Path, help="a src/ folder to serve (default: the one this interpreter imports)")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--settle", type=float, default=40.0, help="seconds the server idles before the passes")
    ap.add_argument("--floor", action="store_true", help="serve bench/noop_server.py's replay floor instead")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the workload, under callgrind
    args = ap.parse_args(argv)
    lib = args.work / f"lib-{args.n}"
    if args.serve:
        import anyio

        anyio.run(serve, lib, args.calls, args.settle, args.floor)
        return 0
    import skillshelf

    src = args.src or Path(skillshelf.__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(src), "HOME": out}  # no user config, cache or call log of the user's
        command = [
            "valgrind", "--tool=callgrind", "--separate-threads=yes", "--dump-before=getppid",
            f"--callgrind-out-file={out}/callgrind.out", sys.executable, __file__, "--serve",
            "--work", str(args.work), "--n", str(args.n), "--calls", str(args.calls), "--settle", str(args.settle),
            *(["--floor"] if args.floor else []),
        ]  # fmt: skip
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        threads = counted(Path(out))
    served = "the replay floor" if args.floor else "skillshelf"
    print(f"instructions a load (millions), {args.calls} loads a pass, {served}, src {src}")
    print("| thread | " + " | ".join(PASSES) + " |")
    print("|---|" + "---|" * len(PASSES))
    for thread, dumps in sorted(threads.items()):
        passes = dumps[1 : 1 + len(PASSES)]  # the first dump is the start
        if len(passes) == len(PASSES):
            print(f"| {thread} | " + " | ".join(f"{n / args.calls / 1e6:.3f}" for n in passes) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
