"""The chapters as students read them in Jupyter: JupyterLab and Notebook 7, in Chromium.

tests/book/test_answers.py renders the chapters with nbconvert; JupyterLab renders Markdown
with another parser and then sanitizes the HTML, so here a real JupyterLab server (no token,
on 127.0.0.1) opens a chapter in the browser of test_browser.py: every solution must be a
closed ``<details>`` whose answer is hidden until its summary is clicked, and no MyST markup
may show. Run alone with ``pytest tests/site/test_jupyter.py -n 0 -p no:cacheprovider``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from notebook_text import solutions
from paths import CHAPTERS
from test_browser import TIMEOUT

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the browser fixture skips
    pass

CHAPTER = CHAPTERS[0]  # five questions and their answers shared one cell before issue 22


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    """The URL of a JupyterLab server whose root folder holds a copy of CHAPTER."""
    root = tmp_path_factory.mktemp("jupyter")
    shutil.copy(CHAPTER, root / CHAPTER.name)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = root / ".state"
    env = dict(
        os.environ,
        JUPYTER_RUNTIME_DIR=str(state / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(state / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
    )
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1"]
    command += [f"--ServerApp.root_dir={root}", "--ServerApp.token=", "--ServerApp.password=", "--allow-root"]
    with open(state.parent / "server.log", "w") as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(TIMEOUT):
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=2)
                break
            except OSError:
                assert server.poll() is None, (root / "server.log").read_text()[-3000:]
                time.sleep(1)
        else:
            pytest.fail(f"JupyterLab did not start in {TIMEOUT} s:\n{(root / 'server.log').read_text()[-3000:]}")
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


HIDDEN = """
return [...document.querySelectorAll("details.solution")].map((d) => ({
  open: d.open,
  summary: d.querySelector("summary").checkVisibility(),
  shown: [...d.children].filter((c) => c.tagName !== "SUMMARY" && c.checkVisibility()).length,
}));
"""


@pytest.mark.parametrize("interface", ["lab/tree", "notebooks"], ids=["JupyterLab", "Notebook 7"])
def test_jupyter_hides_every_answer_until_clicked(browser, jupyter, interface):
    expected = len(solutions(CHAPTER))
    browser.get(f"{jupyter}/{interface}/{CHAPTER.name}")
    WebDriverWait(browser, TIMEOUT).until(
        lambda d: d.execute_script("return document.querySelectorAll('details.solution').length") == expected
    )
    time.sleep(1)  # let the last cells finish rendering their math
    states = browser.execute_script(HIDDEN)
    assert all(not s["open"] and s["summary"] and s["shown"] == 0 for s in states), states
    text = browser.find_element(By.CSS_SELECTOR, ".jp-Notebook").text
    for markup in (":::{", "{ref}", "{exercise}", "{solution}", ":label:", ":class: dropdown"):
        assert markup not in text, f"Jupyter shows {markup!r}"

    first = browser.find_element(By.CSS_SELECTOR, "details.solution summary")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", first)
    first.click()
    WebDriverWait(browser, TIMEOUT).until(lambda d: d.execute_script(HIDDEN)[0]["shown"] > 0)
    assert [s["open"] for s in browser.execute_script(HIDDEN)] == [True] + [False] * (expected - 1)
