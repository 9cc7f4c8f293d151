"""The scanner: the rules of scan_rules.py run over a skill's files, or any folder's.

Files are listed by the one folder walk (folder.py: no dot-names, links kept inside the root, bounded)
and read by the defensive reader (reading.py: regular files only, capped). Each hit names its rule,
the file and the line. A skill's hits are `Finding`s like every other `check` finding (the rule id is
the code; high is an error, medium a warning, low a note), so they reach `check`, `show`, the web
page and `loadSkill` the way every finding does, and the quality estimate sees them (quality.py).
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from skillshelf.library.skill.discovery import printable
from skillshelf.library.skill.folder import MAX_FILES, FolderFile, TooManyFiles, walk_folder
from skillshelf.library.skill.models import Finding, Severity, SkillSource
from skillshelf.library.skill.paths import is_servable, relative_to_root
from skillshelf.library.skill.reading import DEFAULT_MAX_FILE_BYTES, ReadFile, read_regular_file
from skillshelf.library.skill.scan_rules import RULES, RULES_BY_ID, FileKind, RiskLevel, Rule, lower_ascii

HEAD_BYTES = 4096  # what a file that is not read whole is judged on (a program's header, NUL bytes)
MAX_SCANNED_FILES = 20_000  # `skillshelf scan` of a big folder stops there and says so
CODE_SUFFIXES = frozenset(
    {".py", ".sh", ".bash", ".zsh", ".fish", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".ps1",
     ".psm1", ".bat", ".cmd", ".lua", ".r", ".vbs", ".applescript", ".swift", ".go", ".rs", ".java", ".kt"}
)  # fmt: skip
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".txt", ".rst"})
PACKAGE_FILES = frozenset({"package.json", "setup.py", "setup.cfg", "pyproject.toml"})
AS_FINDING: dict[RiskLevel, Severity] = {"high": "error", "medium": "warning", "low": "info"}


@dataclass(frozen=True)
class ScanHit:
    rule: Rule
    path: str  # '/'-separated, relative to what was scanned
    line: int | None
    detail: str = ""

    @property
    def severity(self) -> RiskLevel:
        return self.rule.severity

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    @property
    def text(self) -> str:
        return f"{self.rule.message}{self.detail}; {self.rule.fix}"

    @property
    def message(self) -> str:
        """As a `check` finding says it (its severity there is error, warning or note)."""
        return f"{self.rule.severity} risk: {self.text}"

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule.id,
            "severity": self.rule.severity,
            "path": self.path,
            "line": self.line,
            "message": f"{self.rule.message}{self.detail}",
            "fix": self.rule.fix,
        }


@dataclass
class ScanReport:
    hits: list[ScanHit] = field(default_factory=list)
    files: int = 0
    stopped: str = ""  # why the walk stopped early, if it did

    def count(self, severity: RiskLevel) -> int:
        return sum(1 for hit in self.hits if hit.severity == severity)


def kinds_of(name: str, head: bytes, mode: int) -> set[FileKind]:
    """Which rules look at a file: by its name, its first bytes and its executable bit."""
    path = PurePosixPath(name)
    kinds: set[FileKind] = {"any"}
    if b"\0" in head:
        return kinds  # binary: judged on its name and header only
    suffix = path.suffix.lower()
    if path.name in PACKAGE_FILES:
        kinds.add("package")
    if suffix in CODE_SUFFIXES or head.startswith(b"#!") or (mode & 0o111 and suffix not in TEXT_SUFFIXES):
        kinds.add("script")
    elif suffix in TEXT_SUFFIXES:
        kinds.add("text")
    elif "scripts" in path.parts[:-1] and not suffix:
        kinds.add("script")
    return kinds


def scan_file(
    path: Path, shown: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES, read: ReadFile | None = None
) -> list[ScanHit]:
    """Every rule's hits in one file (`shown` is its name in the report); an unreadable file has none.

    `read`: the file as a caller read it already (at least `max_bytes` of it), judged instead of reading
    it again."""
    try:
        if read is not None:
            mode, head = read.mode, read.data[:HEAD_BYTES]
        else:
            mode = path.stat().st_mode
            if not stat.S_ISREG(mode):
                return []
            head = read_regular_file(path, HEAD_BYTES)
        kinds = kinds_of(shown, head, mode)
        wants_text = bool(kinds & {"script", "text", "package"})
        raw = head
        if wants_text and len(head) == HEAD_BYTES:
            raw = read.data[:max_bytes] if read is not None else read_regular_file(path, max_bytes)
    except OSError:
        return []
    text = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n") if wants_text else ""
    lowered = lower_ascii(text)
    hits: list[ScanHit] = []
    for rule in RULES:
        if not rule.applies & kinds:
            continue
        if rule.on_bytes is not None:
            what = rule.on_bytes(head)
            if what:
                hits.append(ScanHit(rule, shown, None, f": {what}"))
            continue
        hits += [ScanHit(rule, shown, line, detail) for line, detail in rule.hits(shown, text, lowered)]
    return hits


def scan_folder(folder: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ScanReport:
    """Every file under `folder` (or `folder` itself when it is a file), as the one folder walk lists them."""
    report = ScanReport()
    if folder.is_file():
        report.files = 1
        report.hits = scan_file(folder, printable(folder.name), max_bytes)
        return report
    refused: list[Path] = []
    try:
        for entry in walk_folder(folder, folder.resolve(), max_files=MAX_SCANNED_FILES, refused=refused):
            report.files += 1
            report.hits += scan_file(entry.path, printable(entry.served), max_bytes)
    except TooManyFiles as exc:
        report.stopped = f"stopped after {exc.limit:,} files"
    for path in refused:
        _scan_refused(path, folder, report, max_bytes)
    return report


def _scan_refused(path: Path, folder: Path, report: ScanReport, max_bytes: int) -> None:
    """A name the library never lists (not UTF-8, a control character) is still on disk for whoever runs it,
    so `scan` reads it too (a link is not followed: the walk would not have followed it out either)."""
    shown = printable(path.relative_to(folder).as_posix())
    if path.is_symlink():
        return
    if path.is_file():
        report.files += 1
        report.hits += scan_file(path, shown, max_bytes)
    elif path.is_dir():
        inner = scan_folder(path, max_bytes)
        report.files += inner.files
        report.hits += [replace(hit, path=f"{shown}/{hit.path}") for hit in inner.hits]


def scan_skill(
    source: SkillSource,
    root_label: str,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    real_root: Path | None = None,
    listed: list[FolderFile] | None = None,
    already_read: Mapping[Path, ReadFile] | None = None,
) -> list[Finding]:
    """A skill's files scanned, as findings at their paths under the library root.

    A caller that has resolved the root (`real_root`), walked an agent-skills folder already (`listed`:
    what the walk gave, [] when it stopped at the file limit) or read some of its files (`already_read`, by
    path) passes them: parsing a skill then resolves, walks and reads once, not twice."""
    reads = already_read or {}
    real_root = source.root.resolve() if real_root is None else real_root
    if source.layout == "agent-skills":
        folder = source.doc_file.parent
        prefix = relative_to_root(folder, source.root) + "/"
        try:
            found = walk_folder(folder, real_root, max_files=MAX_FILES) if listed is None else listed
            files = [(f.path, f.served) for f in found]
        except TooManyFiles:
            files = []  # the skill is over the limit; `check` says so (over-file-limit) and nothing is scanned
    else:
        prefix = relative_to_root(source.doc_file.parent, source.root) + "/"
        parts = (source.doc_file, source.code_file, source.meta_file)
        # a file the caller read passed the same check before it was read
        files = [(p, p.name) for p in parts if p is not None and (p in reads or is_servable(p, real_root))]
    hits = [hit for path, served in files for hit in scan_file(path, served, max_bytes, reads.get(path))]
    return [as_finding(hit, prefix, root_label) for hit in hits]


def as_finding(hit: ScanHit, prefix: str, root_label: str) -> Finding:
    path = printable(prefix + hit.path)
    return Finding(path, hit.line, AS_FINDING[hit.severity], hit.rule.id, hit.message, root_label)


def scan_risk(finding: Finding) -> RiskLevel | None:
    """The risk of a scan finding; None for a finding that is not the scanner's."""
    rule = RULES_BY_ID.get(finding.code)
    return rule.severity if rule is not None else None


def is_high_risk(finding: Finding) -> bool:
    return scan_risk(finding) == "high"
