"""What an update would change, shown before anything changes.

The installed folder of a source is compared with the staged new one, file by file: skills added,
removed and changed (lines added and removed per file), and first of all every new or changed file an
agent may run (executable, a shebang, a script's extension, or under `scripts/`): a skill update can
add a script an agent will run. Then each changed skill's description, quality before -> after and
the `check` findings it did not have (both versions parsed as `skillshelf check` parses them).
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from skillshelf.library.skill.checker import check_roots
from skillshelf.library.skill.digest import TreeEntry, walk_tree
from skillshelf.library.skill.discovery import CODE_EXTENSIONS, METADATA_SUFFIX
from skillshelf.library.skill.models import Finding, Skill
from skillshelf.library.skill.policy import PolicyError, SkillPolicy, policy_of
from skillshelf.library.sources.lock import LockedSource
from skillshelf.library.sources.scanning import Risk

Change = Literal["added", "removed", "changed"]
SCRIPT_SUFFIXES = frozenset(
    {
        ".py", ".sh", ".bash", ".zsh", ".fish", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".ps1",
        ".bat", ".cmd", ".exe", ".bin", ".jar", ".lua", ".r", ".go", ".wasm", ".so", ".dylib", ".dll",
    }
)  # fmt: skip
MAX_DIFF_BYTES = 2 * 1024 * 1024  # larger text is reported changed without counting lines
MAX_DIFF_PAIRS = 4_000_000  # lines before x lines after; above it, lines are counted as multisets
SOURCE_FILES = "(source)"
SHOWN_LOSSES = 30  # findability losses in the text review (the JSON has every one)


@dataclass(frozen=True)
class FileChange:
    path: str  # inside the source's folder
    change: Change
    runnable: bool  # the new file (the old one, when removed) is something an agent may run
    added: int | None = None  # lines; None for binary or very large files
    removed: int | None = None
    note: str = ""  # 'now executable', 'binary', ...

    def describe(self) -> str:
        if self.change == "added":
            size = f", {self.added} lines" if self.added is not None else ""
            return f"{self.path} (new{size}{', ' + self.note if self.note else ''})"
        if self.change == "removed":
            return f"{self.path} (removed)"
        counts = f"+{self.added} -{self.removed}" if self.added is not None else "changed"
        return f"{self.path} ({counts}{', ' + self.note if self.note else ''})"


@dataclass
class SkillChange:
    id: str
    change: Change
    files: list[FileChange] = field(default_factory=list)
    description: tuple[str, str] | None = None  # before, after
    quality: tuple[float | None, float | None] | None = None
    new_findings: list[Finding] = field(default_factory=list)
    policy_widens: list[str] = field(default_factory=list)  # what its run policy asks for that it did not


@dataclass(frozen=True)
class FindabilityLoss:
    """A query that finds a skill less well after the update than before (skills/review_evals.py)."""

    skill: str
    example: str | None  # a written example; None: the skill's own description as a query
    should: bool  # the example should pick the skill (a should_not one should not)
    ranks: tuple[int | None, int | None]  # the skill's place before, after (None: past the top 10)
    firsts: tuple[str | None, str | None]  # the first hit before, after
    unreachable: bool = False  # its own description no longer finds it in the top 5 (flagged like a script)

    def line(self) -> str:
        before, after = (_place(rank) for rank in self.ranks)
        mark = "! " if self.unreachable else ""
        if self.example is None:
            return f"{mark}{self.skill}: its own description now ranks {after} (was {before})" + (
                ": unreachable" if self.unreachable else ""
            )
        if not self.should:
            return f"{self.skill}: example {self.example!r} (should not pick it) now picks it (was {self.firsts[0]})"
        if self.ranks[0] == 1:
            return f"{self.skill}: example {self.example!r} now picks {self.firsts[1] or 'nothing'} (was {self.skill})"
        return f"{self.skill}: example {self.example!r} now ranks {after} (was {before})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "query": "own description" if self.example is None else self.example,
            "shouldTrigger": self.should,
            "rank": list(self.ranks),
            "first": list(self.firsts),
            "unreachable": self.unreachable,
            "line": self.line(),
        }


def _place(rank: int | None) -> str:
    if rank is None:
        return "past the top 10"
    suffix = "th" if 10 <= rank % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(rank % 10, "th")
    return f"{rank}{suffix}"


@dataclass
class Review:
    source: str
    old_version: str
    new_version: str
    ref: str | None
    skills: list[SkillChange] = field(default_factory=list)
    local_edits: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    risks: list[Risk] = field(default_factory=list)  # the scan of the new version (scanning.py)
    findability: list[FindabilityLoss] = field(default_factory=list)  # what the update makes harder to find
    findability_note: str = ""  # how it was searched (words only, how many skills, how long)

    @property
    def pending(self) -> bool:
        """Whether applying it would change any file of the library."""
        return bool(self.skills)

    @property
    def runnable_changes(self) -> list[FileChange]:
        return [f for skill in self.skills for f in skill.files if f.runnable and f.change != "removed"]

    @property
    def policy_widenings(self) -> list[str]:
        """Each skill's run policy asking for more than before (network, paths, variables, limits), one line each."""
        return [f"{skill.id}: {what}" for skill in self.skills for what in skill.policy_widens]

    def counts(self) -> dict[str, int]:
        return {kind: sum(1 for s in self.skills if s.change == kind and s.id != SOURCE_FILES) for kind in _KINDS}

    def summary(self) -> str:
        counts = self.counts()
        parts = [f"{n} {kind}" for kind, n in counts.items() if n]
        if any(s.id == SOURCE_FILES for s in self.skills):
            parts.append("the source's license file changed")
        runnable = len(self.runnable_changes)
        if runnable:
            parts.insert(0, f"{runnable} runnable file(s) new or changed")
        return ", ".join(parts) or "up to date"

    def lines(self) -> list[str]:
        """The review for a terminal: runnable files first, then skill by skill."""
        head = f"{self.source}: {_short(self.old_version)} -> {_short(self.new_version)}"
        out = [head + (f" ({self.ref})" if self.ref else "")]
        if not self.pending:
            return [*out, "  no skill changes"]
        runnable = self.runnable_changes
        if runnable:
            out.append("  ! files an agent may run, new or changed (read them before applying):")
            out += [f"      {f.describe()}" for f in runnable]
        if widened := self.policy_widenings:
            out.append("  ! run policies that widen (what a run of the skill may reach):")
            out += [f"      {line}" for line in widened]
        out += self._scan_lines()
        out += self._findability_lines()
        out.append("  " + self.summary())
        for skill in self.skills:
            out += _skill_lines(skill)
        out += [f"  local edit (kept unless --force): {edit}" for edit in self.local_edits]
        out += [f"  note: {warning}" for warning in self.warnings]
        return out

    def _scan_lines(self) -> list[str]:
        """The scan's findings, before any description: what the new version would bring that is risky."""
        if not self.risks:
            return []
        high = sum(1 for risk in self.risks if risk.high)
        head = f"  ! scan findings ({high} high; a high one needs --accept RULE:PATH to apply):"
        return [head, *(f"      {risk.line()}" for risk in self.risks)]

    def _findability_lines(self) -> list[str]:
        """Queries that find a skill less well after the update, before any description: an update that makes
        a skill unfindable changes what an agent gets as surely as a new script does."""
        if not self.findability:
            return []
        mark = "!" if any(loss.unreachable for loss in self.findability) else " "
        head = f"  {mark} harder to find after the update ({self.findability_note}):"
        shown = [f"      {loss.line()}" for loss in self.findability[:SHOWN_LOSSES]]
        more = len(self.findability) - SHOWN_LOSSES
        return [head, *shown, *([f"      and {more} more (--json lists them all)"] if more > 0 else [])]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "from": self.old_version,
            "to": self.new_version,
            "ref": self.ref,
            "pending": self.pending,
            "runnable": [f.describe() for f in self.runnable_changes],
            "policyWidens": self.policy_widenings,
            "scan": [risk.to_dict() for risk in self.risks],
            "findability": [loss.to_dict() for loss in self.findability],
            "findabilityNote": self.findability_note,
            "skills": [
                {
                    "id": s.id,
                    "change": s.change,
                    "files": [f.describe() for f in s.files],
                    "description": list(s.description) if s.description else None,
                    "quality": list(s.quality) if s.quality else None,
                    "newFindings": [{**f.to_dict(), "root": f.root} for f in s.new_findings],
                }
                for s in self.skills
            ],
            "localEdits": self.local_edits,
            "warnings": self.warnings,
        }


_KINDS: tuple[Change, ...] = ("added", "removed", "changed")
_MARK = {"added": "+", "removed": "-", "changed": "~"}


def _short(version: str) -> str:
    return version.removeprefix("sha256:")[:12] if version else "(nothing)"


def _skill_lines(skill: SkillChange) -> list[str]:
    out = [f"  {_MARK[skill.change]} {skill.id}"]
    if skill.description is not None:
        out.append(f"      description: {skill.description[0]!r}")
        out.append(f"               -> {skill.description[1]!r}")
    if skill.quality is not None:
        before, after = (f"{q:.1f}" if q is not None else "-" for q in skill.quality)
        out.append(f"      quality {before} -> {after}")
    if skill.change == "changed":
        out += [f"      {f.describe()}" for f in skill.files]
    out += [f"      new finding: {f.severity} {f.path}: {f.message} [{f.code}]" for f in skill.new_findings]
    return out


def review_update(old_folder: Path, new_folder: Path, old: LockedSource | None, new: LockedSource) -> Review:
    """Compare the installed folder of a source with the staged one."""
    name = new.name
    old_files = _files(old_folder)
    new_files = _files(new_folder)
    changes = _file_changes(old_files, new_files)
    review = Review(name, old.version if old else "", new.version, new.ref)
    groups: dict[str, list[FileChange]] = {}
    for change in changes:
        groups.setdefault(_skill_of(change.path, new, old), []).append(change)
    before = _checked_skills(old_folder, old, new) if old else _Checked()
    after = _checked_skills(new_folder, new, old)
    for skill_name in sorted(groups, key=lambda n: (n == SOURCE_FILES, n)):
        review.skills.append(_skill_change(name, skill_name, groups[skill_name], before, after))
    return review


def _files(folder: Path) -> dict[str, TreeEntry]:
    return {entry.path: entry for entry in walk_tree(folder)} if folder.is_dir() else {}


def _file_changes(old: dict[str, TreeEntry], new: dict[str, TreeEntry]) -> list[FileChange]:
    changes = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if after is None:
            assert before is not None
            changes.append(FileChange(path, "removed", _runnable(before, before.content())))
            continue
        new_bytes = after.content()
        if before is None:
            added, _ = _line_counts(b"", new_bytes)
            changes.append(FileChange(path, "added", _runnable(after, new_bytes), added, 0, _note(None, after)))
            continue
        old_bytes = before.content()
        if old_bytes == new_bytes and before.kind == after.kind:
            continue
        added, removed = _line_counts(old_bytes, new_bytes)
        changes.append(FileChange(path, "changed", _runnable(after, new_bytes), added, removed, _note(before, after)))
    return changes


def _runnable(entry: TreeEntry, data: bytes) -> bool:
    path = PurePosixPath(entry.path)
    return (
        entry.kind == "exec"
        or data.startswith(b"#!")
        or path.suffix.lower() in SCRIPT_SUFFIXES
        or "scripts" in path.parts[:-1]
    )


def _note(before: TreeEntry | None, after: TreeEntry) -> str:
    if after.kind == "exec" and (before is None or before.kind != "exec"):
        return "executable"
    if after.kind == "link":
        return "a link"
    return ""


def _line_counts(old: bytes, new: bytes) -> tuple[int | None, int | None]:
    if b"\0" in old or b"\0" in new or max(len(old), len(new)) > MAX_DIFF_BYTES:
        return None, None
    try:
        before = old.decode("utf-8").splitlines()
        after = new.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None, None
    if len(before) * len(after) > MAX_DIFF_PAIRS:  # a line diff grows with their product: count lines instead
        gone, came = Counter(before) - Counter(after), Counter(after) - Counter(before)
        return sum(came.values()), sum(gone.values())
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def _skill_of(path: str, new: LockedSource, old: LockedSource | None) -> str:
    """The skill (its name in the source's folder) a file belongs to; source-level files apart."""
    for source in (new, old):
        if source is not None and "/" not in path and any(key.endswith("/" + path) for key in source.files):
            return SOURCE_FILES
    first = path.split("/", 1)[0]
    if "/" in path:
        return first
    for suffix in (METADATA_SUFFIX, ".md", *CODE_EXTENSIONS):
        if first.endswith(suffix):
            return first[: -len(suffix)]
    return first


@dataclass
class _Checked:
    """One version of a source as `check` parses it: its skills by name, its findings by skill name."""

    skills: dict[str, Skill] = field(default_factory=dict)
    findings: dict[str, list[Finding]] = field(default_factory=dict)

    def keys(self, name: str) -> set[tuple[str, str, str]]:
        return {(f.path.split("/", 1)[-1], f.code, f.message) for f in self.findings.get(name, [])}


def _checked_skills(folder: Path, source: LockedSource, other: LockedSource | None) -> _Checked:
    docs = [_doc_of(folder, skill.path.rsplit("/", 1)[-1]) for skill in source.skills]
    targets = [doc for doc in docs if doc is not None]
    if not targets:
        return _Checked()
    report = check_roots(targets)
    checked = _Checked({skill.name: skill for skill in report.skills if skill.category == source.name})
    prefix = f"{source.name}/"
    for finding in report.findings:
        if finding.path.startswith(prefix):
            name = _skill_of(finding.path[len(prefix) :], source, other)
            checked.findings.setdefault(name, []).append(finding)
    return checked


def _doc_of(folder: Path, placed: str) -> Path | None:
    """What `check_roots` takes for one skill: its folder when it has SKILL.md, or its three-file .md."""
    path = folder / placed
    if placed.endswith(".md") and path.is_file():
        return path
    return path if (path / "SKILL.md").is_file() else None


def _skill_change(source: str, name: str, files: list[FileChange], before: _Checked, after: _Checked) -> SkillChange:
    skill_id = SOURCE_FILES if name == SOURCE_FILES else f"{source}/{name}"
    old, new = before.skills.get(name), after.skills.get(name)
    kinds = {f.change for f in files}
    change: Change = "changed"
    if kinds == {"added"} and old is None:
        change = "added"
    elif kinds == {"removed"} and new is None:
        change = "removed"
    result = SkillChange(skill_id, change, sorted(files, key=lambda f: (not f.runnable, f.path)))
    if old is not None and new is not None:
        if old.description != new.description:
            result.description = (old.description, new.description)
        if old.quality.score != new.quality.score:
            result.quality = (old.quality.score, new.quality.score)
    elif new is not None:
        result.quality = (None, new.quality.score)
    known = before.keys(name)
    result.policy_widens = _policy_widens(old, new)
    result.new_findings = [
        f for f in after.findings.get(name, []) if (f.path.split("/", 1)[-1], f.code, f.message) not in known
    ]
    return result


def _policy_widens(old: Skill | None, new: Skill | None) -> list[str]:
    """What the new version's run policy asks for beyond the old one's (a new skill: beyond none). A policy
    that cannot be read grants nothing (the skill does not run; `check` reports it as a new finding)."""
    if new is None:
        return []
    try:
        after = policy_of(new.frontmatter)
    except PolicyError:
        return []
    try:
        before = policy_of(old.frontmatter) if old is not None else SkillPolicy()
    except PolicyError:
        before = SkillPolicy(declared=True)
    return after.widens(before)
