"""`skillshelf check`: parse every skill under some roots (no index is written) and collect findings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillshelf.library.skill.discovery import discover, printable
from skillshelf.library.skill.duplicates import Described, near_duplicates
from skillshelf.library.skill.examples import FRONTMATTER_KEY, parse_frontmatter_examples
from skillshelf.library.skill.folder import MAX_FILES, MAX_TOTAL_BYTES, TooManyFiles, walk_folder
from skillshelf.library.skill.layouts import load_source
from skillshelf.library.skill.models import SEVERITY_WORDS, Finding, Severity, Skill, SkillSource, count_of
from skillshelf.library.skill.paths import display_path
from skillshelf.library.skill.reading import DEFAULT_MAX_FILE_BYTES
from skillshelf.library.skill.scaffold import scaffold_leftovers

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
LOOP_MESSAGE = "symlink to a folder that holds it (a loop); not followed. Remove the link or point it elsewhere."


@dataclass
class CheckReport:
    skills: list[Skill] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def errors(self) -> int:
        return self.count("error")

    def summary_line(self) -> str:
        counts = ", ".join(count_of(severity, self.count(severity)) for severity in SEVERITY_WORDS)
        skills = f"{len(self.skills):,} skill{'' if len(self.skills) == 1 else 's'}"
        return f"{skills} checked: {counts}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "skills": len(self.skills),
            "errors": self.errors,
            "warnings": self.count("warning"),
            "notes": self.count("info"),
            "findings": [{**f.to_dict(), "root": f.root} for f in self.findings],
            "quality": {s.id: {"score": s.quality.score, "source": s.quality.source} for s in self.skills},
        }


def check_roots(
    roots: list[Path],
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    on_progress: Callable[[int, int], None] | None = None,
) -> CheckReport:
    """Check library roots; a path to one skill (its .md file or its SKILL.md folder) checks just that skill.

    `on_progress(done, total)` is called as skills are checked (a terminal shows it: a big library
    takes a while).
    """
    resolved = [r.resolve() if r.exists() else r for r in roots]
    targets = {_single_skill_doc(r) for r in resolved} - {None}
    library_roots = [_library_root_of(r) if _single_skill_doc(r) else r for r in resolved]
    found = discover(list(dict.fromkeys(library_roots)))
    sources = [s for s in found.sources if not targets or s.doc_file in targets]
    findings = found.findings if not targets else [f for f in found.findings if f.code != "not-a-skill"]
    report = CheckReport(findings=list(findings))
    for done, source in enumerate(sources, 1):
        if on_progress is not None:
            on_progress(done, len(sources))
        skill, findings = load_source(source, max_bytes)
        report.findings.extend(findings)
        if skill is not None:
            report.skills.append(skill)
            report.findings.extend(_limit_findings(source, skill.id))
            report.findings.extend(scaffold_findings(skill))
            report.findings.extend(example_findings(skill))
    if not targets:  # duplicates are across the library: one skill checked alone has none
        report.findings.extend(duplicate_findings(report.skills))
    report.findings.sort(key=lambda f: (f.root, f.path, SEVERITY_ORDER[f.severity], f.line or 0))
    return report


def duplicate_findings(skills: list[Skill]) -> list[Finding]:
    """A `near-duplicate` warning on each skill that another one duplicates (docs/library-format.md),
    at its document, naming both; a note when the description search stopped early."""
    by_id = {skill.id: skill for skill in skills}
    found = near_duplicates(Described(s.id, s.declared_name, s.description) for s in skills)
    findings = [
        _finding(
            by_id[pair.other].source, by_id[pair.other].source.doc_file, "warning", "near-duplicate", pair.message()
        )
        for pair in found.pairs
    ]
    if found.note and skills:
        source = skills[0].source
        findings.append(_finding(source, source.root, "info", "near-duplicate-search-stopped", found.note))
    return findings


def scaffold_findings(skill: Skill) -> list[Finding]:
    """A `scaffold-text` warning while a skill still holds `skillshelf new`'s placeholders: it checks clean
    otherwise, and agents (and `doc`'s table) would read "TODO: say in one or two sentences..."."""
    left = scaffold_leftovers(skill.description, skill.body)
    if not left:
        return []
    message = (
        f"{skill.id} still holds the placeholder text of `skillshelf new` ({', '.join(left)}); agents read it as "
        "it stands. Replace every TODO."
    )
    return [_finding(skill.source, skill.source.doc_file, "warning", "scaffold-text", message)]


def example_findings(skill: Skill) -> list[Finding]:
    """An `evals-invalid` warning for a frontmatter `evals:` that `skillshelf eval` cannot read."""
    _examples, problems = parse_frontmatter_examples(skill.frontmatter.get(FRONTMATTER_KEY))
    return [
        _finding(skill.source, skill.source.doc_file, "warning", "evals-invalid", f"{skill.id}: {problem}")
        for problem in problems
    ]


def _limit_findings(source: SkillSource, skill_id: str) -> list[Finding]:
    """A folder skill over the Skills extension's limits is served as a tool but not as an MCP skill.

    Its folder is walked as the server publishes it (`walk_folder`, the one walk); a symlink loop in it
    is reported and not followed, so the check always ends.
    """
    if source.layout != "agent-skills":
        return []
    folder = source.doc_file.parent
    loops: list[Path] = []
    try:
        total = sum(f.size for f in walk_folder(folder, source.root.resolve(), max_files=MAX_FILES, loops=loops))
    except TooManyFiles:
        total = -1
    findings = [_finding(source, link, "warning", "symlink-loop", LOOP_MESSAGE) for link in loops]
    if total < 0:
        message = (
            f"{skill_id} has more than {MAX_FILES} files; MCP clients using the skills extension get "
            f"at most {MAX_FILES} per skill, so it is not published there. Remove generated or vendored files."
        )
        return [*findings, _finding(source, folder, "warning", "over-file-limit", message)]
    if total > MAX_TOTAL_BYTES:
        message = (
            f"{skill_id} has {total} bytes of files; the skills extension allows {MAX_TOTAL_BYTES} per skill, "
            "so it is not published there. Move large assets out of the skill."
        )
        findings.append(_finding(source, folder, "warning", "over-size-limit", message))
    return findings


def _finding(source: SkillSource, path: Path, severity: Severity, code: str, message: str) -> Finding:
    relative = printable(path.relative_to(source.root).as_posix())
    return Finding(relative, None, severity, code, message, printable(display_path(source.root)))


def _single_skill_doc(path: Path) -> Path | None:
    if path.is_file() and path.suffix == ".md":
        return path
    skill_md = path / "SKILL.md"
    return skill_md if skill_md.is_file() else None


def _library_root_of(path: Path) -> Path:
    """The root that gives a single skill its usual id: two levels up from its document."""
    doc = _single_skill_doc(path)
    assert doc is not None
    return doc.parent.parent if doc.name != "SKILL.md" else doc.parent.parent.parent
