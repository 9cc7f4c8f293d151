"""/health built in one place (server/health.py): who sees the details, and when writes make it degraded."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from skillshelf.server.auth import PRINCIPAL, Principal
from skillshelf.server.health import health_report, sees_details

LIBRARY: dict[str, Any] = {"status": "healthy", "index": {"changes": "watching"}, "library": {"digest": "ab12"}}
COUNTS = {"skills": 3, "sessions": 0}


def request(peer: str, principal: Principal | None = None) -> Request:
    scope: dict[str, Any] = {"type": "http", "method": "GET", "path": "/health", "headers": [], "client": (peer, 4)}
    if principal is not None:
        scope[PRINCIPAL] = principal
    return Request(scope)


def test_a_part_writes_need_that_is_not_ok_makes_the_status_degraded_and_is_named() -> None:
    down = {"state": "unreachable", "url": "postgresql://u:***@db/x", "error": "connection refused"}
    found = health_report(LIBRARY, COUNTS, {"database": down, "callLog": {"state": "ok"}}, detailed=True)
    assert found["status"] == "degraded" and found["failing"] == ["database"] and found["database"] == down
    assert health_report(LIBRARY, COUNTS, {"database": down}, detailed=False) == {
        "status": "degraded",
        "library": {"digest": "ab12"},
    }
    fine = health_report(LIBRARY, COUNTS, {"database": {"state": "ok"}}, detailed=True)
    assert fine["status"] == "healthy" and "failing" not in fine


def test_details_go_to_a_token_or_without_tokens_to_a_caller_on_this_machine() -> None:
    def everyone(_request: Request) -> bool:
        return True

    def tokens_only(found: Request) -> bool:
        return isinstance(found.scope.get(PRINCIPAL), Principal)

    alice = Principal("alice", frozenset({"default"}))
    assert sees_details(request("127.0.0.1"), everyone)
    assert not sees_details(request("203.0.113.9"), everyone)  # --insecure-no-auth: the world is anonymous
    assert not sees_details(request("127.0.0.1"), tokens_only)  # tokens required: none presented
    assert sees_details(request("203.0.113.9", alice), tokens_only)
