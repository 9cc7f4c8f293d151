"""skillshelf.lock: the same content is always the same bytes (sorted, one line per skill), any text
survives TOML, it is replaced whole, and a lock skillshelf cannot read says which file and why."""

from __future__ import annotations

import tomllib
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import (
    Lock,
    LockedSkill,
    LockedSource,
    parse_lock,
    read_lock,
    render_lock,
    write_lock,
)
from skillshelf.library.sources.spec import plain_name


def source(name: str, *skills: str, **fields: object) -> LockedSource:
    entries = tuple(LockedSkill(f"{name}/{s}", f"{name}/{s}", f"skills/{s}", "sha256:" + "ab" * 32) for s in skills)
    values: dict[str, object] = {
        "kind": "git",
        "url": f"https://example.com/{name}.git",
        "installed": "2026-01-02T03:04:05Z",
    }
    values.update(fields)
    return LockedSource(name=name, skills=entries, **values)  # type: ignore[arg-type]


def test_the_same_content_is_the_same_bytes_whatever_its_order() -> None:
    one = Lock({"b": source("b", "z", "a"), "a": source("a", "m", only=("y*", "x*"))})
    two = Lock({"a": source("a", "m", only=("x*", "y*")), "b": source("b", "a", "z")})
    assert render_lock(one) == render_lock(two)
    text = render_lock(one)
    assert text.index("[source.a]") < text.index("[source.b]") < text.index('"b/a" = {') < text.index('"b/z" = {')
    assert '"a/m" = { path = "a/m", from = "skills/m", digest = "sha256:' in text  # one line per skill
    assert parse_lock(text) == Lock({"a": source("a", "m", only=("x*", "y*")), "b": source("b", "a", "z")})


TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)  # utf-8: no lone surrogates
NAME = TEXT.filter(plain_name)  # any name `add` may write: quotes, backslashes, control characters
ORIGIN = st.lists(NAME, max_size=3).map("/".join)


@settings(max_examples=100, deadline=None)
@given(url=TEXT, ref=TEXT, license_text=TEXT, skill=NAME, origin=ORIGIN)
def test_any_text_survives_the_writer_and_tomllib(
    url: str, ref: str, license_text: str, skill: str, origin: str
) -> None:
    entry = LockedSource(
        name="s",
        kind="git",
        url="https://example.com/" + quote(url),
        installed="2026-01-02T03:04:05Z",
        ref=ref,
        license=license_text,
        skills=(LockedSkill("s/" + skill, "s/" + skill, origin, "sha256:00", license=license_text),),
        files={"s/" + skill: "sha256:11"},
    )
    text = render_lock(Lock({"s": entry}))
    tomllib.loads(text)  # valid TOML whatever the text held
    assert parse_lock(text) == Lock({"s": entry})


def test_writing_replaces_the_lock_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    lock_file = tmp_path / "skillshelf.lock"
    write_lock(lock_file, Lock({"a": source("a", "x")}))
    first = lock_file.stat().st_ino
    write_lock(lock_file, Lock({"a": source("a", "x", "y")}))
    assert lock_file.stat().st_ino != first  # a new file renamed over the old, never rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["skillshelf.lock"]
    assert {s.id for s in read_lock(lock_file).sources["a"].skills} == {"a/x", "a/y"}
    assert read_lock(tmp_path / "missing.lock") == Lock()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[source.a\n", "not valid TOML"),
        ("version = 9\n", "lock version 9"),
        ('[source.a]\nkind = "svn"\nurl = "x"\ninstalled = "t"\n', "kind 'svn'"),
        ('[source.a]\nkind = "git"\ninstalled = "t"\n', "has no url"),
        ('[source.a]\nkind = "git"\nurl = "x"\ninstalled = "t"\nonly = "x*"\n', "only must be a list"),
        (
            '[source.a]\nkind = "git"\nurl = "x"\ninstalled = "t"\n[source.a.skills]\n"a/x" = 3\n',
            "path, from and digest",
        ),
    ],
)
def test_a_lock_skillshelf_cannot_read_names_the_file_and_what_is_wrong(text: str, words: str, tmp_path: Path) -> None:
    lock_file = tmp_path / "skillshelf.lock"
    lock_file.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError) as refused:
        read_lock(lock_file)
    assert words in refused.value.message and str(lock_file) in refused.value.message
