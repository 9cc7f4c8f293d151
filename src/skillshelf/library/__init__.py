"""The skill library, split by responsibility (none of it imports MCP):

- `skill/`: what a skill is on disk: the two layouts, frontmatter, markdown, defensive file reading,
  path rules, discovery under the roots, quality, the checker and the Skills extension's manifests;
- `index/`: the search index and its freshness: `SkillLibrary`, the FTS store, queries, synonyms, the
  watcher, caches, locking and parallel parsing;
- `semantic/`: optional search by meaning (the sentence encoder, its vectors, the model installer);
- `usage/`: the usage store (which skills were used, from which projects);
- `access/`: who sees what: view rules and the reader every surface reads skills through.
"""
