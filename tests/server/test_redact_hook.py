"""The shipped `redact_secrets` post_call hook masks a secret's value and nothing around it: the markdown
a skill wraps it in (inline code, emphasis, brackets) stays as written."""

from __future__ import annotations

import pytest

from skillshelf.server.hooks import ToolCall, redact_secrets


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("use `password=hunter2` here", "use `password=[REDACTED]` here"),  # before: the closing ` was eaten
        ("run `export API_KEY=abc123` first", "run `export API_KEY=[REDACTED]` first"),
        ("``token=x`y``", "``token=[REDACTED]``"),  # a backtick inside a double-backtick span is the value's
        ("**password=hunter2**", "**password=[REDACTED]**"),
        ("(api_key=abc123) and [secret=s3cr3t]", "(api_key=[REDACTED]) and [secret=[REDACTED]]"),
        ("set `token=abc`.", "set `token=[REDACTED]`."),
        ("password=abc.", "password=[REDACTED]"),  # no markup: a final '.' may be the secret's own
        ("x (y) password=abc)", "x (y) password=[REDACTED]"),  # the parenthesis before is closed: ')' is the value's
        ("`a` pwd=q`", "`a` pwd=[REDACTED]"),  # the code span before is closed
        ("db `postgres://app:s3cr3t@db/x`", "db `postgres://app:[REDACTED]@db/x`"),
    ],
)
def test_redaction_masks_the_value_and_keeps_the_markdown_around_it(text: str, expected: str) -> None:
    found = redact_secrets(ToolCall("readSkillFile", {}, "default"), {"success": True, "data": {"content": text}})
    assert found is not None and found.result == {"success": True, "data": {"content": expected}}


def test_redaction_of_redacted_text_changes_nothing() -> None:
    once = redact_secrets(ToolCall("loadSkill", {}, "default"), {"data": "use `password=hunter2` here"})
    assert once is not None and once.result is not None
    assert redact_secrets(ToolCall("loadSkill", {}, "default"), once.result) is None
