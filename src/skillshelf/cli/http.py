"""`serve --http`: the refusals checked before listening, and serving with several worker processes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from skillshelf.cli.common import announce_roots, logger

if TYPE_CHECKING:
    from skillshelf.settings import Settings


def prepare_http(
    settings: Settings,
    port: int,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    insecure_no_auth: bool,
    workers: int,
) -> bool:
    """Refuse an unsafe exposure; with several workers, serve with them (True: served and stopped).

    The tokens are the settings' own: the config file's and SKILLSHELF_TOKENS', as digests."""
    from skillshelf.server.auth import refuse_unauthenticated
    from skillshelf.server.hooks import check_views
    from skillshelf.server.hosts import reachable_name
    from skillshelf.server.http import refuse_unsafe_exposure
    from skillshelf.server.workers import run_http_workers

    reachable = reachable_name(settings.http_host, allowed_hosts)  # a proxy's Host name counts as a bind
    refuse_unauthenticated(reachable, settings.auth, insecure_no_auth)
    refuse_unsafe_exposure(reachable, settings.execution.enabled and not settings.auth.tokens)
    host = settings.http_host
    _warn_of_unknown_token_views(settings)
    if workers == 1:
        return False
    problems = check_views(settings.views)  # each worker loads them; fail here, once
    if problems:
        raise click.ClickException("; ".join(problems))
    announce_roots(settings.roots, settings.using_bundled)
    logger.warning("serving MCP on http://%s:%d/mcp with %d stateless workers", host, port, workers)
    run_http_workers(settings.model_dump_json(), host, port, workers, allowed_hosts, allowed_origins)
    return True


def _warn_of_unknown_token_views(settings: Settings) -> None:
    """A token listing a view that does not exist can never use it: often a typo, or a
    `SKILLSHELF_TOKENS` entry whose token text was read as views (write it NAME:VIEWS=TOKEN)."""
    from skillshelf.config.views import all_views

    views = all_views(settings.views, settings.execution.enabled)
    for name, token in settings.auth.tokens.items():
        unknown = [view for view in token.views if view not in views and view != "*"]
        if unknown:
            logger.warning(
                "token %r lists view(s) %s that do not exist (views: %s)",
                name,
                ", ".join(unknown),
                ", ".join(sorted(views)),
            )
