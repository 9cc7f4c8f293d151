"""Inline SVG charts: one mark per value, carrying the value, with every label escaped."""

from __future__ import annotations

import re

from skillshelf.web.charts import Bar, bar_chart, column_chart, donut


def marks(figure: str) -> list[tuple[str, str]]:
    """The marks of the figure's first drawing; every drawing (one per screen width) has the same."""
    drawings = [re.findall(r'<g class="mark" data-label="([^"]*)" data-value="([^"]*)">', svg)
                for svg in figure.split("<svg ")[1:]]  # fmt: skip
    assert len(drawings) >= 2 and all(drawing == drawings[0] for drawing in drawings)
    return drawings[0]


def test_a_column_chart_has_one_mark_per_bar_with_its_value() -> None:
    svg = column_chart("quality", "Quality", [Bar("0-1", 0), Bar("7-8", 3), Bar("8-9", 12)])
    assert marks(svg) == [("0-1", "0"), ("7-8", "3"), ("8-9", "12")]
    assert 'data-chart="quality"' in svg and "<figcaption>Quality" in svg
    tallest = max(float(h) for h in re.findall(r'class="bar"[^>]* height="([\d.]+)"', svg))
    three = float(re.findall(r'class="bar"[^>]* height="([\d.]+)"', svg)[1])
    assert three / tallest == 3 / 12


def test_a_bar_chart_links_its_marks_and_escapes_labels() -> None:
    svg = bar_chart("tokens", "Token cost", [Bar('<b>"x"</b>/y', 1200, "/skills/a/b/"), Bar("plain", 5)])
    assert marks(svg) == [("&lt;b&gt;&quot;x&quot;&lt;/b&gt;/y", "1,200"), ("plain", "5")]
    assert '<a href="/skills/a/b/">' in svg
    assert "<b>" not in svg


def test_a_donut_shows_each_share_and_survives_an_empty_whole() -> None:
    svg = donut("never-used", "Used", [Bar("used", 1), Bar("never used", 3)], centre="4")
    assert marks(svg) == [("used", "1"), ("never used", "3")]
    assert "used: 1 (25%)" in svg and "never used: 3 (75%)" in svg
    empty = donut("never-used", "Used", [Bar("used", 0), Bar("never used", 0)])
    assert "used: 0 (0%)" in empty
