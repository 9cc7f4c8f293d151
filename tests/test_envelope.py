"""A tool's answer: its data serialised once, into the bytes and token estimate a fresh dump gives."""

from __future__ import annotations

import json
import time

from pydantic import field_serializer

from skillshelf.envelope import WireModel, failure, success
from skillshelf.server.tooling import to_call_result
from skillshelf.tokens import estimate_json_tokens

SERIALISED: list[str] = []  # each dump of a Counted, by its name


class Counted(WireModel):
    """Data that counts how often it is serialised (a real pydantic serializer, run on every dump)."""

    long_name: str
    note: str | None = None

    @field_serializer("long_name")
    def _count(self, value: str) -> str:
        SERIALISED.append(value)
        return value


def compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_an_answer_serialises_its_data_once_into_the_bytes_and_estimate_a_fresh_dump_gives() -> None:
    name = 'é ✓ "quoted" \\ \u0001 line\nend'
    SERIALISED.clear()
    envelope = success(Counted(long_name=name), time.perf_counter(), results_count=1)
    result = to_call_result(envelope)

    assert [name] == SERIALISED  # dumped once for the estimate, the answer and its text (twice before)
    fresh = envelope.to_wire()  # the envelope dumped whole, as before
    assert result.structured_content == fresh
    assert result.content[0].text == compact(fresh)  # type: ignore[union-attr]
    wire_data = {"longName": name}
    assert fresh["data"] == wire_data
    assert envelope.metadata.tokens_used == estimate_json_tokens(wire_data)


def test_an_answer_whose_data_was_replaced_or_that_failed_is_dumped_afresh() -> None:
    envelope = success(Counted(long_name="first"), time.perf_counter())
    envelope.data = Counted(long_name="second")
    assert to_call_result(envelope).structured_content["data"]["longName"] == "second"

    failed = to_call_result(failure("SKILL_NOT_FOUND", "no such skill", time.perf_counter(), ["search first"]))
    assert failed.is_error and failed.content[0].text == compact(failed.structured_content)  # type: ignore[union-attr]
