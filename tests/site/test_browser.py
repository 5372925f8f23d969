"""The rendered book in a real browser: headless Chromium driven by Selenium.

The book is built strictly, as ``make book`` does, into a temporary folder (the ``site`` fixture
of ``conftest.py``, shared with ``test_colab_path.py``), served on 127.0.0.1 as GitHub Pages
serves it (under ``/<repository>/``, the path of course.toml's site URL, with ``404.html`` for
any missing address) and visited with every other host made unresolvable: a page that needs a
CDN, a web font or any other outside resource shows a console error here, exactly as it would
for a reader without a network. Every page of the toc must load without console errors, with
its images, stylesheets and scripts, code cells and outputs (``check_rendered``, run in
test_accessibility.py's one visit per page), typeset math, working next/previous and sidebar
navigation, and a search that finds "dual" whose results resolve.

Screenshots for review are saved as ``_build/screenshots/*.png``.

Needs Chromium and its driver (Debian: ``apt-get install chromium chromium-driver``) and Selenium
(``pip install -r requirements-browser.txt``); without them the browser tests skip locally and
fail in CI (``CI`` set), where ``.ci/run`` installs them. Run alone with
``pytest tests/site/test_browser.py -n 0 -p no:cacheprovider``.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import course  # tools/course.py
import nbformat
import pytest
from built_site import html_path
from paths import PAGES, ROOT

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the build-only tests still run; the browser fixture skips
    webdriver = None

SCREENSHOTS = ROOT / "_build" / "screenshots"
TIMEOUT = 60  # seconds for a page, its scripts and MathJax to settle


# The path GitHub Pages serves the site under: /<repository>/ (or / for a <owner>.github.io site).
SITE_PATH = urlsplit(course.load().site_url).path or "/"


class PagesHandler(SimpleHTTPRequestHandler):
    """The site under SITE_PATH only, and its 404.html (status 404) for any address it lacks,
    as GitHub Pages does: a link that only works at the server's root fails here."""

    def translate_path(self, path):
        route = urlsplit(path).path
        if not route.startswith(SITE_PATH):
            return str(Path(self.directory) / "..." / "outside-the-site-path")  # never a file
        return super().translate_path("/" + path[len(SITE_PATH) :])

    def send_error(self, code, message=None, explain=None):
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            return super().send_error(code, message, explain)
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format, *args):  # keep the test output readable
        pass


@pytest.fixture(scope="module")
def server(site):
    """Base URL of the built site served under SITE_PATH on a free port of 127.0.0.1."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(PagesHandler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}{SITE_PATH}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def missing(reason: str):
    """Skip locally, but fail in CI, where .ci/run installs the browser stack."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must install it: see .ci/run)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if webdriver is None:
        missing("Selenium is not installed: pip install -r requirements-browser.txt")
    chromium = next(filter(None, map(shutil.which, ["chromium", "chromium-browser", "google-chrome"])), None)
    driver_exe = shutil.which("chromedriver")
    if not (chromium and driver_exe):
        missing("Chromium or chromedriver is missing: sudo apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
        # Offline reader: every host but the local server fails to resolve.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_exe))
    driver.set_page_load_timeout(TIMEOUT)
    yield driver
    driver.quit()


def settle(driver) -> None:
    """Wait until the page has loaded and MathJax (if the page has math) has typeset it."""
    WebDriverWait(driver, TIMEOUT).until(lambda d: d.execute_script("return document.readyState") == "complete")
    outcome = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const startup = window.MathJax && window.MathJax.startup;
        if (!startup || !startup.promise) { done("no math"); return; }
        startup.promise.then(() => done("typeset"), (e) => done("MathJax failed: " + e));
    """)
    assert outcome in ("no math", "typeset"), outcome


def visit(driver, url: str) -> list[str]:
    """Open ``url``; the console errors it caused."""
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(url)
    settle(driver)
    # Every page declares an icon (html.favicon): Chromium never asks the server's root for
    # /favicon.ico, which is outside the site on GitHub Pages.
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def expected_cells(page: Path) -> tuple[int, int, int]:
    """Code cells, cells with outputs and image outputs that the page must show."""
    code = [c for c in nbformat.read(page, as_version=4).cells if c.cell_type == "code"]
    with_outputs = [c for c in code if c.outputs]
    images = sum(1 for c in code for out in c.outputs if any(k.startswith("image/") for k in out.get("data", {})))
    return len(code), len(with_outputs), images


PAGE_REPORT = """
const article = document.querySelector("article.bd-article");
const shown = (el) => el.getClientRects().length > 0;  // not display:none, not in a closed dropdown
const size = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
return {
  title: (article.querySelector("h1") || {}).textContent || "",
  brokenImages: [...document.images].filter((img) => !(img.complete && img.naturalWidth > 0
      && img.naturalHeight > 0)).map((img) => img.src),
  emptyFigures: [...article.querySelectorAll("img, svg")].filter((el) => shown(el) && !size(el))
      .map((el) => el.outerHTML.slice(0, 120)),
  contentImages: [...article.querySelectorAll("img")].filter((img) => img.src.includes("/_images/")).length,
  cells: article.querySelectorAll("div.cell").length,
  cellInputs: article.querySelectorAll("div.cell div.cell_input").length,
  cellOutputs: article.querySelectorAll("div.cell div.cell_output").length,
  resources: performance.getEntriesByType("resource").map((e) => e.name),
  failedResources: performance.getEntriesByType("resource").filter((e) => e.responseStatus >= 400)
      .map((e) => `${e.name} (${e.responseStatus})`),
};
"""


def check_rendered(browser, server: str, page: Path) -> None:
    """What the toc's ``page``, open in ``browser``, must show: everything it needs loaded from the
    site itself, its title, and every code cell, output and figure of its notebook. Run in
    test_accessibility.py's one visit per page, before axe-core."""
    report = browser.execute_script(PAGE_REPORT)

    foreign = [url for url in report["resources"] if not url.startswith((server, "data:", "blob:"))]
    assert foreign == [], f"the page fetched resources from outside the site: {foreign}"
    assert report["failedResources"] == [], f"stylesheets, scripts or images not found: {report['failedResources']}"
    assert report["brokenImages"] == [], f"images that did not load: {report['brokenImages']}"
    assert report["emptyFigures"] == [], f"images or SVGs rendered with zero size: {report['emptyFigures']}"

    source = page.read_text() if page.suffix == ".md" else nbformat.read(page, as_version=4).cells[0].source
    title = re.search(r"^# (.+)$", source, re.M).group(1).strip()
    assert report["title"].rstrip("#").strip() == title, "the page shows another title than its source"

    if page.suffix == ".ipynb":
        code, with_outputs, images = expected_cells(page)
        assert report["cells"] == report["cellInputs"] == code, (
            f"{code} code cells in the notebook, {report['cells']} cells ({report['cellInputs']} inputs) on the page"
        )
        assert report["cellOutputs"] == with_outputs, (
            f"{with_outputs} cells have outputs in the notebook, {report['cellOutputs']} on the page"
        )
        assert report["contentImages"] >= images, f"{images} figures in the notebook, {report['contentImages']} shown"


def wait_for_new_page(driver, old_url: str) -> None:
    WebDriverWait(driver, TIMEOUT).until(lambda d: d.current_url != old_url)
    settle(driver)


def click(driver, element) -> None:
    old = driver.current_url
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
    element.click()
    wait_for_new_page(driver, old)


# The footer's "previous" and "next" links of a built page (static HTML, not made by scripts).
PAGE_LINK = re.compile(r'<a class="(left-prev|right-next)"\s+href="([^"]*)"')


def test_next_and_previous_walk_the_toc_in_order(site, browser, server):
    """Every page's links, read from the built pages; then clicked in the browser at both ends."""
    expected = [html_path(p) for p in PAGES]
    for k, page in enumerate(expected):
        links = {kind: urljoin(page, href) for kind, href in PAGE_LINK.findall((site / page).read_text())}
        wanted = {"left-prev": expected[k - 1]} if k else {}
        if k + 1 < len(expected):
            wanted["right-next"] = expected[k + 1]
        assert links == wanted, f"{page}: 'previous' and 'next' must follow the toc"

    browser.get(server)  # the site's root redirects to the book's first page
    WebDriverWait(browser, TIMEOUT).until(lambda d: d.current_url == server + expected[0])
    settle(browser)
    click(browser, browser.find_element(By.CSS_SELECTOR, "a.right-next"))
    assert browser.current_url == server + expected[1], "'next' on the first page must go to the second"
    visit(browser, server + expected[-1])
    assert not browser.find_elements(By.CSS_SELECTOR, "a.right-next"), "the last page has no 'next'"
    click(browser, browser.find_element(By.CSS_SELECTOR, "a.left-prev"))
    assert browser.current_url == server + expected[-2], "'previous' on the last page must go back one page"


def test_sidebar_lists_the_toc_and_navigates(browser, server):
    expected = [server + html_path(p) for p in PAGES]
    visit(browser, expected[0])
    links = browser.find_elements(By.CSS_SELECTOR, "nav.bd-docs-nav a.reference")
    hrefs = [a.get_attribute("href").split("#")[0] for a in links]  # the open page links to "#"
    assert hrefs == expected, "the sidebar must list the toc's pages in order"
    middle = len(links) // 2
    click(browser, links[middle])
    assert browser.current_url == expected[middle]
    active = browser.find_element(By.CSS_SELECTOR, "nav.bd-docs-nav li.current > a.reference")
    assert active.get_attribute("href").split("#")[0] == expected[middle], "the sidebar must highlight the open page"


def test_search_box_finds_dual(site, browser, server):
    visit(browser, server + html_path(PAGES[0]))
    browser.find_element(By.CSS_SELECTOR, "button.search-button-field").click()
    box = WebDriverWait(browser, TIMEOUT).until(
        lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, "input[name='q']") if e.is_displayed()), None)
    )
    old = browser.current_url
    box.send_keys("dual\n")
    wait_for_new_page(browser, old)
    assert browser.current_url.startswith(server + "search.html?q=dual")
    results = WebDriverWait(browser, TIMEOUT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a")
    )
    hrefs = [a.get_attribute("href") for a in results]
    assert any("/book/" in h for h in hrefs), f"searching 'dual' must find a chapter, found {hrefs}"
    # Every result resolves under the site's path: the page exists and, for a section, its anchor
    # (each page's console is checked by test_accessibility.py's visit of every page).
    for href in dict.fromkeys(hrefs):
        assert href.startswith(server), f"a search result leaves the site: {href}"
        page = site / urlsplit(href).path.removeprefix(urlsplit(server).path)
        assert page.is_file(), f"the search result {href} is a missing page"
        if fragment := urlsplit(href).fragment:
            assert f'id="{fragment}"' in page.read_text(), f"the search result {href} names an anchor the page lacks"


MATH_PAGES = [p for p in PAGES if p.suffix == ".ipynb" and p.parent.name == "book" and "$" in p.read_text()]


def test_math_is_served_by_the_site_itself(site, browser, server):
    cdn = [p.relative_to(site).as_posix() for p in site.rglob("*.html") if "cdn.jsdelivr.net" in p.read_text()]
    assert cdn == [], f"pages still load something from cdn.jsdelivr.net: {cdn}"
    assert MATH_PAGES, "no chapter with math found"
    page = MATH_PAGES[0]
    assert visit(browser, server + html_path(page)) == []
    report = browser.execute_script("""
        return {
          version: window.MathJax && MathJax.version,
          formulas: document.querySelectorAll("article .math").length,
          typeset: document.querySelectorAll("article .math mjx-container").length,
          errors: document.querySelectorAll("mjx-merror").length,
          scripts: performance.getEntriesByType("resource").map((e) => e.name).filter((n) => /mathjax/i.test(n)),
        };""")
    assert report["version"] == "3.2.2"
    assert report["formulas"] > 0 and report["typeset"] == report["formulas"], (
        f"{report['typeset']} of {report['formulas']} formulas typeset on {html_path(page)}"
    )
    assert report["errors"] == 0, "MathJax reported TeX errors"
    assert report["scripts"] and all(s.startswith(server + "_static/mathjax/") for s in report["scripts"]), report[
        "scripts"
    ]


def test_screenshots_for_review(browser, server):
    """Index, a chapter (top and first figure) and an assignment, saved for a human to look at."""
    chapter = next(p for p in MATH_PAGES if expected_cells(p)[2] > 0)
    assignment = next(p for p in PAGES if p.parts[-3] == "exercises")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shots = {"index": PAGES[0], "chapter": chapter, "assignment": assignment}
    for name, page in shots.items():
        assert visit(browser, server + html_path(page)) == []
        assert browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    visit(browser, server + html_path(chapter))
    figure = browser.find_element(By.CSS_SELECTOR, "article div.cell_output img[src*='_images/']")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", figure)
    assert browser.save_screenshot(str(SCREENSHOTS / "chapter_figure.png"))
    for name in [*shots, "chapter_figure"]:
        assert (SCREENSHOTS / f"{name}.png").stat().st_size > 10_000, f"{name}.png looks blank"


# Every graphviz drawing is measured as the reader sees it: the SVG file is laid over the <img>
# at the img's rendered size, and each label's font size is multiplied by its on-screen scale.
LABEL_SIZES = """
const done = arguments[arguments.length - 1];
(async () => {
  const article = document.querySelector("article.bd-article");
  const body = parseFloat(getComputedStyle(article.querySelector("section > p")).fontSize);
  const drawings = [];
  for (const img of article.querySelectorAll("img")) {
    const drawing = img.src.endsWith(".svg") || img.src.startsWith("data:image/svg+xml");  // a stepper's frame
    if (!drawing || img.getClientRects().length === 0) continue;
    const source = await (await fetch(img.src)).text();
    if (!source.includes("Generated by graphviz") && !img.closest(".course-stepper")) continue;  // frames: no comment
    const rect = img.getBoundingClientRect();
    const box = document.createElement("div");
    box.style.cssText = "position:absolute;left:0;top:0";
    box.innerHTML = source.slice(source.indexOf("<svg"));
    const svg = box.querySelector("svg");
    svg.setAttribute("width", rect.width);
    svg.setAttribute("height", rect.height);
    document.body.appendChild(box);
    const sizes = [...svg.querySelectorAll("text")].map(
        (t) => parseFloat(t.getAttribute("font-size")) * t.getScreenCTM().a);
    box.remove();
    const name = img.src.startsWith("data:") ? img.alt.slice(0, 40) : img.src.split("/").pop().slice(0, 12);
    drawings.push({src: name, width: rect.width, smallest: Math.min(...sizes)});
  }
  return {body, drawings};
})().then(done, (e) => done({error: String(e)}));
"""

# Every chapter page with a graphviz drawing.
GRAPH_PAGES = [
    p for p in PAGES if p.suffix == ".ipynb" and p.parent.name == "book" and "image/svg+xml" in p.read_text()
]


def graph_label_sizes(driver, url: str) -> dict:
    """Body text size and, per graphviz drawing on the page, its smallest rendered label (CSS px)."""
    assert visit(driver, url) == []
    report = driver.execute_async_script(LABEL_SIZES)
    assert "error" not in report, report
    return report


@pytest.mark.parametrize("page", GRAPH_PAGES, ids=[html_path(p) for p in GRAPH_PAGES])
def test_graph_labels_are_at_least_body_text_size(browser, server, page):
    report = graph_label_sizes(browser, server + html_path(page))
    assert report["drawings"], f"no graphviz drawing found on {html_path(page)}"
    small = [d for d in report["drawings"] if d["smallest"] < report["body"] - 0.05]
    assert small == [], (
        f"graph labels smaller than the body text ({report['body']:.1f} px) on "
        f"{html_path(page)}: " + ", ".join(f"{d['src']}: {d['smallest']:.1f} px" for d in small)
    )


def test_a_missing_page_at_any_depth_gets_the_404_page_that_links_home(browser, server):
    home = server + html_path(PAGES[0])
    for missing in ["no-such-page.html", "book/no/such/chapter/deep.html"]:
        url = server + missing
        errors = [e for e in visit(browser, url) if not e.startswith(url + " ")]  # the page's own 404
        assert errors == [], f"console errors on the 404 page at {missing}: {errors}"
        report = browser.execute_script(PAGE_REPORT)
        assert report["failedResources"] == [], f"the 404 page at {missing} misses {report['failedResources']}"
        assert report["title"].rstrip("#").strip() == "Page not found"
        styled = browser.execute_script(
            "return getComputedStyle(document.querySelector('.bd-header, header')).display !== 'inline'"
        )
        assert styled, "the theme's stylesheet did not apply on the 404 page"
        link = browser.find_element(By.LINK_TEXT, "Go to the book's home page")
        assert link.get_attribute("href") == home
    click(browser, link)
    assert browser.current_url == home
