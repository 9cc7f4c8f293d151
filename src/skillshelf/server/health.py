"""What `/health` answers, built in one place from its parts.

Two readers: a proxy's health check (anonymous, every second) and an operator. Everyone gets liveness:
`status` and the library's content digest (replicas compare it). The rest (skill and session counts,
index freshness, the database's address and errors, what failed) is for a caller who may see it
(`sees_details`): counts include skills a view hides, and the database's user, host and name help an
attacker more than a stranger needs.

`status` is `degraded` when the library's last sync failed, or when a part that writes need (the
database, the call log's store) is not `ok`: calls that write then fail, and a stricter proxy check
can take the replica out (docs/deploy.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request

from skillshelf import __version__
from skillshelf.server.auth import PRINCIPAL, Principal, is_loopback


def health_report(
    library: Mapping[str, Any],
    counts: Mapping[str, int],
    parts: Mapping[str, Mapping[str, Any]],
    *,
    detailed: bool,
) -> dict[str, Any]:
    """The answer. `library`: `SkillLibrary.status()` (status, index, library digest, ...); `counts`: skills
    and sessions; `parts`: what writes need, by the key it is shown under (`database`, `callLog`), each
    with its `state` ("ok" or what is wrong). `failing` names the parts that are not ok."""
    found: dict[str, Any] = {**library, "version": __version__, **counts}
    found.update((name, dict(part)) for name, part in parts.items())
    failing = [name for name, part in parts.items() if part.get("state") != "ok"]
    if failing:
        found["status"] = "degraded"  # writes fail: a library's own "degraded" (a failed sync) stays too
        found["failing"] = failing
    if detailed:
        return found
    digest = library.get("library", {}).get("digest") if isinstance(library.get("library"), Mapping) else None
    return {"status": found["status"], "library": {"digest": digest}}


def sees_details(request: Request, authorize: Callable[[Request], bool]) -> bool:
    """Whether this caller gets /health's details: one with a valid token (the Gate put its principal in the
    scope); where no token is required (`authorize`, the web view's rule, lets anyone in), a caller on this
    machine only. A server reachable from elsewhere requires tokens (`hosts.reachable_name`)."""
    principal = request.scope.get(PRINCIPAL)
    if isinstance(principal, Principal) and principal.authenticated:
        return True
    peer = (request.scope.get("client") or ("", 0))[0]
    return authorize(request) and is_loopback(str(peer))
