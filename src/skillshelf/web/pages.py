"""The web view's pages as HTML strings: f-strings, with `escape` on every value interpolated.

`base` is the URL prefix the view is mounted under ('' at the site root); every link is built
from it, so the same pages serve `/` and a mounted view.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from urllib.parse import quote, urlencode

from skillshelf import __version__
from skillshelf.library.skill.models import SEVERITY_WORDS, count_of
from skillshelf.library.sources.history import VersionLine
from skillshelf.skills.evals import Findability
from skillshelf.skills.models import LoadedSkill, SkillHit, SourceInfo
from skillshelf.web.charts import WIDTH, Bar, bar_chart, column_chart, donut
from skillshelf.web.markdown import breakable, render_markdown
from skillshelf.web.stats import LibraryView

TOKENS_SHOWN = 20
NEVER_USED_SHOWN = 24
DUPLICATES_SHOWN = 24
STYLESHEET = "static/skillshelf.css"
ICON = "static/skillshelf.svg"  # linked from every page; /favicon.ico serves it too, for what asks there


def skill_url(base: str, skill_id: str, path: str = "") -> str:
    category, name = skill_id.split("/", 1)
    tail = "/".join(quote(part, safe="") for part in path.split("/")) if path else ""
    return f"{base}/skills/{quote(category, safe='')}/{quote(name, safe='')}/{tail}"


def layout(base: str, title: str, body: str, *, query: str = "", page: str = "") -> str:
    def nav(href: str, label: str, key: str) -> str:
        current = ' aria-current="page"' if page == key else ""
        return f'<a href="{escape(base)}{href}"{current}>{label}</a>'

    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{escape(title)} · skillshelf</title>
<link rel="stylesheet" href="{escape(base)}/{STYLESHEET}">
<link rel="icon" type="image/svg+xml" href="{escape(base)}/{ICON}">
</head>
<body>
<header class="top">
<div class="top-inner">
<a class="brand" href="{escape(base)}/"><span class="logo" aria-hidden="true">▤</span> skillshelf</a>
<nav>{nav("/", "Search", "search")}{nav("/library", "Library", "library")}</nav>
<form class="search" action="{escape(base)}/" method="get" role="search">
<input type="search" name="q" value="{escape(query)}" placeholder="What do you need to do?" aria-label="Search skills">
<button type="submit">Search</button>
</form>
</div>
</header>
<main>
{body}
</main>
<footer>skillshelf {escape(__version__)} · a read-only view of the library</footer>
</body>
</html>
"""


def quality_badge(score: float, verified: bool) -> str:
    level = "high" if score >= 7 else "mid" if score >= 4 else "low"
    tick = ' <span class="tick" title="verified: used from three projects">✓</span>' if verified else ""
    return f'<span class="quality q-{level}" title="quality {score:g}/10">{score:.1f}{tick}</span>'


# -- search ------------------------------------------------------------------------------------


def search_page(
    base: str,
    query: str,
    hits: list[SkillHit],
    categories: list[tuple[str, int]],
    category: str | None,
    error: str = "",
    *,
    everywhere: int | None = None,
) -> str:
    """`categories`: (name, count) for the chips, the count of what each would show; `everywhere`: the
    "All" chip's count (default: their sum)."""
    total = sum(n for _, n in categories) if everywhere is None else everywhere
    chips = [_chip(base, query, None, "All", total, category is None)]
    chips += [_chip(base, query, name, name, count, name == category) for name, count in categories]
    if error:
        heading = f'<p class="notice">{breakable(error)}</p>'
    elif query:
        heading = f"<h1>{len(hits)} result{'s' if len(hits) != 1 else ''} for “{breakable(query)}”</h1>"
    else:
        heading = "<h1>Skills by quality</h1>"
    rows = "".join(_hit(base, hit) for hit in hits)
    empty = "" if hits else '<p class="empty">No skill matches. Try fewer or other words, or another category.</p>'
    body = f"""<section class="results">
{heading}
<div class="chips">{"".join(chips)}</div>
<ol class="hits">{rows}</ol>
{empty}
</section>"""
    return layout(base, f"“{query}”" if query else "Search", body, query=query, page="" if query else "search")


def _chip(base: str, query: str, category: str | None, label: str, count: int, active: bool) -> str:
    params = {"q": query} if query else {}
    if category is not None:
        params["category"] = category
    href = f"{base}/?{urlencode(params)}" if params else f"{base}/"
    current = ' aria-current="true"' if active else ""
    return f'<a class="chip" href="{escape(href)}"{current}>{escape(label)} <span>{count}</span></a>'


def _hit(base: str, hit: SkillHit) -> str:
    code = '<span class="tag code">code</span>' if hit.executable else ""
    return f"""<li class="hit" data-skill="{escape(hit.id)}">
<div class="hit-head"><a class="hit-name" href="{escape(skill_url(base, hit.id))}">{escape(hit.name)}</a>
{quality_badge(hit.quality, hit.verified)}</div>
<div class="hit-meta"><span class="id">{breakable(hit.id)}</span>{code}
<span class="tokens">~{hit.tokens:,} tokens</span></div>
<p>{breakable(hit.description)}</p>
</li>"""


# -- a skill -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SkillPage:
    skill: LoadedSkill
    tokens: int
    files: list[str]  # paths as readSkillFile takes them
    versions: tuple[VersionLine, ...] = ()  # earlier versions the history keeps (a skill a source installed)


def skill_page(base: str, page: SkillPage) -> str:
    skill, meta = page.skill, page.skill.metadata
    assert meta is not None  # loaded with metadata
    reasons = "".join(f"<li>{escape(r)}</li>" for r in meta.quality_reasons)
    reasons_html = f'<ul class="reasons">{reasons}</ul>' if reasons else '<p class="muted">Nothing held back.</p>'
    usage = meta.usage
    projects = ", ".join(breakable(p) for p in usage.projects) or "none recorded"
    used = (
        f"<p><strong>{usage.uses}</strong> use{'s' if usage.uses != 1 else ''} from {len(usage.projects)} "
        f'project{"s" if len(usage.projects) != 1 else ""}</p><p class="muted">Projects: {projects}</p>'
        f'<p class="muted">First {escape(_day(usage.first_used))}, last {escape(_day(usage.last_used))}</p>'
        if usage.uses
        else '<p class="muted">Never used yet.</p>'
    )
    files = "".join(
        f'<li><a href="{escape(skill_url(base, skill.id, path))}">{breakable(path)}</a></li>' for path in page.files
    )
    tags = "".join(f'<span class="tag">{escape(t)}</span>' for t in meta.tags)
    findings = "".join(
        f'<li class="finding {escape(f.severity)}"><span class="sev">{escape(f.severity)}</span> '
        f"<code>{breakable(f.path + (f':{f.line}' if f.line else ''))}</code> {breakable(f.message)} "
        f'<span class="muted">[{escape(f.code)}]</span></li>'
        for f in meta.findings
    )
    findings_html = f'<ul class="findings">{findings}</ul>' if findings else '<p class="muted">None.</p>'
    schema = (
        f"<details><summary><h2>Input schema ({escape(meta.input_schema_source or '')})</h2></summary>"
        f"<pre><code>{escape(json.dumps(meta.input_schema, indent=2))}</code></pre></details>"
        if meta.input_schema
        else ""
    )
    code = '<span class="tag code">code</span>' if skill.executable else ""
    source = _source_card(meta.source) + _versions_card(page.versions)
    up = f"{base}/?{urlencode({'category': skill.category})}"
    crumbs = f'<a href="{escape(up)}">{breakable(skill.category)}</a> / {breakable(skill.name)}'
    body = f"""<nav class="crumbs">{crumbs}</nav>
<div class="skill">
<article class="doc">
<header class="skill-head"><h1>{escape(skill.name)}</h1>{quality_badge(meta.quality, meta.verified)}</header>
<p class="lede">{breakable(skill.description)}</p>
<div class="hit-meta"><span class="id">{breakable(skill.id)}</span>{code}
<span class="tag">{escape(skill.layout)}</span>{tags}</div>
<div class="markdown">{render_markdown(skill.documentation)}</div>
</article>
<aside class="facts">
<section class="card" id="quality"><h2>Quality</h2>
<p class="big">{meta.quality:.1f}<span>/10</span></p>
<p class="muted">{escape(meta.quality_source)}{" · verified" if meta.verified else ""}</p>
{reasons_html}</section>
<section class="card" id="cost"><h2>Token cost</h2><p class="big">~{page.tokens:,}<span> tokens</span></p>
<p class="muted">to load with loadSkill's defaults</p></section>
<section class="card" id="usage"><h2>Usage</h2>{used}</section>
{source}
<section class="card" id="files"><h2>Files</h2><ul class="files">{files}</ul></section>
<section class="card" id="findings"><h2>Findings</h2>{findings_html}</section>
{f'<section class="card" id="input">{schema}</section>' if schema else ""}
</aside>
</div>"""
    return layout(base, skill.id, body)


def _source_card(source: SourceInfo | None) -> str:
    """Where the skill came from (`skillshelf add`); a skill written by hand says so. Only an https URL
    becomes a link: a source's URL is untrusted text."""
    if source is None:
        return '<section class="card" id="source"><h2>Source</h2><p class="muted">Written here by hand.</p></section>'
    url = escape(source.url)  # in a paragraph that wraps anywhere (.wrap): a URL on a phone
    where = (
        f'<a href="{url}" rel="noreferrer">{url}</a>' if source.url.startswith("https://") else f"<code>{url}</code>"
    )
    version = escape(source.commit.removeprefix("sha256:")[:12])
    license = f'<p class="muted">License: {escape(source.license)}</p>' if source.license else ""
    return (
        f'<section class="card" id="source"><h2>Source</h2><p><strong>{breakable(source.name)}</strong> '
        f'<span class="muted">({escape(source.kind)})</span> at <code>{version}</code></p>'
        f'<p class="wrap">{where}</p>{license}</section>'
    )


def _versions_card(versions: tuple[VersionLine, ...]) -> str:
    """The earlier versions `skillshelf history` lists (only the list: `skillshelf diff` and `rollback` act)."""
    if not versions:
        return ""
    items = "".join(
        f"<li><strong>rev {v.rev}</strong> <code>{escape(v.digest.removeprefix('sha256:')[:8])}</code> "
        f'<span class="muted">{escape(v.when)}</span> {breakable(v.why)}</li>'
        for v in versions
    )
    return f'<section class="card" id="versions"><h2>Versions</h2><ul class="versions">{items}</ul></section>'


def _day(stamp: str | None) -> str:
    return stamp[:10] if stamp else "—"


def file_page(base: str, skill_id: str, path: str, content: str, truncated: bool) -> str:
    if path.lower().endswith(".md"):
        shown = f'<div class="markdown">{render_markdown(content)}</div>'
    else:
        shown = f'<pre class="file"><code>{escape(content)}</code></pre>'
    cut = '<p class="notice">Only the start of this file is shown (it is over the size limit).</p>' if truncated else ""
    back = f'<a href="{escape(skill_url(base, skill_id))}">{breakable(skill_id)}</a>'
    body = f"""<nav class="crumbs">{back} / {breakable(path)}</nav>
<article class="doc wide"><h1>{breakable(path)}</h1>{cut}{shown}</article>"""
    return layout(base, f"{skill_id}/{path}", body)


# -- the library -------------------------------------------------------------------------------


def library_page(base: str, view: LibraryView) -> str:
    tiles = [
        ("skills", f"{view.skills:,}", "skills"),
        ("quality", f"{view.mean_quality:.1f}", "mean quality"),
        ("verified", f"{view.verified:,}", "verified"),
        ("executable", f"{view.executable:,}", "with code"),
        ("tokens", f"{view.total_tokens:,}", "tokens to load all"),
        ("uses", f"{view.uses:,}", "recorded uses"),
    ]
    tiles_html = "".join(
        f'<div class="tile" data-stat="{key}"><strong>{value}</strong><span>{label}</span></div>'
        for key, value, label in tiles
    )
    histogram = column_chart(
        "quality",
        "Quality",
        [Bar(band, count, tip="skills") for band, count in view.quality_histogram],
        note="skills per score band",
    )
    categories = bar_chart(
        "categories",
        "Skills per category",
        [Bar(name, count, f"{base}/?{urlencode({'category': name})}") for name, count in view.categories],
    )
    shown = view.tokens[:TOKENS_SHOWN]
    more = len(view.tokens) - len(shown)
    tokens = bar_chart(
        "tokens",
        "Token cost per skill",
        [Bar(skill_id, n, skill_url(base, skill_id)) for skill_id, n in shown],
        note=f"the {len(shown)} largest of {len(view.tokens)}" if more else "tokens to load each skill",
        width=2 * WIDTH,
    )
    if view.uses_over_time:
        label = {"day": "per day", "week": "per week", "month": "per month"}[view.period]
        over_time = column_chart(
            "uses",
            "Uses over time",
            [Bar(_short(day, view.period), n, tip=day) for day, n in view.uses_over_time],
            note=f"recorded uses {label}",
        )
    else:
        over_time = (
            '<figure class="chart" data-chart="uses"><figcaption>Uses over time</figcaption>'
            '<p class="empty">No uses recorded yet: agents record them with trackPatternUsage.</p></figure>'
        )
    never = len(view.never_used)
    share = donut(
        "never-used",
        "Used and never used",
        [Bar("used", view.skills - never), Bar("never used", never)],
        centre=f"{view.skills:,}",
    )
    never_items = "".join(
        f'<li><a href="{escape(skill_url(base, skill_id))}">{breakable(skill_id)}</a> {quality_badge(q, False)}</li>'
        for skill_id, q in view.never_used[:NEVER_USED_SHOWN]
    )
    never_more = f'<p class="muted">and {never - NEVER_USED_SHOWN:,} more</p>' if never > NEVER_USED_SHOWN else ""
    findings = findings_line(view.findings)
    duplicates = _near_duplicates(base, view.near_duplicates)
    body = f"""<h1>The library</h1>
<div class="tiles">{tiles_html}</div>
<div class="charts">
<div class="card">{histogram}{_quality_spread(view)}</div>
<div class="card">{categories}</div>
<div class="card">{over_time}</div>
<div class="card">{share}
<h3>Never used <span class="muted">(best first)</span></h3><ul class="never-used">{never_items}</ul>{never_more}</div>
<div class="card span">{tokens}</div>
<div class="card span" id="near-duplicates">{duplicates}</div>
<div class="card span" id="findability">{_findability(base, view.findability)}</div>
</div>
<p class="muted">Findings from <code>skillshelf check</code>: {findings}.</p>"""
    return layout(base, "Library", body, page="library")


def _quality_spread(view: LibraryView) -> str:
    """The deciles under the histogram, and what the scores used (findability or the index-time scores)."""
    if not view.quality_deciles:
        return ""
    d = view.quality_deciles
    cuts = f"p10 {d[0]:.1f} · p25–p75 {d[2]:.1f}–{d[6]:.1f} · median {d[4]:.1f} · p90 {d[8]:.1f}"
    return (
        f'<p class="muted" data-quality-deciles="{" ".join(f"{v:g}" for v in d)}">{escape(cuts)}</p>'
        f'<p class="muted" data-quality-basis>{escape(view.quality_basis)}</p>'
    )


def _near_duplicates(base: str, pairs: list[tuple[str, str, str]]) -> str:
    """The near-duplicate pairs `skillshelf check` reports, each linking both skills."""
    heading = f'<h2>Near-duplicates <span class="muted">{len(pairs):,}</span></h2>'
    if not pairs:
        return heading + '<p class="empty">None: no two skills share a name or say the same in their descriptions.</p>'
    items = "".join(
        f'<li><a href="{escape(skill_url(base, other))}">{breakable(other)}</a> duplicates '
        f'<a href="{escape(skill_url(base, first))}">{breakable(first)}</a> '
        f'<span class="muted">({escape(why)})</span></li>'
        for first, other, why in pairs[:DUPLICATES_SHOWN]
    )
    more = f'<p class="muted">and {len(pairs) - DUPLICATES_SHOWN:,} more</p>' if len(pairs) > DUPLICATES_SHOWN else ""
    note = '<p class="muted">Keep one of each pair, or rename one and say how it differs.</p>'
    return f'{heading}<ul class="near-duplicates">{items}</ul>{more}{note}'


def _findability(base: str, found: Findability | None) -> str:
    """Skills their own description does not find, and colliding pairs (`skillshelf eval`; docs/search.md)."""
    if found is None:
        return (
            '<h2>Findability</h2><p class="empty">Not worked out past 200 skills: run <code>skillshelf eval</code>.</p>'
        )
    heading = (
        f'<h2>Findability <span class="muted">{found.checked - len(found.unreachable):,} of {found.checked:,} '
        "found by their own description</span></h2>"
    )
    lost = "".join(
        f'<li><a href="{escape(skill_url(base, u.id))}">{breakable(u.id)}</a> '
        f'<span class="muted">(not in the top 5; {escape(u.winner or "nothing")} first)</span></li>'
        for u in found.unreachable[:DUPLICATES_SHOWN]
    )
    pairs = "".join(
        f'<li><a href="{escape(skill_url(base, c.skills[0]))}">{breakable(c.skills[0])}</a> and '
        f'<a href="{escape(skill_url(base, c.skills[1]))}">{breakable(c.skills[1])}</a> '
        f'<span class="muted">(shared: {escape(", ".join(c.shared_words))})</span></li>'
        for c in found.collisions[:DUPLICATES_SHOWN]
    )
    if not lost and not pairs:
        return heading + '<p class="empty">Every skill is found by its own description; no two collide.</p>'
    return f'{heading}<ul class="unreachable">{lost}</ul><h3>Collisions {len(found.collisions):,}</h3><ul>{pairs}</ul>'


def findings_line(by_severity: dict[str, int]) -> str:
    """'1 error, 2 warnings, 116 notes': the words of `skillshelf check`'s summary and `stats`."""
    known = [count_of(sev, by_severity[sev]) for sev in SEVERITY_WORDS if by_severity.get(sev)]
    others = [count_of(sev, n) for sev, n in sorted(by_severity.items()) if sev not in SEVERITY_WORDS and n]
    return escape(", ".join(known + others)) or "none"


def _short(day: str, period: str) -> str:
    """'2026-11-03' -> 'Nov 3' (days and weeks) or 'Nov 2026' (months)."""
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    year, month, date = day.split("-")
    name = months[int(month) - 1]
    return f"{name} {year}" if period == "month" else f"{name} {int(date)}"


# -- errors ------------------------------------------------------------------------------------


def not_found_page(base: str, message: str, suggestions: list[str]) -> str:
    links = "".join(f'<li><a href="{escape(skill_url(base, s))}">{breakable(s)}</a></li>' for s in suggestions)
    maybe = f'<h2>Did you mean</h2><ul class="suggestions">{links}</ul>' if links else ""
    body = f"""<section class="error-page"><p class="code">404</p><h1>Not found</h1>
<p>{breakable(message)}</p>{maybe}<p><a href="{escape(base)}/">Search the library</a></p></section>"""
    return layout(base, "Not found", body)


def forbidden_page(base: str, reason: str) -> str:
    body = f"""<section class="error-page"><p class="code">403</p><h1>Not for this token</h1>
<p>{escape(reason)}</p></section>"""
    return layout(base, "Not for this token", body)


def refused_page(base: str, reason: str, status: int) -> str:
    """A read the view's hooks stopped: 403 (a policy refused it, with its reason) or 500 (a hook failed)."""
    title = "Refused by this view" if status == 403 else "Not shown"
    body = f"""<section class="error-page"><p class="code">{status}</p><h1>{escape(title)}</h1>
<p>{breakable(reason)}</p><p><a href="{escape(base)}/">Search the library</a></p></section>"""
    return layout(base, title, body)


def unauthorized_page(base: str) -> str:
    body = """<section class="error-page"><p class="code">401</p><h1>Sign-in required</h1>
<p>This view of the library needs a valid token. Send it as <code>Authorization: Bearer …</code>.</p></section>"""
    return layout(base, "Sign-in required", body)
