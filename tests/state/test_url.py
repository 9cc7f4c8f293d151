"""The database URL: its scheme picks the backend (an unknown one is refused naming the known ones), only
PostgreSQL's URLs are accepted by that backend, and none is ever shown with its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf import state
from skillshelf.settings import SettingsError, resolve_settings
from skillshelf.state import check_url, open_stores
from skillshelf.state.postgres.url import check_database_url, redacted


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:pw@db:5432/shelf", "postgresql://app:***@db:5432/shelf"),
        ("postgres://app:p%40ss:word@db/shelf", "postgres://app:***@db/shelf"),
        ("postgresql://app@db/shelf", "postgresql://app@db/shelf"),
        ("postgresql://db/shelf?password=pw&sslmode=require", "postgresql://db/shelf?password=***&sslmode=require"),
        ("postgresql:///shelf?host=/run/postgresql", "postgresql:///shelf?host=/run/postgresql"),
        ("postgresql://[::1]:5432/shelf", "postgresql://[::1]:5432/shelf"),
        ("s3cret:pw@nowhere", "***"),  # no URL at all: perhaps a password pasted in the wrong place
    ],
)
def test_a_url_is_shown_with_every_password_masked(url: str, shown: str) -> None:
    assert redacted(url) == shown


def test_a_password_holding_an_at_sign_is_masked_whole() -> None:
    assert redacted("postgresql://app:p@ss@db/shelf") == "postgresql://app:***@db/shelf"


@pytest.mark.parametrize("url", ["postgresql://app:pw@db/shelf", " postgres://db/shelf "])
def test_postgresql_urls_are_accepted(url: str) -> None:
    assert check_database_url(url) == url.strip()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("sqlite:///tmp/usage.sqlite3", "only postgresql://"),
        ("mysql://root:s3cret@db/shelf", "only postgresql://"),
        ("db.example:5432", "only postgresql://"),
        ("postgresql://app:s3cret@db:notaport/shelf", "is not a URL"),
    ],
)
def test_other_urls_are_refused_naming_the_fix_and_never_the_password(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as refused:
        check_database_url(url)
    assert "s3cret" not in str(refused.value)


def test_a_password_with_an_unencoded_at_sign_is_refused_naming_the_fix_and_no_part_of_it() -> None:
    """libpq splits at the first `@`: the password's tail became the host, and its name was shown in errors."""
    with pytest.raises(ValueError) as refused:
        check_database_url("postgresql://app:s3cr@t-tail@127.0.0.1:5432/shelf")
    message = str(refused.value)
    assert "unencoded '@'" in message and "%40" in message and "postgresql://app:***@127.0.0.1:5432/shelf" in message
    assert "s3cr" not in message and "t-tail" not in message
    assert check_database_url("postgresql://app:s3cr%40t-tail@127.0.0.1/shelf")  # encoded, it is fine


def test_a_driver_message_holding_the_password_is_masked() -> None:
    from skillshelf.state.postgres.database import reason_of

    url = "postgresql://app:s3cret@db/shelf"
    said = reason_of(RuntimeError('connection failed: password "s3cret" was refused\nmore detail'), url)
    assert said == 'connection failed: password "***" was refused'


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("sqlite:///tmp/usage.sqlite3", "scheme 'sqlite'"),
        ("mysql://root:s3cret@db/shelf", "scheme 'mysql'"),
        ("s3cret:pw@nowhere", "no scheme"),
        ("db.example:5432", "no scheme"),
    ],
)
def test_an_unknown_scheme_is_refused_naming_the_known_ones(url: str, says: str) -> None:
    """The settings and `open_stores` ask one registry: its message lists every backend's scheme."""
    for check in (check_url, open_stores):
        with pytest.raises(ValueError, match=says) as refused:
            check(url)
        message = str(refused.value)
        assert "file://, postgresql://, postgres://" in message and "s3cret" not in message
    with pytest.raises(SettingsError, match="known schemes are file://"):
        resolve_settings(env={"SKILLSHELF_DATABASE_URL": "mysql://root@db/shelf"})


def test_file_names_the_embedded_stores_and_takes_no_path() -> None:
    assert check_url("file://") is None and check_url(" FILE:// ") is None
    assert resolve_settings(env={"SKILLSHELF_DATABASE_URL": "file://"}).database_url is None
    assert open_stores(None).shared is False and open_stores("file://").shared is False
    with pytest.raises(ValueError, match="take no path"):
        check_url("file:///var/lib/skillshelf")


def test_a_postgresql_url_opens_the_postgresql_stores_without_connecting() -> None:
    stores = open_stores("postgresql://app:pw@127.0.0.1:1/shelf")
    assert stores.shared is True  # nothing connected yet: a store connects when used


def test_a_new_backend_is_its_package_and_one_registry_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`open_stores` finds a backend by the registry alone: nothing else names one."""
    package = tmp_path / "membackend"
    package.mkdir()
    (package / "__init__.py").write_text(
        "def check_url(url):\n    return url\n\n"
        "class MemStores:\n    shared = True\n\n    def __init__(self, url):\n        self.url = url\n\n"
        "def open_backend(url):\n    return MemStores(url)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(state.BACKENDS, "mem", "membackend")
    assert check_url("mem://x") == "mem://x"
    assert getattr(open_stores("mem://x"), "url", None) == "mem://x"
    assert resolve_settings(env={"SKILLSHELF_DATABASE_URL": "mem://x"}).database_url == "mem://x"
