"""The database URL: only PostgreSQL's are accepted, and none is ever shown with its password."""

from __future__ import annotations

import pytest

from skillshelf.state.url import check_database_url, redacted


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
    from skillshelf.state.database import reason_of

    url = "postgresql://app:s3cret@db/shelf"
    said = reason_of(RuntimeError('connection failed: password "s3cret" was refused\nmore detail'), url)
    assert said == 'connection failed: password "***" was refused'
