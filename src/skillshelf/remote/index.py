"""An Agent Skills discovery index as a source (github.com/cloudflare/agent-skills-discovery-rfc).

v0.2.0 (`$schema` is the RFC's): each entry's artifact is fetched from its `url` (resolved against the
index URL, RFC 3986) and its sha256 checked against the entry's `digest` before it is kept; a `skill-md`
is the skill's SKILL.md, an `archive` a zip of its folder (opened with every archive source's checks).
An entry of a type this client does not know is left out with a note. An unknown `$schema` is refused.
v0.1.0 (no `$schema`): each listed file is fetched from `<index folder>/<name>/<path>`; that format
gives no digests, so a note says so (the files meet the library's rules, as any source's do).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urljoin

import skillshelf.remote.http as web
from skillshelf.library.sources.archive import MAX_SOURCE_BYTES
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.remote import RemoteFiles, unpack, verified
from skillshelf.library.sources.spec import SourceSpec

SCHEMA_V2 = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
MAX_INDEX_BYTES = 16 * 1024 * 1024
SKILL_DOC = "SKILL.md"


def fetch_index(spec: SourceSpec, token: str | None) -> RemoteFiles:
    label = spec.public_url
    found = RemoteFiles(label)
    with web.client() as http:
        raw = web.get(http, spec.url, MAX_INDEX_BYTES, token, spec.url)
        index = _parse(raw, label)
        if "$schema" not in index:
            _v1(http, spec, token, index["skills"], found)
        elif index["$schema"] == SCHEMA_V2:
            _v2(http, spec, token, index["skills"], found)
        else:
            raise SourceError(f"{label} is an index of schema {index['$schema']!r}, which this skillshelf cannot read")
    if not found.files:
        raise SourceError(f"{label} lists no skill this skillshelf can install")
    return found


def _parse(raw: bytes, label: str) -> dict[str, Any]:
    try:
        index = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SourceError(f"{label} is not JSON ({exc}); give the URL of a discovery index") from exc
    if not isinstance(index, dict) or not isinstance(index.get("skills"), list):
        raise SourceError(f"{label} has no `skills` list: not an Agent Skills discovery index")
    return index


def _entry(item: object, label: str, fields: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(item, dict) or any(not isinstance(item.get(f), str) for f in fields):
        raise SourceError(f"{label}: an entry of `skills` lacks one of {', '.join(fields)}; nothing was installed")
    return item


def _v2(http: Any, spec: SourceSpec, token: str | None, skills: list[Any], found: RemoteFiles) -> None:
    label = spec.public_url
    for item in skills:
        entry = _entry(item, label, ("name", "type", "url"))
        name, kind = entry["name"], entry["type"]
        found.check(name, SKILL_DOC)
        if kind not in ("skill-md", "archive"):
            found.notes.append(f"{name} left out: its type {kind!r} is not one this skillshelf reads")
            continue
        url = urljoin(spec.url, entry["url"])
        data = verified(web.get(http, url, MAX_SOURCE_BYTES, token, spec.url), entry.get("digest"), name, label)
        if kind == "skill-md":
            found.add(name, SKILL_DOC, data)
            continue
        files = unpack(data, f"{name} from {label}")
        if SKILL_DOC not in files:
            raise SourceError(f"the archive of {name} from {label} has no SKILL.md at its top; nothing was installed")
        for path, content in sorted(files.items()):
            found.add(name, path, content)


def _v1(http: Any, spec: SourceSpec, token: str | None, skills: list[Any], found: RemoteFiles) -> None:
    label = spec.public_url
    for item in skills:
        entry = _entry(item, label, ("name",))
        files = entry.get("files")
        if not isinstance(files, list) or SKILL_DOC not in files or not all(isinstance(f, str) for f in files):
            raise SourceError(f"{label}: {entry['name']} lists no SKILL.md in `files`; nothing was installed")
        for path in files:
            url = urljoin(spec.url, quote(found.check(entry["name"], path)))
            found.add(entry["name"], path, web.get(http, url, MAX_SOURCE_BYTES, token, spec.url))
    found.notes.append(f"{label} is a v0.1.0 index, which gives no digests: its files were checked by name only")
