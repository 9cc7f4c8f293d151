"""A small curated table of abbreviations and synonyms people use when searching for skills.

Each group lists terms that should find each other; a query word in a group also matches every
other term of its group (a multi-word term as a phrase). Keep groups tight: a loose synonym makes
unrelated skills match. Terms are lower case; stemming (porter) applies afterwards, so list one
form of a word ('debug' covers 'debugging').
"""

from __future__ import annotations

SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    # abbreviations
    ("k8s", "kubernetes"),
    ("auth", "authentication", "authorization"),
    ("authn", "authentication"),
    ("authz", "authorization"),
    ("db", "database"),
    ("pg", "postgres", "postgresql"),
    ("postgres", "postgresql"),
    ("js", "javascript"),
    ("ts", "typescript"),
    ("py", "python"),
    ("repo", "repository"),
    ("pr", "pull request"),
    ("prs", "pull requests"),
    ("ci", "continuous integration"),
    ("cicd", "ci", "continuous integration"),
    ("e2e", "end to end"),
    ("a11y", "accessibility"),
    ("i18n", "internationalization", "localization", "translation"),
    ("l10n", "localization"),
    ("ml", "machine learning"),
    ("llm", "language model"),
    ("rag", "retrieval augmented"),
    ("ui", "user interface"),
    ("perf", "performance"),
    ("docs", "documentation"),
    ("config", "configuration", "configure"),
    ("env", "environment"),
    ("deps", "dependencies"),
    ("infra", "infrastructure"),
    ("iac", "infrastructure as code"),
    ("tf", "terraform"),
    ("async", "asynchronous"),
    ("gcp", "google cloud"),
    ("tdd", "test driven"),
    ("sso", "single sign on"),
    ("regex", "regular expression"),
    ("cli", "command line"),
    ("pii", "personal data"),
    ("mcp", "model context protocol"),
    ("rbac", "role based access"),
    ("jwt", "json web token"),
    ("kpi", "kpis", "metrics"),
    ("sast", "static analysis"),
    ("pentest", "penetration test"),
    ("gnn", "graph neural network"),
    ("scrna", "single cell"),
    ("vm", "virtual machine"),
    ("os", "operating system"),
    ("dataframe", "pandas"),
    # synonyms
    ("debug", "troubleshoot", "diagnose"),
    ("outage", "incident"),
    ("postmortem", "post mortem", "retrospective"),
    ("slow", "latency", "performance"),
    ("docx", "word document"),
    ("spreadsheet", "excel", "xlsx"),
    ("chart", "graph", "plot"),
    ("flaky", "intermittent"),
    ("login", "sign in", "authentication"),
    ("secret", "credential"),
    ("optimise", "optimize"),
    ("optimisation", "optimization"),
    ("analyse", "analyze"),
    ("summarise", "summarize"),
    ("organise", "organize"),
    ("colour", "color"),
    ("behaviour", "behavior"),
    ("licence", "license"),
    ("upgrade", "update", "migrate"),
    ("container", "docker"),
    ("dockerfile", "docker"),
    ("rollout", "deployment"),
    ("cheatsheet", "cheat sheet", "quick reference"),
    # what people say about money, moving, going back and changing text (issue 25)
    ("cost", "expense", "spend"),
    ("rollback", "roll back", "revert"),
    ("edit", "revise", "amend"),
)

# Everyday words that should also find a skill's own term, but not the other way: "the bill is too high" is
# about cost, while a search for cost is not about billing; "move to postgres" is a migration, while a search
# for migration should not match every skill that moves something.
ONE_WAY: dict[str, tuple[str, ...]] = {
    "cheaper": ("cost",),
    "cheap": ("cost",),
    "expensive": ("cost",),
    "bill": ("cost",),
    "invoice": ("cost",),
    "move": ("migrate",),
    "port": ("migrate",),
    "undo": ("rollback", "roll back", "revert"),
    "tweak": ("edit", "revise"),
    "proofread": ("edit", "copy edit"),
    "reword": ("rewrite", "edit"),
    "rephrase": ("rewrite", "edit"),
}
