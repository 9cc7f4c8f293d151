"""skillshelf's first index of a library against a tantivy index built from the same files, in one run (issue 36).

    python bench/index_build.py [--n 1000 --n 10000 [--n 100000]] [--rounds 3] [--work DIR] [--out FILE]
    python bench/index_build.py --n 10000 --profile          # cProfile of skillshelf's first sync, in one process
    python bench/index_build.py --n 10000 --once             # one skillshelf build, its seconds (for an A/B)
    python bench/index_build.py --n 1000 --baseline parent=/tmp/parent/src   # and another tree's build, same rounds
    python bench/index_build.py --n 1000 --parse 3           # parse CPU alone, in one process, min of 3 passes
    python bench/index_build.py --parse 3 --library DIR [--library DIR2]   # the same over real roots

For each size: generate (or reuse) the synthetic library (bench/generate.py), then, every round, in an order
that alternates round by round:

- `skillshelf`: the server's first start: a `SkillLibrary` on an empty index folder, `sync()` (discovery,
  reading and parsing every skill on the worker processes it uses, the SQLite/FTS5 writes), then closed;
- `tantivy` (the `tantivy` package; not a dependency): every `.md` file under the library read, its
  frontmatter split with a plain string split and loaded with yaml's `CSafeLoader` for `name` and
  `description`, and name, description and body indexed (tantivy's default tokenizer; its writer's default
  threads), committed and merged. It does less than skillshelf (no findings, no quality, no scan, no
  headings), which is what makes it a floor.

Each round gives both times, wall and CPU (skillshelf's parsing workers included; tantivy's writer threads
included); the report is the median over rounds of each and of the per-round ratio skillshelf / tantivy.
The CPU ratio is the one a loaded machine does not bend: skillshelf's workers run at nice 10, so on a busy
machine its wall time also waits for other processes' work.

`--profile` runs skillshelf's sync in this process alone (no worker processes, so cProfile sees the
parsing) and prints the functions by cumulative and by own time. `--once` builds once and prints the wall
and CPU seconds of the build (the workers' start-up and imports included): an A/B of two trees runs it
with each tree's src/ first on PYTHONPATH, alternately. Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.sync import parse_sources
from skillshelf.library.indexing import parallel
from skillshelf.library.skill.discovery import discover
from skillshelf.library.skill.reading import DEFAULT_MAX_FILE_BYTES

try:  # imported as bench.index_build (repo root on sys.path)
    from bench import generate
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]

LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def log(msg: str) -> None:
    print(f"[index-build] {msg}", file=sys.stderr, flush=True)


def skillshelf_build(lib: Path) -> tuple[float, float]:
    """(wall, CPU) seconds for the first sync of `lib` into an empty index folder, as a server's first start
    does it; the CPU is this process's and its parsing workers' (they have exited when it returns)."""
    with tempfile.TemporaryDirectory(prefix="skillshelf-index-build-") as index_dir:
        started, cpu = time.perf_counter(), cpu_seconds()
        library = SkillLibrary(LibraryConfig(roots=[lib], index_dir=Path(index_dir), watch=False))
        try:
            library.sync()
        finally:
            library.close()
        return time.perf_counter() - started, cpu_seconds() - cpu


def split_document(text: str, fallback_name: str) -> tuple[str, str, str]:
    """(name, description, body): frontmatter split on its `---` lines, loaded with libyaml."""
    if text.startswith("---\n"):
        end = text.find("\n---", 3)
        if end != -1:
            meta = yaml.load(text[4:end], Loader=LOADER)  # CSafeLoader: the safe loader, in C
            body = text[end + 4 :]
            if isinstance(meta, dict):
                return str(meta.get("name") or fallback_name), str(meta.get("description") or ""), body
            return fallback_name, "", body
    return fallback_name, "", text


def tantivy_build(lib: Path) -> tuple[float, float]:
    """(wall, CPU) seconds to read and split every `.md` under `lib` and build a tantivy index of name,
    description and body (the CPU of every thread of this process: tantivy's writer threads included)."""
    import tantivy  # type: ignore[import-not-found,unused-ignore]

    started, cpu = time.perf_counter(), cpu_seconds()
    builder = tantivy.SchemaBuilder()
    for field in ("name", "description", "body"):
        builder.add_text_field(field, stored=False)
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=200_000_000)
    for folder, dirs, files in os.walk(lib):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for file in files:
            if file.endswith(".md"):
                text = Path(folder, file).read_text(encoding="utf-8")
                name, description, body = split_document(text, file[:-3])
                writer.add_document(tantivy.Document(name=name, description=description, body=body))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return time.perf_counter() - started, cpu_seconds() - cpu


def build_elsewhere(lib: Path, src: Path) -> tuple[float, float]:
    """`skillshelf_build` in a new process with `src` first on its import path (another tree: `--baseline`)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, __file__, "--work", str(lib.parent), "--n", lib.name.removeprefix("lib-"), "--once"]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    fields = dict(part.split("=") for part in out.split())
    return float(fields["wall"]), float(fields["cpu"])


def measure(lib: Path, n: int, rounds: int, baselines: dict[str, Path]) -> dict[str, Any]:
    """Every build once per round, the order reversed every other round; with baselines, every skillshelf
    build (this tree's too) runs in a new process the same way."""
    builds: dict[str, Callable[[Path], tuple[float, float]]] = {"skillshelf": skillshelf_build}
    if baselines:
        builds["skillshelf"] = partial(build_elsewhere, src=Path(__file__).resolve().parents[1] / "src")
        builds.update({name: partial(build_elsewhere, src=src) for name, src in baselines.items()})
    builds["tantivy"] = tantivy_build
    for build in builds.values():  # warm-up: the page cache, imports
        build(lib)
    per_round: list[dict[str, tuple[float, float]]] = []
    for number in range(rounds):
        order = list(builds) if number % 2 == 0 else list(reversed(builds))
        times = {name: builds[name](lib) for name in order}
        log(f"n={n} round {number + 1}: " + ", ".join(f"{k} {w:.2f} s (CPU {c:.2f} s)" for k, (w, c) in times.items()))
        per_round.append(times)
    result: dict[str, Any] = {"n": n, "rounds": rounds}
    for what, at in (("wall", 0), ("cpu", 1)):
        result[f"median_{what}_s"] = {k: round(statistics.median(r[k][at] for r in per_round), 3) for k in builds}
        result[f"{what}_ratio"] = {
            k: round(statistics.median(r[k][at] / r["tantivy"][at] for r in per_round), 2)
            for k in builds
            if k != "tantivy"
        }
        for name in baselines:  # this tree against each baseline, per round
            ratios = [r["skillshelf"][at] / r[name][at] for r in per_round]
            result[f"{what}_skillshelf_to_{name}"] = round(statistics.median(ratios), 3)
    result["per_round_s"] = [{k: [round(w, 3), round(c, 3)] for k, (w, c) in r.items()} for r in per_round]
    return result


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the parsing workers): the work, whatever the load."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def parse_cpu(libs: list[Path], passes: int) -> float:
    """The least CPU seconds, over `passes`, of parsing every skill of `libs` here (no workers, no writes)."""
    sources = discover(libs).sources
    parallel.PARALLEL_THRESHOLD = sys.maxsize  # as a sync parses, but in this process
    best = math.inf
    for _ in range(passes):
        started = time.process_time()
        for _parsed in parse_sources(sources, DEFAULT_MAX_FILE_BYTES):
            pass
        best = min(best, time.process_time() - started)
    return best


def profile(lib: Path, top: int) -> None:
    """cProfile of one first sync with the parsing in this process (the pool's threshold raised past N)."""
    parallel.PARALLEL_THRESHOLD = sys.maxsize
    profiler = cProfile.Profile()
    profiler.enable()
    seconds, _cpu = skillshelf_build(lib)
    profiler.disable()
    print(f"first sync in one process under cProfile: {seconds:.2f} s")
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    path = Path(tempfile.gettempdir()) / "index_build.prof"
    profiler.dump_stats(str(path))
    print(f"(the whole profile: {path}; pstats reads it)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, action="append", help="skills (repeatable); default 1,000 and 10,000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-bench")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--profile", action="store_true", help="cProfile skillshelf's sync instead (one process)")
    parser.add_argument("--top", type=int, default=40, help="functions listed by --profile")
    parser.add_argument("--once", action="store_true", help="one skillshelf build only, its seconds printed (A/B)")
    parser.add_argument("--parse", type=int, metavar="PASSES", help="parse CPU only, in this process: min of PASSES")
    parser.add_argument(
        "--library", type=Path, action="append", help="with --parse: these roots (repeatable), not a generated one"
    )
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="NAME=SRC",
        help="also build with another tree's src/ (e.g. parent=/tmp/parent/src, from `git archive REV src`)",
    )
    args = parser.parse_args(argv)
    sizes = args.n or [1000, 10000]
    if args.parse and args.library:
        print(f"parse_cpu={parse_cpu(args.library, args.parse):.3f}")
        return 0
    results = []
    for n in sizes:
        lib = args.work / f"lib-{n}"
        generate.ensure_library(lib, n)
        if args.profile:
            profile(lib, args.top)
            continue
        if args.parse:
            print(f"parse_cpu={parse_cpu([lib], args.parse):.3f}")
            continue
        if args.once:
            seconds, cpu = skillshelf_build(lib)
            print(f"wall={seconds:.3f} cpu={cpu:.3f}")
            continue
        baselines = {name: Path(src) for name, src in (b.split("=", 1) for b in args.baseline)}
        results.append(measure(lib, n, args.rounds, baselines))
    for r in results:
        print(f"\n{r['n']:,} skills, medians over {r['rounds']} rounds:")
        print("| build | wall s | / tantivy | CPU s | / tantivy |\n|---|---:|---:|---:|---:|")
        for name, wall in r["median_wall_s"].items():
            ratios = ("", "") if name == "tantivy" else (f"{r['wall_ratio'][name]}x", f"{r['cpu_ratio'][name]}x")
            print(f"| {name} | {wall} | {ratios[0]} | {r['median_cpu_s'][name]} | {ratios[1]} |")
        for key in (k for k in r if "_skillshelf_to_" in k):
            print(f"{key}: {r[key]}")
    if args.out:
        machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()}
        args.out.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
