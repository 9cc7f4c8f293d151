"""The one reader: a view's hidden skills are absent from every member of the interface, and every file
read obeys one set of path rules (dot-names, symlinks leaving the root or into a hidden skill, name
lengths, regular files, size caps)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from skillshelf.errors import ErrorCode, PatternNotFoundError, SkillshelfError
from skillshelf.library.access.files import SkillFileError, normalise
from skillshelf.library.access.manifest import MAX_TOTAL_BYTES
from skillshelf.library.access.reader import ROLES, LibraryReader, SkillReader, ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import IndexedSkill, SearchFilters
from tests.conftest import agent_skill, three_file, write

HIDDEN = "secret/vault-notes"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    agent_skill(
        root,
        "secret",
        "vault-notes",
        "name: vault-notes\ndescription: Where the vault keys live and how to rotate them.\ntags: [vault]",
        "# Vault notes\n\nThe vault key rotation runbook.\n",
    )
    write(root / "secret" / "vault-notes" / "references" / "keys.md", "root token: hunter2\n")
    tool = agent_skill(
        root, "docs", "tool", "name: tool\ndescription: A tool for the vault rotation that everyone may read."
    )
    write(tool.parent / "references" / "guide.md", "# Guide\n\nRotate with care.\n")
    write(tool.parent / "scripts" / "run.py", "print('ok')\n")
    three_file(
        root, "python", "slugify", "# Slugify\n\nTurn a title into a slug.\n", code="def slugify(t):\n  return t\n"
    )
    return root


@pytest.fixture
def library(root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    opened = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    opened.sync()
    opened.usage.record(HIDDEN, "app", None, source="tool")
    opened.usage.record("docs/tool", "app", None, source="tool")
    yield opened
    opened.close()


@pytest.fixture
def view(library: SkillLibrary) -> ViewReader:
    return ViewReader(library, [("exclude", "secret/*")])


def hidden_row(library: SkillLibrary) -> IndexedSkill:
    skill = library.get(HIDDEN)
    assert skill is not None
    return skill


def absent(call: Callable[[], Any]) -> None:
    """The call fails exactly as for a skill that does not exist (PATTERN_NOT_FOUND), naming no hidden id."""
    with pytest.raises(SkillshelfError) as failed:
        call()
    assert failed.value.code == ErrorCode.PATTERN_NOT_FOUND
    assert HIDDEN not in failed.value.suggestions


def no_hidden(value: Any) -> None:
    assert HIDDEN not in repr(value) and "vault-notes" not in repr(value)


# Every member of the SkillReader interface, called for a hidden skill: what it must answer.
CHECKS: dict[str, Callable[[ViewReader, IndexedSkill], None]] = {
    "needs_sync": lambda r, _s: no_hidden(r.needs_sync()),
    "ensure_fresh": lambda r, _s: r.ensure_fresh(),
    "mark_changed": lambda r, _s: r.mark_changed(),
    "index_warning": lambda r, _s: no_hidden(r.index_warning()),
    "semantic_note": lambda r, _s: no_hidden(r.semantic_note()),
    "status": lambda r, _s: no_hidden(r.status()),
    "searches_by_meaning": lambda r, _s: no_hidden(r.searches_by_meaning),
    "max_file_bytes": lambda r, _s: no_hidden(r.max_file_bytes),
    "progress": lambda r, _s: no_hidden(r.progress),
    "roots": lambda r, _s: None,  # the roots, never a skill
    "search": lambda r, _s: no_hidden([s.id for s in r.search("vault key rotation", SearchFilters(), 50)]),
    "get": lambda r, s: no_hidden(r.get(s.id)),
    "find": lambda r, s: absent(lambda: r.find(s.id)),
    "suggest": lambda r, s: no_hidden(r.suggest(s.id) + r.suggest("vault-notes") + r.suggest("secret/vault")),
    "overview": lambda r, _s: no_hidden([s.id for s in r.overview()]),
    "count": lambda r, _s: None if r.count() == 2 else pytest.fail(f"count {r.count()} counts the hidden skill"),
    "has_category": lambda r, s: None if not r.has_category(s.category) else pytest.fail("its category is shown"),
    "categories": lambda r, _s: no_hidden([c.name for c in r.categories()]),
    "findings": lambda r, _s: no_hidden(r.findings()),
    "verified_ids": lambda r, _s: no_hidden(r.verified_ids()),
    "is_verified": lambda r, s: None if not r.is_verified(s, frozenset({s.id})) else pytest.fail("verified"),
    "usage": lambda r, s: no_hidden([r.usage(s.id), r.usage(None)]),
    "daily_uses": lambda r, _s: no_hidden(r.daily_uses()),
    "record_use": lambda r, s: absent(lambda: r.record_use(s.id, "app", None, "tool")),
    "files": lambda r, s: absent(lambda: r.files(s)),
    "locate": lambda r, s: absent(lambda: r.locate(s, "SKILL.md")),
    "folder_of": lambda r, s: absent(lambda: r.folder_of(s)),
    "read_text": lambda r, s: absent(lambda: r.read_text(s, "SKILL.md")),
    "read_bytes": lambda r, s: absent(lambda: r.read_bytes(s, "references/keys.md", 1024)),
    "cached": lambda r, s: absent(lambda: r.cached(s, "SKILL.md", "x", lambda: "leaked", len)),
    "parsed_text": lambda r, s: absent(lambda: r.parsed_text(s, "SKILL.md", "x", lambda _text: "leaked", len)),
    "documentation": lambda r, s: absent(lambda: r.documentation(s)),
    "from_documentation": lambda r, s: absent(lambda: r.from_documentation(s, "x", lambda _body: "leaked", len)),
    "manifest": lambda r, s: absent(lambda: r.manifest(s)),
    "run_copy": lambda r, s: absent(lambda: r.run_copy(s, lambda: r.roots()[0].parent / "run-copy")),
    "provenance": lambda r, s: absent(lambda: r.provenance(s)),
    "versions": lambda r, s: absent(lambda: r.versions(s)),
}


def role_members(role: type) -> list[str]:
    """A role protocol's members, read from the class (a member added to a role is walked at once)."""
    return sorted(name for name in vars(role) if not name.startswith("_"))


def interface_members() -> set[str]:
    return {name for role in ROLES for name in role_members(role)}


def test_every_member_of_the_reader_interface_has_a_hidden_skill_check() -> None:
    assert set(CHECKS) == interface_members()


def test_the_reader_is_its_roles_and_nothing_else() -> None:
    # SkillReader adds no member of its own: a surface that needs one role can take that role alone.
    assert role_members(SkillReader) == []
    assert set(SkillReader.__mro__) >= set(ROLES)


@pytest.mark.parametrize("member", sorted(CHECKS))
def test_a_hidden_skill_is_absent_or_unknown_to_every_member(
    view: ViewReader, library: SkillLibrary, member: str
) -> None:
    CHECKS[member](view, hidden_row(library))


# What the walk below passes for a parameter, by its name: always the hidden skill, or words naming it.
WALK_ARGUMENTS: dict[str, Callable[[IndexedSkill], Any]] = {
    "skill": lambda s: s,
    "skill_id": lambda s: s.id,
    "name": lambda s: s.category,
    "query": lambda _s: "vault key rotation runbook",
    "filters": lambda _s: SearchFilters(),
    "limit": lambda _s: 1024,
    "path": lambda _s: "references/keys.md",
    "kind": lambda _s: "walk",
    "compute": lambda _s: lambda: "computed",
    "parse": lambda _s: lambda _text: "parsed",
    "derive": lambda _s: lambda _body: "derived",
    "size": lambda _s: len,
    "into": lambda _s: lambda: Path("/proc/no-copy-here"),  # a run's copy: a hidden skill's is never made
    "project": lambda _s: "app",
    "note": lambda _s: None,
    "source": lambda _s: "tool",
}


# Members given a hidden skill's row that answer "no" about it rather than refuse it as unknown.
SAY_NOTHING = frozenset({"is_verified"})


def takes_a_skill(member: str) -> bool:
    found = inspect.getattr_static(ViewReader, member)
    return not isinstance(found, property) and "skill" in inspect.signature(found).parameters


def walked(view: ViewReader, member: str, skill: IndexedSkill) -> Any:
    """`member` of the view called with the hidden skill wherever a parameter can name one."""
    found = inspect.getattr_static(ViewReader, member)
    if isinstance(found, property):
        return getattr(view, member)
    arguments = {}
    for parameter in list(inspect.signature(found).parameters.values())[1:]:
        if parameter.name in WALK_ARGUMENTS:
            arguments[parameter.name] = WALK_ARGUMENTS[parameter.name](skill)
        elif parameter.default is inspect.Parameter.empty:
            pytest.fail(f"{member}({parameter.name}): say in WALK_ARGUMENTS what names the hidden skill there")
    return getattr(view, member)(**arguments)


# Every (role, member) pair, found by introspection of the role protocols: a member added to any role is
# walked with no edit here.
EVERY_MEMBER = [(role.__name__, member) for role in ROLES for member in role_members(role)]


@pytest.mark.parametrize(("role", "member"), EVERY_MEMBER)
def test_no_member_of_any_role_returns_or_names_a_hidden_skill(
    view: ViewReader, library: SkillLibrary, role: str, member: str
) -> None:
    walk_hides(view, hidden_row(library), role, member)


def walk_hides(view: ViewReader, skill: IndexedSkill, role: str, member: str) -> None:
    """`member`, called with the hidden skill, refuses it as unknown or answers without it."""
    try:
        answer = walked(view, member, skill)
    except SkillshelfError as refused:
        assert refused.code == ErrorCode.PATTERN_NOT_FOUND, f"{role}.{member}: {refused.code}"
        assert HIDDEN not in refused.suggestions and "vault" not in refused.message.replace(HIDDEN, "")
        return
    assert not isinstance(answer, IndexedSkill) or answer.id != HIDDEN, f"{role}.{member} returned it"
    if takes_a_skill(member):  # given the hidden skill's row: refused as unknown, or nothing said about it
        assert member in SAY_NOTHING and not answer, f"{role}.{member} answered {answer!r} for a hidden skill"
    no_hidden(answer)  # a boolean about it passes here; CHECKS asks those to be False
    assert "hunter2" not in repr(answer) and "rotation runbook" not in repr(answer)


def test_one_class_implements_every_role_and_the_curators_reader_only_constructs_it() -> None:
    missing = [m for m in interface_members() if m not in vars(ViewReader)]
    assert not missing, f"ViewReader lacks {missing}"
    assert [m for m in vars(LibraryReader) if not m.startswith("_")] == []
    assert not hasattr(ViewReader, "__getattr__")


def test_a_bare_name_never_suggests_a_hidden_skill(view: ViewReader, library: SkillLibrary) -> None:
    with pytest.raises(PatternNotFoundError) as failed:
        view.find("vault-notes")
    assert failed.value.suggestions == [] and HIDDEN not in failed.value.message
    with pytest.raises(PatternNotFoundError) as whole:
        LibraryReader(library).find("vault-notes")  # the curator sees it named
    assert whole.value.suggestions == [HIDDEN]


def test_categories_count_the_same_way_with_and_without_a_view(library: SkillLibrary, view: ViewReader) -> None:
    everything = {c.name: c for c in LibraryReader(library).categories()}
    viewed = {c.name: c for c in view.categories()}
    assert set(everything) == {"docs", "python", "secret"} and set(viewed) == {"docs", "python"}
    assert viewed["docs"] == everything["docs"]


# -- the file rules ------------------------------------------------------------------------------


def tool(reader: SkillReader) -> IndexedSkill:
    return reader.find("docs/tool")


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../vault-notes/SKILL.md", ErrorCode.ACCESS_DENIED),
        ("/etc/passwd", ErrorCode.ACCESS_DENIED),
        ("C:\\\\Windows\\\\win.ini", ErrorCode.ACCESS_DENIED),
        ("scripts/../../../secret/vault-notes/SKILL.md", ErrorCode.ACCESS_DENIED),
        (".env", ErrorCode.PATTERN_NOT_FOUND),
        (".git/config", ErrorCode.PATTERN_NOT_FOUND),
        ("references/../.git/config", ErrorCode.ACCESS_DENIED),
        ("node_modules/x/index.js", ErrorCode.PATTERN_NOT_FOUND),
        ("nul\x00byte", ErrorCode.VALIDATION_ERROR),
        ("a" * 256, ErrorCode.VALIDATION_ERROR),
        ("x/" * 600, ErrorCode.VALIDATION_ERROR),
        ("", ErrorCode.VALIDATION_ERROR),
    ],
)
def test_paths_outside_the_skills_own_files_are_refused_with_a_code(
    root: Path, library: SkillLibrary, path: str, code: ErrorCode
) -> None:
    write(root / "docs" / "tool" / ".env", "API_KEY=secret\n")
    write(root / "docs" / "tool" / ".git" / "config", "[remote]\nurl = https://user:token@example.com/x\n")
    write(root / "docs" / "tool" / "node_modules" / "x" / "index.js", "vendored\n")
    reader = LibraryReader(library)
    with pytest.raises(SkillFileError) as refused:
        reader.read_bytes(tool(reader), path, 1024)
    assert refused.value.code == code
    assert HIDDEN not in refused.value.message.replace(path, "")  # only the caller's own words echo it


@pytest.mark.parametrize(
    "target",
    [
        "../.git/config",  # inside the skill, but a dot-name
        "../../../.skillshelf/usage.sqlite3",  # the root's state folder
        "../../../../outside.txt",  # out of the root
    ],
)
def test_a_symlink_to_a_dot_path_or_out_of_the_root_is_never_served(
    root: Path, library: SkillLibrary, target: str
) -> None:
    folder = root / "docs" / "tool"
    write(folder / ".git" / "config", "url = https://user:token@example.com/x\n")
    write(root / ".skillshelf" / "usage.sqlite3", "not served\n")
    write(root.parent / "outside.txt", "not served\n")
    (folder / "references" / "leak").symlink_to(target)
    reader = LibraryReader(library)
    skill = tool(reader)
    with pytest.raises(SkillFileError) as refused:
        reader.read_text(skill, "references/leak")
    assert refused.value.code == ErrorCode.PATTERN_NOT_FOUND
    assert "references/leak" not in reader.files(skill)
    assert "references/leak" not in [f.path for f in reader.manifest(skill).files]


def test_a_symlink_into_a_hidden_skill_is_refused_in_the_view_and_served_to_the_curator(
    root: Path, library: SkillLibrary, view: ViewReader
) -> None:
    leak = root / "docs" / "tool" / "references" / "keys.md"
    leak.symlink_to(root / "secret" / "vault-notes" / "references" / "keys.md")
    (root / "docs" / "tool" / "assets").symlink_to(root / "secret" / "vault-notes" / "references")
    library.mark_dirty()
    skill = tool(view)
    for path in ("references/keys.md", "assets/keys.md"):
        with pytest.raises(SkillFileError):
            view.read_text(skill, path)
        assert path not in view.files(skill)
        assert path not in [f.path for f in view.manifest(skill).files]
    curator = LibraryReader(library)
    assert curator.read_text(tool(curator), "references/keys.md") == "root token: hunter2\n"


def test_a_symlink_loop_inside_a_skill_folder_ends_every_listing(root: Path, library: SkillLibrary) -> None:
    empty = root / "docs" / "tool" / "references" / "empty"
    empty.mkdir()
    (empty / "a").symlink_to(".")
    (empty / "b").symlink_to(".")
    reader = LibraryReader(library)
    skill = tool(reader)
    listed = reader.files(skill)  # returns: before, os.walk(followlinks=True) ran until the path got too long
    assert listed == ["SKILL.md", "references/guide.md", "scripts/run.py"]
    assert [f.path for f in reader.manifest(skill).files] == listed


def test_a_fifo_is_never_opened(root: Path, library: SkillLibrary) -> None:
    os.mkfifo(root / "docs" / "tool" / "references" / "pipe.md")
    reader = LibraryReader(library)
    skill = tool(reader)
    with pytest.raises(SkillFileError):
        reader.read_text(skill, "references/pipe.md")  # would block forever waiting for a writer
    assert "references/pipe.md" not in reader.files(skill)


def test_one_read_returns_at_most_its_cap(root: Path, library: SkillLibrary) -> None:
    big = root / "docs" / "tool" / "assets" / "big.bin"
    big.parent.mkdir()
    with big.open("wb") as handle:
        handle.truncate(MAX_TOTAL_BYTES + 1)  # sparse: cheap to make
    reader = LibraryReader(library)
    with pytest.raises(SkillFileError) as refused:
        reader.read_bytes(tool(reader), "assets/big.bin", MAX_TOTAL_BYTES)
    assert refused.value.code == ErrorCode.CONTENT_TOO_LARGE


def test_three_file_skills_answer_to_their_own_names_and_the_manifests(library: SkillLibrary) -> None:
    reader = LibraryReader(library)
    skill = reader.find("python/slugify")
    assert reader.files(skill) == ["slugify.md", "slugify.py"]
    assert reader.read_text(skill, "slugify.py") == reader.read_text(skill, "scripts/slugify.py")
    generated = reader.read_text(skill, "SKILL.md") or ""
    assert generated.startswith("---\nname: slugify\n") and "Turn a title into a slug." in generated
    with pytest.raises(SkillFileError):
        reader.read_text(skill, "slugify-SKILL.md")  # it has no metadata file


def test_a_served_path_has_one_spelling() -> None:
    assert normalise("a/b", "./references//guide.md") == "references/guide.md"
    assert normalise("a/b", "references\\guide.md") == "references/guide.md"
