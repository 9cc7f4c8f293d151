"""Session artifacts for the artifacts and compression tests: writers and a small set of projects."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.projects import ProjectRoots
from tests.conftest import write

AUTH_SUMMARY = """
# Auth flow with JWT refresh

Implemented login with rotating refresh tokens stored in cookies.

## Key Decisions

- Sign tokens with RS256
  - keys rotate monthly
- Keep refresh tokens in httpOnly cookies

## What was built

- POST /login issues an access and a refresh token
- Reused database/rls-policy for tenant isolation

## Challenges

1. Clock skew between services
2. [x] SameSite cookie rules in Safari

## Next Steps

- [ ] Log out everywhere on password change

```python title="auth.py"
def login(user: str) -> str:
    return sign(user)
```

```ts src/auth.ts
export const refresh = () => fetch("/refresh");
```
"""


def session_file(project: Path, relative: str, text: str) -> Path:
    return write(project / ".agent-artifacts" / relative, text)


def session_json(project: Path, relative: str, data: Any) -> Path:
    path = project / ".agent-artifacts" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def set_mtime(path: Path, iso_day: str) -> None:
    """Give a file a known modification time (noon UTC of that day)."""
    import datetime as dt

    moment = dt.datetime.fromisoformat(f"{iso_day}T12:00:00+00:00").timestamp()
    os.utime(path, (moment, moment))


@pytest.fixture
def dev(tmp_path: Path) -> Path:
    """Three projects with sessions in every form, one project without artifacts."""
    root = tmp_path / "dev"
    app = root / "app"
    session_file(app, "2025-11-05-auth-flow/session-summary.md", AUTH_SUMMARY)
    session_json(
        app,
        "2025-11-05-auth-flow/compression-metrics.json",
        {"compressionMetrics": {"inputTokens": {"total": 40000}, "outputArtifacts": {"total": 2000}}},
    )
    session_file(
        app,
        "2025-10-01-billing.md",
        "# Stripe billing webhooks\n\nHandled invoice events with idempotent webhook handlers.\n",
    )
    session_json(app, "2025-10-01-billing.metrics.json", {"tokens": {"original": 10000, "compressed": 1000}})
    api = root / "api"
    session_json(
        api,
        "2025-09-15-rate-limits/finalization-pack.json",
        {
            "title": "Rate limiting the public API",
            "summary": "Token bucket rate limits per API key, stored in Redis.",
            "keyDecisions": [{"decision": "Token bucket", "rationale": "bursts are fine"}],
            "next_steps": ["Expose limits in response headers"],
            "codeBlocks": [{"language": "python", "file": "limits.py", "code": "BUCKET = 100\n"}],
        },
    )
    session_file(api, "2025-12-01-cookie-auth/session-summary.md", "# Cookie auth\n\nSession cookies for the admin.\n")
    (root / "docs").mkdir(parents=True)
    (app / "node_modules" / "left-pad").mkdir(parents=True)
    return root


@pytest.fixture
def archive(dev: Path, tmp_path: Path) -> Iterator[SessionArchive]:
    shelf = SessionArchive(ProjectRoots.of([dev]), index_dir=tmp_path / "index", watch=False)
    shelf.sync()
    yield shelf
    shelf.close()
