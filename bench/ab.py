"""Interleaved A/B runs of server variants over stdio, with the bare SDK's floor in the same run.

    python bench/ab.py --n 10000 --rounds 6 --out bench/results-issue20/ab-generated.json \\
        --variant own=tree --variant own-again=tree --variant sdk-stdio=tree:--sdk-stdio \\
        --variant no-freeze=tree:--no-gc-freeze --variant before=git:0eb0afb --variant floor=noop \\
        --pair own/sdk-stdio --pair own/own-again --pair own/before --pair own/no-freeze
    python bench/ab.py --generator independent --seed 11 --n 10000 ...   # bench/gen_independent.py's library

A variant is NAME=SOURCE[:SWITCH[,SWITCH]]:
- SOURCE `tree`: the skillshelf this interpreter imports (its src/ first on the server's PYTHONPATH);
  `git:REV`: REV's src/ (git archive, under --work/snap/REV) first on PYTHONPATH;
  `noop`: bench/noop_server.py, the bare SDK with no-op tools, the floor no server on the SDK can beat here;
  `replay`: bench/noop_server.py --replay, the bare SDK answering skillshelf's own answers to these queries
  (computed before it serves: the same payload, no work a call), driven like a skillshelf variant.
- SWITCHes are bench/serve_variant.py's (--sdk-stdio, --no-gc-freeze); every skillshelf variant is
  started through it, so all of them start the same way.

Each round runs every variant once, in the order given on even rounds and reversed on odd ones (ABBA), so
a drift in the machine's speed reaches every variant alike. Per variant and round:
- the official client: bench/run.py's query session (a new server, an idle wait, 5 warm-up pairs, every
  query via searchPatterns limit 10, then every answer via loadSkill), timed around `call_tool`;
- the raw JSON-RPC client: bench/raw_stdio.py's (a new server, an idle wait, 20 warm-ups and 400 searches
  cycling through the queries, 20 warm-ups and 400 loads cycling through the answers).
Both clients start the same server, as users run it: `serve --library LIB`, the file watcher on (its idle
cost, about 1.5 % of a core with its child at 10k skills, is part of what serving the library fresh costs;
the floor serves a payload fixed before it starts and has none). Until issue 36's H78 the raw client's
server ran with --no-watch and the official client's with the watcher.
The floor answers as many calls of each tool. The raw client's loads cycle twice through the answers
(the warm-ups take the last 20), so its second half are repeat loads: reported apart as
`loadSkillRepeat`. Each source gets its own hard-linked copy of the library
(an older index format would be rebuilt at every switch), indexed before round 1. Servers get a HOME and
XDG folders of their own under --work, and no SKILLSHELF_* variable.

Reported per variant, client and tool: the median over rounds of the p50 and of the p95, the median over
rounds of the p50's ratio to the floor's p50 in the same round (same client, same tool), and for each
`--pair A/B` the median and the range over rounds of A's p50 against B's in the same round, for each tool
and for a search plus a load. A pair of two identical variants (A/A) measures the noise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import StdioServerParameters

import skillshelf

try:  # imported as bench.ab (repo root on sys.path)
    from bench import gen_independent, generate, raw_stdio, run
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import gen_independent  # type: ignore[no-redef,import-not-found,unused-ignore]
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]
    import raw_stdio  # type: ignore[no-redef,import-not-found,unused-ignore]
    import run  # type: ignore[no-redef,import-not-found,unused-ignore]

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
LAUNCHER = BENCH / "serve_variant.py"
NOOP = BENCH / "noop_server.py"
RAW_CALLS = 400
TOOLS = ("searchPatterns", "loadSkill")
CLIENTS = ("official", "raw")
REPEAT = "loadSkillRepeat"  # the raw client's second pass over the answers: every load a repeat
Json = dict[str, Any]


def log(msg: str) -> None:
    print(f"[ab] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- variants


@dataclass
class Variant:
    name: str
    source: str  # "tree", "git:REV" or "noop"
    switches: list[str] = field(default_factory=list)
    commit: str | None = None  # the full commit of a git source
    src: Path | None = None  # where a git source's src/ was unpacked

    @property
    def is_floor(self) -> bool:
        return self.source == "noop"


def parse_variant(spec: str) -> Variant:
    name, sep, rest = spec.partition("=")
    parts = rest.split(":")
    cut = 2 if parts[0] == "git" else 1
    source, switches = ":".join(parts[:cut]), ",".join(parts[cut:])
    if (
        not sep
        or not name
        or not (source in ("tree", "noop", "replay") or (source.startswith("git:") and len(source) > 4))
    ):
        raise SystemExit(f"--variant {spec!r}: write NAME=tree|git:REV|noop[:SWITCH,...]")
    chosen = [s for s in switches.split(",") if s]
    unknown = [s for s in chosen if s not in ("--sdk-stdio", "--no-gc-freeze")]
    if unknown or (chosen and source in ("noop", "replay")):
        raise SystemExit(f"--variant {spec!r}: switches are --sdk-stdio and --no-gc-freeze, for skillshelf only")
    return Variant(name, source, chosen)


def unpack(variant: Variant, work: Path) -> None:
    """A git source's src/ under work/snap/COMMIT (reused when there)."""
    if not variant.source.startswith("git:"):
        return
    rev = variant.source[4:]
    verify = ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"]
    done = subprocess.run(verify, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"--variant {variant.name}: {rev!r} is not a commit of {REPO}")
    variant.commit = done.stdout.decode().strip()
    root = work / "snap" / variant.commit[:12]
    if not (root / "src" / "skillshelf").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", variant.commit, "src"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    variant.src = root / "src"


def library_for(variant: Variant, lib: Path) -> Path:
    """The library this variant serves: `lib` for this checkout, a hard-linked copy for an older one
    (its own index beside it)."""
    if variant.commit is None:
        return lib
    copy = lib.with_name(f"{lib.name}@{variant.commit[:12]}")
    if not copy.is_dir():
        subprocess.run(["cp", "-al", str(lib), str(copy)], check=True)
        shutil.rmtree(copy / ".skillshelf", ignore_errors=True)
    queries = lib.with_name(lib.name + ".queries.json")  # read by raw_stdio.tool_calls beside the copy
    shutil.copyfile(queries, copy.with_name(copy.name + ".queries.json"))
    return copy


def server_env(variant: Variant, work: Path) -> dict[str, str]:
    """A HOME and XDG folders under `work` (no user config, cache or model applies), PATH, and the
    snapshot first on the import path."""
    home = work / "home"
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
    for key, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"), ("XDG_DATA_HOME", ".local/share")):
        env[key] = str(home / sub)
    env["XDG_STATE_HOME"] = str(home / ".local/state")
    if variant.src is not None:
        env["PYTHONPATH"] = str(variant.src)
    elif variant.source == "tree":  # the checkout this interpreter imports, not whatever the venv's install points at
        env["PYTHONPATH"] = str(Path(skillshelf.__file__).resolve().parents[1])
    return env


def command(variant: Variant, lib: Path) -> list[str]:
    """The server both clients start: skillshelf as users run it (the watcher on), or the floor."""
    if variant.is_floor:
        return [sys.executable, str(NOOP)]
    if variant.source == "replay":
        return [sys.executable, str(NOOP), "--replay", str(lib)]
    return [sys.executable, str(LAUNCHER), *variant.switches, "serve", "--library", str(lib)]


# --------------------------------------------------------------------------- one session each


def series(samples: list[float], server_ms: list[float] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"p50": run.pct(samples, 50), "p95": run.pct(samples, 95), "calls": len(samples)}
    if server_ms:
        out["serverP50"] = run.pct(server_ms, 50)
    out["samples"] = [round(x, 3) for x in samples]
    return out


async def official(variant: Variant, lib: Path, work: Path, errlog: TextIO, queries: list[dict[str, str]]) -> Json:
    if variant.is_floor:
        samples = await run.floor_samples(errlog, calls=len(queries))
        return {tool: series(samples[tool]) for tool in TOOLS}
    cmd = command(variant, lib)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=server_env(variant, work))
    session = await run.query_session(lib, errlog, queries, params)
    quality = run.quality(session["ranks"], queries)
    errors = session["search"]["errors"] + session["load"]["errors"]
    return {
        "searchPatterns": series(session["search"]["client_ms"], session["search"]["server_ms"]),
        "loadSkill": series(session["load"]["client_ms"], session["load"]["server_ms"]),
        "recall@5": quality["recall@5"],
        "errors": errors[:5],
        "errorCount": len(errors),
        "settleS": session["settleS"],
        "vmHwmKb": session["vmHwmKb"],
    }


def raw(variant: Variant, lib: Path, work: Path) -> Json:
    """bench/raw_stdio.py's client; runs in a worker thread (the idle wait goes back to the loop)."""
    queries = lib.with_name(lib.name + ".queries.json")
    out: Json = {}
    failures: list[str] = []
    with raw_stdio.RawServer(command(variant, lib), server_env(variant, work)) as server:
        out["settleS"] = anyio.from_thread.run(run.settle, server.process.pid)
        for tool in TOOLS:
            calls = raw_stdio.tool_calls(queries, tool)
            samples = raw_stdio.time_calls(server, calls, RAW_CALLS, failures=failures)
            out[tool] = series(samples)
            if tool == "loadSkill" and len(calls) < RAW_CALLS:
                out[REPEAT] = series(samples[len(calls) :])
        out["vmHwmKb"] = run.vm_hwm_kb(server.process.pid)
    out["errorCount"], out["errors"] = len(failures), failures[:5]
    return out


async def prime(variant: Variant, lib: Path, work: Path, errlog: TextIO, query: str) -> None:
    """Start the variant once and search: the first search waits for its index to be built."""
    cmd = command(variant, lib)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=server_env(variant, work))
    async with run.connect(lib, errlog, params) as client:
        result = await client.call_tool("searchPatterns", {"query": query, "limit": 10})
        run.envelope_data(result)  # ShapeError when the variant does not serve this library


# --------------------------------------------------------------------------- the run


async def run_rounds(args: argparse.Namespace, lib: Path, queries: list[dict[str, str]]) -> list[Json]:
    libs = {v.name: library_for(v, lib) if not v.is_floor else lib for v in args.variants}
    logs = args.work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"ab-{lib.name}.server.log"
    with log_path.open("w", encoding="utf-8") as errlog:
        primed: set[Path] = set()
        for v in args.variants:
            if not v.is_floor and libs[v.name] not in primed:
                log(f"indexing {libs[v.name].name} with {v.name}")
                _, err = await run.guarded(
                    f"prime {v.name}",
                    log_path,
                    partial(prime, v, libs[v.name], args.work, errlog, queries[0]["query"]),
                )
                if err:
                    raise SystemExit(err)
                primed.add(libs[v.name])
        rounds = []
        for r in range(args.rounds):
            order = args.variants if r % 2 == 0 else args.variants[::-1]
            entry: Json = {"order": [v.name for v in order], "load1": os.getloadavg()[0], "results": {}}
            for v in order:
                log(f"round {r + 1}/{args.rounds}: {v.name}")
                got: Json = {}
                lib_v = libs[v.name]
                officially = partial(official, v, lib_v, args.work, errlog, queries)
                got["official"], err1 = await run.guarded(f"{v.name} official", log_path, officially)
                rawly = partial(anyio.to_thread.run_sync, raw, v, lib_v, args.work)
                got["raw"], err2 = await run.guarded(f"{v.name} raw", log_path, rawly)
                got["failures"] = [e for e in (err1, err2) if e]
                entry["results"][v.name] = got
            rounds.append(entry)
    return rounds


# --------------------------------------------------------------------------- summary


def p50s(rounds: list[Json], name: str, client: str, tool: str) -> list[float | None]:
    """The variant's p50 of `tool` with `client` in each round (None where it failed). `tool` may be
    "pair": a search's p50 plus a load's."""
    out: list[float | None] = []
    for entry in rounds:
        got = (entry["results"].get(name) or {}).get(client)
        if not got:
            out.append(None)
        elif tool == "pair":
            out.append(got["searchPatterns"]["p50"] + got["loadSkill"]["p50"])
        else:
            out.append(got[tool]["p50"])
    return out


def ratios(a: list[float | None], b: list[float | None]) -> list[float]:
    return [x / y for x, y in zip(a, b, strict=True) if x is not None and y]


def spread(values: list[float]) -> Json:
    if not values:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(args: argparse.Namespace, rounds: list[Json]) -> Json:
    floor = next((v.name for v in args.variants if v.is_floor), None)
    variants: Json = {}
    for v in args.variants:
        per: Json = {}
        for client in CLIENTS:
            for tool in (*TOOLS, REPEAT) if client == "raw" else TOOLS:
                mine = p50s(rounds, v.name, client, tool)
                p95 = [e["results"][v.name][client][tool]["p95"] for e in rounds if (e["results"][v.name].get(client))]
                key = f"{client}.{tool}"
                per[key] = {"p50": spread([x for x in mine if x is not None]), "p95": spread(p95)}
                if floor is not None:
                    per[key]["toFloor"] = spread(ratios(mine, p50s(rounds, floor, client, tool)))
        variants[v.name] = per
    pairs: Json = {}
    for a, b in args.pairs:
        pairs[f"{a}/{b}"] = {
            f"{client}.{tool}": spread(
                [x - 1 for x in ratios(p50s(rounds, a, client, tool), p50s(rounds, b, client, tool))]
            )
            for client in CLIENTS
            for tool in (*TOOLS, "pair", *((REPEAT,) if client == "raw" else ()))
        }
    return {"variants": variants, "pairs": pairs}


def report(summary: Json) -> str:
    lines = [
        "| variant | client | search p50 (ms) | search p95 | load p50 (ms) | load p95 "
        "| search p50 / floor | load p50 / floor |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, per in summary["variants"].items():
        for client in CLIENTS:
            s, ld = per[f"{client}.searchPatterns"], per[f"{client}.loadSkill"]
            cells = [
                ms(s["p50"]),
                ms(s["p95"]),
                ms(ld["p50"]),
                ms(ld["p95"]),
                times(s.get("toFloor")),
                times(ld.get("toFloor")),
            ]
            lines.append(f"| {name} | {client} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| pair (A/B: A's p50 against B's, same round) | client | search | load | search + load | repeat load |",
        "|---|---|---|---|---|---|",
    ]
    for pair, per in summary["pairs"].items():
        for client in CLIENTS:
            cells = [
                change(per[f"{client}.{tool}"]) if f"{client}.{tool}" in per else ""
                for tool in (*TOOLS, "pair", REPEAT)
            ]
            lines.append(f"| {pair} | {client} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


NUMBER_LIST = re.compile(r"\[\s*(-?[0-9][-0-9.e+]*(?:,\s*-?[0-9][-0-9.e+]*)*)\s*\]")


def compact_json(value: Any) -> str:
    """Indented JSON, with each list of numbers (the samples) on one line."""
    text = json.dumps(value, indent=1)
    return NUMBER_LIST.sub(lambda m: "[" + ", ".join(re.split(r",\s*", m.group(1))) + "]", text) + "\n"


def ms(s: Json) -> str:
    return "n/a" if s["median"] is None else f"{s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})"


def times(s: Json | None) -> str:
    return "n/a" if not s or s["median"] is None else f"{s['median']:.2f}x ({s['min']:.2f}-{s['max']:.2f})"


def change(s: Json) -> str:
    return "n/a" if s["median"] is None else f"{s['median']:+.1%} ({s['min']:+.1%} to {s['max']:+.1%})"


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="library size (default 10,000)")
    ap.add_argument("--generator", choices=("skillshelf", "independent"), default="skillshelf")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--doc-kb", type=float, default=3.2, help="mean document size for --generator independent")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--variant", action="append", required=True, help="NAME=tree|git:REV|noop|replay[:SWITCH,...]")
    ap.add_argument("--pair", action="append", default=[], help="A/B: two variant names to compare per round")
    ap.add_argument("--work", type=Path, default=Path("/tmp/skillshelf-ab"), help="libraries, snapshots, logs")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.variants = [parse_variant(s) for s in args.variant]
    names = [v.name for v in args.variants]
    if len(set(names)) != len(names):
        ap.error("variant names must differ")
    args.pairs = [tuple(p.split("/", 1)) for p in args.pair]
    bad = [p for p, pair in zip(args.pair, args.pairs, strict=True) if len(pair) != 2 or not set(pair) <= set(names)]
    if bad:
        ap.error(f"--pair {bad[0]!r}: write A/B with two of {names}")
    if args.work.resolve().is_relative_to(REPO):
        ap.error("--work must be outside the repository")
    return args


async def amain(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    for v in args.variants:
        unpack(v, args.work)
    if args.generator == "independent":
        lib = args.work / f"ind-{args.n}-{args.doc_kb:g}kb"
        manifest = gen_independent.ensure_library(lib, args.n, args.seed, args.doc_kb, args.queries)
        queries = gen_independent.load_queries(lib)[: args.queries]
    else:
        lib = args.work / f"lib-{args.n}"
        manifest = generate.ensure_library(lib, args.n, args.seed, args.queries)
        queries = generate.load_queries(lib)[: args.queries]
    rounds = await run_rounds(args, lib, queries)
    summary = summarise(args, rounds)
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": run.machine(),
        "server": run.server_version(),
        "variants": [
            {"name": v.name, "source": v.source, "commit": v.commit, "switches": v.switches} for v in args.variants
        ],
        "library": {"path": str(lib), "generator": args.generator, "manifest": manifest},
        "summary": summary,
        "rounds": rounds,
        "wallClockS": time.perf_counter() - started,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(compact_json(result), encoding="utf-8")
    print(report(summary))
    log(f"done in {result['wallClockS']:.0f}s; raw figures in {args.out}")
    failed = any(
        got["failures"] or (got["official"] or {}).get("errorCount") or (got["raw"] or {}).get("errorCount")
        for e in rounds
        for got in e["results"].values()
    )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    return anyio.run(amain, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
