"""library/locks.py: the side-file and descriptor locks hold across real processes (shared with shared,
exclusive against both), and the notes appends lock the notes file itself, adding no file beside it."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from skillshelf.library.locks import file_lock
from skillshelf.memory import store

WAIT_S = 30.0


def _hold(path: str, shared: bool, held: Event, done: Event) -> None:
    with file_lock(Path(path), shared=shared):
        held.set()
        done.wait(WAIT_S)


def _held_elsewhere(path: Path, shared: bool) -> tuple[multiprocessing.process.BaseProcess, Event]:
    """A real process holding `path`'s lock (shared or not) until the returned event is set."""
    context = multiprocessing.get_context("spawn")
    held, done = context.Event(), context.Event()
    holder = context.Process(target=_hold, args=(str(path), shared, held, done))
    holder.start()
    assert held.wait(WAIT_S), "the holding process never took the lock"
    return holder, done


@pytest.mark.parametrize("elsewhere_shared", [False, True])
def test_a_lock_another_process_holds_is_refused_unless_both_are_shared(tmp_path: Path, elsewhere_shared: bool) -> None:
    path = tmp_path / "index.lock"
    holder, done = _held_elsewhere(path, elsewhere_shared)
    try:
        with file_lock(path, blocking=False) as exclusive:
            assert exclusive is False
        with file_lock(path, blocking=False, shared=True) as shared:
            assert shared is elsewhere_shared
    finally:
        done.set()
        holder.join(WAIT_S)
    with file_lock(path, blocking=False) as free:
        assert free is True  # released when the holder let go


def test_appending_a_note_adds_no_file_beside_the_notes(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    store.append_line(notes, store.encode_line({"type": "general", "content": "x"}))
    assert [p.name for p in tmp_path.iterdir()] == ["notes.jsonl"]
