"""Skills that come in from sources (docs/curating.md): git repositories, archives, folders, one SKILL.md.

- `parse.py`, `spec.py`: what a SOURCE on the command line means (kind, URL without credentials, ref,
  subfolder), and the rules every address and name follows;
- `kinds/`: each kind of source (git, archive, folder, file, index, mcp) as one class: how it is named,
  fetched and locked, and the checks of its lock fields;
- `fetch.py`, `git.py`, `archive.py`: a source's content listed and checked before one byte is written
  (hostile archives refused, git with hooks, submodules and foreign protocols off);
- `layout.py`: which skills a source holds, where each goes in the library, its license;
- `lock.py`, `digest.py`: `skillshelf.lock`, the pinned sources and a digest of every skill's files;
- `install.py`: add, sync, update and remove, each source staged beside the old and swapped in whole;
- `review.py`: what an update changes, executable files first;
- `provenance.py`: where a skill came from, for the surfaces that show it;
- `history.py`, `rollback.py`: the versions of each skill an update replaced (by hash, pruned past
  `history_keep`), and a skill put back to one of them, swapped in whole with the lock updated.

Nothing from a source is ever run. None of it imports MCP or click.
"""
