"""The web view's pages: Jinja2 templates (web/templates/) with autoescape on, so every value a page
shows is escaped unless it is marked safe, and the one function that marks HTML safe is
`web.markdown.trusted` (the rendered markdown, `breakable`'s output and the charts' SVG). StrictUndefined:
a name a template uses and the page does not give is an error, not an empty string.

`base` is the URL prefix the view is mounted under ('' at the site root); every link is built
from it, so the same pages serve `/` and a mounted view.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined

from skillshelf import __version__
from skillshelf.library.skill.models import SEVERITY_WORDS, count_of
from skillshelf.library.sources.history import VersionLine
from skillshelf.skills.models import LoadedSkill, SkillHit
from skillshelf.web.charts import WIDTH, Bar, bar_chart, column_chart, donut
from skillshelf.web.markdown import breakable, render_markdown, trusted
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


def _day(stamp: str | None) -> str:
    return stamp[:10] if stamp else "—"


# Loaded from the package (importlib.resources), so the installed wheel carries the templates.
TEMPLATES = Environment(
    loader=PackageLoader("skillshelf.web", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    keep_trailing_newline=True,
)
TEMPLATES.filters.update(breakable=breakable, day=_day, fmt=format)
TEMPLATES.globals.update(skill_url=skill_url, stylesheet=STYLESHEET, icon=ICON, version=__version__)


def render(template: str, base: str, title: str, *, query: str = "", page: str = "", **values: Any) -> str:
    """A page: `template` in the layout, with the layout's own values (the title, the search box's query,
    the nav entry that is this page)."""
    return TEMPLATES.get_template(template).render(base=base, title=title, query=query, page=page, **values)


# -- search ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chip:
    label: str
    count: int
    href: str
    active: bool


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
    title = f"“{query}”" if query else "Search"
    values: dict[str, Any] = {"hits": hits, "chips": chips, "error": error}
    return render("search.html", base, title, query=query, page="" if query else "search", **values)


def _chip(base: str, query: str, category: str | None, label: str, count: int, active: bool) -> Chip:
    params = {"q": query} if query else {}
    if category is not None:
        params["category"] = category
    return Chip(label, count, f"{base}/?{urlencode(params)}" if params else f"{base}/", active)


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
    return render(
        "skill.html",
        base,
        skill.id,
        skill=skill,
        tokens=page.tokens,
        files=page.files,
        versions=page.versions,
        source=meta.source,
        up=f"{base}/?{urlencode({'category': skill.category})}",
        documentation=render_markdown(skill.documentation),
        schema=json.dumps(meta.input_schema, indent=2) if meta.input_schema else "",
    )


def file_page(base: str, skill_id: str, path: str, content: str, truncated: bool) -> str:
    markdown = render_markdown(content) if path.lower().endswith(".md") else None
    values: dict[str, Any] = {
        "skill_id": skill_id,
        "path": path,
        "content": content,
        "truncated": truncated,
        "markdown": markdown,
    }
    return render("file.html", base, f"{skill_id}/{path}", **values)


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
    never = len(view.never_used)
    return render(
        "library.html",
        base,
        "Library",
        page="library",
        tiles=tiles,
        **_charts(base, view),
        never_used=view.never_used[:NEVER_USED_SHOWN],
        never_more=never - NEVER_USED_SHOWN,
        duplicates=view.near_duplicates,
        found=view.findability,
        shown=DUPLICATES_SHOWN,
        findings=findings_line(view.findings),
        spread=_quality_spread(view),
    )


def _quality_spread(view: LibraryView) -> dict[str, str] | None:
    """The deciles under the histogram, and what the scores used (findability or the index-time scores)."""
    if not view.quality_deciles:
        return None
    d = view.quality_deciles
    return {
        "deciles": " ".join(f"{v:g}" for v in d),
        "cuts": f"p10 {d[0]:.1f} · p25–p75 {d[2]:.1f}–{d[6]:.1f} · median {d[4]:.1f} · p90 {d[8]:.1f}",
        "basis": view.quality_basis,
    }


def _charts(base: str, view: LibraryView) -> dict[str, Any]:
    """The library page's charts, drawn as SVG by web/charts.py (which escapes every label)."""
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
    over_time = None
    if view.uses_over_time:
        label = {"day": "per day", "week": "per week", "month": "per month"}[view.period]
        over_time = column_chart(
            "uses",
            "Uses over time",
            [Bar(_short(day, view.period), n, tip=day) for day, n in view.uses_over_time],
            note=f"recorded uses {label}",
        )
    never = len(view.never_used)
    share = donut(
        "never-used",
        "Used and never used",
        [Bar("used", view.skills - never), Bar("never used", never)],
        centre=f"{view.skills:,}",
    )
    drawn = {"histogram": histogram, "categories": categories, "tokens": tokens, "share": share}
    return {name: trusted(svg) for name, svg in drawn.items()} | {
        "over_time": trusted(over_time) if over_time is not None else None
    }


def findings_line(by_severity: dict[str, int]) -> str:
    """'1 error, 2 warnings, 116 notes': the words of `skillshelf check`'s summary and `stats`."""
    known = [count_of(sev, by_severity[sev]) for sev in SEVERITY_WORDS if by_severity.get(sev)]
    others = [count_of(sev, n) for sev, n in sorted(by_severity.items()) if sev not in SEVERITY_WORDS and n]
    return ", ".join(known + others) or "none"


def _short(day: str, period: str) -> str:
    """'2026-11-03' -> 'Nov 3' (days and weeks) or 'Nov 2026' (months)."""
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    year, month, date = day.split("-")
    name = months[int(month) - 1]
    return f"{name} {year}" if period == "month" else f"{name} {int(date)}"


# -- errors ------------------------------------------------------------------------------------


def not_found_page(base: str, message: str, suggestions: list[str]) -> str:
    return _error_page(base, 404, "Not found", message, suggestions=suggestions)


def forbidden_page(base: str, reason: str) -> str:
    return _error_page(base, 403, "Not for this token", reason, home=False)


def refused_page(base: str, reason: str, status: int) -> str:
    """A read the view's hooks stopped: 403 (a policy refused it, with its reason) or 500 (a hook failed)."""
    return _error_page(base, status, "Refused by this view" if status == 403 else "Not shown", reason)


def unauthorized_page(base: str) -> str:
    return _error_page(base, 401, "Sign-in required", "", home=False)  # the template says what to send


def _error_page(
    base: str, status: int, title: str, message: str, *, suggestions: list[str] | None = None, home: bool = True
) -> str:
    values: dict[str, Any] = {
        "status": status,
        "heading": title,
        "message": message,
        "suggestions": suggestions or [],
        "home": home,
    }
    return render("error.html", base, title, **values)
