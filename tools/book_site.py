"""A small Sphinx extension for the book as it is hosted (loaded through ``_config.yml``).

The site is served by GitHub Pages under ``https://<owner>.github.io/<repository>/``: the
site URL comes from ``course.toml`` and ``make configure`` writes it into ``_config.yml`` as
``html.baseurl`` (Sphinx's ``html_baseurl``). From that one setting this extension derives:

- ``notfound_urls_prefix`` for sphinx-notfound-page: the site's path (``/<repository>/``), so
  every link, stylesheet and script of ``404.html`` is absolute and the page works at any
  depth (GitHub Pages serves the same ``404.html`` for ``/<repository>/a/b/missing``);
- the 404 page's text, which links to the book's home page;
- the 404 page's ``data-content_root`` (used by Sphinx's scripts to find ``_static/`` and the
  search index), which sphinx-notfound-page leaves relative.

It also adds ``tools/book_static/accessibility.{css,js}`` to every page: figures on a white
panel in dark mode, a visible keyboard focus ring, and the theme's controls named by the words
they show (WCAG 2.1, checked by tests/site/test_accessibility.py). They are not in a root
``_static/`` folder because Jupyter Book would then add every script of ``_vendor/`` (MathJax)
to every page.
"""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import urlsplit

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

NOT_FOUND = "404"
STATIC = Path(__file__).resolve().parent / "book_static"


def site_path(baseurl: str) -> str:
    """The path under which the site is served, with a slash at both ends ('/' for a root site)."""
    path = urlsplit(baseurl).path
    return "/" + path.strip("/") + "/" if path.strip("/") else "/"


def _configure(app: Sphinx, config: Config) -> None:
    if not config.html_baseurl:
        raise ConfigError(
            "html.baseurl is not set in _config.yml: run `make configure` (it writes the site URL of course.toml)"
        )
    config.notfound_urls_prefix = site_path(config.html_baseurl)
    config.notfound_pagename = NOT_FOUND
    config.html_static_path = [*config.html_static_path, str(STATIC)]


def _not_found_text(app: Sphinx) -> None:
    """The 404 page's text, once the table of contents has set the book's home page (root_doc)."""
    config = app.config
    home = f"{config.notfound_urls_prefix}{config.root_doc}.html"
    config.notfound_context = {
        "title": "Page not found",
        "body": (
            "<h1>Page not found</h1>\n"
            "<p>There is no page at this address in <em>" + html.escape(config.html_title or config.project) + "</em>. "
            "It may have moved when the book was reorganised.</p>\n"
            f'<p><a class="reference internal" href="{home}">Go to the book\'s home page</a>, '
            "find the chapter in the table of contents, or search the book.</p>"
        ),
    }


def _absolute_content_root(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if pagename == NOT_FOUND:
        context["content_root"] = app.config.notfound_urls_prefix


def setup(app: Sphinx) -> dict:
    app.setup_extension("notfound.extension")
    app.connect("config-inited", _configure, priority=100)  # before sphinx-notfound-page validates
    app.connect("builder-inited", _not_found_text)
    app.add_css_file("accessibility.css")
    app.add_js_file("accessibility.js")
    app.connect("html-page-context", _absolute_content_root, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
