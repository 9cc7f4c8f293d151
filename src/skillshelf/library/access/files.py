"""A skill's files: which paths name them, and reading them under one set of rules.

Every read of a skill's file, by any surface, goes through `SkillFiles.locate`:

- a served path is relative and '/'-separated (a backslash counts as one), at most 1,000 characters,
  with no '..', no NUL, no dot-name (`.git`, `.env`, `.skillshelf`) and no component over 255 bytes;
- it names a file of that skill: one under its folder (Agent Skills layout), or one of its three files
  (`SKILL.md` is generated from the documentation; `scripts/NAME.py` and `references/NAME-SKILL.md`,
  or the files' own names, name the implementation and the metadata);
- followed through symlinks, it stays inside the skill's library root with no dot-name on the way, and
  does not land in a skill the reader may not show (`Crossing`, a view's rule);
- it is a regular file (never a FIFO or a device), and a read stops at its size cap.

What fails a rule is reported exactly like a file that does not exist (PATTERN_NOT_FOUND), except a
path that tries to leave the skill (`..`, absolute: ACCESS_DENIED) or is malformed (VALIDATION_ERROR).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access import manifest as manifests
from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.indexing.filecache import Signature, signature_of
from skillshelf.library.skill.folder import MAX_NAME_BYTES, TooManyFiles, kept, walk_folder
from skillshelf.library.skill.frontmatter import document_body
from skillshelf.library.skill.paths import servable_text
from skillshelf.library.skill.reading import NotRegularFile, Reporter, read_regular_file, read_text

T = TypeVar("T")
MAX_PATH_CHARS = 1000
MAX_NAMED = 16_384  # three-file skills whose names are kept (about a kilobyte each)
SKILL_DOC = manifests.SKILL_DOC
# Does this resolved path land in a skill the reader may not show? (the skill being read, the path)
Crossing = Callable[[IndexedSkill, Path], bool]


def never(_skill: IndexedSkill, _path: Path) -> bool:
    return False


class SkillFileError(SkillshelfError):
    """A served path that is not one of the skill's files (or breaks a rule); the message says which files are."""


def normalise(skill_id: str, served: str) -> str:
    """The served path in its one spelling, or an error naming the rule it breaks."""
    if not isinstance(served, str) or not served.strip():
        raise SkillFileError(ErrorCode.VALIDATION_ERROR, f"give a file of {skill_id!r}, e.g. 'SKILL.md'")
    if len(served) > MAX_PATH_CHARS:
        raise SkillFileError(ErrorCode.VALIDATION_ERROR, f"a file path is at most {MAX_PATH_CHARS} characters")
    if "\x00" in served:
        raise SkillFileError(ErrorCode.VALIDATION_ERROR, "a file path cannot hold a NUL character")
    text = served.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):  # a POSIX path is absolute by its first "/"
        raise SkillFileError(
            ErrorCode.ACCESS_DENIED, f"{served!r} is absolute; only the files of {skill_id!r} can be read"
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise SkillFileError(ErrorCode.ACCESS_DENIED, f"{served!r} leaves {skill_id!r}; only its own files can be read")
    if too_long := [p for p in parts if len(p.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES]:
        raise SkillFileError(
            ErrorCode.VALIDATION_ERROR,
            f"{too_long[0][:40]!r}... is over {MAX_NAME_BYTES} bytes; no file of a skill has so long a name",
        )
    return posixpath.join(*parts) if parts else ""


class SkillFiles:
    """The files of the library's skills, read under the rules above; `crossing` is the reader's view rule."""

    def __init__(self, library: SkillLibrary, crossing: Crossing = never) -> None:
        self.library = library
        self.crossing = crossing
        # Each three-file skill's names, by what they are made of: building their paths was a tenth of a repeat
        # load (pathlib's parsing, issue 36). Only strings are cached, never what is on disk.
        self._names: dict[tuple[Path, str, str | None, str | None], Mapping[str, Path | None]] = {}

    # -- naming -------------------------------------------------------------------------------
    def root_of(self, skill: IndexedSkill) -> Path:
        return self.library.root_of(skill)

    def folder_of(self, skill: IndexedSkill) -> Path:
        """The skill's folder (Agent Skills), or its category folder (three-file)."""
        return (self.root_of(skill) / skill.details.doc_file).parent

    def three_file_names(self, skill: IndexedSkill) -> Mapping[str, Path | None]:
        """Served path -> file on disk for a three-file skill (None: SKILL.md, generated); aliases included."""
        details = skill.details
        key = (self.root_of(skill), details.doc_file, details.code_file, details.meta_file)
        names = self._names.get(key)
        if names is None:
            if len(self._names) >= MAX_NAMED:
                self._names.clear()  # bounded by the library's skills; a library past it names them again
            names = self._names[key] = self._three_file_names(*key)
        return names

    @staticmethod
    def _three_file_names(
        root: Path, doc_file: str, code_file: str | None, meta_file: str | None
    ) -> dict[str, Path | None]:
        names: dict[str, Path | None] = {SKILL_DOC: None, Path(doc_file).name: root / doc_file}
        if code_file:
            code = root / code_file
            names[f"scripts/{code.name}"] = names[code.name] = code
        if meta_file:
            meta = root / meta_file
            names[f"references/{meta.name}"] = names[meta.name] = meta
        return names

    def listing(self, skill: IndexedSkill, max_files: int = manifests.MAX_FILES) -> dict[str, Path | None]:
        """Every file the skill serves, by served path (SKILL.md first); raises TooManyFiles past `max_files`.

        Three-file skills list their canonical names (SKILL.md, scripts/..., references/...); their
        files' own names are accepted by `locate` too.
        """
        found: dict[str, Path | None]
        if skill.layout == "three-file":
            named = self.three_file_names(skill)
            found = {n: p for n, p in named.items() if (n == SKILL_DOC or "/" in n) and self._servable(skill, p)}
        else:
            doc_name = Path(skill.details.doc_file).name
            walked = walk_folder(
                self.folder_of(skill), self.root_of(skill), max_files=max_files, crossing=self._crossing(skill)
            )
            found = {SKILL_DOC if f.served == doc_name else f.served: f.path for f in walked}
        return dict(sorted(found.items(), key=lambda item: (item[0] != SKILL_DOC, item[0])))

    def listed_paths(self, skill: IndexedSkill) -> list[str]:
        """The paths to name a skill's files by, for an agent or a page: a three-file skill's own file names,
        a folder's served paths (one over the limit: just SKILL.md)."""
        if skill.layout == "three-file":
            named = self.three_file_names(skill)
            return sorted(n for n, p in named.items() if p is not None and "/" not in n and self._servable(skill, p))
        try:
            return list(self.listing(skill))
        except TooManyFiles:
            return [SKILL_DOC]

    # -- the rules ----------------------------------------------------------------------------
    def locate(self, skill: IndexedSkill, served: str) -> Path | None:
        """The file behind a served path after every rule (None: the generated SKILL.md of a three-file skill)."""
        return self._located(skill, served)[0]

    def _located(self, skill: IndexedSkill, served: str) -> tuple[Path | None, Signature | None]:
        """`locate`, and the file's signature from the rule's stat of it (None with the generated SKILL.md): the
        file cache takes it, so a repeat read stats the file once (issue 36)."""
        try:
            name = normalise(skill.id, served)
        except SkillFileError as exc:
            if exc.code != ErrorCode.ACCESS_DENIED:
                raise
            listed = ", ".join(self.listed_paths(skill)[:30])
            raise SkillFileError(exc.code, f"{exc.message}: {listed}.") from None
        if skill.layout == "three-file":
            named = self.three_file_names(skill)
            if name not in named:
                raise self.missing(skill, served)
            path = named[name]
            if path is None:
                return None, None
        else:
            if not name or not all(kept(part) for part in name.split("/")):
                raise self.missing(skill, served)
            doc_name = Path(skill.details.doc_file).name
            folder = self.folder_of(skill)
            path = folder / (doc_name if name == SKILL_DOC else name)
        stamp = self._servable_stamp(skill, path)
        if stamp is None:
            raise self.missing(skill, served)
        return path, stamp

    def missing(self, skill: IndexedSkill, served: str) -> SkillFileError:
        import difflib

        listed = self.listed_paths(skill)
        return SkillFileError(
            ErrorCode.PATTERN_NOT_FOUND,
            f"{skill.id!r} has no file {served!r}; its files: {', '.join(listed[:30]) or 'none'}.",
            suggestions=difflib.get_close_matches(str(served), listed, n=3, cutoff=0.5),
        )

    def _servable(self, skill: IndexedSkill, path: Path | None) -> bool:
        return path is None or self._servable_stamp(skill, path) is not None

    def _servable_stamp(self, skill: IndexedSkill, path: Path) -> Signature | None:
        """The file's signature when `path` meets the rules (a regular file, servable, not into a hidden skill)."""
        real = servable_text(path, self.root_of(skill))
        if real is None:
            return None
        try:
            found = os.stat(real)  # noqa: PTH116 (the resolved text, unparsed: as servable_text says)
        except OSError:
            return None
        if not stat.S_ISREG(found.st_mode):
            return None
        if real != str(path) and self.crossing(skill, Path(real)):  # a link's target meets the view's rule
            return None
        return signature_of(found)

    def _crossing(self, skill: IndexedSkill) -> Callable[[Path], bool]:
        return lambda real: not self.crossing(skill, real)

    # -- reading ------------------------------------------------------------------------------
    def read_bytes(self, skill: IndexedSkill, served: str, limit: int) -> bytes:
        """The file's bytes as served; CONTENT_TOO_LARGE past `limit` (never read whole)."""
        path = self.locate(skill, served)
        if path is None:
            return self.generated_skill_md(skill)
        try:
            data = read_regular_file(path, limit + 1)
        except NotRegularFile:
            raise self.missing(skill, served) from None
        except OSError as exc:
            raise SkillFileError(
                ErrorCode.FILESYSTEM_ERROR,
                f"{skill.id}/{served} cannot be read ({exc.strerror or type(exc).__name__}); try again later.",
            ) from exc
        if len(data) > limit:
            raise SkillFileError(
                ErrorCode.CONTENT_TOO_LARGE,
                f"{skill.id}/{served} is over {limit // 1024} KiB, more than one read returns; "
                "ask the curator to split it or move it out of the skill.",
            )
        return data

    def read_text(self, skill: IndexedSkill, served: str, max_bytes: int | None = None) -> str | None:
        """The file as text (cut at `max_bytes` and reported); None when it is binary or unreadable."""
        limit = max_bytes or self.library.config.max_file_bytes
        path = self.locate(skill, served)
        if path is None:
            return self.generated_skill_md(skill).decode("utf-8")
        return read_text(path, Reporter(served), limit)

    def cached(
        self, skill: IndexedSkill, served: str, kind: str, compute: Callable[[], T], size: Callable[[T], int]
    ) -> T:
        """`compute()`'s result for this file, reused while the file is unchanged (see FileCache)."""
        path, stamp = self._located(skill, served)
        if path is None:
            path = self.root_of(skill) / skill.details.doc_file  # the generated SKILL.md follows its document
        return self.library.files.get(path, kind, compute, size, stamp)

    def digest(self, skill: IndexedSkill, served: str, limit: int) -> str:
        """`sha256:<hex>` of the served bytes, reused while the file is unchanged."""
        if self.locate(skill, served) is None:  # generated: it follows the index too, so never cached
            return "sha256:" + hashlib.sha256(self.generated_skill_md(skill)).hexdigest()
        return self.cached(
            skill,
            served,
            "sha256",
            lambda: "sha256:" + hashlib.sha256(self.read_bytes(skill, served, limit)).hexdigest(),
            lambda _digest: 80,
        )

    def parsed_text(
        self,
        skill: IndexedSkill,
        served: str,
        kind: str,
        parse: Callable[[str | None], T],
        size: Callable[[T], int],
        max_bytes: int | None = None,
    ) -> T:
        """`parse` of the file's text as `read_text` reads it (None: binary or unreadable), reused while the
        file is unchanged. The file is located once: locating it again to read it (a realpath and a stat)
        was a tenth to a fifth of a first load (issue 36)."""
        path, stamp = self._located(skill, served)
        if path is None:  # the generated SKILL.md follows its document
            return self.cached(skill, served, kind, lambda: parse(self.read_text(skill, served, max_bytes)), size)
        limit = max_bytes or self.library.config.max_file_bytes
        load = lambda: parse(read_text(path, Reporter(served), limit))  # noqa: E731
        return self.library.files.get(path, kind, load, size, stamp)

    def documentation(self, skill: IndexedSkill) -> str | None:
        """The document's body without frontmatter, parsed once per version of the file; None when unreadable."""
        try:
            return self.from_documentation(skill, "documentation", lambda body: body, lambda body: len(body or ""))
        except SkillFileError:
            return None

    def from_documentation(
        self, skill: IndexedSkill, kind: str, derive: Callable[[str | None], T], size: Callable[[T], int]
    ) -> T:
        """`derive` of the document's body without frontmatter (None: unreadable), kept per version of the file
        as `kind`: what a load serves is derived in the one lookup of the file (issue 36)."""
        served = SKILL_DOC if skill.layout != "three-file" else posixpath.basename(skill.details.doc_file)

        def parse(text: str | None) -> T:
            return derive(None if text is None else document_body(text))

        return self.parsed_text(skill, served, kind, parse, size)

    def generated_skill_md(self, skill: IndexedSkill) -> bytes:
        """SKILL.md of a three-file skill: frontmatter generated from the index, then the documentation."""
        body = self.documentation(skill)
        if body is None:
            raise SkillFileError(
                ErrorCode.FILESYSTEM_ERROR,
                f"{skill.id}/SKILL.md: {skill.details.doc_file} cannot be read as text; call searchPatterns again.",
            )
        return manifests.three_file_skill_md(skill, body)
