"""Another MCP server's Skills extension (SEP-2640) as a source: `skillshelf add mcp+https://host/mcp`.

The official `mcp` client over streamable HTTP (the bearer token from `--token-env`, sent to that server
only): `skills/list`, page by page, then every file each skill's manifest lists through `resources/read`,
each file's sha256 checked against the digest the listing gave before it is kept. A skill is named by
the last folder of its `SKILL.md` URI (as the extension says); its files' paths are their URIs below it.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import unquote

import anyio
import httpx2
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

import skillshelf.remote.http as web
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.remote import RemoteFiles, verified
from skillshelf.library.sources.spec import SourceSpec

SKILL_DOC = "SKILL.md"
MAX_PAGES = 1000  # skills/list pages followed; a server that never stops paging is refused
_JSON = TypeAdapter(dict[str, Any])


def fetch_mcp(spec: SourceSpec, token: str | None) -> RemoteFiles:
    url = spec.url.removeprefix("mcp+")
    web.check_reachable(url)
    found = RemoteFiles(spec.public_url)
    refused: list[int] = []  # an HTTP status that says why the session failed (the SDK's error does not)
    try:
        anyio.run(_fetch, url, token, found, refused)
    except BaseException as exc:  # the client's task group wraps what failed in exception groups
        raise _explained(exc, spec.public_url, refused) from exc
    if not found.files:
        raise SourceError(f"{spec.public_url} serves no skill through the Skills extension")
    return found


def _explained(exc: BaseException, label: str, refused: list[int]) -> BaseException:
    """What failed, as a SourceError that says what to fix (or the exception itself when it is not ours)."""
    leaves = _leaves(exc)
    ours = next((e for e in leaves if isinstance(e, SourceError)), None)
    if ours is not None:
        return ours
    if refused:
        hint = "check the token (--token-env)" if refused[-1] in (401, 403) else "check the URL"
        return SourceError(f"{label} answered HTTP {refused[-1]}; {hint}")
    failed = next((e for e in leaves if isinstance(e, MCPError | httpx2.HTTPError | OSError)), None)
    if failed is not None:
        return SourceError(f"cannot read skills from {label}: {failed}")
    return exc


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def _fetch(url: str, token: str | None, found: RemoteFiles, refused: list[int]) -> None:
    headers = {"User-Agent": web.USER_AGENT, **({"Authorization": f"Bearer {token}"} if token else {})}

    async def seen(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            refused.append(response.status_code)

    hooks = {"response": [seen]}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=web.TIMEOUT_S, trust_env=False, event_hooks=hooks) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for entry in await _listing(client, found.label):
            await _skill(client, entry, found)


async def _listing(client: Client, label: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    for _page in range(MAX_PAGES):
        params = {"cursor": cursor} if cursor else {}
        message = types.Request[dict[str, Any] | None, str](method="skills/list", params=params)
        page = await client.session.send_request(message, _JSON)  # type: ignore[type-var]
        skills = page.get("skills")
        if not isinstance(skills, list):
            raise SourceError(f"{label} answered skills/list without a `skills` list")
        entries += skills
        cursor = page.get("nextCursor")
        if not cursor:
            return entries
    raise SourceError(f"{label} kept paging skills/list past {MAX_PAGES} pages; refusing it")


async def _skill(client: Client, entry: Any, found: RemoteFiles) -> None:
    label = found.label
    uri = entry.get("uri") if isinstance(entry, dict) else None
    resources = entry.get("resources") if isinstance(entry, dict) else None
    if not isinstance(uri, str) or not uri.endswith("/" + SKILL_DOC) or not isinstance(resources, list):
        raise SourceError(f"{label} listed a skill without a SKILL.md uri and its resources; nothing was installed")
    base = uri[: -len(SKILL_DOC)]
    name = unquote(base.rstrip("/").rsplit("/", 1)[-1])
    if found.check(name, SKILL_DOC) in found.files:  # the same name in two of the server's categories
        found.notes.append(f"{uri} left out: a skill named {name!r} came first, and names are one folder each")
        return
    for resource in resources:
        where = resource.get("uri") if isinstance(resource, dict) else None
        if not isinstance(where, str) or not where.startswith(base):
            raise SourceError(f"{label}: {name} lists a file outside its folder ({where!r}); nothing was installed")
        path = "/".join(unquote(part) for part in where[len(base) :].split("/"))
        found.check(name, path)
        data = _bytes(await client.read_resource(where), where, label)
        found.add(name, path, verified(data, resource.get("digest"), f"{name}/{path}", label))


def _bytes(result: types.ReadResourceResult, uri: str, label: str) -> bytes:
    if len(result.contents) != 1:
        raise SourceError(f"{label} answered {uri} with {len(result.contents)} contents, not one file")
    (content,) = result.contents
    if isinstance(content, types.TextResourceContents):
        return content.text.encode("utf-8")
    try:
        return base64.b64decode(content.blob, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SourceError(f"{label} answered {uri} with a blob that is not base64") from exc
