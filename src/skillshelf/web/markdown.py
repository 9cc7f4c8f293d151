"""Skill markdown as safe HTML: skill content is untrusted.

Raw HTML in the source is escaped (html off), and a link or image whose URL has a scheme other
than http, https or mailto is left as text, so no script, no event handler and no javascript:
(or data:, vbscript:, file:) URL reaches the page. Links get rel="nofollow noopener noreferrer".
Text and inline code go through `breakable` (which the pages use for ids and paths too), so a long
path or URL wraps at its separators rather than mid-word or not at all.

`trusted` is the one place HTML made in Python is marked safe for the page templates (web/templates/,
autoescaped): what it wraps has escaped every piece of untrusted text itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_INVISIBLE = re.compile(r"[\x00-\x20\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")
BREAKABLE_FROM = 20  # characters: a shorter word fits any column the pages have
_SPACES = re.compile(r"(\s+)")
_SEPARATOR = re.compile(r"([/_])(?=[^/])")  # after '/' or '_', not inside '//'


def trusted(html: str) -> Markup:
    """`html` as the templates' autoescape leaves it. The only callers: `render_markdown` (markdown-it with
    raw HTML off, links' schemes checked, text through `breakable`), `breakable` (escapes before it adds
    <wbr>) and the charts' SVG (web/charts.py escapes every label and title). Anything else goes into a
    template as text and is escaped there."""
    return Markup(html)


def breakable(text: str) -> Markup:
    """`text` escaped, with a line-break opportunity (<wbr>) after each '/' and '_' of its long words:
    a path, id or URL then wraps at its separators ('-' already does), and prose only at spaces."""
    words = _SPACES.split(text)
    return trusted(
        "".join(_SEPARATOR.sub(r"\1<wbr>", escape(w)) if len(w) > BREAKABLE_FROM else escape(w) for w in words)
    )


def is_safe_url(url: str) -> bool:
    """Relative URLs and anchors, or http(s)/mailto; browsers ignore controls and spaces in a scheme."""
    compact = _INVISIBLE.sub("", unquote(url)).lower()
    match = _SCHEME.match(compact)
    return match is None or match.group(1) in SAFE_SCHEMES


class _SafeMarkdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        return is_safe_url(url)


def _link_open(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return renderer.renderToken(tokens, idx, options, env)


def _text(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return breakable(tokens[idx].content)


def _code_inline(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return f"<code{renderer.renderAttrs(tokens[idx])}>{breakable(tokens[idx].content)}</code>"


_MD = _SafeMarkdown("commonmark", {"html": False}).enable(["table", "strikethrough"])
_MD.add_render_rule("link_open", _link_open)
_MD.add_render_rule("text", _text)
_MD.add_render_rule("code_inline", _code_inline)


def render_markdown(text: str) -> Markup:
    """Sanitised HTML for a skill's markdown."""
    html: str = _MD.render(text)
    return trusted(html)
