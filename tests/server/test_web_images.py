"""The web view loads images from itself only: an image in a skill's markdown pointing elsewhere is a
tracking pixel (it tells the skill's author who read it, from where, and when), so a browser must not
fetch it. Checked in the header and in a real Chromium, against a second local server that counts hits.
"""

from __future__ import annotations

import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.hosts import transport_security
from skillshelf.server.web import CONTENT_SECURITY_POLICY, WebAccess, web_app
from tests.conftest import agent_skill, deadline
from tests.server.team_support import serving_in_thread

CHROMIUM = os.environ.get("SKILLSHELF_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def directives(policy: str) -> dict[str, list[str]]:
    parsed = (part.split() for part in policy.split(";") if part.strip())
    return {words[0]: words[1:] for words in parsed}


def test_the_pages_allow_images_from_this_server_only() -> None:
    assert directives(CONTENT_SECURITY_POLICY)["img-src"] == ["'self'"]


class PixelCounter(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        PixelCounter.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.end_headers()
        self.wfile.write(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def pixel_server() -> Iterator[str]:
    PixelCounter.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PixelCounter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def site(tmp_path: Path, pixel_server: str) -> Iterator[str]:
    """A skill whose documentation embeds an image from another origin, served by the web view."""
    root = tmp_path / "library"
    body = f"# Tracked\n\nRead me.\n\n![pixel]({pixel_server}/pixel.gif?reader=you)\n"
    agent_skill(root, "evil", "tracked", "name: tracked\ndescription: A skill with a tracking pixel.", body)
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    library.sync()
    access = WebAccess(security=transport_security("127.0.0.1"))
    with serving_in_thread(web_app(ViewReader(library), access)) as base:
        yield base
    library.close()


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH: install it with .ci/browser-deps")
def test_a_browser_does_not_fetch_a_remote_image_in_a_skill(site: str, pixel_server: str) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page()
            page.set_default_timeout(deadline(30) * 1000)  # Playwright's own default, scaled
            blocked: list[str] = []
            page.on("console", lambda message: blocked.append(message.text))
            page.goto(f"{site}/skills/evil/tracked/", wait_until="load")  # "load" waits for the images
            assert page.locator(f'img[src^="{pixel_server}"]').count() == 1  # rendered, and refused
        finally:
            browser.close()
    assert PixelCounter.hits == [], "the page fetched a remote image: a tracking pixel would see the reader"
    assert any("Content Security Policy" in text for text in blocked)
