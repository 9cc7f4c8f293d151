"""Charts as inline SVG, drawn on the server: no script, no library, no style attributes.

Colours and fonts come from the page's stylesheet through classes, so a strict Content-Security-
Policy holds. Every mark carries `data-label` and `data-value` (what tests and scrapers read) and a
`<title>` (the browser's tooltip); every chart has a caption and an accessible label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

WIDTH = 560
MAX_LABELS = 14  # column labels shown along the axis; the rest are in the tooltips


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    href: str | None = None  # a page this mark links to (already a safe, local URL)
    tip: str = ""  # extra tooltip text


def _num(value: float) -> str:
    return f"{value:g}" if value != int(value) else f"{int(value):,}"


def _nice_step(top: float, ticks: int = 4) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about `ticks` gridlines up to `top`."""
    raw = max(top, 1) / ticks
    power = 10 ** math.floor(math.log10(raw))
    step = float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))
    return max(step, 1.0)


def _figure(name: str, title: str, svg: str, note: str = "") -> str:
    caption = f"<figcaption>{escape(title)}{f' <small>{escape(note)}</small>' if note else ''}</figcaption>"
    return f'<figure class="chart" data-chart="{escape(name)}">{caption}{svg}</figure>'


def _svg(name: str, title: str, height: float, body: str, width: int = WIDTH) -> str:
    return (
        f'<svg viewBox="0 0 {width} {height:g}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg" class="chart-svg chart-{escape(name)}">{body}</svg>'
    )


def _linked(href: str | None, inner: str) -> str:
    return f'<a href="{escape(href)}">{inner}</a>' if href else inner


def _mark(bar: Bar, inner: str, unit: str) -> str:
    tip = f"{bar.label}: {_num(bar.value)}{unit}{f' ({bar.tip})' if bar.tip else ''}"
    return (
        f'<g class="mark" data-label="{escape(bar.label)}" data-value="{_num(bar.value)}">'
        f"<title>{escape(tip)}</title>{_linked(bar.href, inner)}</g>"
    )


def column_chart(name: str, title: str, bars: list[Bar], *, unit: str = "", note: str = "") -> str:
    """Vertical columns with a value axis: a histogram, or counts over time."""
    height, top, bottom, left, right = 240, 18, 34, 40, 8
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    peak = max((b.value for b in bars), default=0)
    step = _nice_step(peak)
    ceiling = max(step, math.ceil(peak / step) * step)
    parts: list[str] = []
    for i in range(int(ceiling / step) + 1):
        y = top + plot_h - plot_h * (i * step) / ceiling
        parts.append(f'<line class="grid" x1="{left}" x2="{WIDTH - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_num(i * step)}</text>')
    slot = plot_w / max(len(bars), 1)
    width = max(1.0, slot * (0.72 if len(bars) <= 30 else 0.86))
    every = max(1, math.ceil(len(bars) / MAX_LABELS))
    for i, bar in enumerate(bars):
        x = left + i * slot + (slot - width) / 2
        h = plot_h * bar.value / ceiling
        y = top + plot_h - h
        inner = f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{h:.1f}" rx="2"/>'
        if bar.value and len(bars) <= 24:
            inner += f'<text class="value" x="{x + width / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle">'
            inner += f"{_num(bar.value)}</text>"
        parts.append(_mark(bar, inner, unit))
        if i % every == 0:
            parts.append(
                f'<text class="axis-label" x="{x + width / 2:.1f}" y="{height - bottom + 16}" '
                f'text-anchor="middle">{escape(bar.label)}</text>'
            )
    parts.append(f'<line class="axis" x1="{left}" x2="{WIDTH - right}" y1="{top + plot_h}" y2="{top + plot_h}"/>')
    return _figure(name, title, _svg(name, title, height, "".join(parts)), note)


def bar_chart(name: str, title: str, bars: list[Bar], *, unit: str = "", note: str = "", width: int = WIDTH) -> str:
    """Horizontal bars with their labels on the left: counts per category, cost per skill."""
    row, top, value_w = 24, 6, 64
    label_w = 200 if width <= WIDTH else 320
    fits = label_w // 7  # characters of a 12px label that fit
    height = top * 2 + row * max(len(bars), 1)
    plot_w = width - label_w - value_w
    peak = max((b.value for b in bars), default=0) or 1
    parts: list[str] = []
    for i, bar in enumerate(bars):
        y = top + i * row
        w = max(2.0, plot_w * bar.value / peak) if bar.value else 0.0
        label = bar.label if len(bar.label) <= fits else bar.label[: fits - 1] + "…"
        inner = (
            f'<text class="bar-label" x="{label_w - 8}" y="{y + 16}" text-anchor="end">{escape(label)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" rx="2"/>'
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + 16}">{_num(bar.value)}{escape(unit)}</text>'
        )
        parts.append(_mark(bar, inner, unit))
    return _figure(name, title, _svg(name, title, height, "".join(parts), width), note)


def donut(name: str, title: str, parts: list[Bar], *, centre: str = "") -> str:
    """Shares of a whole as a ring (each part a dashed circle), with a legend."""
    total = sum(p.value for p in parts)
    radius, cx, cy = 70, 110, 100
    circumference = 2 * math.pi * radius
    marks = [f'<circle class="ring" cx="{cx}" cy="{cy}" r="{radius}"/>']
    offset = 0.0
    for i, part in enumerate(parts):
        length = circumference * part.value / total if total else 0.0
        ring = (
            f'<circle class="slice s{i}" cx="{cx}" cy="{cy}" r="{radius}" '
            f'stroke-dasharray="{length:.2f} {circumference - length:.2f}" stroke-dashoffset="{-offset:.2f}" '
            f'transform="rotate(-90 {cx} {cy})"/>'
        )
        legend_y = 70 + i * 30
        share = f"{100 * part.value / total:.0f}%" if total else "0%"
        ring += (
            f'<rect class="swatch s{i}" x="250" y="{legend_y - 12}" width="14" height="14" rx="3"/>'
            f'<text class="legend" x="272" y="{legend_y}">{escape(part.label)}: {_num(part.value)} ({share})</text>'
        )
        marks.append(_mark(part, ring, ""))
        offset += length
    if centre:
        marks.append(f'<text class="centre" x="{cx}" y="{cy + 8}" text-anchor="middle">{escape(centre)}</text>')
    return _figure(name, title, _svg(name, title, 200, "".join(marks)))
