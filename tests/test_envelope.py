"""A tool's answer: its data serialised once, into the bytes and token estimate a fresh dump gives."""

from __future__ import annotations

import contextlib
import json
import random
import struct
import time
from typing import Any

import pydantic_core
import pytest
from pydantic import field_serializer

from skillshelf import tokens
from skillshelf.envelope import WireModel, failure, success
from skillshelf.server.tooling import to_call_result
from skillshelf.tokens import estimate_json_tokens, json_data_text, json_text

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


class Measured(WireModel):
    """Data with what an answer's JSON may hold: text of every kind, numbers of every size, nesting."""

    text: str
    numbers: list[float]
    whole: list[int]
    nested: dict[str, Any]


def _measured(seed: int) -> Measured:
    chance = random.Random(seed)
    floats = [chance.choice((1, -1)) * chance.random() * 10 ** chance.uniform(-30, 30) for _ in range(40)]
    floats += [struct.unpack("d", struct.pack("Q", chance.getrandbits(64)))[0] for _ in range(10)]  # NaN, inf too
    floats += [round(f, chance.randint(0, 6)) for f in floats[:20]] + [0.0, -0.0, 1e16, 1e22, 0.0001, 100.0]
    if seed % 2:  # half of them with no float under 1e-4: pydantic-core's text is the answer's
        floats = [f for f in floats if not 0 < abs(f) < 1e-4]
    else:
        floats.append(1e-5)
    text = "".join(chr(chance.choice((chance.randint(0, 0x7F), chance.randint(0x80, 0x10FFFF)))) for _ in range(60))
    text = text.replace("\ud800", "").replace("\udfff", "")  # (a surrogate pair's half: not text a model holds)
    return Measured(
        text=text if seed % 10 else text + "\ud800",  # a lone surrogate: json.dumps writes it
        numbers=floats,
        whole=[chance.randint(-(2**70), 2**70), 0, -1],
        nested={"k\u2028": [None, True, False, {"e": "2e-3 0.00001 is text" if seed % 3 == 0 else "2e3"}], "n": 1.5},
    )


def test_an_answers_text_is_what_json_dumps_writes_for_every_kind_of_value() -> None:
    # The data's text comes from pydantic-core's encoder (issue 36); where it writes a value otherwise (a float
    # under 1e-4, a lone surrogate), json.dumps writes the answer: the bytes stay the same.
    by_pydantic = 0
    for seed in range(300):
        wire = _measured(seed).model_dump(mode="json", by_alias=True, exclude_none=True)
        assert json_data_text(wire) == json_text(wire), seed
        with contextlib.suppress(ValueError):
            by_pydantic += tokens.written_as_python(pydantic_core.to_json(wire).decode())
    assert by_pydantic >= 80  # most odd seeds (not every third): pydantic-core's text was the answer, the same


def test_an_ordinary_answer_is_written_without_json_dumps(monkeypatch: pytest.MonkeyPatch) -> None:
    # json.dumps wrote each answer's data and metadata: a fifth of a repeat load's time on its worker thread.
    dumped: list[object] = []
    real = json.dumps

    def counted(value: object, **options: Any) -> str:
        dumped.append(value)
        return real(value, **options)

    monkeypatch.setattr(json, "dumps", counted)  # the module json_text calls it from
    envelope = success(Counted(long_name='naïve 日本 \n\t"quoted"', note="0.5 and 12e3"), time.perf_counter())
    wire, text = envelope.to_wire_and_text()
    monkeypatch.undo()
    assert dumped == []
    assert text == compact(wire) and json.loads(text) == wire
