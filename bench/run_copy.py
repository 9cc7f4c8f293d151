"""What running from a copy of the approved files costs (require_verified; docs/security.md, "How a run happens").

    python bench/run_copy.py --library /tmp/h90/corpora [--rounds 3] [--runs 20]

Two measures, in one process, the variants interleaved (ABBA):

- the step per skill, over every skill of `--library` (a copy: its lock is written, every skill approved first): the
  parent's last check before a run (`ApprovalGate.check`: an lstat per entry, the digest again only when one changed)
  against this checkout's (`ApprovalGate.copy_for_run`: the same check, then every file read once, hashed and written
  into a fresh folder). Wall time per skill, the median of the rounds; the folder is removed outside the timing.
- a run's start to its answer, `--runs` times each: a small script skill (five files) with the gate off (it runs
  from the library, as before), on as the parent ran it (the last check, then from the library: `ParentStep`) and on
  (from its copy), unsandboxed and in bubblewrap when it works here.

The temporary folders (the runs' working folders and copies) are where TMPDIR says: run it again with
`TMPDIR=/dev/shm` to see what the file system's own cost is.

Nothing here asserts on time: it only measures. Timings on a shared machine are noisy; compare within one run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from skillshelf.execution import sandbox, service
from skillshelf.library.access.approved import ApprovalGate
from skillshelf.library.access.reader import LibraryReader, ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.sources.approval import approve
from skillshelf.library.sources.lock import Lock
from skillshelf.settings import ExecutionSettings

APPROVED_AT = "2026-11-29T09:15:02Z"


def opened(root: Path, index: Path) -> SkillLibrary:
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=index, watch=False))
    library.sync()
    return library


def approved_gate(root: Path, library: SkillLibrary) -> ApprovalGate:
    ids = tuple(skill.id for skill in library.overview())
    approve(root, Lock(), ids, "bench@example.org", APPROVED_AT)
    library.mark_dirty()
    gate = ApprovalGate(library, verified=True, signed=False)
    gate.hidden()
    return gate


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def step_per_skill(
    gate: ApprovalGate, skills: list[IndexedSkill], scratch: Path, rounds: int
) -> dict[str, list[float]]:
    """Per skill, the median over `rounds` of each variant's wall time (ABBA within a round)."""
    found: dict[str, list[list[float]]] = {"check": [[] for _ in skills], "copy": [[] for _ in skills]}

    def copy(index: int, skill: IndexedSkill) -> None:
        into = Path(tempfile.mkdtemp(dir=scratch))
        found["copy"][index].append(timed(lambda: gate.copy_for_run(skill, lambda: into)))
        shutil.rmtree(into)

    for _ in range(rounds):
        for index, skill in enumerate(skills):
            found["check"][index].append(timed(lambda: gate.check(skill)))  # noqa: B023 (called at once)
            copy(index, skill)
            copy(index, skill)
            found["check"][index].append(timed(lambda: gate.check(skill)))  # noqa: B023
    return {name: [statistics.median(times) for times in per_skill] for name, per_skill in found.items()}


class ParentStep(ViewReader):
    """The parent's last step before a run under the gate: the check (`confirm_served`), and the library's files."""

    def run_copy(self, skill: IndexedSkill, into: Callable[[], Path]) -> Path | None:
        self.visibility.served(skill)
        return None


def tool_library(root: Path) -> None:
    skill = root / "run" / "tool"
    (skill / "scripts").mkdir(parents=True)
    (skill / "data").mkdir()
    (skill / "SKILL.md").write_text("---\nname: tool\ndescription: Reads its own files.\n---\n# Tool\n")
    (skill / "scripts" / "helper.py").write_text("VALUE = 'approved'\n")
    (skill / "data" / "value.txt").write_text("data\n")
    (skill / "README.md").write_text("# Tool\n\nA small script skill.\n")
    (skill / "scripts" / "main.py").write_text("import helper\nprint(helper.VALUE)\n")


def run_starts(scratch: Path, runs: int, bubblewrap: bool) -> dict[str, float]:
    """The median wall time of a run, gate off, on as the parent ran it and on, `runs` times each (ABCCBA)."""
    root = scratch / "tool-library"
    tool_library(root)
    library = opened(root, scratch / "tool-index")
    gate = approved_gate(root, library)
    readers = {
        "off": LibraryReader(library),
        "parent": ParentStep(library, (), gate),
        "on": ViewReader(library, (), gate),
    }
    settings = ExecutionSettings(enabled=True, timeout_s=20, bubblewrap=bubblewrap)
    times: dict[str, list[float]] = {name: [] for name in readers}

    async def one(name: str) -> None:
        started = time.perf_counter()
        await service.execute_skill(readers[name], settings, "run/tool", {}, script="scripts/main.py")
        times[name].append(time.perf_counter() - started)

    async def every() -> None:
        for name, values in times.items():  # warm-up
            await one(name)
            values.clear()
        for _ in range(runs // 2):
            for name in ("off", "parent", "on", "on", "parent", "off"):
                await one(name)

    try:
        anyio.run(every)
    finally:
        library.close()
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--library", type=Path, required=True, help="a copy of a library (its lock is written)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skillshelf-bench-copy-") as folder:
        scratch = Path(folder)
        library = opened(args.library, scratch / "index")
        try:
            gate = approved_gate(args.library, library)
            skills = [skill for skill in library.overview() if skill.id not in gate.hidden()]
            step = step_per_skill(gate, skills, scratch, args.rounds)
        finally:
            library.close()
        print(f"{len(skills)} skills of {args.library}, the step before a run (ms per skill):")
        print("| step | median | p90 | max |\n|---|---|---|---|")
        for label, name in (("parent: check", "check"), ("this: check + copy", "copy")):
            ordered = sorted(step[name])
            p90 = ordered[int(len(ordered) * 0.9)]
            print(f"| {label} | {statistics.median(ordered) * 1e3:.3f} | {p90 * 1e3:.3f} | {ordered[-1] * 1e3:.3f} |")
        print("\na run's start to its answer (ms, median):")
        print(
            "| isolation | gate off | gate on, parent | gate on, this (copy) | this / parent |\n|---|---|---|---|---|"
        )
        kinds = [False] + ([True] if sandbox.isolation(True).sandboxed else [])
        for bubblewrap in kinds:
            got = run_starts(scratch / ("bwrap" if bubblewrap else "plain"), args.runs, bubblewrap)
            label = "bubblewrap" if bubblewrap else "rlimits-only"
            figures = " | ".join(f"{got[name] * 1e3:.1f}" for name in ("off", "parent", "on"))
            print(f"| {label} | {figures} | {got['on'] / got['parent']:.2f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
