"""The read-only web view's rendering: sanitised markdown, inline SVG charts and HTML pages.

Plain functions from domain models to HTML strings; no web framework and no MCP in here (the
routes live in skillshelf.server.web). Every value is escaped with `html.escape` where it is
interpolated; the only unescaped HTML is what `render_markdown` produces.
"""
