"""The build and dependency folders no skill lives in: one declaration, read by the one folder walk
(folder.py: discovery, listings, the digest) and by the file watcher's own small process
(indexing/watch_child.py), which imports nothing else of the package."""

# Build and dependency folders: never part of a skill, never listed, never served, never watched.
IGNORED_NAMES = frozenset({"node_modules", "__pycache__", "venv", "dist", "build"})
