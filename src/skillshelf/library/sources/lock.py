"""`skillshelf.lock`: the sources of a library, pinned, in TOML a team commits beside the library.

Read with tomllib; written by the small writer here, so the same lock is always the same bytes:
sources sorted by name, skills by id, one line per skill, keys in a fixed order. A change to the
library is a small diff (an update changes a commit and the lines of the skills it touched). Written
atomically: a temporary file beside it, flushed, then renamed over it, its URLs without credentials.

A lock is input (it says what the last person to push wrote): every name and path in it is read with
the rules `add` follows (spec.py's), and an entry that breaks one is refused and named
(`skillshelf.lock: [source."../.git"]: ...`); the writers check their targets again (swap.inside_root).

One source:

    [source.anthropic]
    kind = "git"                      # git, archive, folder or file
    url = "https://github.com/anthropics/skills.git"   # never with credentials
    ref = "main"                      # what was asked for (absent: the default branch)
    commit = "9d2f1ae1..."            # git: the commit installed
    digest = "sha256:..."             # archives, folders, files: their content
    subpath = "skills"                # the folder of the source the skills were taken from
    only = ["webapp-*"]               # --only globs
    exclude = ["skills/pdf"]          # skills removed by `skillshelf remove SKILL_ID`
    installed = "2026-07-02T10:11:12Z"
    license = "Apache-2.0"

    [source.anthropic.files]          # files of the source beside its skills (its LICENSE)
    "anthropic/LICENSE" = "sha256:..."

    [source.anthropic.skills]
    "anthropic/webapp-testing" = { path = "anthropic/webapp-testing", from = "skills/webapp-testing", digest = "…" }
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillshelf.library import atomic
from skillshelf.library.sources import git
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.spec import (
    NAME_RULE_TEXT,
    check_address,
    clean_subpath,
    is_source_name,
    plain_name,
    plain_relative,
    strip_credentials,
)

LOCK_NAME = "skillshelf.lock"
LOCK_VERSION = 1
KINDS = ("git", "archive", "folder", "file")
HEADER = (
    "# skillshelf.lock: the sources of this library, pinned. Written by `skillshelf add`, `update` and\n"
    "# `remove`; `skillshelf sync` makes a library hold exactly this. Commit it beside the library.\n"
)
FIX = "; restore skillshelf.lock from version control (it is read with the rules `add` follows)"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


@dataclass(frozen=True)
class LockedSkill:
    id: str  # '<source>/<skill>', as the library serves it
    path: str  # relative to the library root, '/'-separated: a skill's folder, or a three-file skill's .md
    origin: str  # where it was in the source (relative to the source's subpath); '' for the source itself
    digest: str  # digest.py: its files, as installed
    license: str | None = None  # its own frontmatter `license`, when it declares one
    accepted: tuple[str, ...] = ()  # high scan findings a curator accepted for these bytes: 'RULE:PATH'


@dataclass(frozen=True)
class LockedSource:
    name: str
    kind: str
    url: str
    installed: str
    ref: str | None = None
    commit: str | None = None
    digest: str | None = None
    subpath: str = ""
    only: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    license: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # library path -> digest
    skills: tuple[LockedSkill, ...] = ()

    @property
    def version(self) -> str:
        """What is installed: the commit (git) or the content digest, as one string."""
        return self.commit or self.digest or "?"

    def skill(self, skill_id: str) -> LockedSkill | None:
        return next((s for s in self.skills if s.id == skill_id), None)


@dataclass(frozen=True)
class Lock:
    sources: dict[str, LockedSource] = field(default_factory=dict)

    def with_source(self, source: LockedSource) -> Lock:
        return Lock({**self.sources, source.name: source})

    def without(self, name: str) -> Lock:
        return Lock({n: s for n, s in self.sources.items() if n != name})

    def owner_of(self, skill_id: str) -> LockedSource | None:
        return next((s for s in self.sources.values() if s.skill(skill_id) is not None), None)


def lock_path(root: Path) -> Path:
    return root / LOCK_NAME


def read_lock(path: Path) -> Lock:
    """The lock at `path`; an empty lock when there is none. A lock that is not what skillshelf writes
    is an error naming the file and what is wrong in it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Lock()
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from exc
    return parse_lock(text, str(path))


def parse_lock(text: str, where: str = LOCK_NAME) -> Lock:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SourceError(f"{where} is not valid TOML ({exc}); restore it from version control") from exc
    version = raw.get("version", LOCK_VERSION)
    if version != LOCK_VERSION:
        raise SourceError(f"{where} has lock version {version!r}; this skillshelf reads version {LOCK_VERSION}")
    table = raw.get("source", {})
    if not isinstance(table, dict):
        raise SourceError(f"{where}: `source` must be a table of sources")
    return Lock({name: _source(name, entry, where) for name, entry in table.items()})


def _source(name: str, raw: Any, where: str) -> LockedSource:
    at = f"{where}: [source.{_key(name)}]"
    if not is_source_name(name):
        raise SourceError(f"{at}: the name {name!r} {NAME_RULE_TEXT} (it is the source's folder in the library){FIX}")
    if not isinstance(raw, dict):
        raise SourceError(f"{at} must be a table")
    kind = _text(raw, "kind", at)
    if kind not in KINDS:
        raise SourceError(f"{at} has kind {kind!r}; expected one of {', '.join(KINDS)}")
    skills = raw.get("skills", {})
    files = raw.get("files", {})
    if not isinstance(skills, dict) or not isinstance(files, dict):
        raise SourceError(f"{at}: `skills` and `files` must be tables")
    return LockedSource(
        name=name,
        kind=kind,
        url=_url(kind, _text(raw, "url", at), at),
        installed=_text(raw, "installed", at),
        ref=_optional(raw, "ref", at),
        commit=_commit(_optional(raw, "commit", at), at),
        digest=_optional(raw, "digest", at),
        subpath=_subpath(_optional(raw, "subpath", at) or "", at),
        only=_strings(raw, "only", at),
        exclude=_strings(raw, "exclude", at),
        license=_optional(raw, "license", at),
        files={_file(path, name, at): _checked(digest, f"{at} files.{_key(path)}") for path, digest in files.items()},
        skills=tuple(_skill(key, entry, name, f"{at} skills.{_key(key)}") for key, entry in skills.items()),
    )


def _skill(skill_id: str, raw: Any, source: str, at: str) -> LockedSkill:
    if not isinstance(raw, dict):
        raise SourceError(f"{at} must be a table with path, from and digest")
    owner, _, name = skill_id.partition("/")
    if owner != source or not plain_name(name):
        raise SourceError(f"{at}: the id {skill_id!r} must be {source}/SKILL, SKILL one plain file name{FIX}")
    path = _text(raw, "path", at)
    if not _placed(path, source, (name, f"{name}.md")):
        raise SourceError(f"{at}: path {path!r} must be {source}/{name} (a three-file skill: {source}/{name}.md){FIX}")
    origin = _optional(raw, "from", at) or ""
    if not plain_relative(origin):
        raise SourceError(f"{at}: from {origin!r} must be a relative path inside the source{FIX}")
    return LockedSkill(
        skill_id, path, origin, _text(raw, "digest", at), _optional(raw, "license", at), _accepted(raw, at)
    )


# -- the rules `add` follows, for what a lock says (it is input from whoever last pushed) -----------
def _placed(path: str, source: str, names: tuple[str, ...]) -> bool:
    """Whether library path `path` is one of `names` in the source's folder: `<source>/NAME`, or
    `patterns/<source>/NAME` in a seed-style root; nothing else is ever written."""
    folder, _, name = path.rpartition("/")
    return folder in (source, f"patterns/{source}") and name in names


def _file(path: str, source: str, at: str) -> str:
    name = path.rpartition("/")[2]
    if not plain_name(name) or not _placed(path, source, (name,)):
        raise SourceError(f"{at} files.{_key(path)}: must be {source}/NAME, a file at the top of its folder{FIX}")
    return path


def _url(kind: str, url: str, at: str) -> str:
    try:
        check_address(url)
    except SourceError as exc:
        raise SourceError(f"{at}: url {exc.message}{FIX}") from exc
    if kind != "git" and "://" in url:
        raise SourceError(f"{at}: url of a {kind} is a local path, not {strip_credentials(url)}{FIX}")
    return url


def _commit(commit: str | None, at: str) -> str | None:
    if commit is not None and not git.is_full_commit(commit):
        raise SourceError(f"{at}: commit {commit!r} must be a full commit id (40 hex digits){FIX}")
    return commit


def _subpath(subpath: str, at: str) -> str:
    try:
        clean = clean_subpath(subpath)
    except SourceError:
        clean = None
    if clean != subpath:
        raise SourceError(f"{at}: subpath {subpath!r} must be a folder inside the source, such as skills{FIX}")
    return subpath


def _accepted(raw: dict[str, Any], at: str) -> tuple[str, ...]:
    found = _strings(raw, "accepted", at)
    wrong = [item for item in found if not re.fullmatch(r"[a-z0-9-]+:.+", item, re.DOTALL)]
    if wrong:
        raise SourceError(f"{at}: accepted must hold 'RULE:PATH' strings, not {wrong[0]!r}")
    return found


def _text(raw: dict[str, Any], key: str, at: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise SourceError(f"{at} has no {key} (a non-empty string); restore the file from version control")
    return value


def _optional(raw: dict[str, Any], key: str, at: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise SourceError(f"{at}: {key} must be a string")
    return value


def _checked(value: Any, at: str) -> str:
    if not isinstance(value, str):
        raise SourceError(f"{at} must be a digest string")
    return value


def _strings(raw: dict[str, Any], key: str, at: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SourceError(f"{at}: {key} must be a list of strings")
    return tuple(value)


# -- writing ---------------------------------------------------------------------------------------
def render_lock(lock: Lock) -> str:
    """The lock as TOML, byte for byte the same for the same content."""
    parts = [HEADER, f"version = {LOCK_VERSION}\n"]
    parts += ["\n" + render_source(lock.sources[name]) for name in sorted(lock.sources)]
    return "".join(parts)


def render_source(source: LockedSource) -> str:
    lines = [f"[source.{_key(source.name)}]"]
    fields: list[tuple[str, str | None]] = [
        ("kind", source.kind),
        ("url", strip_credentials(source.url)),  # however it was read: a hand-written lock may hold a token
        ("ref", source.ref),
        ("commit", source.commit),
        ("digest", source.digest),
        ("subpath", source.subpath or None),
    ]
    lines += [f"{key} = {_string(value)}" for key, value in fields if value is not None]
    if source.only:
        lines.append(f"only = {_array(sorted(set(source.only)))}")
    if source.exclude:
        lines.append(f"exclude = {_array(sorted(set(source.exclude)))}")
    lines.append(f"installed = {_string(source.installed)}")
    if source.license is not None:
        lines.append(f"license = {_string(source.license)}")
    if source.files:
        lines += ["", f"[source.{_key(source.name)}.files]"]
        lines += [f"{_key(path)} = {_string(source.files[path])}" for path in sorted(source.files)]
    lines += ["", f"[source.{_key(source.name)}.skills]"]
    lines += [f"{_key(skill.id)} = {_inline(skill)}" for skill in sorted(source.skills, key=lambda s: s.id)]
    return "\n".join(lines) + "\n"


def _inline(skill: LockedSkill) -> str:
    pairs = [("path", skill.path), ("from", skill.origin), ("digest", skill.digest), ("license", skill.license)]
    parts = [f"{key} = {_string(value)}" for key, value in pairs if value is not None]
    if skill.accepted:
        parts.append(f"accepted = {_array(sorted(set(skill.accepted)))}")
    return "{ " + ", ".join(parts) + " }"


def _key(text: str) -> str:
    return text if _BARE_KEY.match(text) else _string(text)


def _string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _array(items: list[str]) -> str:
    return "[" + ", ".join(_string(item) for item in items) + "]"


def write_lock(path: Path, lock: Lock) -> None:
    """Replace the lock at `path` whole: a reader sees the old file or the new one, never a part."""
    write_atomically(path, render_lock(lock))


def write_atomically(path: Path, text: str) -> None:
    """The sources' files (the lock, their state, a swap's journal) written whole, readable by all (the lock is
    committed with the library); a failure is the SourceError that names the file."""
    try:
        atomic.write_atomically(path, text, mode=0o644)
    except OSError as exc:
        raise SourceError(f"cannot write {path}: {exc}") from exc


def with_skills(source: LockedSource, skills: list[LockedSkill]) -> LockedSource:
    return replace(source, skills=tuple(skills))
