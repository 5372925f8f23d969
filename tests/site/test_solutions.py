"""The chapters' exercises in the built book: the notebook form (tools/notebook_answers.py)
becomes sphinx-exercise's numbered exercises and dropdown solutions, numbered as the notebooks
number them, and a solution stays hidden until a reader clicks it open.

The first test needs only the strict build; the second needs the browser of test_browser.py.
"""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from built_site import html_path
from notebook_answers import EXERCISE_HEAD
from notebook_text import markdown, solutions
from paths import CHAPTERS, ids
from test_browser import TIMEOUT, visit

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the browser fixture skips
    pass


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_book_numbers_exercises_as_the_notebook_does(site, path):
    page = BeautifulSoup((site / html_path(path)).read_text(), "html.parser")
    in_book = [
        (div["id"], " ".join(div.select_one(".admonition-title").get_text(" ", strip=True).split()))
        for div in page.select("div.exercise")
    ]
    in_notebook = [(m["label"], f"Exercise {m['number']}") for m in EXERCISE_HEAD.finditer(markdown(path))]
    assert in_book == in_notebook
    dropdowns = [div.select_one(".admonition-title a")["href"] for div in page.select("div.solution.dropdown")]
    assert dropdowns == [f"#{s.label}" for s in solutions(path)], "one dropdown per solution, linked to its exercise"
    assert not page.select("details.solution"), "the notebook form's <details> is not left in the book"


SOLUTION_SHOWN = """
return arguments[0].querySelector("section").checkVisibility({opacityProperty: true, visibilityProperty: true});
"""


def test_a_solution_opens_on_a_click(browser, server):
    chapter = CHAPTERS[0]
    answer = solutions(chapter)[0]
    phrase = max(re.findall(r"[A-Za-z][A-Za-z ,]{20,}[A-Za-z]", answer.body), key=len)
    visit(browser, server + html_path(chapter))
    solution = browser.find_element(By.CSS_SELECTOR, "div.solution.dropdown")
    assert not browser.execute_script(SOLUTION_SHOWN, solution), "the solution shows before it is opened"
    assert phrase not in browser.find_element(By.TAG_NAME, "article").text
    button = solution.find_element(By.CSS_SELECTOR, "button.toggle-button")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
    button.click()
    WebDriverWait(browser, TIMEOUT).until(lambda d: d.execute_script(SOLUTION_SHOWN, solution))
    assert phrase in " ".join(solution.text.split()), f"the opened solution does not read {phrase!r}"
