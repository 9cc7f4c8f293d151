"""Charts as inline SVG, drawn on the server: no script, no library, no style attributes.

Colours and fonts come from the page's stylesheet through classes, so a strict Content-Security-
Policy holds. Every mark carries `data-label` and `data-value` (what tests and scrapers read) and a
`<title>` (the browser's tooltip); every chart has a caption and an accessible label.

An SVG scales as a whole, text included, and without a script the server cannot know the screen: so
each chart is drawn at two or three widths (`Drawing`), and the stylesheet shows the one whose
`for-*` class matches the screen (wide: over 1000 px, middle, narrow: a phone up to 600 px). Its text
then stays near its own size, and a long label is shortened for the room that drawing has.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

WIDTH = 560  # a chart in a half-width card on a desktop, or the full width of a middle screen
NARROW = 340  # a phone: about the width of a 375 px screen's card
CHAR_EM = 0.56  # an id's average character width, in ems, with room to spare (DejaVu Sans: 0.48)
LABEL_PX = 12  # bar labels' font size (the stylesheet's .bar-label), one size for every label
COLUMN_MAX = 40  # widest column: one or a few columns stay columns, not a slab
LABEL_EVERY = 40  # room each column label along the axis needs; the rest are in the tooltips


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    href: str | None = None  # a page this mark links to (already a safe, local URL)
    tip: str = ""  # extra tooltip text


@dataclass(frozen=True)
class Drawing:
    width: int
    shown: str  # where the stylesheet shows it: "for-wide", "for-middle", "for-narrow" (space-separated)


DRAWINGS = (Drawing(WIDTH, "for-wide for-middle"), Drawing(NARROW, "for-narrow"))


def _num(value: float) -> str:
    return f"{value:g}" if value != int(value) else f"{int(value):,}"


def _nice_step(top: float, ticks: int = 4) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about `ticks` gridlines up to `top`."""
    raw = max(top, 1) / ticks
    power = 10 ** math.floor(math.log10(raw))
    step = float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))
    return max(step, 1.0)


def fitted_label(label: str, room: float, font_px: float = LABEL_PX) -> str:
    """`label` shortened to fit `room` units of width at `font_px`. A skill id keeps its last segment (the
    skill's name) whole while it can, and its category gives way, with an ellipsis in the middle; any
    other label loses its middle."""
    fits = int(room / (font_px * CHAR_EM))
    if len(label) <= fits:
        return label
    head, slash, name = label.rpartition("/")
    if slash and len(name) + 2 <= fits:
        return f"{_middle(head, fits - len(name) - 1)}/{name}"
    return _middle(label, fits)


def _middle(text: str, fits: int) -> str:
    if len(text) <= fits:
        return text
    keep = max(fits - 1, 0)
    front = (keep + 1) // 2
    return text[:front] + "…" + text[len(text) - (keep - front) :]


def _bar_label(label: str, room: float) -> tuple[str, str]:
    """The label's text and class: shortened to fit at the one label size (a smaller font for long names
    made a chart of mixed sizes); the mark's tooltip holds it whole."""
    return fitted_label(label, room), "bar-label"


def _figure(name: str, title: str, svgs: list[str], note: str = "") -> str:
    caption = f"<figcaption>{escape(title)}{f' <small>{escape(note)}</small>' if note else ''}</figcaption>"
    return f'<figure class="chart" data-chart="{escape(name)}">{caption}{"".join(svgs)}</figure>'


def _svg(name: str, title: str, height: float, body: str, drawing: Drawing) -> str:
    return (
        f'<svg viewBox="0 0 {drawing.width} {height:g}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg" class="chart-svg chart-{escape(name)} {drawing.shown}">{body}</svg>'
    )


def _linked(href: str | None, inner: str) -> str:
    return f'<a href="{escape(href)}">{inner}</a>' if href else inner


def _mark(bar: Bar, inner: str, unit: str) -> str:
    tip = f"{bar.label}: {_num(bar.value)}{unit}{f' ({bar.tip})' if bar.tip else ''}"
    return (
        f'<g class="mark" data-label="{escape(bar.label)}" data-value="{_num(bar.value)}">'
        f"<title>{escape(tip)}</title>{_linked(bar.href, inner)}</g>"
    )


def _drawn(
    name: str, title: str, drawings: tuple[Drawing, ...], draw: Callable[[Drawing], tuple[float, str]], note: str = ""
) -> str:
    svgs = [_svg(name, title, *draw(drawing), drawing) for drawing in drawings]
    return _figure(name, title, svgs, note)


def column_chart(name: str, title: str, bars: list[Bar], *, unit: str = "", note: str = "") -> str:
    """Vertical columns with a value axis: a histogram, or counts over time."""

    def draw(drawing: Drawing) -> tuple[float, str]:
        return _columns(bars, drawing.width, unit)

    return _drawn(name, title, DRAWINGS, draw, note)


def _columns(bars: list[Bar], width: int, unit: str) -> tuple[float, str]:
    height, top, bottom, right = 240, 18, 34, 8
    left = 40 if width > NARROW else 34  # room for the value axis's numbers
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((b.value for b in bars), default=0)
    step = _nice_step(peak)
    ceiling = max(step, math.ceil(peak / step) * step)
    parts: list[str] = []
    for i in range(int(ceiling / step) + 1):
        y = top + plot_h - plot_h * (i * step) / ceiling
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_num(i * step)}</text>')
    slot = plot_w / max(len(bars), 1)
    column = min(COLUMN_MAX, max(1.0, slot * (0.72 if len(bars) <= 30 else 0.86)))
    every = max(1, math.ceil(len(bars) / (plot_w // LABEL_EVERY)))
    for i, bar in enumerate(bars):
        x = left + i * slot + (slot - column) / 2
        h = plot_h * bar.value / ceiling
        y = top + plot_h - h
        inner = f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{column:.1f}" height="{h:.1f}" rx="2"/>'
        if bar.value and len(bars) <= 24 and slot >= 18:  # room for the number over its column
            inner += f'<text class="value" x="{x + column / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle">'
            inner += f"{_num(bar.value)}</text>"
        parts.append(_mark(bar, inner, unit))
        if i % every == 0:
            parts.append(
                f'<text class="axis-label" x="{x + column / 2:.1f}" y="{height - bottom + 16}" '
                f'text-anchor="middle">{escape(bar.label)}</text>'
            )
    parts.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}"/>')
    return height, "".join(parts)


def bar_chart(name: str, title: str, bars: list[Bar], *, unit: str = "", note: str = "", width: int = WIDTH) -> str:
    """Horizontal bars: counts per category, cost per skill. Labels sit left of their bars where the
    drawing is wide enough, and over them on narrower ones (the label gets the whole width)."""
    drawings: tuple[Drawing, ...] = DRAWINGS
    if width > WIDTH:  # a chart across the page: its own wide drawing, and stacked ones below that
        drawings = (Drawing(width, "for-wide"), Drawing(WIDTH, "for-middle"), Drawing(NARROW, "for-narrow"))

    def draw(drawing: Drawing) -> tuple[float, str]:
        stacked = drawing.width < width or drawing.width <= NARROW
        return _stacked_bars(bars, drawing.width, unit) if stacked else _side_bars(bars, drawing.width, unit)

    return _drawn(name, title, drawings, draw, note)


def _side_bars(bars: list[Bar], width: int, unit: str) -> tuple[float, str]:
    row, top, value_w = 24, 6, 64
    label_w = 200 if width <= WIDTH else 400
    plot_w = width - label_w - value_w
    peak = max((b.value for b in bars), default=0) or 1
    parts: list[str] = []
    for i, bar in enumerate(bars):
        y = top + i * row
        w = max(2.0, plot_w * bar.value / peak) if bar.value else 0.0
        label, style = _bar_label(bar.label, label_w - 8)
        inner = (
            f'<text class="{style}" x="{label_w - 8}" y="{y + 16}" text-anchor="end">{escape(label)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" rx="2"/>'
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + 16}">{_num(bar.value)}{escape(unit)}</text>'
        )
        parts.append(_mark(bar, inner, unit))
    return top * 2 + row * max(len(bars), 1), "".join(parts)


LINE_PX = 15  # a wrapped label's second line, below its first


def _stacked_bars(bars: list[Bar], width: int, unit: str) -> tuple[float, str]:
    row, top, value_w = 34, 4, 56
    plot_w = width - value_w
    peak = max((b.value for b in bars), default=0) or 1
    parts: list[str] = []
    y = top
    for bar in bars:
        w = max(2.0, plot_w * bar.value / peak) if bar.value else 0.0
        lines = _label_lines(bar.label, width - 2)
        shown = "".join(
            f'<tspan x="0" dy="{LINE_PX if n else 0}">{escape(line)}</tspan>' for n, line in enumerate(lines)
        )
        y_bar = y + 17 + LINE_PX * (len(lines) - 1)
        inner = (
            f'<text class="bar-label" x="0" y="{y + 12}">{shown}</text>'
            f'<rect class="bar" x="0" y="{y_bar}" width="{w:.1f}" height="12" rx="2"/>'
            f'<text class="value" x="{w + 6:.1f}" y="{y_bar + 10}">{_num(bar.value)}{escape(unit)}</text>'
        )
        parts.append(_mark(bar, inner, unit))
        y += row + LINE_PX * (len(lines) - 1)
    return max(y, top + row) + top, "".join(parts)


def _label_lines(label: str, room: float) -> list[str]:
    """A label over its bar, which has the drawing's whole width: one line when it fits, else two (a skill
    id after its '/', anything else at its last hyphen that fits), each shortened only if it still does
    not fit. Every line is drawn at the one label size."""
    if fitted_label(label, room) == label:
        return [label]
    head, slash, name = label.rpartition("/")
    if slash:
        first, second = head + "/", name
    else:
        fits = int(room / (LABEL_PX * CHAR_EM))
        cut = label.rfind("-", 1, fits) + 1 or fits
        first, second = label[:cut], label[cut:]
    return [fitted_label(first, room), fitted_label(second, room)]


def donut(name: str, title: str, parts: list[Bar], *, centre: str = "") -> str:
    """Shares of a whole as a ring (each part a dashed circle), with a legend."""

    def draw(drawing: Drawing) -> tuple[float, str]:
        return _ring(parts, centre, narrow=drawing.width <= NARROW)

    return _drawn(name, title, DRAWINGS, draw)


def _ring(parts: list[Bar], centre: str, *, narrow: bool) -> tuple[float, str]:
    total = sum(p.value for p in parts)
    radius, cx, cy, legend_x = (56, 72, 90, 150) if narrow else (70, 110, 100, 250)
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
        legend_y = cy - 30 + i * 30
        share = f"{100 * part.value / total:.0f}%" if total else "0%"
        ring += (
            f'<rect class="swatch s{i}" x="{legend_x}" y="{legend_y - 12}" width="14" height="14" rx="3"/>'
            f'<text class="legend" x="{legend_x + 22}" y="{legend_y}">'
            f"{escape(part.label)}: {_num(part.value)} ({share})</text>"
        )
        marks.append(_mark(part, ring, ""))
        offset += length
    if centre:
        marks.append(f'<text class="centre" x="{cx}" y="{cy + 8}" text-anchor="middle">{escape(centre)}</text>')
    return 180 if narrow else 200, "".join(marks)
