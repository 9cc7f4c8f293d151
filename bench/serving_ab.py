"""The serving path around a call at this checkout against an older commit's, interleaved in one process.

    python bench/serving_ab.py --parent 42d25ad          # issue 36's serving cuts (H42) against their parent
    python bench/serving_ab.py --parent feaf0c6 --library /tmp/ab/lib-10000 --first 2000   # bench/ab.py's library
    python bench/serving_ab.py --parent d19e0e7 --library /tmp/lib-copy --require-verified   # the approval gate

With `--require-verified` every skill of the library (a copy: its lock is written) is approved first and the loads
read through a reader with the approval gate, this checkout's `library/access/reader.py` and `approved.py` against
the parent's (in-process figures only: the server's reader is this checkout's).

Over the real corpora (bench/eval_corpora.py's CORPORA), words only. The parent's `skills/service.py`,
`server/tooling.py` and the methods of `library/access/files.py`'s `SkillFiles` are read from git and
loaded beside this checkout's; the rest of the code is this checkout's. Each variant keeps its own file
cache. Figures are CPU time of the process (time.process_time, less disturbed than wall time by the other
work of a shared machine), the median of the rounds, the variants alternating in ABBA order:

- first load: `load_for_agent` of every skill with an emptied file cache;
- repeat load: `load_for_agent` of one skill, `--calls` times;
- loadSkill / searchPatterns calls through the in-process official client (`Client(server)`: both ends in
  this process, so the client's own work is in the figure too; the difference is the server's).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
from mcp import Client

from skillshelf.library.access import approved, reader
from skillshelf.library.access.files import SkillFiles
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.indexing.filecache import FileCache
from skillshelf.library.skill.digest import skill_digest
from skillshelf.library.sources.approval import library_path
from skillshelf.library.sources.lock import Approval, LocalApproval, Lock, lock_path, write_lock
from skillshelf.server import tooling, views
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from skillshelf.skills import service

try:
    from bench.eval_corpora import CORPORA
except ImportError:  # run as a script: bench/ is on sys.path
    from eval_corpora import CORPORA  # type: ignore[no-redef,import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parents[1]
ONE = "wshobson__agents/nodejs-backend-patterns"  # the corpora's skill a repeat load loads


def calls_for(one: str) -> dict[str, dict[str, Any]]:
    return {"loadSkill": {"skillId": one}, "searchPatterns": {"query": "node backend express api", "limit": 5}}


def module_at(rev: str, path: str, name: str, into: Path) -> ModuleType:
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True, capture_output=True)
    file = into / f"{name}.py"
    file.write_bytes(source.stdout)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def service_at(rev: str, into: Path) -> ModuleType:
    """The parent's skill service: skills/service.py since issue 32, patterns/service.py before it (its
    imports of `skillshelf.patterns` then resolve to this checkout's `skillshelf.skills`)."""
    try:
        return module_at(rev, "src/skillshelf/skills/service.py", "parent_service", into)
    except subprocess.CalledProcessError:
        for name in ("", ".minify", ".models"):
            sys.modules.setdefault(f"skillshelf.patterns{name}", importlib.import_module(f"skillshelf.skills{name}"))
        return module_at(rev, "src/skillshelf/patterns/service.py", "parent_service", into)


class Variants:
    """Switches the process between this checkout's serving path and the parent's."""

    def __init__(
        self, library: SkillLibrary, parent_service: ModuleType, parent_tooling: ModuleType, parent_files: ModuleType
    ) -> None:
        self.library = library
        self.loads = {"this": service.load_for_agent, "parent": parent_service.load_for_agent}
        self.runs = {"this": tooling.run_tool, "parent": parent_tooling.run_tool}
        self.caches = {"this": FileCache(), "parent": FileCache()}
        self.files = {"this": methods(SkillFiles), "parent": methods(parent_files.SkillFiles)}

    def use(self, name: str) -> Callable[..., Any]:
        self.library.files = self.caches[name]
        for member in self.files["this"].keys() | self.files["parent"].keys():  # the readers' SkillFiles
            if member in self.files[name]:
                setattr(SkillFiles, member, self.files[name][member])
            elif hasattr(SkillFiles, member):
                delattr(SkillFiles, member)
        setattr(service, "load_for_agent", self.loads[name])  # noqa: B010 (what the tools call)
        setattr(views, "run_tool", self.runs[name])  # noqa: B010
        load: Callable[..., Any] = self.loads[name]
        return load


def methods(cls: type) -> dict[str, Any]:
    """The functions a class defines itself, by name."""
    return {name: value for name, value in vars(cls).items() if callable(value) and not name.startswith("__")}


def timed(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def each(load: Callable[..., Any], reader: LibraryReader, ids: list[str]) -> None:
    for skill_id in ids:
        load(reader, skill_id)


def readers_at(rev: str, into: Path, library: SkillLibrary, verified: bool) -> dict[str, Any]:
    """This checkout's reader and the parent's: the curator's (no gate), or with require_verified's gate."""
    parent_approved = module_at(rev, "src/skillshelf/library/access/approved.py", "parent_approved", into)
    parent_reader = module_at(rev, "src/skillshelf/library/access/reader.py", "parent_reader", into)

    def made(reader_module: ModuleType, approved_module: ModuleType) -> Any:
        if not verified:
            return reader_module.LibraryReader(library)
        return reader_module.ViewReader(library, (), approved_module.ApprovalGate(library, verified=True, signed=False))

    return {"this": made(reader, approved), "parent": made(parent_reader, parent_approved)}


def approve_all(library: SkillLibrary) -> None:
    """Approve every skill of the (single-root) library as `skillshelf approve` records it, written at once
    (`approve` finds each id by a walk of the whole library: quadratic at 10,000 skills)."""
    root, approved = library.roots[0], {}
    for skill in library.overview():
        path = library_path(skill.details.doc_file, skill.layout)
        digest = skill_digest(root, path)
        assert digest is not None
        approved[skill.id] = LocalApproval(
            skill.id, path, Approval(digest, "bench@example.org", "2026-11-29T00:00:00Z")
        )
    write_lock(lock_path(root), Lock(approved=approved))


def in_process(
    variants: Variants, readers: dict[str, Any], rounds: int, calls: int, one: str, first: int | None
) -> dict[str, dict[str, float]]:
    library = variants.library
    ids = [skill.id for skill in library.overview()][:first]
    spent: dict[str, dict[str, list[float]]] = {v: {"first load": [], "repeat load": []} for v in ("this", "parent")}
    for name in ("this", "parent"):  # the gate's first answer (a digest of every skill) is not a load's cost
        readers[name].overview()
    for r in range(rounds):
        for name in ("this", "parent") if r % 2 == 0 else ("parent", "this"):
            reader = readers[name]
            load = variants.use(name)
            library.files.clear()
            spent[name]["first load"].append(timed(partial(each, load, reader, ids)) / len(ids))
            spent[name]["repeat load"].append(timed(partial(each, load, reader, [one] * calls)) / calls)
    return {v: {k: statistics.median(t) * 1000 for k, t in kinds.items()} for v, kinds in spent.items()}


async def through_client(
    variants: Variants, library: SkillLibrary, rounds: int, calls: int, home: Path, one: str
) -> Any:
    server = build_server(Settings(roots=library.roots, cache_dir=home / "cache"), library)
    wanted = calls_for(one)
    spent: dict[str, dict[str, list[float]]] = {v: {t: [] for t in wanted} for v in ("this", "parent")}
    async with Client(server, raise_exceptions=True) as client:
        for name in ("this", "parent"):
            variants.use(name)
            for tool, args in wanted.items():
                for _ in range(20):
                    await client.call_tool(tool, args)
        for r in range(rounds):
            for name in ("this", "parent") if r % 2 == 0 else ("parent", "this"):
                variants.use(name)
                for tool, args in wanted.items():
                    started = time.process_time()
                    for _ in range(calls):
                        await client.call_tool(tool, args)
                    spent[name][tool].append((time.process_time() - started) / calls)
    return {v: {k: statistics.median(t) * 1000 for k, t in kinds.items()} for v, kinds in spent.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parent", required=True, help="the commit to compare against")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--library", type=Path, default=CORPORA, help="another library (e.g. bench/ab.py's lib-10000)")
    ap.add_argument("--first", type=int, help="first loads of this many skills a round (default: every skill)")
    ap.add_argument("--require-verified", action="store_true", help="approve every skill, read through the gate")
    args = ap.parse_args(argv)
    if not args.library.is_dir():
        print(f"library not found at {args.library}", file=sys.stderr)
        return 2
    if args.require_verified and args.library == CORPORA:
        print("--require-verified writes the library's lock: give a copy with --library", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["HOME"] = str(home / "home")  # no user config or cache is read
        parent_service = service_at(args.parent, home)
        parent_tooling = module_at(args.parent, "src/skillshelf/server/tooling.py", "parent_tooling", home)
        parent_files = module_at(args.parent, "src/skillshelf/library/access/files.py", "parent_files", home)
        library = SkillLibrary(LibraryConfig(roots=[args.library], index_dir=home / "index", watch=False))
        try:
            library.sync()
            if args.require_verified:
                approve_all(library)
            one = ONE if args.library == CORPORA else library.overview()[0].id
            variants = Variants(library, parent_service, parent_tooling, parent_files)
            readers = readers_at(args.parent, home, library, args.require_verified)
            figures = in_process(variants, readers, args.rounds, args.calls, one, args.first)
            called = (
                {"this": {}, "parent": {}}
                if args.require_verified
                else anyio.run(through_client, variants, library, args.rounds, args.calls // 2, home, one)
            )
        finally:
            library.close()
    gate = ", require_verified" if args.require_verified else ""
    print(f"CPU ms, median of {args.rounds} rounds; parent {args.parent}{gate}")
    print("| measure | parent | this | this / parent |")
    print("|---|---|---|---|")
    for kinds in (figures, called):
        for kind in kinds["this"]:
            this, parent = kinds["this"][kind], kinds["parent"][kind]
            print(f"| {kind} | {parent:.3f} | {this:.3f} | {this / parent:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
