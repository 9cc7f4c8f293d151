"""The body a load serves is the body the index parsed, whatever the frontmatter holds."""

from __future__ import annotations

import pytest

from skillshelf.library.skill.frontmatter import document_body, parse_document
from skillshelf.library.skill.reading import Reporter

DOCUMENTS = [
    "# No frontmatter\n\nText.",
    "",
    "---\nname: a\ndescription: b\n---\n# Body\n",
    "---\nname: a\n---\n\n\n# Body after blank lines\n---\nnot frontmatter\n---\n",
    "----  \nname: a\n-----\t\nBody with long rules and trailing blanks",
    "---\ndescription: unquoted: colon\n---\nrecovered",
    "---\n[unclosed: yaml\n---\nbroken YAML, body kept",
    "---\n- a list\n---\nnot a mapping",
    "---\nname: a\ndescription: never closed\n\n# Heading\n\nbody",
    "---\nname: a\n# straight into a heading",
    "---\n",
    "---\n---\n",
    "--- not an opening\nname: a\n---\nbody",
    "---\na: &x [1]\nb: [*x, *x]\n---\naliases",
    "---\r\nname: a\r\n---\r\nCRLF left as read",
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_served_body_is_the_parsed_documents_body(text: str) -> None:
    # document_body skips the YAML a load does not use (issue 36, H93); the body must stay the index's.
    assert document_body(text) == parse_document(text, Reporter("SKILL.md")).body


def test_an_unclosed_block_is_still_reported_and_its_keys_read() -> None:
    report = Reporter("SKILL.md")
    parsed = parse_document("---\nname: a\ndescription: b\n\n# Body", report)
    assert parsed.metadata == {"name": "a", "description": "b"} and parsed.body == "# Body"
    assert [f.code for f in report.findings] == ["frontmatter-unclosed"]
