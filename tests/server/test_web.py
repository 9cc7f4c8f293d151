"""The web view's routes in-process (httpx2 over ASGI), and wired into `serve --http` and `skillshelf web`."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request

from skillshelf.library.access.reader import LibraryReader, ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.hosts import transport_security
from skillshelf.server.web import WebAccess, web_app, web_routes
from skillshelf.skills import service
from skillshelf.web import pages
from skillshelf.web.charts import COLUMN_MAX, WIDTH, Bar, bar_chart, column_chart, fitted_label
from skillshelf.web.markdown import breakable, render_markdown
from skillshelf.web.stats import uses_by_period
from tests.conftest import agent_skill
from tests.live_server import skillshelf_http
from tests.server.team_support import free_port

pytestmark = pytest.mark.anyio


def skill_ids(page: str) -> list[str]:
    return re.findall(r'<li class="hit" data-skill="([^"]+)"', page)


def chart_values(page: str, chart: str) -> dict[str, str]:
    figure = page.split(f'data-chart="{chart}"', 1)[1].split("</figure>", 1)[0]
    return dict(re.findall(r'data-label="([^"]*)" data-value="([^"]*)"', figure))


@pytest.fixture
async def web(sample_library: SkillLibrary) -> AsyncIterator[httpx2.AsyncClient]:
    async with client(sample_library, WebAccess()) as http:
        yield http


def client(library: SkillLibrary, access: WebAccess) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=web_app(ViewReader(library), access)), base_url="http://t"
    )


async def test_search_ranks_hits_exactly_as_the_search_tool_does(
    web: httpx2.AsyncClient, sample_library: SkillLibrary
) -> None:
    for query in ("retry flaky network calls", "postgres tenant", ""):
        response = await web.get("/", params={"q": query})
        assert response.status_code == 200
        expected = [hit.id for hit in service.search_patterns(LibraryReader(sample_library), query, limit=50).hits]
        assert skill_ids(response.text) == expected and expected
    only_python = await web.get("/", params={"q": "", "category": "python"})
    assert skill_ids(only_python.text) == ["python/retry-backoff", "python/slugify"]


async def test_an_unknown_category_is_a_404_that_lists_the_real_ones(web: httpx2.AsyncClient) -> None:
    response = await web.get("/", params={"category": "nope"})
    assert response.status_code == 404
    assert "No category &#x27;nope&#x27;. Categories: database, git, python." in response.text


async def test_a_skill_page_shows_its_docs_quality_cost_files_findings_and_usage(
    web: httpx2.AsyncClient, sample_library: SkillLibrary
) -> None:
    sample_library.usage.record("python/retry-backoff", "billing", None, source="tool")
    response = await web.get("/skills/python/retry-backoff/")
    assert response.status_code == 200
    page = response.text
    assert "<h1>Retry With Backoff</h1>" in page  # the rendered documentation
    assert "6.5<span>/10</span>" in page and '<p class="muted">declared</p>' in page
    assert "<li>reusability: 6/10</li>" in page and "<li>test coverage: 6/10</li>" in page
    tokens = sample_library.get("python/retry-backoff")
    assert tokens is not None and f"~{tokens.tokens:,}<span> tokens</span>" in page
    assert '<a href="/skills/python/retry-backoff/retry-backoff-SKILL.md">' in page
    assert "<strong>1</strong> use from 1 project" in page and "billing" in page


async def test_a_skill_page_lists_the_skills_findings(sample_root: Path, sample_library: SkillLibrary) -> None:
    agent_skill(sample_root, "git", "odd", "name: other-name\ndescription: Short.\n")
    sample_library.sync()
    async with client(sample_library, WebAccess()) as web:
        page = (await web.get("/skills/git/odd/")).text
    assert '<li class="finding warning"><span class="sev">warning</span> <code>git/odd/SKILL.md:2</code>' in page
    assert "name &#x27;other-name&#x27; differs from its folder &#x27;odd&#x27;" in page
    assert "[name-mismatch]" in page


async def test_a_skill_id_without_the_trailing_slash_redirects_to_the_page(web: httpx2.AsyncClient) -> None:
    response = await web.get("/skills/python/slugify")
    assert response.status_code == 308 and response.headers["location"].endswith("/skills/python/slugify/")


async def test_a_skills_own_files_are_shown_and_nothing_else(web: httpx2.AsyncClient) -> None:
    script = await web.get("/skills/git/release-notes/scripts/collect.sh")
    assert script.status_code == 200 and "echo &#39;{}&#39;" in script.text
    for path in ("scripts/missing.sh", "%2e%2e/%2e%2e/python/slugify.md", "..%2f..%2fpython%2fslugify.md"):
        response = await web.get(f"/skills/git/release-notes/{path}")
        assert response.status_code == 404, path
        assert "no such file" in response.text


async def test_unknown_pages_get_the_404_page_with_suggestions(web: httpx2.AsyncClient) -> None:
    response = await web.get("/skills/python/slugifyy/")
    assert response.status_code == 404
    assert "No skill &#x27;python/slugifyy&#x27; in this library." in response.text
    assert '<a href="/skills/python/slugify/">python/slugify</a>' in response.text
    elsewhere = await web.get("/no/such/page")
    assert elsewhere.status_code == 404 and "<h1>Not found</h1>" in elsewhere.text


async def test_the_library_page_charts_the_same_counts_as_the_stats(
    web: httpx2.AsyncClient, sample_library: SkillLibrary
) -> None:
    sample_library.usage.record("python/slugify", "app", None, source="tool")
    page = (await web.get("/library")).text
    assert chart_values(page, "categories") == {"python": "2", "database": "1", "git": "1"}
    histogram = chart_values(page, "quality")
    assert sum(int(v) for v in histogram.values()) == 4 and histogram["8-9"] == "1" and histogram["6-7"] == "1"
    assert chart_values(page, "never-used") == {"used": "1", "never used": "3"}
    assert sum(int(v) for v in chart_values(page, "uses").values()) == 1
    assert len(chart_values(page, "tokens")) == 4


async def test_hidden_skills_are_absent_everywhere_and_their_pages_are_404(sample_library: SkillLibrary) -> None:
    reader = ViewReader(sample_library, [("exclude", "python/slugify")])
    app = Starlette(routes=web_routes(reader, WebAccess()))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as web:
        assert "python/slugify" not in skill_ids((await web.get("/", params={"q": "slug url title"})).text)
        assert "python/slugify" not in skill_ids((await web.get("/")).text)
        hidden = await web.get("/skills/python/slugify/")
        missing = await web.get("/skills/python/nothing/")
        assert hidden.status_code == missing.status_code == 404
        assert "/skills/python/slugify/" not in (await web.get("/skills/python/slugifyy/")).text
        assert "Turn any title" not in (await web.get("/skills/python/slugify/slugify.md")).text
        library = (await web.get("/library")).text
        assert chart_values(library, "categories")["python"] == "1"
        assert "python/slugify" not in library


async def test_a_refused_request_gets_a_401_page_and_sees_nothing(sample_library: SkillLibrary) -> None:
    def bearer(request: Request) -> bool:
        return request.headers.get("authorization") == "Bearer s3cret"

    async with client(sample_library, WebAccess(authorize=bearer)) as web:
        for path in ("/", "/library", "/skills/python/slugify/", "/nowhere"):
            refused = await web.get(path)
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert "python/slugify" not in refused.text and "Sign-in required" in refused.text
        allowed = await web.get("/skills/python/slugify/", headers={"Authorization": "Bearer s3cret"})
        assert allowed.status_code == 200
        assert (await web.get("/static/skillshelf.css")).status_code == 200  # the 401 page keeps its styles


async def test_a_foreign_host_or_origin_is_refused_as_on_the_mcp_endpoint(sample_library: SkillLibrary) -> None:
    async with client(sample_library, WebAccess(security=transport_security("127.0.0.1"))) as web:
        assert (await web.get("/", headers={"Host": "127.0.0.1:8765"})).status_code == 200
        assert (await web.get("/", headers={"Host": "evil.example"})).status_code == 421
        cross = await web.get("/", headers={"Host": "127.0.0.1:8765", "Origin": "http://evil.example"})
        assert cross.status_code == 403


async def test_hostile_skill_content_is_escaped_and_pages_forbid_scripts(tmp_path: Path) -> None:
    root = tmp_path / "hostile"
    agent_skill(
        root,
        "evil",
        "xss",
        """
        name: xss
        description: 'Looks fine <script>alert("d")</script> <img src=x onerror=alert(1)>'
        metadata:
          tags: "<b>tag</b>"
        """,
        '# Hi <script>alert(1)</script>\n\n[click](javascript:alert(1)) <a href="javascript:x" onclick="y">z</a>\n',
    )
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    library.sync()
    try:
        async with client(library, WebAccess()) as web:
            for path in ("/", "/skills/evil/xss/", "/library", "/?q=<script>alert(1)</script>"):
                response = await web.get(path)
                assert response.status_code == 200, path
                assert "<script" not in response.text.lower()
                assert not re.search(r"<[a-z][^>]*\son\w+=", response.text, re.IGNORECASE)
                assert 'href="javascript' not in response.text.lower()
                assert "script-src" not in response.headers["content-security-policy"]
                assert "default-src 'none'" in response.headers["content-security-policy"]
    finally:
        library.close()


# -- wired into the real commands --------------------------------------------------------------


def start(arguments: list[str], home: Path, log: Path, port: int = 0) -> Iterator[str]:
    env = {**os.environ, "HOME": str(home), "SKILLSHELF_CACHE_DIR": str(home / "c")}
    with skillshelf_http(arguments, log, env=env, port=port) as server:
        yield server.base


@pytest.fixture
def served(sample_root: Path, isolated_environment: Path, tmp_path: Path) -> Iterator[str]:
    yield from start(["serve", "--http", "-l", str(sample_root)], isolated_environment, tmp_path / "serve.log")


@pytest.fixture
def standalone(sample_root: Path, isolated_environment: Path, tmp_path: Path) -> Iterator[str]:
    # `web` announces the port it is given, not the one it binds: give it a free one
    arguments = ["web", "-l", str(sample_root)]
    yield from start(arguments, isolated_environment, tmp_path / "web.log", port=free_port())


async def test_serve_http_serves_the_web_view_beside_mcp(served: str) -> None:
    async with httpx2.AsyncClient() as http:
        home = await http.get(f"{served}/", params={"q": "slugify"})
        assert home.status_code == 200 and skill_ids(home.text)[0] == "python/slugify"
        assert (await http.get(f"{served}/library")).status_code == 200
        assert (await http.get(f"{served}/nope")).status_code == 404
        assert (await http.get(f"{served}/", headers={"Host": "evil.example"})).status_code == 421


async def test_skillshelf_web_serves_the_view_on_loopback(standalone: str) -> None:
    async with httpx2.AsyncClient() as http:
        page = await http.get(f"{standalone}/skills/database/rls-policy/")
        assert page.status_code == 200 and "Row Level Security Policy" in page.text
        assert (await http.get(f"{standalone}/", headers={"Host": "evil.example"})).status_code == 421


# -- chips, findings, charts and long words (issue 24) ----------------------------------------


def chips(page: str) -> dict[str, str]:
    """Each category chip's label and count, the chosen one marked with a '*'."""
    found = re.findall(r'<a class="chip" href="[^"]*"( aria-current="true")?>([^<]*) <span>([^<]*)</span>', page)
    return {f"{label}{'*' if current else ''}": count for current, label, count in found}


async def test_a_searchs_category_chips_count_its_hits_not_the_library(
    web: httpx2.AsyncClient, sample_library: SkillLibrary
) -> None:
    query = "retry flaky network calls"
    hits = service.search_patterns(LibraryReader(sample_library), query, limit=50).hits
    among = Counter(hit.category for hit in hits)
    assert 0 < len(among) < 3  # the search misses a category, so the library's totals would differ
    page = (await web.get("/", params={"q": query})).text
    assert chips(page) == {"All*": str(len(hits)), **{name: str(n) for name, n in among.most_common()}}
    assert list(chips(page))[1:] == sorted(among, key=lambda name: (-among[name], name))  # most hits first
    python = (await web.get("/", params={"q": query, "category": "python"})).text
    assert chips(python) == {"All": str(len(hits)), **{name: str(n) for name, n in among.items() if name != "python"},
                             "python*": str(len(skill_ids(python)))}  # fmt: skip
    everything = (await web.get("/")).text  # no query: every skill, so the library's totals
    assert chips(everything) == {"All*": "4", "database": "1", "git": "1", "python": "2"}


async def test_a_chosen_category_without_hits_keeps_its_chip_at_zero(web: httpx2.AsyncClient) -> None:
    page = (await web.get("/", params={"q": "retry flaky network calls", "category": "git"})).text
    assert skill_ids(page) == [] and chips(page)["git*"] == "0"


async def test_the_library_page_names_its_findings_in_the_words_of_skillshelf_check(tmp_path: Path) -> None:
    root = tmp_path / "library"
    for name in ("one", "two"):  # a name that differs from its folder: a warning each
        agent_skill(root, "misc", name, f"name: other-{name}\ndescription: A skill named {name}.")
    agent_skill(root, "misc", "three", "name: three\ndescription: A third skill.\nflavour: mint")  # a note
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    library.sync()
    try:
        async with client(library, WebAccess()) as web:
            page = (await web.get("/library")).text
    finally:
        library.close()
    assert "<code>skillshelf check</code>: 2 warnings, 1 note.</p>" in page
    assert pages.findings_line({"info": 116, "error": 1}) == "1 error, 116 notes"
    assert pages.findings_line({}) == "none"


async def test_uses_over_time_on_one_day_is_one_narrow_column_in_a_week(
    web: httpx2.AsyncClient, sample_library: SkillLibrary
) -> None:
    sample_library.usage.record("python/slugify", "app", None, source="tool")
    page = (await web.get("/library")).text
    days = chart_values(page, "uses")
    assert len(days) == 7 and list(days.values()) == ["0"] * 6 + ["1"]  # the last day has the use
    assert max(column_widths(page, "uses")) <= COLUMN_MAX


def column_widths(page: str, chart: str) -> list[float]:
    figure = page.split(f'data-chart="{chart}"', 1)[1].split("</figure>", 1)[0]
    return [float(w) for w in re.findall(r'<rect class="bar" [^>]*width="([\d.]+)"', figure)]


@pytest.mark.parametrize(
    ("daily", "period", "columns"),
    [
        ([("2026-11-25", 2)], "day", 7),
        ([("2026-11-20", 1), ("2026-11-25", 2)], "day", 7),
        ([("2026-11-01", 1), ("2026-11-25", 2)], "day", 25),
        ([("2026-06-01", 1), ("2026-11-25", 2)], "week", 26),
        ([("2024-01-15", 1), ("2026-11-25", 2)], "month", 35),
    ],
    ids=["one day", "two days", "many days", "weeks", "months"],
)
def test_uses_over_time_span_a_week_at_least_and_columns_stay_narrow(
    daily: list[tuple[str, int]], period: str, columns: int
) -> None:
    buckets, by = uses_by_period(daily)
    assert (by, len(buckets)) == (period, columns)
    assert buckets[-1] == ("2026-11-25", 2) if period == "day" else buckets[-1][1] == 2
    assert sum(n for _, n in buckets) == sum(n for _, n in daily)
    chart = column_chart("uses", "Uses", [Bar(day, n) for day, n in buckets])
    widths = column_widths(chart, "uses")
    assert len(widths) == 2 * columns and max(widths) <= COLUMN_MAX  # drawn wide and narrow


@pytest.mark.parametrize(
    ("label", "room", "shown"),
    [
        ("python/slugify", 200, "python/slugify"),
        ("k-dense-ai-claude-scientific-skills/publication-figures", 200, "k-de…ills/publication-figures"),
        ("k-dense-ai-claude-scientific-skills/publication-ready-sci-figs", 200, "k…/publication-ready-sci-figs"),
        ("k-dense/publication-ready-scientific-visualization", 200, "k-dense/public…-visualization"),
        ("a-category-name-that-goes-on-and-on-and-on", 150, "a-category-…-on-and-on"),
    ],
    ids=["fits", "category gives way", "category down to a letter", "name too long: middle", "no id: middle"],
)  # fmt: skip
def test_a_long_chart_label_keeps_the_skill_name_and_loses_the_middle_of_its_category(
    label: str, room: float, shown: str
) -> None:
    assert fitted_label(label, room) == shown


def test_a_long_id_in_a_bar_chart_is_shortened_there_and_whole_in_its_tooltip() -> None:
    skill_id = "k-dense-ai-claude-scientific-skills-and-friends/publication-ready-scientific-visualization-figures"
    chart = bar_chart("tokens", "Tokens", [Bar(skill_id, 900)], width=2 * WIDTH)
    texts = re.findall(r'<text class="bar-label"[^>]*>(.*?)</text>', chart)
    labels = ["".join(re.findall(r">([^<]*)<", f">{text}<")) for text in texts]  # a wrapped label's lines joined
    # beside the bar (wide) the category gives way; over it (middle, narrow) the id wraps onto two lines
    assert len(labels) == 3 and all(label.endswith("/publication-ready-scientific-visualization-figures")
                                    for label in labels)  # fmt: skip
    assert "…" in labels[0] and texts[1].count("<tspan") == 2
    assert chart.count(f"<title>{skill_id}: 900</title>") == 3


def test_markdown_lets_paths_and_urls_break_at_their_separators_and_words_only_at_spaces() -> None:
    html = render_markdown(
        "| File |\n|---|\n| `references/matplotlib_publication_quality_settings.md` |\n\n"
        "See https://example.org/docs/vector_graphics-checklist.html or a/b and Pneumonoultramicroscopic.\n"
    )
    assert "<code>references/<wbr>matplotlib_<wbr>publication_<wbr>quality_<wbr>settings.md</code>" in html
    assert "https://<wbr>example.org/<wbr>docs/<wbr>vector_<wbr>graphics-checklist.html" in html
    assert " a/b and Pneumonoultramicroscopic." in html  # short words and prose: untouched
    assert (
        breakable("<script>/a_very_long_path_to_somewhere")
        == "&lt;script&gt;/<wbr>a_<wbr>very_<wbr>long_<wbr>path_<wbr>to_<wbr>somewhere"
    )
