"""The web view in a real browser: Debian's Chromium driven by Playwright (no browser download).

Skipped only where no Chromium is installed (`.ci/browser-deps` installs it). Screenshots of every
page visited are saved under the test's tmp dir (`<tmp_path>/screenshots/`) as artifacts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from starlette.requests import Request

from skillshelf.library.access.reader import LibraryReader, ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.hosts import transport_security
from skillshelf.server.web import WebAccess, web_app
from skillshelf.skills import service
from tests.conftest import agent_skill, deadline
from tests.server.team_support import serving_in_thread
from tests.sources.helpers import Repo, add

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Dialog, Page, ViewportSize

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
    """The web view of the sample library, behind a bearer-token check."""
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
    with serving_in_thread(web_app(ViewReader(sample_library), access)) as base:
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
    box = page.locator("[data-chart=quality] svg:visible").bounding_box()
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


# -- on a phone: a library with long ids, long words, wide code and wide tables ----------------

PHONE: ViewportSize = {"width": 375, "height": 740}
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
LONG_CATEGORY = "k-dense-ai-claude-scientific-skills-and-friends"
LONG_NAME = "publication-ready-scientific-visualization-figures"
LONG_ID = f"{LONG_CATEGORY}/{LONG_NAME}"
SOURCE = "scientific-figure-collection-from-upstream"
LONG_WORD = "Pneumonoultramicroscopicsilicovolcanoconiosis"
WIDE_CODE = "python -m figures.export " + " ".join(f"--option_number_{n}=value_{n}" for n in range(12))
TABLE = "\n".join(
    f"| {step} | {what} | {where} |"
    for step, what, where in [
        ("Step", "What to do", "File"),
        ("---", "---", "---"),
        (
            "Prepare",
            "Install the plotting dependencies before drawing any figures for the paper",
            "`references/matplotlib_publication_quality_settings.md`",
        ),
        (
            "Export",
            "Save every figure as vector graphics with embedded fonts for the journal",
            "https://example.org/docs/figure-guidelines/vector_graphics_export-checklist.html",
        ),
        (
            "Check",
            "Compare the colours against the colourblind safe palettes of the style guide",
            "scripts/check_colourblind_safe_palette_contrast.py",
        ),
    ]
)
PHONE_DOC = f"""# Publication-ready figures

Make figures a journal accepts: {LONG_WORD} and https://example.org/a/very/long/path/that_goes_on_and_on/without-any-spaces.

```sh
{WIDE_CODE}
```

{TABLE}

Run `scripts/check_colourblind_safe_palette_contrast.py` on every figure.
"""

# Inside the viewport, or inside a box that scrolls sideways (a code block, a wide table).
OUTSIDE_THE_VIEWPORT = """() => {
  const scrolls = (e) => {
    for (let a = e.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll') return true;
    }
    return false;
  };
  const out = [];
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if ((r.left < -1 || r.right > innerWidth + 1) && !scrolls(e)) {
      const name = `${e.tagName.toLowerCase()}.${e.getAttribute('class') || ''}`;
      out.push(`${name} ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
  }
  return out;
}"""

# Every chart label inside its chart (an SVG clips what sticks out), and big enough to read.
CHART_TEXT_PROBLEMS = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg.chart-svg')) {
    const box = svg.getBoundingClientRect();
    if (box.width === 0) continue;
    const scale = box.width / svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width === 0) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        out.push(`cut: ${t.textContent}`);
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < 8) out.push(`${px.toFixed(1)}px: ${t.textContent}`);
    }
  }
  return out;
}"""

# Where each table cell's text breaks onto a new line: [previous char, next char, the word] per break.
CELL_BREAKS = """() => {
  const out = [];
  for (const cell of document.querySelectorAll('.markdown td, .markdown th')) {
    const chars = [];
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode())
      for (let i = 0; i < node.data.length; i++) chars.push([node, i]);
    const text = chars.map(([n, i]) => n.data[i]).join('');
    const range = document.createRange();
    let lastTop = null;
    chars.forEach(([node, i], k) => {
      range.setStart(node, i); range.setEnd(node, i + 1);
      const r = range.getBoundingClientRect();
      if (r.height === 0 || /\\s/.test(node.data[i])) return;
      if (lastTop !== null && r.top > lastTop + 2) {
        const start = text.lastIndexOf(' ', k) + 1, end = text.indexOf(' ', k);
        out.push([text[k - 1], text[k], text.slice(start, end < 0 ? undefined : end)]);
      }
      lastTop = r.top;
    });
  }
  return out;
}"""


@pytest.fixture
def phone_site(tmp_path: Path) -> Iterator[str]:
    """A library the way a phone breaks it: a long category and name, a word of 45 letters, a long URL,
    a wide code block and table, long file names, a skill installed from a source, near-duplicates."""
    root = tmp_path / "library"
    agent_skill(
        root,
        LONG_CATEGORY,
        LONG_NAME,
        f"name: a-different-name-than-its-folder-so-it-has-a-finding\ndescription: Figures for {LONG_WORD} papers.",
        PHONE_DOC,
    )
    skill_dir = root / LONG_CATEGORY / LONG_NAME
    (skill_dir / "references").mkdir()
    (skill_dir / "references" / "matplotlib_publication_quality_settings.md").write_text(
        f"# Settings\n\n{TABLE}\n\n```\n{WIDE_CODE}\n```\n", encoding="utf-8"
    )
    (skill_dir / "scripts").mkdir()
    (skill_dir / "scripts" / "check_colourblind_safe_palette_contrast.py").write_text(
        f"# {WIDE_CODE}\nprint('{LONG_WORD * 3}')\n", encoding="utf-8"
    )
    for twin in ("another-copy-of-the-figure-skill", "yet-another-copy-of-the-figure-skill"):
        agent_skill(root, LONG_CATEGORY, twin, f"name: {twin}\ndescription: Figures for {LONG_WORD} papers.")
    upstream = Repo(tmp_path / "an-upstream-repository-with-a-long-folder-name-for-its-skills")
    upstream.skill(LONG_NAME, f"Figures from upstream, with {LONG_WORD} in them.", license="Apache-2.0")
    upstream.commit("first")
    add(root, upstream.url, name=SOURCE)
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    library.sync()
    for project in ("a-project-with-a-long-name-too", "another-project", "and-a-third-one"):
        library.usage.record(LONG_ID, project, None, source="tool")
    access = WebAccess(authorize=token_required, security=transport_security("127.0.0.1"))
    try:
        with serving_in_thread(web_app(ViewReader(library), access)) as url:
            yield url
    finally:
        library.close()


Opener = Callable[..., "Page"]


@pytest.fixture
def opened(browser: Browser) -> Iterator[Opener]:
    """`opened(viewport, token=TOKEN)`: a new page at that screen size; its context closes after the test."""
    contexts: list[BrowserContext] = []

    def open_page(viewport: ViewportSize, token: str | None = TOKEN) -> Page:
        context = browser.new_context(viewport=viewport, extra_http_headers={"Authorization": token} if token else {})
        context.set_default_timeout(deadline(30) * 1000)  # Playwright's own default, scaled
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


PHONE_PAGES = {
    "search": "/",
    "results": "/?q=figures+papers",
    "category": f"/?category={LONG_CATEGORY}",
    "skill": f"/skills/{LONG_ID}/",
    "sourced skill": f"/skills/{SOURCE}/{LONG_NAME}/",
    "script": f"/skills/{LONG_ID}/scripts/check_colourblind_safe_palette_contrast.py",
    "reference": f"/skills/{LONG_ID}/references/matplotlib_publication_quality_settings.md",
    "library": "/library",
    "not found": f"/skills/{LONG_ID}-typo/",
    "unknown category": "/?category=no-such-category-with-a-long-name-at-all",
}


# The boxes a page's content is in, each at least `least` px wide: fitting by squeezing a column to a
# sliver (one letter a line) is no fit.
SQUEEZED = """(least) => [...document.querySelectorAll('main .doc, main .card, main .hit, main .error-page')]
  .map((e) => [e.getAttribute('id') || e.getAttribute('class'), Math.round(e.getBoundingClientRect().width)])
  .filter(([, width]) => width < least)
  .map(([name, width]) => `${name} squeezed to ${width} px`)"""


def layout_problems(page: Page) -> list[str]:
    """What does not fit the screen: the page scrolling sideways, an element sticking out (not inside a
    box that scrolls), a box squeezed narrow, the header search or the heading not fully on screen,
    unreadable or cut chart text."""
    problems: list[str] = []
    width, inner = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    if width > inner:
        problems.append(f"the page is {width} px wide on a {inner} px screen")
    problems += page.evaluate(OUTSIDE_THE_VIEWPORT)
    problems += page.evaluate(SQUEEZED, min(280, inner * 3 // 4))
    for selector in ("input[name=q]", ".search button", "main h1, main .notice"):
        found = page.locator(selector)
        box = found.first.bounding_box() if found.count() else None
        if box is None or box["x"] < 0 or box["x"] + box["width"] > inner + 1:
            problems.append(f"{selector} is not on screen: {box}")
    problems += page.evaluate(CHART_TEXT_PROBLEMS)
    return problems


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_every_page_kind_fits_the_screen_of_a_375px_phone_and_a_desktop(
    phone_site: str, opened: Opener, viewport: ViewportSize, tmp_path: Path
) -> None:
    problems: dict[str, list[str]] = {}
    page = opened(viewport)
    for kind, path in PHONE_PAGES.items():
        response = page.goto(f"{phone_site}{path}")
        assert response is not None and response.status in (200, 404), (kind, response and response.status)
        problems[kind] = layout_problems(page)
        shoot(page, tmp_path, f"{viewport['width']}-{kind.replace(' ', '-')}")
    anonymous = opened(viewport, token=None)
    response = anonymous.goto(f"{phone_site}/library")
    assert response is not None and response.status == 401
    problems["unauthorized"] = layout_problems(anonymous)
    shoot(anonymous, tmp_path, f"{viewport['width']}-unauthorized")
    assert {kind: found for kind, found in problems.items() if found} == {}


def test_the_header_search_works_on_a_phone(phone_site: str, opened: Opener) -> None:
    page = opened(PHONE)
    page.goto(f"{phone_site}/skills/{LONG_ID}/")
    page.locator("input[name=q]").click()  # fails if anything covers it or it is off screen
    page.keyboard.type("vector graphics")
    page.locator(".search button").click()
    page.wait_for_url("**/?q=vector+graphics")
    assert page.locator("li.hit").count() >= 1


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_chart_labels_keep_the_skill_name_and_stay_inside_their_charts(
    phone_site: str, opened: Opener, viewport: ViewportSize
) -> None:
    page = opened(viewport)
    page.goto(f"{phone_site}/library")
    assert page.evaluate(CHART_TEXT_PROBLEMS) == []
    labels = page.locator("[data-chart=tokens] svg:visible g.mark text.bar-label").all_text_contents()
    long_label = next(label for label in labels if LONG_NAME in label)  # the name is never cut
    # beside its bar the category gives way; over it (a phone) the id wraps onto two lines, whole
    assert long_label.endswith(f"/{LONG_NAME}") and ("…" in long_label or long_label == LONG_ID)
    sizes = page.evaluate(
        "[...document.querySelectorAll('svg:not([style*=none]) text.bar-label')]"
        ".filter(t => t.getClientRects().length).map(t => getComputedStyle(t).fontSize)"
    )
    assert len(set(sizes)) == 1  # every label at one size (long category names were drawn smaller)
    mark = page.locator(f'[data-chart=tokens] svg:visible g.mark[data-label="{LONG_ID}"] title')
    assert (mark.text_content() or "").startswith(f"{LONG_ID}: ")  # the full id in the tooltip


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_table_cells_wrap_at_spaces_and_paths_at_their_separators(
    phone_site: str, opened: Opener, viewport: ViewportSize, tmp_path: Path
) -> None:
    page = opened(viewport)
    for path in (PHONE_PAGES["skill"], PHONE_PAGES["reference"]):
        page.goto(f"{phone_site}{path}")
        breaks = page.evaluate(CELL_BREAKS)
        mid_word = [
            (before, after, word) for before, after, word in breaks if not before.isspace() and before not in "/-_"
        ]
        assert mid_word == [], f"{path}: words broken inside: {mid_word}"
        assert page.evaluate("[document.documentElement.scrollWidth, innerWidth]")[0] <= viewport["width"]
    shoot(page, tmp_path, f"table-{viewport['width']}")
