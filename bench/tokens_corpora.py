"""What finding and loading the right skill costs in tokens, over the real labelled queries.

    python bench/tokens_corpora.py                  # all 171 queries of bench/queries/corpora.txt
    python bench/tokens_corpora.py --json           # the figures as JSON

For each query: searchPatterns (limit 5) and loadSkill of the right skill (the first acceptable
answer among the hits, else the first labelled answer: a user who misses still loads something),
counted as the envelopes' tokensUsed counts them (ceil(characters / 4 x 1.1) of the JSON data).
A hit is measured two ways: each hit alone, and a whole search result (its hits and what wraps them)
divided by its number of hits. A load's cost "over the document" is its tokens against the document's
own: the skill's documentation as on disk (the body after the frontmatter, not minified) counted the
same way, as a JSON string (so the 1.1 factor and JSON escaping count on both sides); the figure is the
median over the loads of load / document - 1. Three forms are measured: the long form (`detail=true`,
full metadata: what the tools sent before issue 10), the default compact form, and the compact form
with `maxTokens`. In process, through the same service functions the tools call; the index is built in
a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.skills.service import compact_result, load_for_agent, search_patterns
from skillshelf.tokens import estimate_json_tokens

try:
    from bench.eval_corpora import CORPORA, load_queries
except ImportError:  # run as a script: bench/ is on sys.path
    from eval_corpora import CORPORA, load_queries  # type: ignore[no-redef,import-not-found,unused-ignore]

LIMIT = 5
MAX_TOKENS = (900, 1000)


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def measure(library: SkillLibrary, texts: list[tuple[str, tuple[str, ...]]]) -> dict[str, Any]:
    hit_long: list[int] = []
    hit_compact: list[int] = []
    per_hit: list[float] = []
    over: dict[str, list[float]] = {"long": [], "compact": []}
    totals: dict[str, list[int]] = {"long": [], "compact": [], **{f"maxTokens={m}": [] for m in MAX_TOKENS}}
    loads: dict[str, list[int]] = {key: [] for key in totals}
    for text, answers in texts:
        found = search_patterns(LibraryReader(library), text, limit=LIMIT)
        compact = compact_result(found)
        hit_long += [estimate_json_tokens(wire(h)) for h in found.hits]
        hit_compact += [estimate_json_tokens(wire(h)) for h in compact.hits]
        per_hit.append(estimate_json_tokens(wire(compact)) / max(1, len(compact.hits)))
        ids = [h.id for h in found.hits]
        target = next((i for i in ids if i in answers), answers[0])
        document = estimate_json_tokens(LibraryReader(library).documentation(library.find(target)))
        forms = {
            "long": (
                estimate_json_tokens(wire(found)),
                wire(load_for_agent(LibraryReader(library), target, detail=True, include_metadata=True)),
            ),
            "compact": (estimate_json_tokens(wire(compact)), wire(load_for_agent(LibraryReader(library), target))),
        }
        for m in MAX_TOKENS:
            forms[f"maxTokens={m}"] = (
                forms["compact"][0],
                wire(load_for_agent(LibraryReader(library), target, max_tokens=m)),
            )
        for key, (search_tokens, loaded) in forms.items():
            load_tokens = estimate_json_tokens(loaded)
            loads[key].append(load_tokens)
            if key in over:
                over[key].append(load_tokens / document - 1)
            totals[key].append(search_tokens + load_tokens)
    return {
        "queries": len(texts),
        "limit": LIMIT,
        "hitTokensMedian": {"long": statistics.median(hit_long), "compact": statistics.median(hit_compact)},
        "resultTokensPerHitMedian": round(statistics.median(per_hit), 1),
        "loadOverDocumentMedian": {key: round(statistics.median(v), 3) for key, v in over.items()},
        "loadOverDocumentP90": {key: round(statistics.quantiles(v, n=10)[-1], 3) for key, v in over.items()},
        "findPlusLoadMedian": {key: statistics.median(v) for key, v in totals.items()},
        "findPlusLoadP90": {key: statistics.quantiles(v, n=10)[-1] for key, v in totals.items()},
        "loadMedian": {key: statistics.median(v) for key, v in loads.items()},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if not CORPORA.is_dir():
        print(f"corpora not found at {CORPORA}", file=sys.stderr)
        return 2
    texts = [(q.text, q.answers) for q in load_queries()]
    with tempfile.TemporaryDirectory() as tmp:
        library = SkillLibrary(LibraryConfig(roots=[CORPORA], index_dir=Path(tmp), watch=False))
        try:
            library.sync()
            figures = measure(library, texts)
        finally:
            library.close()
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{figures['queries']} real queries over {CORPORA.name}/, searchPatterns limit {LIMIT}, tokens as tokensUsed")
    print(f"hit, median: long {figures['hitTokensMedian']['long']}, compact {figures['hitTokensMedian']['compact']}")
    print(f"compact search result / its hits, median: {figures['resultTokensPerHitMedian']}")
    for key, value in figures["loadOverDocumentMedian"].items():
        print(f"load over the document, {key}: median {value:+.1%}, p90 {figures['loadOverDocumentP90'][key]:+.1%}")
    print("| form | find+load median | find+load p90 | load median |")
    print("|---|---|---|---|")
    for key, value in figures["findPlusLoadMedian"].items():
        print(f"| {key} | {value:.0f} | {figures['findPlusLoadP90'][key]:.0f} | {figures['loadMedian'][key]:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
