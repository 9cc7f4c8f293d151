"""What search by meaning adds to a process's memory, step by step (issue 36's memory target).

    python bench/meaning_memory.py [--index-dir DIR] [--model DIR]

One process: a words-only `SkillLibrary` over ../shared/corpora and 50 searches (what a words server holds), then
NumPy imported, the encoder loaded, 50 queries encoded, and every skill's text embedded on a thread in the
background pass's batches. After each step it prints the RSS (VmRSS, its anonymous and file-backed parts) and the
peak (VmHWM); then what loading the encoder allocates by line (tracemalloc: the layer weights, the vocabulary).
Linux only (/proc/self/status). Nothing here asserts.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import tracemalloc
from pathlib import Path

from semantic import CORPORA, MODEL, query_texts

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import SearchFilters
from skillshelf.library.semantic.vectors import BATCH, skill_text


def memory(step: str) -> None:
    """The process's memory now, in MB."""
    lines = Path("/proc/self/status").read_text(encoding="utf-8").splitlines()
    kb = {line.split(":")[0]: int(line.split()[1]) for line in lines if line.startswith(("Vm", "Rss"))}
    shown = ", ".join(f"{key} {kb[key] / 1024:.1f}" for key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"))
    print(f"{step}: {shown} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-dir", type=Path, help="an index folder to keep (default: a temporary one)")
    parser.add_argument("--model", type=Path, default=MODEL)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skillshelf-memory-") as scratch:
        roots = sorted(p for p in CORPORA.iterdir() if p.is_dir())
        config = LibraryConfig(roots=roots, index_dir=args.index_dir or Path(scratch), semantic_model=None, watch=False)
        library = SkillLibrary(config)
        library.sync()
        queries = query_texts(50)
        for query in queries:
            library.search(query, SearchFilters(), 5)
        memory("words: the library synced, 50 searches")
        import numpy  # noqa: F401  (what importing it costs)

        memory("NumPy imported")
        from skillshelf.library.semantic.encoder import SentenceEncoder

        encoder = SentenceEncoder(args.model)
        memory("the encoder loaded")
        for query in queries:
            encoder.encode([query])
        memory("50 queries encoded")
        texts = sorted((skill_text(n, d, b) for _, n, d, b in library.index.texts_to_embed()), key=len)

        def embed() -> None:
            for start in range(0, len(texts), BATCH):
                encoder.encode(texts[start : start + BATCH])

        thread = threading.Thread(target=embed)
        thread.start()
        thread.join()
        memory(f"{len(texts)} skills embedded on a thread")
        library.close()
    tracemalloc.start()  # last: its own bookkeeping would count in the steps above
    again = SentenceEncoder(args.model)  # held while the snapshot is taken
    print("what loading the encoder allocates (tracemalloc), by line:")
    for stat in tracemalloc.take_snapshot().statistics("lineno")[:3]:
        print(f"    {stat.size / 2**20:.1f} MB at {stat.traceback[0]}")
    del again


if __name__ == "__main__":
    main()
