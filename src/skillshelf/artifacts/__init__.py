"""The artifacts module: past sessions' artifacts (finalization packs) per project, searched and loaded."""
