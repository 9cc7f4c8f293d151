"""Reading sessions from disk (pyfakefs): every artifact shape, forgiving about everything in them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyfakefs.fake_filesystem_unittest import Patcher

from skillshelf.artifacts import service
from skillshelf.artifacts.parsing import heading_kind, parse_fence_info, parse_markdown
from skillshelf.artifacts.store import scan_project
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.projects import ProjectRoots
from tests.artifacts.conftest import AUTH_SUMMARY, session_file, session_json, set_mtime

# Paths are made inside each test: on Python 3.13 a Path built before pyfakefs patches resolves on the real disk.


def root() -> Path:
    return Path("/home/me/Dev")


def app() -> Path:
    return root() / "app"


@pytest.fixture
def roots(fs: Patcher) -> ProjectRoots:
    app().mkdir(parents=True)
    return ProjectRoots.of([root()])


def test_a_session_summary_gives_every_section_and_the_code_blocks(roots: ProjectRoots) -> None:
    session_file(app(), "2025-11-05-auth-flow/session-summary.md", AUTH_SUMMARY)
    loaded = service.load_session(roots, "app", "2025-11-05-auth-flow")
    assert (loaded.project, loaded.session_id, loaded.date) == ("app", "2025-11-05-auth-flow", "2025-11-05")
    assert loaded.title == "Auth flow with JWT refresh"
    assert loaded.summary == "Implemented login with rotating refresh tokens stored in cookies."
    assert loaded.decisions == [
        "Sign tokens with RS256; keys rotate monthly",
        "Keep refresh tokens in httpOnly cookies",
    ]
    assert loaded.implementations == [
        "POST /login issues an access and a refresh token",
        "Reused database/rls-policy for tenant isolation",
    ]
    assert loaded.challenges == ["Clock skew between services", "SameSite cookie rules in Safari"]
    assert loaded.next_steps == ["Log out everywhere on password change"]
    assert [(c.language, c.file, c.section) for c in loaded.code or []] == [
        ("python", "auth.py", "Next Steps"),
        ("typescript", "src/auth.ts", "Next Steps"),
    ]
    assert loaded.code is not None and loaded.code[0].code.startswith("def login(user: str)")
    assert loaded.files == ["2025-11-05-auth-flow/session-summary.md"] and loaded.warnings == []


def test_the_flat_form_is_a_session_and_its_metrics_file_belongs_to_it(roots: ProjectRoots) -> None:
    session_file(app(), "2025-10-01-billing.md", "# Billing\n\n## Decisions\n\n- Idempotent webhooks\n")
    session_json(app(), "2025-10-01-billing.metrics.json", {"tokens": {"original": 10, "compressed": 1}})
    sessions = scan_project(roots.resolve("app")).sessions
    assert list(sessions) == ["2025-10-01-billing"]
    loaded = service.load_session(roots, "app", "2025-10-01-billing")
    assert loaded.decisions == ["Idempotent webhooks"]
    assert loaded.files == ["2025-10-01-billing.md", "2025-10-01-billing.metrics.json"]


def test_both_forms_of_one_id_and_all_files_of_a_folder_are_one_session(roots: ProjectRoots) -> None:
    session_json(
        app(),
        "2025-11-06-search/finalization-pack.json",
        {"title": "Search", "decisions": ["BM25 over titles"], "nextSteps": ["Tune weights"]},
    )
    session_file(app(), "2025-11-06-search/finalization-pack.md", "# Pack\n\n## Challenges\n\n- Stemming surprises\n")
    session_file(app(), "2025-11-06-search/session-summary.md", "# Search summary\n\n## Decisions\n\n- Ignored\n")
    session_file(app(), "2025-11-06-search.md", "# Flat\n\n## Implementation\n\n- An FTS5 index\n")
    loaded = service.load_session(roots, "app", "2025-11-06-search")
    assert loaded.title == "Search"  # the JSON pack comes first, then the markdown files
    assert loaded.decisions == ["BM25 over titles"]
    assert loaded.challenges == ["Stemming surprises"]
    assert loaded.implementations == ["An FTS5 index"]
    assert loaded.next_steps == ["Tune weights"]
    assert len(loaded.files) == 4


def test_a_json_pack_is_read_in_camel_case_and_snake_case_with_object_entries(roots: ProjectRoots) -> None:
    session_json(
        app(),
        "camel/finalization-pack.json",
        {
            "sessionTitle": "Camel",
            "sessionSummary": {"text": "Summary inside an object."},
            "keyDecisions": [{"decision": "Use RS256", "rationale": "key rotation"}, "Short-lived tokens"],
            "whatWasBuilt": {"api": "login endpoint"},
            "problemsEncountered": ["Clock skew"],
            "followUps": ["Logout"],
            "codeSnippets": [{"lang": "TypeScript", "filename": "a.ts", "content": "let a = 1\n"}, "raw code\n"],
        },
    )
    session_json(
        app(),
        "snake/finalization-pack.json",
        {"session": {"title": "Snake", "key_decisions": ["One"], "next_steps": "Just one step"}},
    )
    camel = service.load_session(roots, "app", "camel")
    assert (camel.title, camel.summary) == ("Camel", "Summary inside an object.")
    assert camel.decisions == ["Use RS256 — key rotation", "Short-lived tokens"]
    assert camel.implementations == ["api: login endpoint"]
    assert (camel.challenges, camel.next_steps) == (["Clock skew"], ["Logout"])
    assert [(c.language, c.file, c.code) for c in camel.code or []] == [
        ("typescript", "a.ts", "let a = 1\n"),
        (None, None, "raw code\n"),
    ]
    snake = service.load_session(roots, "app", "snake")
    assert (snake.title, snake.decisions, snake.next_steps) == ("Snake", ["One"], ["Just one step"])


def test_malformed_json_is_a_warning_and_the_markdown_still_loads(roots: ProjectRoots) -> None:
    session_file(app(), "s1/finalization-pack.json", '{"title": "broken",')
    session_file(app(), "s1/session-summary.md", "# Still here\n\n## Decisions\n\n- Kept\n")
    loaded = service.load_session(roots, "app", "s1")
    assert (loaded.title, loaded.decisions) == ("Still here", ["Kept"])
    (warning,) = loaded.warnings
    assert warning.startswith("s1/finalization-pack.json is not valid JSON")


@pytest.mark.parametrize("data", [["a", "list"], "a string", 42, None])
def test_json_of_the_wrong_shape_is_a_warning(roots: ProjectRoots, data: object) -> None:
    session_json(app(), "s2/finalization-pack.json", data)
    loaded = service.load_session(roots, "app", "s2")
    assert loaded.title == "s2" and loaded.decisions == []
    assert len(loaded.warnings) == 1 and "expected a JSON object" in loaded.warnings[0]


def test_pack_fields_of_the_wrong_type_are_skipped_with_warnings(roots: ProjectRoots) -> None:
    session_json(app(), "s3/finalization-pack.json", {"decisions": 7, "code": [{"file": "x.py"}, 3], "title": ["x"]})
    loaded = service.load_session(roots, "app", "s3")
    assert (loaded.title, loaded.decisions, loaded.code) == ("s3", [], [])
    assert len(loaded.warnings) == 3


def test_markdown_without_the_expected_sections_still_gives_title_summary_and_code(roots: ProjectRoots) -> None:
    session_file(
        app(),
        "notes.md",
        "Just some notes about caching with Redis.\n\n## Random thoughts\n\nNothing structured.\n\n"
        "    indented_code()\n\n```\nplain fence\n```\n",
    )
    loaded = service.load_session(roots, "app", "notes")
    assert loaded.title == "notes" and loaded.summary == "Just some notes about caching with Redis."
    assert (loaded.decisions, loaded.implementations, loaded.challenges, loaded.next_steps) == ([], [], [], [])
    assert [(c.language, c.code) for c in loaded.code or []] == [(None, "indented_code()\n"), (None, "plain fence\n")]
    assert loaded.warnings == []


def test_a_session_without_a_date_in_its_id_is_dated_by_its_files(roots: ProjectRoots) -> None:
    set_mtime(session_file(app(), "undated/session-summary.md", "# Undated\n"), "2024-03-01")
    set_mtime(session_file(app(), "undated/finalization-pack.md", "# Pack\n"), "2024-03-09")
    set_mtime(session_file(app(), "2025-13-40-bad-date.md", "# Bad date\n"), "2024-02-02")
    assert service.load_session(roots, "app", "undated").date == "2024-03-09"  # the newest file
    assert service.load_session(roots, "app", "2025-13-40-bad-date").date == "2024-02-02"


def test_a_binary_file_is_skipped_with_a_warning(roots: ProjectRoots) -> None:
    path = app() / ".agent-artifacts" / "bin" / "session-summary.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    session_json(app(), "bin/finalization-pack.json", {"title": "From the pack"})
    loaded = service.load_session(roots, "app", "bin")
    assert loaded.title == "From the pack"
    assert loaded.warnings == ["bin/session-summary.md is binary (contains NUL bytes); it was skipped"]


def test_a_huge_file_is_cut_and_reported_and_huge_json_is_skipped(roots: ProjectRoots) -> None:
    big = "# Big\n\n## Decisions\n\n- First decision\n\n" + "filler words here\n" * 400
    session_file(app(), "big/session-summary.md", big)
    session_file(app(), "big/finalization-pack.json", '{"title": "x", "pad": "' + "y" * 5000 + '"}')
    loaded = service.load_session(roots, "app", "big", max_bytes=2048)
    assert (loaded.title, loaded.decisions) == ("Big", ["First decision"])
    assert loaded.warnings == [
        "big/finalization-pack.json is larger than 2 KiB; it was skipped",
        "big/session-summary.md is larger than 2 KiB; only the first part was read",
    ]


def test_sections_restrict_what_is_returned(roots: ProjectRoots) -> None:
    session_file(app(), "2025-11-05-auth-flow/session-summary.md", AUTH_SUMMARY)
    loaded = service.load_session(roots, "app", "2025-11-05-auth-flow", sections=["decisions", "nextSteps"])
    assert loaded.decisions and loaded.next_steps
    assert (loaded.summary, loaded.implementations, loaded.challenges, loaded.code) == (None, None, None, None)
    wire = loaded.model_dump(mode="json", exclude_none=True)
    assert set(wire) == {"project", "sessionId", "date", "title", "decisions", "nextSteps", "files", "warnings"}


def test_session_code_filters_by_language_and_understands_aliases(roots: ProjectRoots) -> None:
    session_file(app(), "2025-11-05-auth-flow/session-summary.md", AUTH_SUMMARY)
    code = service.get_session_code(roots, "app", "2025-11-05-auth-flow", "typescript")
    assert [b.file for b in code.blocks] == ["src/auth.ts"] and code.languages == ["python", "typescript"]
    assert [b.file for b in service.get_session_code(roots, "app", "2025-11-05-auth-flow", "py").blocks] == ["auth.py"]
    assert len(service.get_session_code(roots, "app", "2025-11-05-auth-flow").blocks) == 2
    none = service.get_session_code(roots, "app", "2025-11-05-auth-flow", "rust")
    assert none.blocks == [] and "python, typescript" in none.warnings[0]


def test_frontmatter_title_and_summary_are_used_and_not_shown_as_text(roots: ProjectRoots) -> None:
    session_file(app(), "fm.md", "---\ntitle: From frontmatter\nsummary: A short one.\n---\n# Heading title\n\nBody.\n")
    loaded = service.load_session(roots, "app", "fm")
    assert (loaded.title, loaded.summary) == ("From frontmatter", "A short one.")


def test_readme_hidden_entries_and_unknown_files_are_not_sessions(roots: ProjectRoots) -> None:
    session_file(app(), "README.md", "# About this folder\n")
    session_file(app(), ".draft.md", "# Draft\n")
    session_file(app(), "notes.txt", "text\n")
    session_file(app(), "empty-folder/image.png", "x")
    session_file(app(), "real.md", "# Real\n")
    assert list(scan_project(roots.resolve("app")).sessions) == ["real"]


def test_an_unknown_session_is_session_not_found_with_close_matches(roots: ProjectRoots) -> None:
    session_file(app(), "2025-11-05-auth-flow/session-summary.md", AUTH_SUMMARY)
    session_file(app(), "2025-10-01-billing.md", "# Billing\n")
    with pytest.raises(SkillshelfError) as raised:
        service.load_session(roots, "app", "2025-11-05-auth")
    assert raised.value.code == ErrorCode.SESSION_NOT_FOUND
    assert raised.value.suggestions == ["2025-11-05-auth-flow"]
    assert "searchArtifacts" in raised.value.message


def test_a_project_without_artifacts_has_no_sessions(roots: ProjectRoots) -> None:
    with pytest.raises(SkillshelfError) as raised:
        service.load_session(roots, "app", "anything")
    assert raised.value.code == ErrorCode.SESSION_NOT_FOUND and ".agent-artifacts/ is missing" in raised.value.message


@pytest.mark.parametrize("session_id", ["../secrets", "a/b", "a\\b", "..", ".", "x\x00y", " ", "x" * 201, "a..b"])
def test_a_session_id_that_is_not_a_single_name_is_a_validation_error(roots: ProjectRoots, session_id: str) -> None:
    session_file(app(), "ok.md", "# Ok\n")
    with pytest.raises(SkillshelfError) as raised:
        service.load_session(roots, "app", session_id)
    assert raised.value.code == ErrorCode.VALIDATION_ERROR


@pytest.mark.parametrize("project", ["../elsewhere", "app/../../elsewhere", "/etc"])
def test_a_project_outside_the_roots_is_access_denied(roots: ProjectRoots, project: str) -> None:
    with pytest.raises(SkillshelfError) as raised:
        service.load_session(roots, project, "x")
    assert raised.value.code == ErrorCode.ACCESS_DENIED


@pytest.mark.parametrize(
    ("heading", "kind"),
    [
        ("Decisions", "decisions"),
        ("Key Decisions", "decisions"),
        ("2. Architectural decisions made", "decisions"),
        ("Implementation", "implementations"),
        ("Implementations", "implementations"),
        ("What was built", "implementations"),
        ("Challenges", "challenges"),
        ("Problems", "challenges"),
        ("Blockers", "challenges"),
        ("Next Steps", "next_steps"),
        ("Follow-ups", "next_steps"),
        ("Next steps for the implementation", "next_steps"),
        ("Session Summary", "summary"),
        ("Next.js setup", None),
        ("Context", None),
    ],
)
def test_headings_are_mapped_to_sections_by_keyword(heading: str, kind: str | None) -> None:
    assert heading_kind(heading) == kind


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        ('python title="auth.py"', ("python", "auth.py")),
        ("ts src/auth.ts", ("ts", "src/auth.ts")),
        ("py:auth/login.py", ("py", "auth/login.py")),
        ("javascript filename='app.js' {1,3}", ("javascript", "app.js")),
        ("sql", ("sql", None)),
        ("", (None, None)),
        ('file="deploy.sh"', ("bash", "deploy.sh")),  # the language follows from the file
        ("Python {linenos}", ("python", None)),
        ("src/db/migrate.sql", ("sql", "src/db/migrate.sql")),
    ],
)
def test_fence_info_strings_give_language_and_file(info: str, expected: tuple[str | None, str | None]) -> None:
    assert parse_fence_info(info) == expected


def test_skill_ids_mentioned_anywhere_are_collected_but_longer_paths_are_not() -> None:
    text = "Used `database/rls-policy` and python/retry-backoff.\n\n```\n# see src/app/main.py\n```\n"
    content = parse_markdown(text, "x.md", [])
    assert content.references == {"database/rls-policy", "python/retry-backoff"}
