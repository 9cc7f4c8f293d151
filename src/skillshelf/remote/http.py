"""The HTTP rules both clients follow: a token only to the origin it was given for, https (or plain http on a
loopback host), and no body read past its limit."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx2

from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.spec import is_loopback_host, strip_credentials

TIMEOUT_S = 30.0
USER_AGENT = "skillshelf"


def origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


def check_reachable(url: str) -> None:
    """A URL a source may be fetched from: https, or plain http to this machine only."""
    parts = urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(parts.hostname or "")):
        return
    raise SourceError(f"{strip_credentials(url)}: skills are fetched over https only (plain http on loopback)")


def headers_for(url: str, token_origin: tuple[str, str] | None, token: str | None) -> dict[str, str]:
    """The token goes to the origin it was given for, never to a CDN or a redirect's other host."""
    headers = {"User-Agent": USER_AGENT}
    if token is not None and token_origin == origin(url):
        headers["Authorization"] = f"Bearer {token}"
    return headers


MAX_REDIRECTS = 5


def client() -> httpx2.Client:
    """No proxy or netrc from the environment: a source's token goes where its URL says, nowhere else."""
    return httpx2.Client(timeout=TIMEOUT_S, trust_env=False, follow_redirects=False)


def get(http: httpx2.Client, url: str, limit: int, token: str | None = None, token_url: str | None = None) -> bytes:
    """The body at `url`, at most `limit` bytes; redirects followed (to https or loopback only), the token
    sent only to the origin of `token_url`."""
    token_origin = origin(token_url) if token_url is not None else None
    for _hop in range(MAX_REDIRECTS + 1):
        check_reachable(url)
        found = _get_once(http, url, limit, headers_for(url, token_origin, token))
        if isinstance(found, bytes):
            return found
        url = found
    raise SourceError(f"{strip_credentials(url)}: more than {MAX_REDIRECTS} redirects; check the URL")


def _get_once(http: httpx2.Client, url: str, limit: int, headers: dict[str, str]) -> bytes | str:
    """The body, or where a redirect points."""
    label = strip_credentials(url)
    try:
        with http.stream("GET", url, headers=headers) as response:
            if response.is_redirect and "location" in response.headers:
                return str(response.url.join(response.headers["location"]))
            if response.status_code != 200:
                raise SourceError(f"{label} answered HTTP {response.status_code}; check the URL (and the token)")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > limit:
                    raise SourceError(f"{label} is over {limit} bytes; refusing it")
                chunks.append(chunk)
    except httpx2.HTTPError as exc:
        raise SourceError(f"cannot fetch {label}: {exc}") from exc
    return b"".join(chunks)
