"""Check every internal link and anchor of the built book as it is hosted.

    python tools/linkcheck.py [_build/html]      # exit 1 and list what is broken

The site is served under a path (GitHub Pages: ``/<repository>/``, the path of the site URL in
``course.toml``). Every page of the built HTML is parsed with the standard library's
``html.parser``; every ``href``/``src`` that stays on the site (relative, root-relative, or an
absolute URL under the site URL, such as the canonical links) is resolved as a browser would
from the page's address under that path, and must name a file of the site and, with a
``#fragment``, an ``id`` (or ``<a name>``) on the target page. A link that climbs out of the
site's path, e.g. ``/_static/x.css`` on a site under ``/autodiff-course/``, is broken there
even if it works when the site is served at the root. ``sitemap.xml``'s URLs are checked too.
"""

from __future__ import annotations

import argparse
import posixpath
import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

ROOT = Path(__file__).resolve().parents[1]
# Attributes that load or link something, by tag (srcset is a list; <image> is SVG).
LINK_ATTRIBUTES = {
    "a": ("href",),
    "link": ("href",),
    "script": ("src",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "image": ("href", "xlink:href"),
    "form": ("action",),
}
NOT_FETCHED = ("mailto:", "javascript:", "data:", "tel:", "blob:")


@dataclass
class Page:
    ids: set[str] = field(default_factory=set)
    links: list[tuple[int, str, str]] = field(default_factory=list)  # (line, tag, url)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v for k, v in attrs if v is not None}
        if "id" in values:
            self.page.ids.add(values["id"])
        if tag == "a" and "name" in values:
            self.page.ids.add(values["name"])
        if tag == "link" and not {"stylesheet", "icon", "canonical", "prev", "next", "index", "search"} & set(
            values.get("rel", "").split()
        ):
            return  # preload hints and the like are fetched only as a hint
        for attribute in LINK_ATTRIBUTES.get(tag, ()):
            if value := values.get(attribute, "").strip():
                urls = (
                    [part.split()[0] for part in value.split(",") if part.strip()] if attribute == "srcset" else [value]
                )
                line = self.getpos()[0]
                self.page.links.extend((line, tag, url) for url in urls)

    handle_startendtag = handle_starttag


def parse(path: Path) -> Page:
    parser = _Parser()
    parser.feed(path.read_text(errors="replace"))
    parser.close()
    return parser.page


def site_settings(root: Path = ROOT) -> tuple[str, str]:
    """The site URL and the path it is served under, from course.toml."""
    sys.path.insert(0, str(root / "tools"))
    import course

    url = course.load(root).site_url
    return url, urlsplit(url).path or "/"


class Site:
    """The built HTML folder ``site`` as served under ``prefix`` (and published at ``site_url``)."""

    def __init__(self, site: Path, prefix: str, site_url: str = "") -> None:
        self.site, self.prefix, self.site_url = Path(site), "/" + prefix.strip("/") + "/", site_url
        if self.prefix == "//":
            self.prefix = "/"
        self._pages: dict[Path, Page] = {}

    def page(self, path: Path) -> Page:
        if path not in self._pages:
            self._pages[path] = parse(path)
        return self._pages[path]

    def address(self, path: Path) -> str:
        return self.prefix + path.relative_to(self.site).as_posix()

    def target(self, url_path: str) -> Path | None:
        """The file a URL path of the served site names, or None when it names none."""
        if not url_path.startswith(self.prefix):
            return None
        relative = unquote(url_path[len(self.prefix) :])
        if ".." in relative.split("/"):
            return None
        file = self.site / relative
        if relative == "" or relative.endswith("/") or file.is_dir():
            file = file / "index.html"
        return file if file.is_file() else None

    def check_url(self, base: str, url: str) -> str | None:
        """Why ``url`` on the page at address ``base`` is broken, or None when it resolves."""
        if url.startswith(NOT_FETCHED) or url.startswith("#") and url in ("#", "#!"):
            return None
        parts = urlsplit(url)
        if parts.scheme or parts.netloc:
            absolute = url if parts.scheme else "https:" + url
            if not (self.site_url and absolute.startswith(self.site_url)):
                return None  # another site: not this checker's business
            url = self.prefix + absolute[len(self.site_url) :]
        resolved = urlsplit(urljoin(base, url))
        path = posixpath.normpath(resolved.path) + ("/" if resolved.path.endswith("/") else "")
        if not path.startswith(self.prefix):
            return f"leaves the site's path {self.prefix} (resolves to {path})"
        file = self.target(path)
        if file is None:
            return f"no such file: {path}"
        fragment = unquote(resolved.fragment)
        if fragment and file.suffix == ".html" and fragment not in self.page(file).ids:
            return f"no id {fragment!r} on {file.relative_to(self.site).as_posix()}"
        return None

    def pages(self) -> list[Path]:
        """The site's HTML pages (not the theme's template fragments copied into _static/)."""
        return sorted(p for p in self.site.rglob("*.html") if p.relative_to(self.site).parts[0] != "_static")

    def broken(self) -> list[str]:
        """Every broken internal link or anchor, as 'page:line: <tag> url: why'."""
        problems = []
        for path in self.pages():
            base = self.address(path)
            for line, tag, url in self.page(path).links:
                if why := self.check_url(base, url):
                    problems.append(f"{path.relative_to(self.site).as_posix()}:{line}: <{tag}> {url}: {why}")
        sitemap = self.site / "sitemap.xml"
        if sitemap.is_file():
            for url in re.findall(r"<loc>([^<]+)</loc>", sitemap.read_text()):
                if not (self.site_url and url.startswith(self.site_url)):
                    problems.append(f"sitemap.xml: {url}: not under the site URL {self.site_url}")
                elif why := self.check_url(self.prefix, url):
                    problems.append(f"sitemap.xml: {url}: {why}")
        return problems

    def count(self) -> tuple[int, int]:
        """Pages and internal links (with anchors) checked."""
        pages = self.pages()
        return len(pages), sum(len(self.page(p).links) for p in pages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"), help="the built HTML folder")
    args = parser.parse_args(argv)
    site_url, prefix = site_settings()
    site = Site(Path(args.site), prefix, site_url)
    problems = site.broken()
    pages, links = site.count()
    for problem in problems:
        print(problem)
    print(f"{len(problems)} broken internal links or anchors in {pages} pages ({links} links, served under {prefix})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
