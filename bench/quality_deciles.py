"""Does the quality score tell skills apart? Per decile of the library's quality over ../shared/corpora (972
real skills): mean quality, the share an agent cannot reach by the skill's own description (not in the top
5) and the share it does not rank first, the share in a collision, errors and warnings per skill, and the
share whose description says when to use it.

    python bench/quality_deciles.py                               # the library's quality (with findability)
    python bench/quality_deciles.py --dump-scores /tmp/q.json     # only write each skill's index-time score
    python bench/quality_deciles.py --compare /tmp/q.json         # also the deciles of those scores, same run

--dump-scores reads only what every version stores (each skill's index-time score), so it runs against an
older tree (PYTHONPATH=<old>/src) and --compare then ranks the same skills, with the same findability and
findings, by the older scores. Words only (findability as `check --findability` works it out); the index
is built in a temporary directory; the corpora are only read.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path, PurePosixPath

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import IndexedSkill

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump-scores", type=Path, help="write {id: index-time score} and stop")
    parser.add_argument("--compare", type=Path, help="also rank by the scores a --dump-scores run wrote")
    args = parser.parse_args()
    if not CORPORA.is_dir():
        print(f"corpora not found at {CORPORA}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        library = SkillLibrary(LibraryConfig(roots=[CORPORA], index_dir=Path(tmp), watch=False))
        library.sync()
        try:
            skills = library.overview()
            if args.dump_scores:
                args.dump_scores.write_text(json.dumps({s.id: s.quality for s in skills}), encoding="utf-8")
                return 0
            _report(LibraryReader(library), skills, args.compare)
        finally:
            library.close()
    return 0


def _report(reader: LibraryReader, skills: list[IndexedSkill], compare: Path | None) -> None:
    from skillshelf.library.skill.quality import says_when
    from skillshelf.metrics.quality_spread import library_quality
    from skillshelf.skills.evals import library_findability

    started = time.perf_counter()
    found = library_findability(reader)
    print(f"{len(skills)} skills; findability in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    unreachable = {u.id for u in found.unreachable}
    second = {i for i, rank in found.own_ranks.items() if rank is not None and 1 < rank <= 5}
    colliding = {i for pair in found.collisions for i in pair.skills}
    findings = _findings_per_skill(reader, skills)
    facts: dict[str, tuple[bool, bool, bool, int, bool]] = {}
    for s in skills:
        when = says_when(s.details.description)
        facts[s.id] = (s.id in unreachable, s.id in second, s.id in colliding, findings[s.id], when)
    scores = library_quality(skills, found)
    _print("library quality (index-time score less findability costs)", scores, facts)
    _print("index-time score alone (this tree)", {s.id: s.quality for s in skills}, facts)
    if compare:
        older = json.loads(compare.read_text(encoding="utf-8"))
        _print(f"index-time score of {compare}", {i: older[i] for i in scores if i in older}, facts)


def _findings_per_skill(reader: LibraryReader, skills: list[IndexedSkill]) -> Counter[str]:
    """Errors and warnings of `skillshelf check`, counted at the skill whose folder holds the file."""
    folders = {str(PurePosixPath(s.details.doc_file).parent): s.id for s in skills}  # one root: the corpora
    counts: Counter[str] = Counter({s.id: 0 for s in skills})
    for finding in reader.findings():
        if finding.severity not in ("error", "warning"):
            continue
        owner = next((folders[str(p)] for p in PurePosixPath(finding.path).parents if str(p) in folders), None)
        if owner is not None:
            counts[owner] += 1
    return counts


def _print(title: str, scores: dict[str, float], facts: dict[str, tuple[bool, bool, bool, int, bool]]) -> None:
    ranked = sorted(scores, key=lambda i: (scores[i], i))
    print(f"\n{title}")
    print("decile  skills  quality  unreachable  not first  colliding  findings/skill  says when")
    for decile in range(10):
        ids = ranked[len(ranked) * decile // 10 : len(ranked) * (decile + 1) // 10]
        share = [sum(facts[i][k] for i in ids) / len(ids) for k in range(5)]
        mean = sum(scores[i] for i in ids) / len(ids)
        print(
            f"{decile + 1:>6}  {len(ids):>6}  {mean:>7.2f}  {share[0]:>11.0%}  {share[1]:>9.0%}  {share[2]:>9.0%}  "
            f"{share[3]:>14.2f}  {share[4]:>9.0%}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
