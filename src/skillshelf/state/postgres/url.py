"""The `database_url` setting: which URLs are accepted, and how one is shown (never with its password)."""

from __future__ import annotations

from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit

SCHEMES = ("postgresql", "postgres")
MASK = "***"
# libpq reads a password from the query string too (`?password=...`): masked like the userinfo one.
SECRET_PARAMETERS = frozenset({"password", "sslpassword"})


def check_database_url(url: str) -> str:
    """`url` stripped, or ValueError naming what is wrong (the message never holds the password)."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is no number or out of range
    except ValueError as exc:
        raise ValueError(
            f"{redacted(url)!r} is not a URL ({exc}); use postgresql://USER:PASSWORD@HOST:PORT/DB"
        ) from exc
    if "@" in parts.netloc.rpartition("@")[0]:
        # libpq splits at the first `@`: the password's tail would be taken for the host, and shown as one.
        raise ValueError(
            f"{redacted(url)!r} has an unencoded '@' in its user name or password: write each '@' there as "
            "%40, e.g. postgresql://skillshelf:pa%40ss@db.example:5432/skillshelf"
        )
    if parts.scheme not in SCHEMES:
        shown = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise ValueError(
            f"{redacted(url)!r} has {shown}: only postgresql:// (or postgres://) URLs are supported, e.g. "
            "postgresql://skillshelf:PASSWORD@db.example:5432/skillshelf; leave it unset for the embedded stores"
        )
    return url


def redacted(url: str) -> str:
    """`url` with any password replaced by `***`, in the userinfo and in the query string; what is not
    a URL at all is shown as `***` whole, since it may be a password pasted in the wrong place."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    if "://" not in url:  # not a URL: `user:password@host` without a scheme would show its password
        return MASK if "@" in url else url
    # Replaced in place: urlunsplit would turn `postgresql:///db` into `postgresql:/db`.
    shown = url.replace(f"//{parts.netloc}", f"//{_netloc(parts)}", 1)
    return shown.replace(f"?{parts.query}", f"?{_query(parts.query)}", 1) if parts.query else shown


def _netloc(parts: SplitResult) -> str:
    if "@" not in parts.netloc:
        return parts.netloc
    userinfo, host = parts.netloc.rsplit("@", 1)
    if ":" not in userinfo:
        return parts.netloc
    user = userinfo.split(":", 1)[0]
    return f"{user}:{MASK}@{host}"


def _query(query: str) -> str:
    if not query:
        return query
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(key in SECRET_PARAMETERS for key, _ in pairs):
        return query
    return urlencode([(key, MASK if key in SECRET_PARAMETERS else value) for key, value in pairs], safe="*")
