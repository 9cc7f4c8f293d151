"""Skill markdown is untrusted: what reaches the page has no script, handler or dangerous URL."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from skillshelf.web.markdown import is_safe_url, render_markdown

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](javascript&#58;alert(1))",
    "[x](java%09script:alert(1))",
    "[x](<javascript:alert(1)>)",
    "[x]: vbscript:msgbox(1)\n\n[y][x]",
    "![i](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=)",
    "[f](file:///etc/passwd)",
    '![i](https://e.example/a.png" onerror="alert(1))',
    '```js" onmouseover="alert(1)\ncode\n```',
    "<svg onload=alert(1)>",
    "<iframe src=https://evil.example></iframe>",
]


class Elements(HTMLParser):
    """Every element and attribute as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]


def elements(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


@pytest.mark.parametrize("source", HOSTILE)
def test_hostile_markdown_renders_without_script_handlers_or_dangerous_urls(source: str) -> None:
    found = elements(render_markdown(source))
    assert not {"script", "img", "svg", "iframe", "a"} & set(found.tags), found.tags
    assert not [name for name, _ in found.attributes if name.startswith("on")]


def test_a_safe_image_and_link_stay_with_no_handler_attached() -> None:
    found = elements(render_markdown('![chart](https://e.example/a.png "t") [home](https://e.example)'))
    assert found.tags == ["p", "img", "a"]
    assert ("src", "https://e.example/a.png") in found.attributes
    assert ("rel", "nofollow noopener noreferrer") in found.attributes


def test_ordinary_markdown_keeps_its_structure_and_safe_links() -> None:
    html = render_markdown(
        "# Title\n\nSee [docs](https://example.com/a?b=1) and [the checklist](references/checklist.md).\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint('<hi>')\n```\n"
    )
    assert "<h1>Title</h1>" in html
    assert '<a href="https://example.com/a?b=1" rel="nofollow noopener noreferrer">docs</a>' in html
    assert '<a href="references/checklist.md" rel="nofollow noopener noreferrer">the checklist</a>' in html
    assert "<table>" in html and "<td>2</td>" in html
    assert "<code class=\"language-python\">print('&lt;hi&gt;')" in html


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        ("https://example.com", True),
        ("http://example.com", True),
        ("mailto:a@example.com", True),
        ("#section", True),
        ("references/a.md", True),
        ("../a.md", True),
        ("javascript:alert(1)", False),
        (" \tJavaScript:alert(1)", False),
        ("java\nscript:alert(1)", False),
        ("java%0ascript:alert(1)", False),
        ("data:text/html,hi", False),
        ("vbscript:x", False),
        ("ftp://example.com", False),
    ],
)
def test_only_relative_http_and_mailto_urls_are_safe(url: str, safe: bool) -> None:
    assert is_safe_url(url) is safe
