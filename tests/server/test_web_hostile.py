"""Every page of the web view, built from its routes, shows hostile skill text escaped and inert: the
templates autoescape, so a page added later is covered without naming it here."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import httpx2
import pytest
from jinja2 import UndefinedError
from starlette.routing import Route

from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.web import WebAccess, web_app, web_routes
from skillshelf.web import pages
from tests.conftest import agent_skill, write

pytestmark = pytest.mark.anyio

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>{{ 7*7 }}{% if 1 %}jinja{% endif %}'
# What each route's path parameters are filled with; a new parameter must be added here (KeyError).
PARAMETERS = {
    "category": ["evil"],
    "name": ["xss"],
    "path": ["hostile.md", "scripts/hostile.sh", quote(HOSTILE, safe="")],
}


class Tags(HTMLParser):
    """The tags and attributes a browser would build from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def assert_inert(page: str, where: str) -> None:
    parser = Tags()
    parser.feed(page)
    names = {tag for tag, _ in parser.tags}
    assert not {"script", "img", "iframe", "object", "embed"} & names, (where, names)
    handlers = [(tag, name) for tag, attrs in parser.tags for name, _ in attrs if name.startswith("on")]
    assert not handlers, (where, handlers)
    # no template ran the text: evaluated, it would read "49jinja"
    assert "49jinja" not in page, where


def hostile_library(tmp_path: Path) -> SkillLibrary:
    root = tmp_path / "hostile"
    text = json.dumps(HOSTILE)  # a YAML string
    folder = agent_skill(
        root,
        "evil",
        "xss",
        f"name: xss\ndescription: {text}\nmetadata:\n  tags: {text}\n",
        f"# {HOSTILE}\n\n{HOSTILE}\n\n`{HOSTILE}`\n\n[{HOSTILE}](https://example.com/{quote(HOSTILE)})\n",
    ).parent
    write(folder / "hostile.md", f"# {HOSTILE}\n\n{HOSTILE}\n")
    write(folder / "scripts" / "hostile.sh", f"echo '{HOSTILE}'\n")
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    library.sync()
    return library


def urls(routes: list[Route]) -> list[str]:
    """Each route with every combination of PARAMETERS, and the hostile text as the search query."""
    found: list[str] = []
    for route in routes:
        paths = [route.path]
        for name in route.param_convertors:
            paths = [
                p.replace(f"{{{name}}}", v).replace(f"{{{name}:path}}", v) for p in paths for v in PARAMETERS[name]
            ]
        found += [f"{path}?q={quote(HOSTILE)}" for path in paths]
    return found


async def test_every_page_shows_hostile_skill_text_escaped_and_inert(tmp_path: Path) -> None:
    library = hostile_library(tmp_path)
    try:
        routes = web_routes(ViewReader(library))
        app = web_app(ViewReader(library), WebAccess())
        html = shown = 0
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as web:
            for url in urls(routes):
                response = await web.get(url, follow_redirects=True)
                if not response.headers.get("content-type", "").startswith("text/html"):
                    continue
                html += 1
                assert_inert(response.text, url)
                if "7*7" in response.text:  # shows the hostile text: as text
                    shown += 1
                    assert "&lt;script&gt;" in response.text and "{{ 7*7 }}" in response.text, url
        assert html >= 6 and shown >= 4  # search, skill, two files, library, the 404 page at least
    finally:
        library.close()


def test_every_page_function_escapes_what_it_is_given() -> None:
    """The pages that take text outside a skill (a reason, a message): each `*_page` function is called
    here, so a new one fails this test until it is added."""
    calls: dict[str, Callable[[], str]] = {
        "not_found_page": lambda: pages.not_found_page("", HOSTILE, ["evil/xss"]),
        "forbidden_page": lambda: pages.forbidden_page("", HOSTILE),
        "refused_page": lambda: pages.refused_page("", HOSTILE, 403),
        "unauthorized_page": lambda: pages.unauthorized_page(""),
        "file_page": lambda: pages.file_page("", "evil/xss", HOSTILE, HOSTILE, True),
        "search_page": lambda: pages.search_page("", HOSTILE, [], [(HOSTILE, 1)], HOSTILE, HOSTILE),
        "skill_page": lambda: "covered by the routes",
        "library_page": lambda: "covered by the routes",
    }
    defined = {
        name
        for name, _ in inspect.getmembers(pages, inspect.isfunction)
        if name.endswith("_page") and not name.startswith("_")
    }
    assert defined == set(calls)
    for name, call in calls.items():
        assert_inert(call(), name)


def test_a_new_template_escapes_by_default_and_names_what_it_misses() -> None:
    """What protects a page not written yet: autoescape on every template, and StrictUndefined."""
    shown = pages.TEMPLATES.from_string("<p>{{ text }}</p>").render(text=HOSTILE)
    assert_inert(shown, "a new template")
    assert shown.startswith("<p>&lt;script&gt;")
    with pytest.raises(UndefinedError, match="'missing' is undefined"):
        pages.TEMPLATES.from_string("<p>{{ missing }}</p>").render()
