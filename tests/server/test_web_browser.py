"""The web view in a real browser: Debian's Chromium driven by Playwright (no browser download).

Skipped only where no Chromium is installed (`.ci/browser-deps` installs it). Screenshots of every
page visited are saved under the test's tmp dir (`<tmp_path>/screenshots/`) as artifacts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from starlette.requests import Request

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.patterns import service
from skillshelf.server.hosts import transport_security
from skillshelf.server.web import WebAccess, web_app
from tests.conftest import agent_skill, deadline
from tests.server.team_support import serving_in_thread

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Page

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install -e '.[dev]')")

CHROMIUM = os.environ.get("SKILLSHELF_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH: install it with .ci/browser-deps (apt-get install chromium)"
)
TOKEN = "Bearer s3cret"


def token_required(request: Request) -> bool:
    return request.headers.get("authorization") == TOKEN


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


@pytest.fixture
def site(sample_root: Path, sample_library: SkillLibrary) -> Iterator[str]:
    """The web view on a real loopback port (uvicorn in a thread), behind a bearer-token check."""
    agent_skill(
        sample_root,
        "evil",
        "xss",
        "name: xss\ndescription: 'Harmless <img src=x onerror=alert(1)> <script>alert(2)</script>'\n",
        "# XSS\n\n<script>alert(3)</script>\n\n[click me](javascript:alert(4))\n\n"
        "![x](x)<img src=x onerror=alert(5)>\n",
    )
    sample_library.sync()
    sample_library.usage.record("python/slugify", "shop", None, source="tool")
    sample_library.usage.record("python/slugify", "api", None, source="tool")
    sample_library.usage.record("database/rls-policy", "api", None, source="tool")
    access = WebAccess(authorize=token_required, security=transport_security("127.0.0.1"))
    with serving_in_thread(web_app(sample_library, access)) as base:
        yield base


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, extra_http_headers={"Authorization": TOKEN})
    context.set_default_timeout(deadline(30) * 1000)  # Playwright's own default, scaled
    opened = context.new_page()
    dialogs: list[str] = []

    def refuse(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    opened.on("dialog", refuse)
    yield opened
    context.close()
    assert dialogs == [], f"a script ran: {dialogs}"


def shoot(page: Page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / "screenshots" / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    return path


def test_searching_then_opening_the_best_hit(
    site: str, page: Page, sample_library: SkillLibrary, tmp_path: Path
) -> None:
    page.goto(f"{site}/")
    page.fill("input[name=q]", "retry flaky network calls")
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**/?q=retry+flaky+network+calls")
    expected = [
        hit.id for hit in service.search_patterns(LibraryReader(sample_library), "retry flaky network calls").hits
    ]
    shown = [item.get_attribute("data-skill") for item in page.locator("li.hit").all()]
    assert shown == expected and shown[0] == "python/retry-backoff"
    shoot(page, tmp_path, "search")

    page.locator("li.hit a.hit-name").first.click()
    page.wait_for_url("**/skills/python/retry-backoff/")
    assert page.locator(".markdown h1").inner_text() == "Retry With Backoff"
    assert page.locator("#quality .big").inner_text() == "6.5/10"
    assert "reusability: 6/10" in page.locator("#quality").inner_text()
    assert page.locator("#files a").all_inner_texts() == ["retry-backoff-SKILL.md", "retry-backoff.md"]
    assert "Never used yet." in page.locator("#usage").inner_text()
    shoot(page, tmp_path, "skill")


def test_the_library_page_charts_the_right_counts(site: str, page: Page, tmp_path: Path) -> None:
    page.goto(f"{site}/library")

    def values(chart: str) -> dict[str, str]:
        marks = page.locator(f"[data-chart={chart}] g.mark").all()
        return {m.get_attribute("data-label") or "": m.get_attribute("data-value") or "" for m in marks}

    assert values("categories") == {"python": "2", "database": "1", "evil": "1", "git": "1"}
    histogram = values("quality")
    assert len(histogram) == 10 and sum(int(v) for v in histogram.values()) == 5
    assert values("never-used") == {"used": "2", "never used": "3"}
    assert sum(int(v) for v in values("uses").values()) == 3
    assert len(values("tokens")) == 5
    box = page.locator("[data-chart=quality] svg").bounding_box()
    assert box is not None and box["height"] > 100  # drawn, not collapsed by the stylesheet
    never = page.locator(".never-used li").all()
    names = {item.locator("a").inner_text() for item in never}
    assert names == {"git/release-notes", "python/retry-backoff", "evil/xss"}
    scores = [float(item.locator(".quality").inner_text()) for item in never]
    assert scores == sorted(scores, reverse=True)  # the best unused skills first
    shoot(page, tmp_path, "library")


def test_an_unknown_skill_gets_the_404_page_with_a_way_on(site: str, page: Page, tmp_path: Path) -> None:
    response = page.goto(f"{site}/skills/python/slugifyy/")
    assert response is not None and response.status == 404
    assert page.locator("h1").inner_text() == "Not found"
    shoot(page, tmp_path, "not-found")
    page.locator(".suggestions a", has_text="python/slugify").click()
    page.wait_for_url("**/skills/python/slugify/")
    assert "2 uses from 2 projects" in page.locator("#usage").inner_text()


def test_without_the_token_every_page_is_refused_but_styled(site: str, browser: Browser, tmp_path: Path) -> None:
    context = browser.new_context()
    context.set_default_timeout(deadline(30) * 1000)
    anonymous = context.new_page()
    for path in ("/", "/library", "/skills/python/slugify/"):
        response = anonymous.goto(f"{site}{path}")
        assert response is not None and response.status == 401, path
        assert anonymous.locator("h1").inner_text() == "Sign-in required"
        assert anonymous.locator("li.hit").count() == 0
    assert anonymous.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"
    shoot(anonymous, tmp_path, "unauthorized")
    context.close()


def test_hostile_skill_content_runs_no_script(site: str, page: Page, tmp_path: Path) -> None:
    page.goto(f"{site}/skills/evil/xss/")
    assert page.locator(".lede").inner_text().startswith("Harmless <img src=x onerror=alert(1)>")
    assert page.locator(".markdown script, .markdown img[onerror], .markdown a[href^='javascript']").count() == 0
    assert page.locator(".markdown").get_by_text("[click me](javascript:alert(4))").count() == 1
    page.goto(f"{site}/?q=harmless")
    assert page.locator("li.hit").count() == 1
    shoot(page, tmp_path, "hostile")
    # the `page` fixture fails the test if any alert() dialog opened
