"""Every reader: WCAG 2.1 A and AA checks (axe-core), keyboard use and dark mode, in Chromium.

axe-core comes from npm, pinned by ``tests/site/axe/package-lock.json`` and installed by ``make
setup-browser`` (``npm ci``). It is injected by Selenium into every page of the built site,
served as GitHub Pages serves it (the fixtures of test_browser.py), and run with the WCAG 2.1 A
and AA rules: no violation of impact "serious" or "critical" may remain. What it finds of
lower impact is written to ``_build/accessibility/axe.json`` for review. The same visit checks
that the page renders (test_browser.py's ``check_rendered``): each page is loaded once.

Figures: every image and drawing of the built site has a caption and a text alternative that
says what it shows (myst-nb cell metadata, applied by tools/figure_text.py from book/figures.toml).
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from built_site import html_path
from notebook_text import solutions
from paths import PAGES, ROOT
from test_browser import TIMEOUT, check_rendered, missing, settle, visit

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the browser fixture reports it
    pass

AXE = ROOT / "tests/site/axe/node_modules/axe-core/axe.min.js"
REPORT = ROOT / "_build" / "accessibility" / "axe.json"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# Every page of the built site: the toc's pages, then the generated ones.
TOC_PAGES = {html_path(p): p for p in PAGES}
SITE_PAGES = [*TOC_PAGES, "genindex.html", "search.html", "py-modindex.html", "404.html"]

RUN_AXE = """
const done = arguments[arguments.length - 1];
axe.run(document, {runOnly: {type: "tag", values: arguments[0]}, resultTypes: ["violations"]})
  .then((results) => done(results.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(" "))}))),
        (error) => done({error: String(error)}));
"""


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.is_file():
        missing("axe-core is not installed: make setup-browser (npm ci in tests/site/axe)")
    return AXE.read_text()


@pytest.fixture(scope="module")
def axe_report():
    """Violations per page, written out for review when the module is done."""
    found: dict[str, list[dict]] = {}
    yield found
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")


def axe(driver, source: str) -> list[dict]:
    driver.execute_script(source)
    violations = driver.execute_async_script(RUN_AXE, WCAG_TAGS)
    assert isinstance(violations, list), f"axe-core failed: {violations}"
    return violations


@pytest.mark.parametrize("page", SITE_PAGES)
def test_page_renders_offline_with_no_serious_wcag_violation(browser, server, axe_source, axe_report, page):
    """One visit per page: no console error, what a toc page must show (``check_rendered``), then
    axe-core."""
    errors = visit(browser, server + page)
    if page == "404.html":
        errors = [e for e in errors if not e.startswith(server + page + " ")]
    assert errors == [], f"console errors on {page}:\n" + "\n".join(errors)
    if page in TOC_PAGES:
        check_rendered(browser, server, TOC_PAGES[page])
    violations = axe(browser, axe_source)
    axe_report[page] = violations
    grave = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert grave == [], f"WCAG 2.1 A/AA violations on {page}:\n" + "\n".join(
        f"- {v['impact']} {v['id']} ({v['count']}x): {v['help']}; e.g. {v['targets']}" for v in grave
    )


def test_axe_finds_a_planted_violation(browser, server, axe_source):
    """The check can fail: a button without a name and an image without alt on a real page."""
    visit(browser, server + html_path(PAGES[1]))
    browser.execute_script("""
        const article = document.querySelector("article");
        article.insertAdjacentHTML("afterbegin", '<button><svg width="10" height="10"></svg></button>');
        article.insertAdjacentHTML("afterbegin", '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">');
    """)
    ids = Counter(v["id"] for v in axe(browser, axe_source) if v["impact"] in ("serious", "critical"))
    assert {"button-name", "image-alt"} <= set(ids), ids


def count_by_impact(report: dict[str, list[dict]]) -> dict[str, dict[str, int]]:
    return {
        page: dict(Counter(v["impact"] for v in violations for _ in range(v["count"])))
        for page, violations in report.items()
    }


# -- figures: a caption and a text alternative that says what the figure shows -----------------------

FIGURES = """
return [...document.querySelectorAll("article.bd-article img")]
  .filter((img) => img.src.includes("/_images/") || img.src.startsWith("data:image/"))
  .map((img) => {
    const figure = img.closest("figure");
    const caption = figure && figure.querySelector("figcaption");
    const src = img.src.startsWith("data:") ? "a stepper's frame" : img.src.split("/").pop();
    return {src, alt: img.getAttribute("alt"), caption: caption ? caption.textContent.trim() : null};
  });
"""
TRIVIAL_ALT = re.compile(
    r"^(|image|img|figure|graph|plot|picture|output|.*\.(png|svg|jpe?g|gif)|[0-9a-f]{16,}|"
    r"<.*>|\S+/\S+)$",
    re.I,
)
FIGURE_PAGES = [p for p in PAGES if p.suffix == ".ipynb" and "image/" in p.read_text()]


@pytest.mark.parametrize("page", FIGURE_PAGES, ids=[html_path(p) for p in FIGURE_PAGES])
def test_every_figure_has_a_caption_and_meaningful_alt_text(browser, server, page):
    assert visit(browser, server + html_path(page)) == []
    figures = browser.execute_script(FIGURES)
    assert figures, f"no figure found on {html_path(page)}"
    for figure in figures:
        alt = (figure["alt"] or "").strip()
        assert not TRIVIAL_ALT.match(alt) and len(alt.split()) >= 8, (
            f"{html_path(page)}: {figure['src']} has no text alternative that says what it shows: {alt!r} "
            "(add it to book/figures.toml and run python tools/figure_text.py)"
        )
        assert figure["caption"] and len(figure["caption"].split()) >= 3, (
            f"{html_path(page)}: {figure['src']} has no caption"
        )


# -- keyboard ---------------------------------------------------------------------------------------


def tab_to(driver, predicate_js: str, limit: int = 400):
    """Press Tab from the top of the page until the focused element satisfies ``predicate_js``
    (a JS expression over ``el``); the element, or None."""
    driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0);")
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    for _ in range(limit):
        if driver.execute_script(f"const el = document.activeElement; return !!({predicate_js});"):
            return driver.switch_to.active_element
        driver.switch_to.active_element.send_keys(Keys.TAB)
    return None


# The focused element draws a ring: an outline, or a box shadow in a colour that is not transparent.
FOCUS_RING = """
const s = getComputedStyle(document.activeElement);
const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2;
const shadow = s.boxShadow !== "none" && !/rgba\\([^)]*, 0(\\.\\d+)?\\)/.test(s.boxShadow.split(") ")[0] + ")");
return outline || shadow;
"""


def test_every_control_shows_where_the_keyboard_focus_is(browser, server):
    """WCAG 2.4.7: Tab through a chapter's header, sidebar and first controls; each shows a ring."""
    visit(browser, server + html_path(PAGES[1]))
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    without = []
    for _ in range(60):
        if not browser.execute_script(FOCUS_RING):
            without.append(browser.execute_script("const e = document.activeElement; return e.outerHTML.slice(0, 100)"))
        browser.switch_to.active_element.send_keys(Keys.TAB)
    assert without == [], "controls without a visible focus ring:\n" + "\n".join(without)


def test_keyboard_reaches_and_follows_a_sidebar_link(browser, server):
    visit(browser, server + html_path(PAGES[0]))
    target = server + html_path(PAGES[3])
    link = tab_to(browser, f"el.matches('nav.bd-docs-nav a') && el.href === {json.dumps(target)}")
    assert link is not None, "Tab never reaches the sidebar's link to the third chapter"
    assert browser.execute_script(FOCUS_RING), "the focused sidebar link shows no focus ring"
    link.send_keys(Keys.ENTER)
    WebDriverWait(browser, TIMEOUT).until(lambda d: d.current_url == target)
    settle(browser)


def test_keyboard_opens_the_search_and_searches(browser, server):
    visit(browser, server + html_path(PAGES[1]))
    button = tab_to(browser, "el.matches('button.search-button-field, button.search-button')")
    assert button is not None, "Tab never reaches the search button"
    button.send_keys(Keys.ENTER)
    box = WebDriverWait(browser, TIMEOUT).until(
        lambda d: d.switch_to.active_element if d.switch_to.active_element.get_attribute("name") == "q" else None
    )
    box.send_keys("reverse", Keys.ENTER)
    WebDriverWait(browser, TIMEOUT).until(lambda d: "search.html?q=reverse" in d.current_url)
    settle(browser)
    results = WebDriverWait(browser, TIMEOUT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a")
    )
    assert results, "the search opened with the keyboard found nothing for 'reverse'"


# The chapters' "check yourself" solutions are sphinx-exercise dropdowns (sphinx-togglebutton).
SOLUTION_PAGE = next(p for p in PAGES if p.suffix == ".ipynb" and solutions(p))
SOLUTION_HIDDEN = """
const solution = document.activeElement.closest(".solution");
return !solution.querySelector("section").checkVisibility({opacityProperty: true, visibilityProperty: true});
"""


def test_keyboard_opens_a_dropdown_solution(browser, server):
    visit(browser, server + html_path(SOLUTION_PAGE))
    toggle = tab_to(browser, "el.matches('.solution.dropdown button.toggle-button')", limit=600)
    assert toggle is not None, f"Tab never reaches a solution's dropdown on {html_path(SOLUTION_PAGE)}"
    assert browser.execute_script(SOLUTION_HIDDEN), "the solution is shown before it is opened"
    toggle.send_keys(Keys.ENTER)
    WebDriverWait(browser, 5).until(lambda d: not d.execute_script(SOLUTION_HIDDEN))
    toggle.send_keys(Keys.ENTER)
    WebDriverWait(browser, 5).until(lambda d: d.execute_script(SOLUTION_HIDDEN))


def test_keyboard_reaches_the_colab_launch_button(browser, server):
    chapter = next(p for p in PAGES if p.suffix == ".ipynb")
    visit(browser, server + html_path(chapter))
    menu = tab_to(browser, "el.matches('.dropdown-launch-buttons button, button[aria-label*=\"aunch\"]')")
    assert menu is not None, "Tab never reaches the launch menu"
    menu.send_keys(Keys.ENTER)
    colab = tab_to(browser, "el.matches('a') && el.href.startsWith('https://colab.research.google.com/')")
    assert colab is not None and colab.is_displayed(), "Tab never reaches the visible Colab launch link"
    assert colab.get_attribute("href").endswith(html_path(chapter).replace(".html", ".ipynb"))


# The backward frames of chapters 4 and 5 are steppers (course_lib.figures.stepper): one frame
# at a time, moved by two buttons and a labelled range slider.
STEPPER_PAGES = [p for p in PAGES if p.suffix == ".ipynb" and "course-stepper" in p.read_text()]
STEPPER = """
const stepper = document.querySelector(".course-stepper");
const shown = [...stepper.querySelectorAll(".stepper-frame")].filter((f) => f.getClientRects().length > 0);
const sizes = [...stepper.querySelectorAll("img")].map((img) => `${img.naturalWidth}x${img.naturalHeight}`);
return {frames: stepper.querySelectorAll(".stepper-frame").length, shown: shown.map((f) => f.textContent.trim()),
        sizes: [...new Set(sizes)], status: stepper.querySelector("output").textContent,
        slider: stepper.querySelector("input[type=range]").value,
        label: stepper.querySelector("label").textContent + " " + stepper.querySelector("input").labels.length};
"""


@pytest.mark.parametrize("page", STEPPER_PAGES, ids=lambda p: html_path(p))
def test_keyboard_steps_through_a_sweep_offline(browser, server, page):
    """One frame shows at a time, all frames of one size; Enter and Space on the buttons and the
    arrow, Home and End keys on the slider move it, with a focus ring and no kernel."""
    assert len(STEPPER_PAGES) == 3  # chapters 4, 5 and 15 (part 2)
    assert visit(browser, server + html_path(page)) == []
    state = browser.execute_script(STEPPER)
    n = state["frames"]  # the page's first stepper
    assert n >= 5 and len(state["sizes"]) == 1 and state["sizes"][0] != "0x0", state
    assert len(state["shown"]) == 1 and state["shown"][0].startswith(f"Step 1 of {n}:"), state
    assert state["status"] == f"step 1 of {n}" and state["label"] == "Step 1"

    def at(step: int) -> None:
        WebDriverWait(browser, 5).until(
            lambda d: d.execute_script(STEPPER)["shown"][0].startswith(f"Step {step} of {n}:")
        )
        now = browser.execute_script(STEPPER)
        assert len(now["shown"]) == 1 and now["slider"] == str(step) and now["status"] == f"step {step} of {n}"

    button = tab_to(browser, "el.matches('.course-stepper button[data-move=\"1\"]')", limit=600)
    assert button is not None, f"Tab never reaches the stepper's Next button on {html_path(page)}"
    assert button.text == "Next step" and browser.execute_script(FOCUS_RING)
    button.send_keys(Keys.ENTER)
    at(2)
    button.send_keys(Keys.SPACE)
    at(3)
    slider = tab_to(browser, "el.matches('.course-stepper input[type=range]')", limit=600)
    assert slider is not None and browser.execute_script(FOCUS_RING)
    slider.send_keys(Keys.END)
    at(n)
    assert (
        browser.execute_script(
            "return document.querySelector('.course-stepper button[data-move=\"1\"]').getAttribute('aria-disabled')"
        )
        == "true"
    )
    slider.send_keys(Keys.HOME)
    at(1)
    slider.send_keys(Keys.ARROW_RIGHT)
    at(2)


# -- dark mode --------------------------------------------------------------------------------------

DARK_FIGURES = """
document.documentElement.dataset.theme = "dark";
document.documentElement.dataset.mode = "dark";
const luminance = (rgb) => {
  const [r, g, b] = rgb.match(/[0-9.]+/g).slice(0, 3).map(Number).map((c) => {
    c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const background = (el) => {
  for (let e = el; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (c && !c.startsWith("rgba(0, 0, 0, 0)") && c !== "transparent") return c;
  }
  return "rgb(255, 255, 255)";
};
const page = luminance(background(document.querySelector("article.bd-article")));
const text = luminance(getComputedStyle(document.querySelector("article.bd-article p")).color);
const figures = [...document.querySelectorAll("article.bd-article img, article.bd-article object.graphviz")]
  .filter((el) => (el.src || el.data).includes("/_images/"))
  .map((el) => ({src: (el.src || el.data).split("/").pop(), behind: luminance(background(el))}));
return {page, text, figures};
"""


# The last chapter with a figure file (a stepper's frames are inline, not files in _images/).
IMAGE_PAGES = [p for p in FIGURE_PAGES if re.search(r'"image/(png|svg\+xml)":', p.read_text())]
DARK_PAGES = [*FIGURE_PAGES[:3], IMAGE_PAGES[-1], ROOT / "book/architecture.md"]


@pytest.mark.parametrize("page", DARK_PAGES, ids=lambda p: html_path(p))
def test_dark_mode_keeps_figures_and_text_readable(browser, server, page):
    """Figures are drawn in black on a transparent or white ground: in dark mode each sits on a
    light panel where black lines and labels keep at least 7:1 contrast, and the body text
    keeps 4.5:1 with the dark page (WCAG 1.4.3, 1.4.11)."""
    assert visit(browser, server + html_path(page)) == []
    report = browser.execute_script(DARK_FIGURES)
    assert report["page"] < 0.05, "the dark theme did not apply"
    contrast = (max(report["page"], report["text"]) + 0.05) / (min(report["page"], report["text"]) + 0.05)
    assert contrast >= 4.5, f"body text contrast {contrast:.1f}:1 in dark mode"
    assert report["figures"], f"no figure found on {html_path(page)}"
    dark = [f for f in report["figures"] if (f["behind"] + 0.05) / 0.05 < 7]
    assert dark == [], f"figures on a dark ground in dark mode (black lines vanish): {dark}"
