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
    kind = "git"                      # git, archive, folder, file, index or mcp (kinds/)
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
    "anthropic/webapp-testing" = { path = "anthropic/webapp-testing", from = "skills/webapp-testing", digest = "…",
                                   approved_by = "ana@example.org", approved_at = "2026-07-02T10:11:12Z" }

Approvals (approval.py): a skill's entry says who approved its bytes and when (`approved_by`,
`approved_at`: `add` and an applied `update` record whoever ran them); `approved = "sha256:..."` is there
only when the approved bytes are not the ones the source gave (a local edit `skillshelf approve`d). A skill
no source installed is approved in the `[approved]` table (its library path, digest, who and when):

    [approved]
    "ops/deploy" = { path = "ops/deploy", digest = "sha256:...", by = "ana@example.org", at = "2026-..." }
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillshelf.library import atomic
from skillshelf.library.skill.folder import has_controls
from skillshelf.library.skill.reading import read_regular_file
from skillshelf.library.sources import git
from skillshelf.library.sources.errors import LOCK_FIX, SourceError
from skillshelf.library.sources.kinds import SignatureFields, kind_of, locked_kind
from skillshelf.library.sources.spec import (
    NAME_RULE_TEXT,
    Kind,
    SourceSpec,
    clean_subpath,
    is_source_name,
    plain_name,
    plain_relative,
    resolve_local,
    strip_credentials,
)

LOCK_NAME = "skillshelf.lock"
LOCK_VERSION = 1
MAX_LOCK_BYTES = 64 * 1024 * 1024  # some 200,000 skills' entries; past it a lock is not one skillshelf wrote
HEADER = (
    "# skillshelf.lock: the sources of this library, pinned. Written by `skillshelf add`, `update` and\n"
    "# `remove`; `skillshelf sync` makes a library hold exactly this. Commit it beside the library.\n"
)
FIX = LOCK_FIX
MAX_ROLLBACK_NOTE = 1000
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


@dataclass(frozen=True)
class Approval:
    digest: str  # digest.py, of the bytes approved
    by: str | None  # git's user.email where it was approved, or --reviewer; None when not known
    at: str | None  # when, UTC ('2026-07-02T10:11:12Z')


@dataclass(frozen=True)
class LocalApproval:
    """A skill no source installed, approved by digest (`skillshelf approve`)."""

    id: str
    path: str  # relative to the library root, '/'-separated: its folder, or a three-file skill's .md
    approval: Approval


@dataclass(frozen=True)
class LockedSkill:
    id: str  # '<source>/<skill>', as the library serves it
    path: str  # relative to the library root, '/'-separated: a skill's folder, or a three-file skill's .md
    origin: str  # where it was in the source (relative to the source's subpath); '' for the source itself
    digest: str  # digest.py: its files, as installed
    license: str | None = None  # its own frontmatter `license`, when it declares one
    accepted: tuple[str, ...] = ()  # high scan findings a curator accepted for these bytes: 'RULE:PATH'
    rollback: str | None = None  # `skillshelf rollback`: these bytes are an earlier version, and why (history.py)
    approval: Approval | None = None  # who approved which bytes, when (None: a lock from before approvals)

    @property
    def approved_digest(self) -> str:
        """The digest of the bytes approved: the source's, unless a local edit was approved."""
        return self.approval.digest if self.approval is not None else self.digest


@dataclass(frozen=True)
class LockedSource:
    name: str
    kind: Kind  # its class is kinds.kind_of(kind); the lock's entry was checked by it when read
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
    token_env: str | None = None  # index, mcp: the variable holding the token (the token is never written)
    signed: str | None = None  # git: 'ssh' when every commit taken must be signed (git.verify_commit)
    signers: str | None = None  # the allowed-signers file for it, as portable_path keeps it (None: the default)
    signer: str | None = None  # who signed the locked commit (the principal), when signed

    @property
    def version(self) -> str:
        """What is installed: the commit (git) or the content digest, as one string."""
        return self.commit or self.digest or "?"

    def skill(self, skill_id: str) -> LockedSkill | None:
        return next((s for s in self.skills if s.id == skill_id), None)


@dataclass(frozen=True)
class Lock:
    sources: dict[str, LockedSource] = field(default_factory=dict)
    approved: dict[str, LocalApproval] = field(default_factory=dict)  # skills no source installed, by id

    def with_source(self, source: LockedSource) -> Lock:
        return replace(self, sources={**self.sources, source.name: source})

    def without(self, name: str) -> Lock:
        return replace(self, sources={n: s for n, s in self.sources.items() if n != name})

    def owner_of(self, skill_id: str) -> LockedSource | None:
        return next((s for s in self.sources.values() if s.skill(skill_id) is not None), None)


def spec_of(source: LockedSource, root: Path) -> SourceSpec:
    """The source a lock entry names, as fetched on this machine. Its name for a skill at its top is the
    one that skill was installed under."""
    kind = kind_of(source.kind)
    url = source.url if kind.networked(source.url) else str(resolve_local(source.url, root))
    top = next((s for s in source.skills if s.origin == ""), None)
    name = top.id.split("/", 1)[1] if top else kind.default_name(url)
    signers = str(resolve_local(source.signers, root)) if source.signers else None
    return SourceSpec(
        kind.name,
        url,
        source.ref,
        source.subpath,
        name,
        token_env=source.token_env,
        signed=bool(source.signed),
        signers=signers,
    )


def lock_path(root: Path) -> Path:
    return root / LOCK_NAME


def read_lock(path: Path) -> Lock:
    """The lock at `path`; an empty lock when there is none. A lock that is not what skillshelf writes
    is an error naming the file and what is wrong in it."""
    try:
        data = read_lock_bytes(path)
    except FileNotFoundError:
        return Lock()
    return parse_lock(lock_text(data, str(path)), str(path))


def read_lock_bytes(path: Path) -> bytes:
    """A lock's bytes as they are on disk (FileNotFoundError when there is none). The lock is input: a
    link to a device (`/dev/zero` never ends), a FIFO or a file over MAX_LOCK_BYTES is refused, naming it."""
    try:
        data = read_regular_file(path, MAX_LOCK_BYTES + 1)
    except FileNotFoundError:
        raise
    except OSError as exc:  # NotRegularFile among them
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}; restore it from version control") from exc
    if len(data) > MAX_LOCK_BYTES:
        raise SourceError(
            f"{path} is over {MAX_LOCK_BYTES // (1024 * 1024)} MiB, not a lock skillshelf wrote; "
            "restore it from version control"
        )
    return data


def lock_bytes(data: bytes) -> bytes:
    """A lock's bytes as read, signed and verified: CRLF line endings become LF, and nothing else changes.
    A lock checked out with CRLF (git's autocrlf on Windows) is then the LF lock skillshelf wrote and a
    reviewer signed; a lock that differs in anything else still differs (docs/curating.md)."""
    return data.replace(b"\r\n", b"\n")


def lock_text(data: bytes, where: str = LOCK_NAME) -> str:
    """The text of a lock's bytes (`lock_bytes`), or a SourceError naming the file when it is not UTF-8."""
    try:
        return lock_bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"cannot read {where}: {exc}") from exc


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
    sources = {name: _source(name, entry, where) for name, entry in table.items()}
    return Lock(sources, _local_approvals(raw.get("approved", {}), where))


def _source(name: str, raw: Any, where: str) -> LockedSource:
    at = f"{where}: [source.{_key(name)}]"
    if not is_source_name(name):
        raise SourceError(f"{at}: the name {name!r} {NAME_RULE_TEXT} (it is the source's folder in the library){FIX}")
    if not isinstance(raw, dict):
        raise SourceError(f"{at} must be a table")
    kind = locked_kind(_text(raw, "kind", at), at)
    skills = raw.get("skills", {})
    files = raw.get("files", {})
    if not isinstance(skills, dict) or not isinstance(files, dict):
        raise SourceError(f"{at}: `skills` and `files` must be tables")
    return LockedSource(
        name=name,
        kind=kind.name,
        url=kind.check_url(_text(raw, "url", at), at),
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
        token_env=kind.check_token_env(_optional(raw, "token_env", at), at),
        **kind.check_signature(_signature(raw, at), at),
    )


def _signature(raw: dict[str, Any], at: str) -> SignatureFields:
    return SignatureFields(
        signed=_optional(raw, "signed", at), signers=_optional(raw, "signers", at), signer=_optional(raw, "signer", at)
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
    digest = _text(raw, "digest", at)
    return LockedSkill(
        skill_id,
        path,
        origin,
        digest,
        _optional(raw, "license", at),
        _accepted(raw, at),
        rollback=_rollback(raw, at),
        approval=_skill_approval(raw, digest, at),
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


def _rollback(raw: dict[str, Any], at: str) -> str | None:
    note = _optional(raw, "rollback", at)
    if note is not None and (not note.strip() or len(note) > MAX_ROLLBACK_NOTE):
        raise SourceError(f"{at}: rollback must say, in at most {MAX_ROLLBACK_NOTE} characters, what was rolled back")
    return note


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


# -- approvals (approval.py): who approved which bytes ----------------------------------------------
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MAX_REVIEWER = 200


def _skill_approval(raw: dict[str, Any], digest: str, at: str) -> Approval | None:
    approved = _optional(raw, "approved", at)
    by = _optional(raw, "approved_by", at)
    when = _optional(raw, "approved_at", at)
    if approved is None and by is None and when is None:
        return None
    return _approval(approved or digest, by, when, at)


def _approval(digest: str, by: str | None, when: str | None, at: str) -> Approval:
    if not _DIGEST.match(digest):
        raise SourceError(f"{at}: the approved digest {digest[:80]!r} must be sha256: and 64 hex digits{FIX}")
    if by is not None and not reviewer_ok(by):
        raise SourceError(f"{at}: the reviewer {by[:80]!r} must be one line of printable text{FIX}")
    if when is not None and not _TIME.match(when):
        raise SourceError(f"{at}: the approval time {when[:80]!r} must be UTC as 2026-07-02T10:11:12Z{FIX}")
    return Approval(digest, by, when)


def reviewer_ok(name: str) -> bool:
    """A reviewer is one line of printable text: it is shown in reviews and on a terminal."""
    return 0 < len(name) <= MAX_REVIEWER and name.isprintable() and name.strip() == name


def _local_approvals(table: Any, where: str) -> dict[str, LocalApproval]:
    if not isinstance(table, dict):
        raise SourceError(f"{where}: `approved` must be a table of skills{FIX}")
    return {skill_id: _local_approval(skill_id, entry, where) for skill_id, entry in table.items()}


def _local_approval(skill_id: str, raw: Any, where: str) -> LocalApproval:
    at = f"{where}: [approved] {_key(skill_id)}"
    if not isinstance(raw, dict):
        raise SourceError(f"{at} must be a table with path, digest, by and at{FIX}")
    parts = skill_id.split("/")
    if len(parts) < 2 or not all(plain_name(part) and not part.startswith(".") for part in parts):
        raise SourceError(f"{at}: the id {skill_id!r} must be CATEGORY/SKILL, each a plain name{FIX}")
    path = _text(raw, "path", at)
    if not plain_relative(path) or any(part.startswith(".") for part in path.split("/")):
        raise SourceError(f"{at}: path {path!r} must be a relative path inside the library, no dot-names{FIX}")
    approval = _approval(_text(raw, "digest", at), _optional(raw, "by", at), _optional(raw, "at", at), at)
    return LocalApproval(skill_id, path, approval)


def _approval_pairs(skill: LockedSkill) -> list[tuple[str, str | None]]:
    approval = skill.approval
    if approval is None:
        return []
    changed = approval.digest if approval.digest != skill.digest else None  # only a local edit's
    return [("approved", changed), ("approved_by", approval.by), ("approved_at", approval.at)]


def render_approved(lock: Lock) -> str:
    if not lock.approved:
        return ""
    lines = ["[approved]"]
    for skill_id in sorted(lock.approved):
        local = lock.approved[skill_id]
        pairs = [("path", local.path), ("digest", local.approval.digest), ("by", local.approval.by)]
        pairs.append(("at", local.approval.at))
        inline = ", ".join(f"{key} = {_string(value)}" for key, value in pairs if value is not None)
        lines.append(f"{_key(skill_id)} = {{ {inline} }}")
    return "\n".join(lines) + "\n"


# -- writing ---------------------------------------------------------------------------------------
def render_lock(lock: Lock) -> str:
    """The lock as TOML, byte for byte the same for the same content."""
    parts = [HEADER, f"version = {LOCK_VERSION}\n"]
    parts += ["\n" + render_source(lock.sources[name]) for name in sorted(lock.sources)]
    approved = render_approved(lock)
    return "".join(parts) + ("\n" + approved if approved else "")


def render_source(source: LockedSource) -> str:
    lines = [f"[source.{_key(source.name)}]"]
    fields: list[tuple[str, str | None]] = [
        ("kind", source.kind),
        ("url", strip_credentials(source.url)),  # however it was read: a hand-written lock may hold a token
        ("ref", source.ref),
        ("commit", source.commit),
        ("digest", source.digest),
        ("subpath", source.subpath or None),
        ("token_env", source.token_env),
        ("signed", source.signed),
        ("signers", source.signers),
        ("signer", source.signer),
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
    if skill.rollback is not None:
        parts.append(f"rollback = {_string(skill.rollback)}")
    parts += [f"{key} = {_string(value)}" for key, value in _approval_pairs(skill) if value is not None]
    return "{ " + ", ".join(parts) + " }"


def _key(text: str) -> str:
    return text if _BARE_KEY.match(text) else _string(text)


def _string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped (C1 and the bidirectional
    overrides too: an error naming a hostile entry, or the lock in a diff, shows them as \\uXXXX)."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif has_controls(char):
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
