"""Every row of a first index, in order: what two trees' builds are compared by (issue 36: a faster build must
build the same index).

    PYTHONPATH=TREE/src python bench/index_dump.py OUT ROOT [ROOT ...]

For each root (each its own library): a `SkillLibrary` on an empty index folder, `sync()`, then every row of
`skills` (every column) and `sources` (signatures and findings), and the FTS5 text of every skill, written to
OUT one row a line. Two trees built the same index when their OUT files are byte-identical (`cmp`).
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from skillshelf.library.index.library import LibraryConfig, SkillLibrary

QUERIES = (
    "SELECT * FROM skills ORDER BY id",
    "SELECT * FROM sources ORDER BY key",
    "SELECT s.id, f.name, f.description, f.tags, f.headings, f.body FROM skills_fts f "
    "JOIN skills s ON s.rowid = f.rowid ORDER BY s.id",
)


def dump(root: Path, out: TextIO) -> None:
    with tempfile.TemporaryDirectory(prefix="skillshelf-index-dump-") as folder:
        library = SkillLibrary(LibraryConfig(roots=[root], index_dir=Path(folder), watch=False))
        try:
            library.sync()
        finally:
            library.close()
        [database] = [p for p in Path(folder).rglob("*") if p.is_file() and p.read_bytes()[:16] == b"SQLite format 3\0"]
        conn = sqlite3.connect(database)
        try:
            for query in QUERIES:
                out.writelines(f"{row!r}\n" for row in conn.execute(query))
        finally:
            conn.close()


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with Path(argv[0]).open("w", encoding="utf-8") as out:
        for root in argv[1:]:
            dump(Path(root), out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
