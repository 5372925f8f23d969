"""The built book as GitHub Pages serves it: under ``/<repository>/`` of the site URL in course.toml.

Every page's internal links and anchors are checked with tools/linkcheck.py (the standard
library's html.parser) as a browser would resolve them under that path, the sitemap lists the
book's pages at the site URL, and the 404 page works at any depth. The browser tests
(test_browser.py) serve the same site under the same path."""

from __future__ import annotations

import re
import shutil
from urllib.parse import urlsplit

import course  # tools/course.py
import linkcheck  # tools/linkcheck.py
import pytest
from built_site import html_path
from paths import PAGES

SITE_URL = course.load().site_url
PREFIX = urlsplit(SITE_URL).path


def test_site_url_is_the_book_base_url(site):
    canonical = re.search(r'<link rel="canonical" href="([^"]+)"', (site / html_path(PAGES[1])).read_text())
    assert canonical and canonical[1] == SITE_URL + html_path(PAGES[1]), "html.baseurl must be course.toml's site"


def test_every_internal_link_and_anchor_resolves_under_the_site_path(site):
    checker = linkcheck.Site(site, PREFIX, SITE_URL)
    pages, links = checker.count()
    assert pages >= len(PAGES) and links > 50 * len(PAGES), (pages, links)
    assert checker.broken() == []


@pytest.fixture(scope="module")
def site_copy(site, tmp_path_factory):
    copy = tmp_path_factory.mktemp("site") / "html"
    shutil.copytree(site, copy)
    return copy


def test_the_link_checker_finds_planted_broken_links(site_copy):
    page = site_copy / html_path(PAGES[4])
    planted = {
        "05_scalar_engine.html#no-such-section": "no id 'no-such-section'",
        "06_no_such_chapter.html": "no such file",
        "/_static/styles/theme.css": "leaves the site's path",  # works at the root, not on Pages
        SITE_URL + "book/no_such_page.html": "no such file",
        "#no-anchor-here": "no id 'no-anchor-here'",
    }
    links = "".join(f'<a href="{url}">x</a>' for url in planted)
    page.write_text(page.read_text().replace("</article>", links + "</article>", 1))
    found = linkcheck.Site(site_copy, PREFIX, SITE_URL).broken()
    assert len(found) == len(planted), "\n".join(found)
    for (url, why), problem in zip(planted.items(), found):
        assert problem.startswith(html_path(PAGES[4])) and url in problem and why in problem, problem


def test_sitemap_lists_every_page_at_the_site_url(site):
    sitemap = (site / "sitemap.xml").read_text()
    urls = re.findall(r"<loc>([^<]+)</loc>", sitemap)
    pages = sorted(u for u in urls if "/book/" in u or "/exercises/" in u)
    assert pages == sorted(SITE_URL + html_path(p) for p in PAGES)
    assert not [u for u in urls if u.endswith(("404.html", "search.html", "genindex.html"))]


def test_404_page_links_home_with_absolute_links(site):
    text = (site / "404.html").read_text()
    assert "Page not found" in text
    assert f'href="{PREFIX}{html_path(PAGES[0])}"' in text, "the 404 page links to the book's home page"
    relative = [
        url
        for url in re.findall(r'(?:href|src)="([^"]+)"', text)
        if not url.startswith(("/", "#", "http://", "https://", "mailto:", "data:"))
    ]
    assert relative == [], f"relative links break when 404.html is served for a deeper address: {relative}"
    assert f'data-content_root="{PREFIX}"' in text
